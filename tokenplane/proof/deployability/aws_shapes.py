"""Pulumi AWS inputs as boto3 parameters, converted by the API's own model (botocore's input shapes).

The Pulumi AWS provider's inputs are the API's fields in camelCase, with ints as floats (the engine's JSON), some
booleans as "true"/"false" strings (launch templates' ``ebs``), and tags as a map. botocore knows every
operation's input shape, so one walk converts any of them: a structure's members are matched case-insensitively
(``kmsMasterKeyId`` -> ``KMSMasterKeyID``), numbers and booleans take the shape's type, and a tag map becomes the
shape's list of ``Key``/``Value`` pairs. A key the shape has no member for is dropped and named, so that the
replay can say what it did not send rather than pretend.
"""

from __future__ import annotations

from typing import Any


class Unmappable(ValueError):
    """A Pulumi value that has no meaning in the API's shape (a list where a structure goes)."""


def to_shape(shape: Any, value: Any, dropped: list[str], path: str = "") -> Any:
    """``value`` as ``shape`` (a botocore Shape) takes it; names of keys it has no member for go to ``dropped``."""
    if value is None:
        return None
    kind = shape.type_name
    if kind == "structure":
        if not isinstance(value, dict):
            raise Unmappable(f"{path or 'value'}: expected an object, got {value!r}")
        members = {name.lower(): name for name in shape.members}
        out: dict[str, Any] = {}
        for key, item in value.items():
            member = members.get(str(key).lower())
            if member is None:
                dropped.append(f"{path}{key}")
                continue
            converted = to_shape(shape.members[member], item, dropped, f"{path}{key}.")
            if converted is not None:
                out[member] = converted
        return out
    if kind == "list":
        item_shape = shape.member
        if isinstance(value, dict) and _is_tag_shape(item_shape):
            key, val = _tag_members(item_shape)
            return [{key: str(k), val: str(v)} for k, v in value.items()]
        items = value if isinstance(value, list) else [value]
        return [c for c in (to_shape(item_shape, item, dropped, path) for item in items) if c is not None]
    if kind == "map":
        if not isinstance(value, dict):
            raise Unmappable(f"{path or 'value'}: expected a map, got {value!r}")
        return {str(k): to_shape(shape.value, v, dropped, path) for k, v in value.items()}
    return scalar(kind, value, path)


def scalar(kind: str, value: Any, path: str = "") -> Any:
    """A Pulumi scalar as botocore's ``kind`` takes it (``integer``, ``long``, ``boolean``, ``string``...)."""
    if kind in ("integer", "long"):
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise Unmappable(f"{path or 'value'}: expected a number, got {value!r}")
        return int(float(value))
    if kind in ("float", "double"):
        return float(value)
    if kind == "boolean":
        if isinstance(value, str):
            if value.lower() not in ("true", "false"):
                raise Unmappable(f"{path or 'value'}: expected a boolean, got {value!r}")
            return value.lower() == "true"
        return bool(value)
    if kind == "string":
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, float) and value.is_integer():
            return str(int(value))
        return value if isinstance(value, str) else str(value)
    if kind == "blob" and isinstance(value, str):
        return value.encode()
    return value


def _is_tag_shape(shape: Any) -> bool:
    return shape.type_name == "structure" and _tag_members(shape) != ("", "")


def _tag_members(shape: Any) -> tuple[str, str]:
    """The (key, value) member names of a tag structure (``Key``/``Value``, KMS's ``TagKey``/``TagValue``)."""
    names = set(shape.members)
    for key, val in (("Key", "Value"), ("TagKey", "TagValue"), ("key", "value")):
        if {key, val} <= names:
            return key, val
    return "", ""
