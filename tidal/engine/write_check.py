"""Every policy write of a window, tried first as a server-side dry run (`dryRun=All`,
`fieldValidation=Strict`): the apiserver's own schema answers whether the patch or the swap's
manifest would be accepted as written, before anything is changed. A typo such as
`weightPreferences:` would otherwise be pruned in silence and the switch would wait for a
change that was never made."""

from __future__ import annotations

import copy
from dataclasses import dataclass

from tidal.engine.resolve import PolicyTarget
from tidal.karmada import policies as api
from tidal.karmada.client import KarmadaClient
from tidal.karmada.errors import AlreadyExists, Invalid


@dataclass(frozen=True)
class WriteProblem:
    """The apiserver refused one policy write of the window."""

    index: int  # of the change in the window's `policies`
    swap: bool
    policy: str  # kind/name (kind/namespace/name)
    fields: tuple[str, ...]  # object paths the server named, e.g. spec.placement.x
    message: str  # the server's answer

    def __str__(self) -> str:
        what = "manifest" if self.swap else "patch"
        return (
            f"policies[{self.index}]: the apiserver refuses the {what} of {self.policy}: "
            f"{self.message}"
        )


class PolicyWritesRefused(Exception):
    """A dry run of the window's policy writes was refused: nothing was written."""

    def __init__(self, window: str, problems: list[WriteProblem]) -> None:
        super().__init__("; ".join(str(p) for p in problems))
        self.window = window
        self.problems = problems


def dry_run_writes(client: KarmadaClient, targets: list[PolicyTarget]) -> list[WriteProblem]:
    """The refusals of a dry run of each policy write (empty when the server accepts all)."""
    problems = []
    for index, target in enumerate(targets):
        try:
            if target.swap_from is None:
                api.patch_policy(
                    client,
                    target.kind,
                    target.name,
                    target.namespace,
                    dict(target.change.patch or {}),
                    dry_run=True,
                )
            elif target.to_obj is None and target.change.swap is not None:
                manifest = copy.deepcopy(target.change.swap.manifest or {})
                if target.namespace:
                    manifest.setdefault("metadata", {}).setdefault("namespace", target.namespace)
                api.create_policy(client, manifest, dry_run=True)
        except AlreadyExists:
            continue  # the swap's `to` exists already: the run adopts it
        except Invalid as exc:
            problems.append(
                WriteProblem(
                    index, target.swap_from is not None, target.key, exc.fields, exc.message
                )
            )
    return problems
