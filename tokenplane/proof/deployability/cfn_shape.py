"""Pulumi input values shaped as a CloudFormation resource schema has them, walked by the schema itself.

The provider's inputs and CloudFormation's properties carry the same values in other clothes: camelCase keys,
ints as floats, booleans as ``"true"`` strings (launch templates), tags as a map, a nested block as a list of
one, a JSON document as a string. One walk over the schema (``$ref`` followed into its ``definitions``) puts
each value where the schema has it: keys match case-insensitively, scalars take the schema's type, a map
becomes a list of ``Key``/``Value`` (or ``Name``/``Value``) pairs. What has no place in the schema is dropped
and named, never guessed. ``DROP`` in a value (a reference to something the check cannot stand in for) drops
the property or list item that holds it.
"""

from __future__ import annotations

import json
from typing import Any, Final

DROP: Final = object()  # a value the shaped resource must not carry; its property or list item goes


def is_intrinsic(value: Any) -> bool:
    """A CloudFormation function (``Ref``, ``Fn::GetAtt``): passed through for cfn-lint to resolve."""
    return isinstance(value, dict) and len(value) == 1 and next(iter(value)) in ("Ref", "Fn::GetAtt")


def _key(name: str) -> str:
    return name.replace("_", "").lower()


class Shaper:
    """Shapes values by one resource schema (cfn-lint's ``Schema.schema``: ``properties`` and ``definitions``)."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema
        self.dropped: list[str] = []

    def resource(self, properties: dict[str, Any]) -> dict[str, Any]:
        shaped = self._object(self.schema, properties, "")
        return shaped if isinstance(shaped, dict) else {}

    def _resolve(self, node: dict[str, Any]) -> dict[str, Any]:
        seen = 0
        while "$ref" in node and seen < 16:  # definitions may point at definitions; never loop forever
            ref = str(node["$ref"])
            target = (
                self.schema.get("definitions", {}).get(ref.rsplit("/", 1)[-1])
                if ref.startswith("#/definitions/")
                else None
            )
            if not isinstance(target, dict):
                return {}
            node, seen = target, seen + 1
        return node

    def shape(self, node: dict[str, Any], value: Any, path: str) -> Any:
        if value is None or value is DROP:
            return DROP
        if is_intrinsic(value):
            return value
        node = self._resolve(node)
        kinds = node.get("type")
        kinds = [kinds] if isinstance(kinds, str) else list(kinds or [])
        if "properties" in node and "object" not in kinds:
            kinds.append("object")
        if "items" in node and "array" not in kinds:
            kinds.append("array")
        if "object" in kinds and (isinstance(value, dict) or (isinstance(value, list) and "array" not in kinds)):
            return self._object(node, value, path)
        if "object" in kinds and isinstance(value, str) and value[:1] == "{" and "string" not in kinds:
            try:
                return self._object(node, json.loads(value), path)
            except json.JSONDecodeError:
                return value
        if "array" in kinds:
            return self._array(node, value, path)
        for kind in kinds:
            scalar = _scalar(kind, value)
            if scalar is not DROP:
                return scalar
        return _raw(value) if not kinds else DROP

    def _object(self, node: dict[str, Any], value: Any, path: str) -> Any:
        if isinstance(value, list):
            if len(value) != 1:
                return DROP
            value = value[0]
        if not isinstance(value, dict):
            return DROP
        properties = node.get("properties")
        if not isinstance(properties, dict):  # a map (labels, dimensions by name): keys are the user's own
            pattern: dict[str, Any] = next(iter((node.get("patternProperties") or {}).values()), {})
            out = {str(k): self.shape(pattern, v, f"{path}{k}.") for k, v in value.items()}
            # A document the schema does not type (a policy) goes whole or not at all: without a statement it
            # would say something else.
            return DROP if any(v is DROP for v in out.values()) else out
        names = {_key(name): name for name in properties}
        shaped: dict[str, Any] = {}
        for key, item in value.items():
            name = names.get(_key(str(key)))
            if name is None:
                self.dropped.append(f"{path}{key}")
                continue
            converted = self.shape(properties[name], item, f"{path}{key}.")
            if converted is not DROP:
                shaped[name] = converted
        return shaped

    def _array(self, node: dict[str, Any], value: Any, path: str) -> Any:
        items = self._resolve(node.get("items") or {})
        if isinstance(value, dict) and not is_intrinsic(value):
            pair = _pair_names(items)
            if pair is not None:
                key, val = pair
                value = [{key: str(k), val: v} for k, v in value.items()]
            else:
                value = [value]
        elif not isinstance(value, list):
            value = [value]
        out = [self.shape(items, item, path) for item in value]
        # A list without the item that could not be placed would be shorter than the program's (an empty list of
        # subnets says something else): it goes whole.
        return DROP if any(item is DROP for item in out) else out


def _raw(value: Any) -> Any:
    """A value the schema does not type (a policy document), as it is, unless it holds a ``DROP`` anywhere."""
    stack = [value]
    while stack:
        item = stack.pop()
        if item is DROP:
            return DROP
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return value


def _pair_names(items: dict[str, Any]) -> tuple[str, str] | None:
    """The key and value members of a list-of-pairs shape (tags, dimensions), if that is what ``items`` is."""
    names = set(items.get("properties") or {})
    for key in ("Key", "Name"):
        if {key, "Value"} <= names:
            return key, "Value"
    return None


def _scalar(kind: str, value: Any) -> Any:
    if kind in ("integer", "number"):
        if isinstance(value, bool):
            return DROP
        try:
            number = float(value)
        except (TypeError, ValueError):
            return DROP
        return int(number) if kind == "integer" or number.is_integer() else number
    if kind == "boolean":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        return DROP
    if kind == "string":
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int | float):
            return str(int(value)) if float(value).is_integer() else str(value)
        if isinstance(value, dict | list):
            return json.dumps(value)
        return value if isinstance(value, str) else DROP
    return DROP
