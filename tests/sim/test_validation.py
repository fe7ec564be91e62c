"""Karmada objects are validated against the upstream CRD schemas (tests/upstream.py)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.sim.http_helpers import call
from tests.upstream import CRDS, needs_upstream_crds
from tidal_sim.emulator import Emulator
from tidal_sim.kinds import KindRegistry
from tidal_sim.store import Invalid
from tidal_sim.upstream_crds import CrdSource, find_crds
from tidal_sim.validation import SchemaValidator

needs_crds = needs_upstream_crds
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
    """TIDAL_KARMADA_CRDS names the directory and wins; a missing one means no upstream schemas,
    said in one line."""
    monkeypatch.setenv("TIDAL_KARMADA_CRDS", str(tmp_path / "absent"))
    missing = find_crds()
    assert missing.directory is None and "TIDAL_KARMADA_CRDS" in missing.notice
    monkeypatch.setenv("TIDAL_KARMADA_CRDS", str(tmp_path))
    assert find_crds() == CrdSource(tmp_path, "setting")


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


def _send(
    emulator: Emulator, method: str, path: str, text: str, content_type: str = "application/json"
) -> tuple[int, Any, list[str]]:
    """One request with a raw text body: (code, decoded answer, every Warning header)."""
    req = urllib.request.Request(
        emulator.url + path,
        data=text.encode(),
        method=method,
        headers={"Content-Type": content_type},
    )
    try:
        with urllib.request.urlopen(req) as resp:
            return resp.status, json.loads(resp.read()), resp.headers.get_all("Warning") or []
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read()), err.headers.get_all("Warning") or []


MERGE = "application/merge-patch+json"
TYPO_PATCH = (
    '{"spec": {"placement": {"replicaScheduling": {"weightPreferences": '
    '{"staticWeightList": []}, "zzz": 1, "aaa": 2}}}}'
)


def _created(emulator: Emulator) -> dict[str, Any]:
    code, created = post(emulator, CPP_PATH, cpp())
    assert code == 201, created
    return created


@needs_crds
def test_strict_merge_patch_refuses_unknown_fields_and_stores_nothing(emulator: Emulator) -> None:
    """A merge patch with fieldValidation=Strict answers 400 naming every unknown field by its
    JSON path, sorted, and the stored policy is untouched."""
    before = _created(emulator)
    code, status, _ = _send(
        emulator, "PATCH", f"{CPP_PATH}/team-1005-cpp?fieldValidation=Strict", TYPO_PATCH, MERGE
    )
    assert code == 400 and status["reason"] == "BadRequest", status
    assert status["message"] == (
        'strict decoding error: unknown field "spec.placement.replicaScheduling.aaa", '
        'unknown field "spec.placement.replicaScheduling.weightPreferences", '
        'unknown field "spec.placement.replicaScheduling.zzz"'
    )
    _, now = call(emulator, "GET", f"{CPP_PATH}/team-1005-cpp")
    assert now["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


@needs_crds
@pytest.mark.parametrize("directive", ["Warn", ""])
def test_warn_prunes_and_sends_one_warning_per_field(emulator: Emulator, directive: str) -> None:
    """Warn (the default) accepts the patch, prunes the fields and sends one Warning header per
    field: duplicates first, then the unknown fields sorted by path."""
    _created(emulator)
    text = TYPO_PATCH.replace(
        '"aaa": 2',
        '"aaa": 2, "replicaSchedulingType": "Divided", "replicaSchedulingType": "Divided"',
    )
    query = f"?fieldValidation={directive}" if directive else ""
    code, patched, warnings = _send(
        emulator, "PATCH", f"{CPP_PATH}/team-1005-cpp{query}", text, MERGE
    )
    assert code == 200, patched
    assert warnings == [
        '299 - "duplicate field \\"replicaSchedulingType\\""',
        '299 - "unknown field \\"spec.placement.replicaScheduling.aaa\\""',
        '299 - "unknown field \\"spec.placement.replicaScheduling.weightPreferences\\""',
        '299 - "unknown field \\"spec.placement.replicaScheduling.zzz\\""',
    ]
    scheduling = patched["spec"]["placement"]["replicaScheduling"]
    assert not {"aaa", "zzz", "weightPreferences"} & set(scheduling)


@needs_crds
def test_ignore_prunes_silently(emulator: Emulator) -> None:
    """Ignore accepts the patch, prunes the unknown fields and sends no Warning."""
    _created(emulator)
    code, patched, warnings = _send(
        emulator, "PATCH", f"{CPP_PATH}/team-1005-cpp?fieldValidation=Ignore", TYPO_PATCH, MERGE
    )
    assert code == 200 and warnings == []
    assert "zzz" not in patched["spec"]["placement"]["replicaScheduling"]


@needs_crds
def test_strict_create_names_duplicate_and_unknown_fields(emulator: Emulator) -> None:
    """A create with Strict refuses duplicate keys and unknown fields in one 400 answer."""
    text = json.dumps(cpp()).replace('"weight": 1', '"weight": 1, "weight": 2, "wieght": 3')
    code, status, _ = _send(emulator, "POST", CPP_PATH + "?fieldValidation=Strict", text)
    assert code == 400, status
    assert status["message"] == (
        'ClusterPropagationPolicy in version "v1alpha1" cannot be handled as a '
        'ClusterPropagationPolicy: strict decoding error: duplicate field "weight", '
        "unknown field "
        '"spec.placement.replicaScheduling.weightPreference.staticWeightList[0].wieght"'
    )
    assert call(emulator, "GET", f"{CPP_PATH}/team-1005-cpp")[0] == 404


@needs_crds
def test_dry_run_patch_validates_and_defaults_but_stores_nothing(emulator: Emulator) -> None:
    """dryRun=All answers the patched, defaulted object (or the validation error) and changes
    nothing: same resourceVersion, no watch event."""
    before = _created(emulator)
    rv = before["metadata"]["resourceVersion"]
    patch = {
        "spec": {
            "placement": {
                "replicaScheduling": {
                    "weightPreference": {
                        "staticWeightList": [
                            {"targetCluster": {"clusterNames": ["cluster-a"]}, "weight": 7}
                        ]
                    }
                }
            }
        }
    }
    code, answer, _ = _send(
        emulator, "PATCH", f"{CPP_PATH}/team-1005-cpp?dryRun=All", json.dumps(patch), MERGE
    )
    assert code == 200, answer
    assert (
        answer["spec"]["placement"]["replicaScheduling"]["weightPreference"]["staticWeightList"][0][
            "weight"
        ]
        == 7
    )
    assert answer["spec"]["conflictResolution"] == "Abort"  # a CRD default, filled in
    bad = json.dumps(patch).replace('"weight": 7', '"weight": "high"')
    code, status, _ = _send(
        emulator, "PATCH", f"{CPP_PATH}/team-1005-cpp?dryRun=All&fieldValidation=Strict", bad, MERGE
    )
    assert code == 422 and status["details"]["causes"][0]["field"] == WEIGHT_PATH
    _, now = call(emulator, "GET", f"{CPP_PATH}/team-1005-cpp")
    assert now["metadata"]["resourceVersion"] == rv
    watch = urllib.request.urlopen(
        emulator.url + f"{CPP_PATH}?watch=true&resourceVersion={rv}&timeoutSeconds=1"
    )
    assert watch.read().strip() == b""  # no controller or watcher saw a change


@needs_crds
def test_dry_run_create_stores_nothing(emulator: Emulator) -> None:
    """A create with dryRun=All answers 201 with the object but stores nothing."""
    code, answer, _ = _send(emulator, "POST", CPP_PATH + "?dryRun=All", json.dumps(cpp()))
    assert code == 201 and answer["metadata"]["name"] == "team-1005-cpp"
    assert "resourceVersion" not in answer["metadata"]
    assert answer["metadata"]["uid"] and answer["metadata"]["creationTimestamp"]
    assert call(emulator, "GET", f"{CPP_PATH}/team-1005-cpp")[0] == 404


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (
            "fieldValidation=Loose",
            'PatchOptions.meta.k8s.io "" is invalid: fieldValidation: '
            'Unsupported value: "Loose": supported values: "", "Ignore", "Strict", "Warn"',
        ),
        (
            "dryRun=Yes",
            'PatchOptions.meta.k8s.io "" is invalid: dryRun: '
            'Unsupported value: []string{"Yes"}: supported values: "All"',
        ),
    ],
)
def test_bad_write_options_are_refused(emulator: Emulator, query: str, message: str) -> None:
    """An unknown fieldValidation or dryRun value is refused 422 before anything happens."""
    code, status, _ = _send(
        emulator, "PATCH", f"/api/v1/namespaces/default/configmaps/x?{query}", "{}", MERGE
    )
    assert code == 422 and status["message"] == message


@needs_crds
def test_strict_json_patch_names_bad_operation_keys_and_unknown_fields(emulator: Emulator) -> None:
    """A JSON patch with an unknown operation key, a key given twice and a path the schema
    does not know: Strict names all three; Warn accepts with one warning each."""
    _created(emulator)
    ops = (
        '[{"op": "add", "path": "/spec/placement/zzz", "value": 1, "foo": "bar"},'
        ' {"op": "add", "path": "/spec/x", "path": "/spec/placement/yyy", "value": 2}]'
    )
    code, status, _ = _send(
        emulator,
        "PATCH",
        f"{CPP_PATH}/team-1005-cpp?fieldValidation=Strict",
        ops,
        "application/json-patch+json",
    )
    assert code == 400, status
    assert status["message"] == (
        'strict decoding error: json patch unknown field "foo", json patch duplicate field '
        '"path", unknown field "spec.placement.yyy", unknown field "spec.placement.zzz"'
    )
    code, _, warnings = _send(
        emulator, "PATCH", f"{CPP_PATH}/team-1005-cpp", ops, "application/json-patch+json"
    )
    assert code == 200 and len(warnings) == 4
