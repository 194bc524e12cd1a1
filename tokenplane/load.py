"""Load a spec from YAML or JSON, reporting every problem with its file:line:column.

PyYAML's node tree keeps each key's and value's position; pydantic's errors
carry the field path. Joining the two gives messages like::

    stacks/prod.yaml:41:7: pools[2].tensor_parallel: tensor_parallel=3 must divide ...

JSON is parsed by the same YAML parser (JSON is YAML's flow style), so both get
positions.
"""

from __future__ import annotations

import types
import typing
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from tokenplane.errors import Issue, SpecLoadError
from tokenplane.spec import PlatformSpec
from tokenplane.spec_rules import SpecRuleViolations, format_loc

Loc = tuple[str | int, ...]
Position = tuple[int, int]


def load_spec(path: str | Path) -> PlatformSpec:
    """Read and validate a spec file.

    Raises:
        SpecLoadError: the file is missing, unparsable or invalid; ``issues``
            lists every problem with its position.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as e:
        raise SpecLoadError(
            [Issue("", "no such file; pass the path of a spec, e.g. stacks/dev.yaml", str(path))]
        ) from e
    except (OSError, UnicodeDecodeError) as e:
        raise SpecLoadError([Issue("", f"cannot read: {e}", str(path))]) from e
    return load_spec_text(text, filename=str(path))


def load_spec_text(text: str, *, filename: str = "<spec>") -> PlatformSpec:
    """Validate spec text; ``filename`` is only used in messages."""
    data, positions = _parse(text, filename)
    try:
        return PlatformSpec.model_validate(data)
    except ValidationError as e:
        raise SpecLoadError(_issues(e, positions, filename)) from e


# libyaml's parser is several times faster than the pure-Python one; positions are the same.
_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _parse(text: str, filename: str) -> tuple[Any, dict[Loc, Position]]:
    try:
        node = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (None, None)
        problem = e.problem or e.context or "invalid YAML"
        raise SpecLoadError([Issue("", f"not valid YAML/JSON: {problem}", filename, line, col)]) from e
    if node is None:
        raise SpecLoadError(
            [
                Issue(
                    "",
                    "the file is empty; a spec needs at least platform, budget, regions, "
                    "models, pools, workload_classes and routing",
                    filename,
                    1,
                    1,
                )
            ]
        )
    positions: dict[Loc, Position] = {}
    duplicates: list[Issue] = []
    _walk(node, (), positions, duplicates, filename)
    if duplicates:
        raise SpecLoadError(duplicates)
    data = _Loader(text).construct_document(node)
    if not isinstance(data, dict):
        raise SpecLoadError(
            [Issue("", f"the top level must be a mapping of sections, got a {type(data).__name__}", filename, 1, 1)]
        )
    return data, positions


def _walk(node: yaml.Node, loc: Loc, positions: dict[Loc, Position], issues: list[Issue], filename: str) -> None:
    positions.setdefault(loc, (node.start_mark.line + 1, node.start_mark.column + 1))
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = str(key_node.value)
            line = key_node.start_mark.line + 1
            if key in seen:
                issues.append(
                    Issue(
                        format_loc((*loc, key)),
                        f"key {key!r} appears twice (first on line {seen[key]}); "
                        "YAML keeps only the last, so delete one",
                        filename,
                        line,
                        key_node.start_mark.column + 1,
                    )
                )
            seen[key] = line
            # A key's own position is where a reader looks for an unknown or misspelt key.
            positions[(*loc, key)] = (line, key_node.start_mark.column + 1)
            _walk(value_node, (*loc, key), positions, issues, filename)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _walk(item, (*loc, i), positions, issues, filename)


def _locate(loc: Loc, positions: dict[Loc, Position]) -> Position | tuple[None, None]:
    for end in range(len(loc), -1, -1):
        found = positions.get(loc[:end])
        if found:
            return found
    return (None, None)


def _issues(error: ValidationError, positions: dict[Loc, Position], filename: str) -> list[Issue]:
    issues: list[Issue] = []
    for err in error.errors(include_url=False):
        loc: Loc = tuple(err["loc"])
        cause = (err.get("ctx") or {}).get("error")
        if isinstance(cause, SpecRuleViolations):
            for v in cause.violations:
                full = (*loc, *v.loc)
                line, col = _locate(full, positions)
                issues.append(Issue(format_loc(full), v.message, filename, line, col))
            continue
        line, col = _locate(loc, positions)
        issues.append(Issue(format_loc(loc), _message(err, loc), filename, line, col))
    return issues


def _message(err: Any, loc: Loc) -> str:
    kind = err["type"]
    msg = str(err["msg"]).removeprefix("Value error, ")
    if kind == "extra_forbidden":
        allowed = _fields_at(loc[:-1])
        hint = f"; allowed here: {', '.join(allowed)}" if allowed else ""
        return f"unknown field {loc[-1]!r}{hint}"
    if kind == "missing":
        return "required field is missing"
    value = err.get("input")
    if isinstance(value, (str, int, float, bool)) and kind not in ("value_error", "assertion_error"):
        return f"{msg} (got {value!r})"
    return msg


def _fields_at(loc: Loc) -> list[str]:
    """Field names of the model at ``loc`` in the spec, for 'allowed here' hints."""
    model: Any = PlatformSpec
    keyed = False  # the previous step was a list or dict: this part is an index or key
    for part in loc:
        if keyed:
            keyed = False
            continue
        if not (isinstance(model, type) and issubclass(model, BaseModel)) or part not in model.model_fields:
            return []
        annotation = model.model_fields[str(part)].annotation
        keyed = _is_container(annotation)
        model = _unwrap(annotation)
    if isinstance(model, type) and issubclass(model, BaseModel):
        return sorted(model.model_fields)
    return []


def _is_container(annotation: Any) -> bool:
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType, typing.Annotated) and args:
        return _is_container(args[0])
    return origin in (list, dict)


def _unwrap(annotation: Any) -> Any:
    """Reduce ``list[X]``, ``dict[K, X]``, ``X | None`` and ``Annotated[X, ...]`` to ``X``."""
    while True:
        origin = typing.get_origin(annotation)
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if origin in (list, dict, typing.Annotated, typing.Union, types.UnionType) and args:
            annotation = args[-1] if origin is dict else args[0]
        else:
            return annotation
