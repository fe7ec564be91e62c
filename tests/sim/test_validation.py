"""Karmada objects are validated against the upstream CRD schemas (../shared/karmada/crds)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.sim.http_helpers import call
from tidal.sim.emulator import Emulator
from tidal.sim.kinds import KindRegistry
from tidal.sim.store import Invalid
from tidal.sim.validation import SchemaValidator, find_crds_dir

CRDS = find_crds_dir()
needs_crds = pytest.mark.skipif(CRDS is None, reason="../shared/karmada/crds not present")
WEIGHT_PATH = "spec.placement.replicaScheduling.weightPreference.staticWeightList[0].weight"
CPP_PATH = "/apis/policy.karmada.io/v1alpha1/clusterpropagationpolicies"


def cpp(weight: int = 1, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "ClusterPropagationPolicy",
        "metadata": {"name": "team-1005-cpp"},
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
            "placement": {
                "replicaScheduling": {
                    "replicaSchedulingType": "Divided",
                    "replicaDivisionPreference": "Weighted",
                    "weightPreference": {
                        "staticWeightList": [
                            {"targetCluster": {"clusterNames": ["cluster-b"]}, "weight": weight}
                        ]
                    },
                }
            },
        },
    }
    body["spec"].update(spec)
    return body


def post(emu: Emulator, path: str, body: Any) -> tuple[int, dict[str, Any]]:
    return call(emu, "POST", path, body)


def cpp_type() -> Any:
    rtype = KindRegistry().by_kind("policy.karmada.io/v1alpha1", "ClusterPropagationPolicy")
    assert rtype is not None
    return rtype


@needs_crds
def test_zero_static_weight_is_422_with_field_path(emulator: Emulator) -> None:
    """A CPP with staticWeightList weight 0 is refused 422 Invalid, naming the field path."""
    assert emulator.validator.upstream
    code, body = post(emulator, CPP_PATH, cpp(weight=0))
    assert code == 422
    assert body["kind"] == "Status" and body["reason"] == "Invalid"
    assert body["details"]["kind"] == "ClusterPropagationPolicy"
    assert body["details"]["group"] == "policy.karmada.io"
    assert [c["field"] for c in body["details"]["causes"]] == [WEIGHT_PATH]
    assert "greater than or equal to 1" in body["message"]


@needs_crds
def test_schema_defaults_are_applied(emulator: Emulator) -> None:
    """Defaults declared in the CRD schema are filled in on create."""
    code, body = post(emulator, CPP_PATH, cpp())
    assert code == 201
    assert body["spec"]["conflictResolution"] == "Abort"
    assert body["spec"]["preemption"] == "Never"
    assert body["spec"]["priority"] == 0


@needs_crds
def test_missing_required_and_bad_enum_each_get_a_cause() -> None:
    """Every violation is one cause: required fields and unsupported enum values."""
    validator = SchemaValidator(CRDS)
    bad = cpp(activationPreference="Sometimes")
    bad["spec"]["resourceSelectors"] = [{"kind": "Deployment"}]
    with pytest.raises(Invalid) as err:
        validator.admit(cpp_type(), bad)
    causes = {c["field"]: c["reason"] for c in err.value.causes}
    assert causes == {
        "spec.activationPreference": "FieldValueNotSupported",
        "spec.resourceSelectors[0].apiVersion": "FieldValueRequired",
    }


@needs_crds
def test_patch_that_breaks_the_schema_is_422(emulator: Emulator) -> None:
    """A merge patch producing an invalid object is refused and the stored object is unchanged."""
    assert post(emulator, CPP_PATH, cpp())[0] == 201
    patch = {
        "spec": {
            "placement": {
                "replicaScheduling": {
                    "weightPreference": {
                        "staticWeightList": [
                            {"targetCluster": {"clusterNames": ["cluster-a"]}, "weight": 0}
                        ]
                    }
                }
            }
        }
    }
    req = urllib.request.Request(
        emulator.url + CPP_PATH + "/team-1005-cpp",
        method="PATCH",
        data=json.dumps(patch).encode(),
        headers={"Content-Type": "application/merge-patch+json"},
    )
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req)
    assert err.value.code == 422
    stored = emulator.store.get(cpp_type(), None, "team-1005-cpp")
    weights = stored["spec"]["placement"]["replicaScheduling"]["weightPreference"][
        "staticWeightList"
    ]
    assert weights[0]["weight"] == 1


def test_fallback_checks_without_crds() -> None:
    """Without the CRD directory a built-in check still refuses a zero weight with the path."""
    validator = SchemaValidator(None)
    assert not validator.upstream
    with pytest.raises(Invalid) as err:
        validator.admit(cpp_type(), cpp(weight=0))
    assert [c["field"] for c in err.value.causes] == [WEIGHT_PATH]
    validator.admit(cpp_type(), cpp(weight=3))


def test_crds_dir_from_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """TIDAL_KARMADA_CRDS names the directory; a missing one means no upstream schemas."""
    monkeypatch.setenv("TIDAL_KARMADA_CRDS", str(tmp_path / "absent"))
    assert find_crds_dir() is None
    monkeypatch.setenv("TIDAL_KARMADA_CRDS", str(tmp_path))
    assert find_crds_dir() == tmp_path


def test_bad_object_name_is_invalid(emulator: Emulator) -> None:
    """Names must be DNS-1123 subdomains, as on the real apiserver."""
    code, body = post(
        emulator,
        "/api/v1/namespaces/default/configmaps",
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Bad_Name"}},
    )
    assert code == 422 and body["details"]["causes"][0]["field"] == "metadata.name"


@needs_crds
def test_unknown_fields_are_pruned_with_a_warning(emulator: Emulator) -> None:
    """Without fieldValidation, unknown fields are dropped and named in a Warning header."""
    body = cpp()
    body["spec"]["resourceSelector"] = []
    req = urllib.request.Request(
        emulator.url + CPP_PATH,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req) as resp:
        created = json.loads(resp.read())
        warning = resp.headers["Warning"]
    assert "resourceSelector" not in created["spec"]
    assert warning == '299 - "unknown field \\"spec.resourceSelector\\""'


@needs_crds
def test_strict_field_validation_refuses_unknown_fields(emulator: Emulator) -> None:
    """fieldValidation=Strict (kubectl's default) answers 400 naming the unknown field."""
    body = cpp()
    body["spec"]["placement"]["clusterAfinity"] = {"clusterNames": ["a"]}
    code, status = post(emulator, CPP_PATH + "?fieldValidation=Strict", body)
    assert code == 400 and status["reason"] == "BadRequest"
    assert 'unknown field "spec.placement.clusterAfinity"' in status["message"]
