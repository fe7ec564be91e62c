"""The three PATCH content types the emulator accepts, applied to a stored object."""

from __future__ import annotations

import copy
import json
from typing import Any

import json_merge_patch
import jsonpatch

from tidal_sim.apiserver.errors import ApiError
from tidal_sim.kinds import ResourceType

Obj = dict[str, Any]

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"

_CUSTOM_ACCEPTED = (
    "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
)


def unsupported(content_type: str, rtype: ResourceType) -> ApiError:
    accepted = _CUSTOM_ACCEPTED if rtype.custom else f"{_CUSTOM_ACCEPTED}, {STRATEGIC}"
    return ApiError(
        415,
        "the body of the request was in an unknown format - accepted media types include: "
        + accepted,
        reason="UnsupportedMediaType",
        details={"causes": [{"message": f"unsupported media type {content_type!r}"}]}
        if content_type
        else None,
    )


def _strategic(target: Any, patch: Any) -> Any:
    """Strategic merge approximated: merge patch, with lists of named objects merged by name."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$"):
            continue  # directives ($setElementOrder, $retainKeys) only order or prune
        if value is None:
            result.pop(key, None)
        elif isinstance(value, list) and _named_list(value) and _named_list(result.get(key)):
            result[key] = _merge_named(result[key], value)
        else:
            result[key] = _strategic(result.get(key), value)
    return result


def _named_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, dict) and "name" in v for v in value)


def _merge_named(current: list[Any], patch: list[Any]) -> list[Any]:
    merged = [copy.deepcopy(item) for item in current]
    index = {item["name"]: i for i, item in enumerate(merged)}
    for item in patch:
        name = item["name"]
        if item.get("$patch") == "delete":
            if name in index:
                merged[index[name]] = None
            continue
        if name in index and merged[index[name]] is not None:
            merged[index[name]] = _strategic(merged[index[name]], item)
        else:
            index[name] = len(merged)
            merged.append(_strategic({}, item))
    return [m for m in merged if m is not None]


def apply_configuration(body: bytes) -> Obj:
    """The object of a server-side apply body (YAML or JSON)."""
    from tidal_sim.topology import load_yaml_documents

    try:
        docs = [d for d in load_yaml_documents(body.decode()) if d is not None]
    except (ValueError, UnicodeDecodeError) as exc:
        raise ApiError(400, f"error decoding apply configuration: {exc}") from exc
    if len(docs) != 1 or not isinstance(docs[0], dict):
        raise ApiError(400, "an apply configuration must be exactly one object")
    obj: Obj = docs[0]
    return obj


def apply_patch(rtype: ResourceType, current: Obj, content_type: str, body: bytes) -> Obj:
    """The object after the patch; raises ApiError for a bad body or an unsupported type."""
    media = content_type.split(";")[0].strip().lower()
    if media not in (MERGE, JSON_PATCH, STRATEGIC):
        raise unsupported(media, rtype)
    if media == STRATEGIC and rtype.custom:
        raise unsupported(media, rtype)
    try:
        patch = json.loads(body or b"null")
    except ValueError as exc:
        raise ApiError(400, f"error decoding patch: {exc}") from exc
    if media == JSON_PATCH:
        if not isinstance(patch, list):
            raise ApiError(400, "json patch must be a list of operations")
        try:
            result = jsonpatch.JsonPatch(patch).apply(current)
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
            raise ApiError(
                422,
                f"the server rejected our request due to an error in our request: {exc}",
                reason="Invalid",
            ) from exc
    elif not isinstance(patch, dict):
        raise ApiError(400, "patch body must be a JSON object")
    elif media == MERGE:
        result = json_merge_patch.merge(copy.deepcopy(current), patch)
    else:
        result = _strategic(current, patch)
    if not isinstance(result, dict):
        raise ApiError(422, "patch did not produce an object", reason="Invalid")
    return result
