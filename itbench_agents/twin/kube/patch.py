"""The three PATCH flavours: strategic merge (with the real merge keys), JSON merge (RFC 7386)
and JSON patch (RFC 6902, via ``jsonpatch``)."""

from __future__ import annotations

import json
from typing import Any

import jsonpatch

from .errors import ApiError, bad_request
from .models import model_fields, patch_meta
from .store import clone

Obj = dict[str, Any]

STRATEGIC = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY = "application/apply-patch+yaml"


def unsupported_media(ctype: str, strategic_ok: bool = True) -> ApiError:
    accepted = [JSON_PATCH, MERGE, APPLY]
    if strategic_ok:
        accepted.insert(2, STRATEGIC)
    return ApiError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: {', '.join(accepted)}",
    )


def json_merge(target: Any, patch: Any) -> Any:
    """RFC 7386."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = json_merge(out.get(k), v)
    return out


MAX_JSON_PATCH_OPS = 10_000  # the apiserver's maxJSONPatchOperations
# what all "copy" operations of one patch may add together (the apiserver's body limit)
MAX_JSON_PATCH_COPY_BYTES = 3 * 1024 * 1024


def _too_large(message: str) -> ApiError:
    return ApiError(413, "RequestEntityTooLarge", f"Request entity too large: {message}")


def apply_json_patch(doc: Obj, ops: Any) -> Obj:
    """RFC 6902 with the apiserver's limits: at most 10000 operations, and "copy" operations that
    together add at most 3 MiB (a few doubling copies would otherwise grow an object exponentially)."""
    if not isinstance(ops, list):
        raise bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    if len(ops) > MAX_JSON_PATCH_OPS:
        raise _too_large(
            f"The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPS}, got {len(ops)}"
        )
    try:
        if not any(isinstance(op, dict) and op.get("op") == "copy" for op in ops):
            return jsonpatch.apply_patch(doc, ops)  # type: ignore[no-any-return]
        out: Any = clone(doc)
        copied = 0
        for op in ops:  # one at a time, in place, measuring what each copy adds
            if isinstance(op, dict) and op.get("op") == "copy" and isinstance(op.get("from"), str):
                try:
                    value = jsonpatch.JsonPointer(op["from"]).resolve(out)
                except (jsonpatch.JsonPointerException, TypeError, KeyError):
                    value = None  # the operation itself reports the bad pointer
                copied += len(json.dumps(value, separators=(",", ":")))
                if copied > MAX_JSON_PATCH_COPY_BYTES:
                    raise _too_large(
                        f"Unable to complete the copy, the accumulated size increase of copy is {copied}, "
                        f"exceeding the limit {MAX_JSON_PATCH_COPY_BYTES}"
                    )
            out = jsonpatch.apply_patch(out, [op], in_place=True)
        return out  # type: ignore[no-any-return]
    except ApiError:
        raise
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, TypeError, KeyError) as exc:
        raise ApiError(
            422, "Invalid", f"the server rejected our request due to an error in our request: {exc}"
        ) from exc
    except Exception as exc:  # malformed operations (missing 'op', bad pointers...)
        raise bad_request(f"invalid JSON patch: {exc}") from exc


# ---------------------------------------------------------------------------- strategic merge

_DELETE = object()


def strategic_merge(original: Obj, patch: Any, model: str | None) -> Obj:
    """Apply a strategic merge patch to ``original`` using the merge keys of ``model``."""
    if not isinstance(patch, dict):
        raise bad_request("json: cannot unmarshal array into Go value of type map[string]interface {}")
    result = _merge_map(clone(original), patch, model)
    return result if isinstance(result, dict) else {}


def _field_model(model: str | None, field: str) -> tuple[str | None, str]:
    """(model of the field's value or list items, field type kind)."""
    if not model:
        return None, ""
    finfo = model_fields(model).get(field)
    if finfo is None:
        return None, ""
    t = finfo.type
    if t.kind == "model":
        return t.name, "model"
    if t.kind in ("list", "map") and t.item is not None:
        return (t.item.name if t.item.kind == "model" else None), t.kind
    return None, t.kind


def _merge_map(orig: Any, patch: Obj, model: str | None) -> Any:
    directive = patch.get("$patch")
    if directive == "delete":
        return _DELETE
    if directive == "replace":
        return {k: v for k, v in patch.items() if not k.startswith("$")}
    if directive is not None:
        raise bad_request(f"Unknown patch type: {directive}")
    out: Obj = dict(orig) if isinstance(orig, dict) else {}
    retain = patch.get("$retainKeys")
    orders: dict[str, list[Any]] = {}
    for key, value in patch.items():
        if key.startswith("$setElementOrder/"):
            orders[key.split("/", 1)[1]] = value if isinstance(value, list) else []
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            if isinstance(out.get(field), list) and isinstance(value, list):
                out[field] = [x for x in out[field] if x not in value]
            continue
        if key.startswith("$"):
            continue
        if value is None:
            out.pop(key, None)
            continue
        sub_model, kind = _field_model(model, key)
        if isinstance(value, dict):
            if patch_meta(model or "", key)[0] == "replace":
                out[key] = _strip_directives(value)
            elif kind == "map" and sub_model:
                merged_map = dict(out.get(key) or {})
                for mk, mv in value.items():
                    if mv is None:
                        merged_map.pop(mk, None)
                    elif isinstance(mv, dict):
                        r = _merge_map(merged_map.get(mk), mv, sub_model)
                        if r is _DELETE:
                            merged_map.pop(mk, None)
                        else:
                            merged_map[mk] = r
                    else:
                        merged_map[mk] = mv
                out[key] = merged_map
            else:
                r = _merge_map(out.get(key), value, sub_model)
                if r is _DELETE:
                    out.pop(key, None)
                else:
                    out[key] = r
        elif isinstance(value, list):
            strategy, merge_key = patch_meta(model or "", key)
            if "merge" in strategy.split(","):
                out[key] = _merge_list(out.get(key) or [], value, merge_key, sub_model)
            else:
                out[key] = [_strip_directives(v) for v in value if not _is_directive_item(v)]
        else:
            out[key] = value
    for field, order in orders.items():
        if isinstance(out.get(field), list):
            strategy, merge_key = patch_meta(model or "", field)
            out[field] = _reorder(out[field], order, merge_key)
    if isinstance(retain, list):
        keep = set(retain)
        out = {k: v for k, v in out.items() if k in keep}
    return out


def _is_directive_item(v: Any) -> bool:
    return isinstance(v, dict) and "$patch" in v and len(v) == 1


def _strip_directives(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _strip_directives(x) for k, x in v.items() if not k.startswith("$")}
    return v


def _merge_list(orig: list[Any], patch: list[Any], merge_key: str, item_model: str | None) -> list[Any]:
    if any(isinstance(p, dict) and p.get("$patch") == "replace" for p in patch):
        return [_strip_directives(p) for p in patch if not (isinstance(p, dict) and "$patch" in p)]
    if not merge_key:  # list of primitives with merge strategy: union
        out = list(orig)
        for p in patch:
            if isinstance(p, dict) and p.get("$patch") == "delete":
                continue
            if p not in out:
                out.append(p)
        return out
    out = [clone(x) if isinstance(x, dict) else x for x in orig]
    for p in patch:
        if not isinstance(p, dict):
            out.append(p)
            continue
        kv = p.get(merge_key)
        idx = next(
            (
                i
                for i, x in enumerate(out)
                if isinstance(x, dict) and kv is not None and x.get(merge_key) == kv
            ),
            None,
        )
        if p.get("$patch") == "delete":
            if idx is not None:
                out.pop(idx)
            continue
        if idx is None:
            out.append(_strip_directives(p))
        else:
            r = _merge_map(out[idx], p, item_model)
            if r is _DELETE:
                out.pop(idx)
            else:
                out[idx] = r
    return out


def _reorder(items: list[Any], order: list[Any], merge_key: str) -> list[Any]:
    def key_of(x: Any) -> Any:
        if merge_key and isinstance(x, dict):
            return json.dumps(x.get(merge_key), sort_keys=True)
        return json.dumps(x, sort_keys=True)

    rank = {key_of(o): n for n, o in enumerate(order)}
    return sorted(items, key=lambda x: rank.get(key_of(x), len(rank)))
