"""Names and keys Karmada derives from objects (pkg/util/names, the detector's claim labels)."""

from __future__ import annotations

PP_KIND = "PropagationPolicy"
CPP_KIND = "ClusterPropagationPolicy"
PP_ID_LABEL = "propagationpolicy.karmada.io/permanent-id"
CPP_ID_LABEL = "clusterpropagationpolicy.karmada.io/permanent-id"
PP_NAME_ANNOTATION = "propagationpolicy.karmada.io/name"
PP_NAMESPACE_ANNOTATION = "propagationpolicy.karmada.io/namespace"
CPP_NAME_ANNOTATION = "clusterpropagationpolicy.karmada.io/name"

# tidal's own annotations: keys WITHOUT ".karmada.io", so Karmada counts them as user edits.
SWITCHED_AT = "tidal.io/switched-at"
SWITCH_RUN = "tidal.io/switch-run"
EXCLUDE = "tidal.io/exclude"
POLICY_WINDOW = "tidal.io/window"
POLICY_RUN = "tidal.io/run"
# On a policy whose activationPreference Lazy tidal set for its waves: which run set it and
# the value to put back (empty: unset). Kept on the object so that no journal is needed to
# tell a temporary Lazy from an owner's own.
LAZY_ADDED_BY = "tidal.io/lazy-added-by"
ACTIVATION_BEFORE_LAZY = "tidal.io/activation-before-lazy"
# On a policy while a wave's bridge placement is on it: JSON {"original": placement,
# "bridge": placement}, written in the same patch, so that the placement can be put back even
# when the run's journal is lost.
BRIDGE_PLACEMENT = "tidal.io/bridge-placement"
# On everything a run writes that must not outlive it (overrides; the bridge mark holds the
# same in its JSON): what it is for (surge | bridge). With the schedule and run it names the
# owner the sweeper (tidal.engine.sweeper) checks for a live run.
PURPOSE = "tidal.io/purpose"

# Labels of the OverridePolicies a surge wave owns (found again by them after a crash).
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGER = "tidal"
LABEL_SCHEDULE = "tidal.io/schedule"
LABEL_RUN = "tidal.io/run"
LABEL_WAVE = "tidal.io/wave"
LABEL_DIRECTION = "tidal.io/direction"  # forward, or back (a rollback's); older ones: none


def binding_name(name: str, kind: str) -> str:
    """GenerateBindingName: lower(<name>-<kind>), ':' in the name replaced by '.'."""
    return f"{name}-{kind}".lower().replace(":", ".")


def claim_label(policy_kind: str) -> str:
    """The label a policy of this kind puts on the templates it claims."""
    return CPP_ID_LABEL if policy_kind == CPP_KIND else PP_ID_LABEL


def claim_labels() -> tuple[str, str]:
    return (PP_ID_LABEL, CPP_ID_LABEL)
