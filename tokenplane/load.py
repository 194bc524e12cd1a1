"""Load a spec from YAML or JSON, reporting every problem with its file:line:column.

PyYAML's node tree keeps each key's and value's position; pydantic's errors
carry the field path. Joining the two gives messages like::

    stacks/prod.yaml:41:7: pools[2].tensor_parallel: tensor_parallel=3 must divide ...

JSON is parsed by the same YAML parser (JSON is YAML's flow style), so both get
positions.

Whatever the text holds, the loader answers with a ``PlatformSpec`` or a
``SpecLoadError``: characters YAML forbids, scalars YAML cannot read (a bad
``!!float`` or a date like ``2024-13-45``), unknown tags, recursive aliases and
alias bombs are all located issues, never a PyYAML or Python exception.
"""

from __future__ import annotations

import math
import re
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from tokenplane.errors import Issue, SpecLoadError
from tokenplane.model.host_calibration import CalibrationFileError, mismatches, read_calibration
from tokenplane.spec import PlatformSpec
from tokenplane.spec_rules import SpecRuleViolations, check, format_loc

Loc = tuple[str | int, ...]
Position = tuple[int, int]

# Aliases let a small text expand to an exponentially large tree (a "billion laughs" bomb). The largest
# spec we ship expands to about 2,000 values; 100,000 leaves room for any real platform and still walks
# in well under a second, instead of hanging the CLI and exhausting memory.
MAX_VALUES = 100_000
# A spec nests about six levels deep; anything far deeper is a mistake, and bounding it keeps the walk
# (which recurses) well inside Python's recursion limit.
MAX_DEPTH = 64
# Spec integers are counts, sizes and limits; int64 is what Kubernetes, JSON consumers and the planner's
# float arithmetic can carry. Larger ones would overflow those later instead of failing here.
MAX_INT = 2**63 - 1
# Values quoted back in messages are clipped so that one pasted blob cannot bury the other issues.
MAX_QUOTED = 60

# A run of digits this long is a pasted or generated number, not a spec value; messages clip it.
_LONG_NUMBER = re.compile(rf"\d{{{MAX_QUOTED // 2},}}")

# What YAML allows in a stream (YAML 1.1 section 5.1, PyYAML's reader): no C0 controls but tab and
# newlines, no lone surrogates, no U+FFFE/U+FFFF.
_NON_PRINTABLE = re.compile("[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_TAG_PREFIX = "tag:yaml.org,2002:"
_STR_TAG = _TAG_PREFIX + "str"
_MERGE_TAG = _TAG_PREFIX + "merge"  # "<<": SafeLoader merges it before constructing, so it has no constructor
# What YAML counts as a line break, and so what its line numbers count.
_LINE_BREAK = re.compile("\r\n|[\n\r\x85\u2028\u2029]")


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
    return load_spec_text(text, filename=str(path), base_dir=path.parent)


def load_spec_text(text: str, *, filename: str = "<spec>", base_dir: Path | None = None) -> PlatformSpec:
    """Validate spec text; ``filename`` is used in messages, ``base_dir`` (default: the current folder)
    is what the spec's relative paths (``pools[].calibration``) are relative to."""
    data, positions = _parse(text, filename)
    return _validated(data, positions, filename, base_dir)


def validate_spec(data: Any) -> PlatformSpec:
    """Validate a spec given as Python data (a parsed document): its models, then its cross-field rules.

    This is the whole validation ``load_spec`` does, for a spec built in code;
    ``PlatformSpec.model_validate`` alone checks each model but not the rules
    that span them (references, memory fit, residency, DR).

    Raises:
        SpecLoadError: every problem, each with its field path.
    """
    return _validated(data, {}, "<spec>")


def _validated(data: Any, positions: dict[Loc, Position], filename: str, base_dir: Path | None = None) -> PlatformSpec:
    try:
        spec = PlatformSpec.model_validate(data)
        out_of_range = [
            Issue(format_loc(loc), problem, filename, *_locate(loc, positions))
            for loc, problem in _out_of_range(spec, ())
        ]
        if out_of_range:
            raise SpecLoadError(out_of_range)
        check(spec)
        calibrations = _calibration_issues(spec, base_dir or Path.cwd(), positions, filename)
        if calibrations:
            raise SpecLoadError(calibrations)
    except ValidationError as e:
        raise SpecLoadError(_issues(e, positions, filename)) from e
    except SpecRuleViolations as e:
        raise SpecLoadError(
            [
                Issue(format_loc(v.loc), _clip_numbers(v.message), filename, *_locate(v.loc, positions))
                for v in e.violations
            ]
        ) from e
    except ArithmeticError as e:
        # A number too large for the rules' float arithmetic (a quoted "1e400", a 30-digit string) got
        # past the field types; name the numbers that could have done it rather than crash.
        raise SpecLoadError(_overflow_issues(data, positions, filename, e)) from e
    return spec


def _calibration_issues(
    spec: PlatformSpec, base_dir: Path, positions: dict[Loc, Position], filename: str
) -> list[Issue]:
    """Read each pool's calibration file, check it is of the pool's model, release and host, and make its path
    absolute (so that the spec, passed on or copied, still finds it wherever the command runs)."""
    issues: list[Issue] = []
    for index, pool in enumerate(spec.pools):
        if pool.calibration is None:
            continue
        loc: Loc = ("pools", index, "calibration")
        path = Path(pool.calibration).expanduser()
        resolved = path if path.is_absolute() else (base_dir / path)
        where = f"calibration={pool.calibration}" + ("" if path.is_absolute() else f" (in {base_dir.resolve()})")
        try:
            cal = read_calibration(resolved)
        except CalibrationFileError as e:
            issues.append(Issue(format_loc(loc), f"{where}: {e}", filename, *_locate(loc, positions)))
            continue
        for problem in mismatches(spec, pool, cal, where):
            issues.append(Issue(format_loc(loc), problem, filename, *_locate(loc, positions)))
        pool.calibration = str(resolved.resolve())
    return issues


# libyaml's parser is several times faster than the pure-Python one; positions are the same.
_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _SpecLoader(_Loader):  # type: ignore[misc,valid-type]  # _Loader is chosen at import time
    """The safe loader, reading a lone ``=`` as text instead of YAML 1.1's unsupported ``!!value``."""


_SpecLoader.add_constructor(_TAG_PREFIX + "value", _SpecLoader.construct_yaml_str)


def _position(text: str, index: int) -> Position:
    """The 1-based line and column of ``text[index]``, counting lines as YAML does."""
    breaks = list(_LINE_BREAK.finditer(text, 0, index))
    return len(breaks) + 1, index - (breaks[-1].end() if breaks else 0) + 1


def _parse(text: str, filename: str) -> tuple[Any, dict[Loc, Position]]:
    bad = _NON_PRINTABLE.search(text)
    if bad:
        char = bad.group()
        kind = (
            "a lone surrogate (the file was decoded wrongly)" if "\ud800" <= char <= "\udfff" else "a control character"
        )
        raise SpecLoadError(
            [
                Issue(
                    "",
                    f"not valid YAML/JSON: character U+{ord(char):04X} is {kind}, which YAML does not allow; "
                    "delete it (or save the file as UTF-8 text)",
                    filename,
                    *_position(text, bad.start()),
                )
            ]
        )
    try:
        node = yaml.compose(text, Loader=_SpecLoader)
    except yaml.MarkedYAMLError as e:
        raise SpecLoadError([_yaml_issue(e, text, filename)]) from e
    except yaml.YAMLError as e:  # a ReaderError: the checks above should have caught its characters
        raise SpecLoadError([Issue("", f"not valid YAML/JSON: {e}", filename, 1, 1)]) from e
    except RecursionError as e:  # only the pure-Python parser recurses per level; libyaml stops at 1,000
        raise SpecLoadError(
            [
                Issue(
                    "",
                    f"not valid YAML/JSON: nested too deeply (a spec nests under {MAX_DEPTH} levels)",
                    filename,
                    1,
                    1,
                )
            ]
        ) from e
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
    walker = _Walker(_SpecLoader(""), text, filename)
    walker.walk(node, ())
    if walker.issues:
        raise SpecLoadError(walker.issues)
    try:
        data = walker.constructor.construct_document(node)
    except yaml.MarkedYAMLError as e:  # a bad merge key (<<) or an unhashable key: the mark says where
        raise SpecLoadError([_yaml_issue(e, text, filename)]) from e
    positions = walker.positions
    if not isinstance(data, dict):
        raise SpecLoadError(
            [Issue("", f"the top level must be a mapping of sections, got a {type(data).__name__}", filename, 1, 1)]
        )
    return data, positions


def _within(end: Position, line: int, col: int) -> Position:
    """``line:col``, or the end of the last line where a mark lies past it.

    At the end of a text without a final newline, libyaml marks the line after the last (an empty
    value there, or an error at the end); an editor cannot jump there.
    """
    return end if line > end[0] else (line, col)


def _yaml_issue(error: yaml.MarkedYAMLError, text: str, filename: str) -> Issue:
    mark = error.problem_mark or error.context_mark
    line, col = _within(_position(text, len(text)), mark.line + 1, mark.column + 1) if mark else (1, 1)
    problem = error.problem or error.context or "invalid YAML"
    if error.context and error.problem:  # "while constructing a mapping ... found unhashable key"
        problem = f"{error.problem} ({error.context})"
    return Issue("", f"not valid YAML/JSON: {problem}", filename, line, col)


def _short(tag: str) -> str:
    return "!!" + tag.removeprefix(_TAG_PREFIX) if tag.startswith(_TAG_PREFIX) else tag


def _clip(value: object) -> str:
    text = repr(value)
    return text if len(text) <= MAX_QUOTED else f"{text[: MAX_QUOTED - 5]}... ({len(text)} characters)"


def _unreadable(error: Exception) -> str:
    if isinstance(error, KeyError):  # SafeConstructor looks a !!bool up in its table of spellings
        return "not one of true, false, yes, no, on, off"
    if isinstance(error, AttributeError):  # its !!timestamp regex found no match
        return "not a date or time"
    return str(getattr(error, "problem", None) or error)


class _Walker:
    """Walks the node tree once: records positions, and checks what YAML itself lets through."""

    def __init__(self, constructor: yaml.SafeLoader, text: str, filename: str) -> None:
        self.constructor = constructor
        self.end = _position(text, len(text))  # once: marks past it are clamped to it
        self.filename = filename
        self.positions: dict[Loc, Position] = {}
        self.issues: list[Issue] = []
        self.values = 0
        self._open: set[int] = set()  # ids of the collections being walked: an alias to one is a cycle

    def position(self, node: yaml.Node) -> Position:
        return _within(self.end, node.start_mark.line + 1, node.start_mark.column + 1)

    def issue(self, node: yaml.Node, loc: Loc, message: str) -> None:
        self.issues.append(Issue(format_loc(loc), message, self.filename, *self.position(node)))

    def walk(self, node: yaml.Node, loc: Loc) -> None:
        self.positions.setdefault(loc, self.position(node))
        self.values += 1
        if self.values > MAX_VALUES:
            self.issue(
                node,
                loc,
                f"the spec expands to more than {MAX_VALUES:,} values: aliases (*name) of anchors (&name) that "
                "themselves hold aliases multiply its size; repeat fewer nested aliases",
            )
            raise SpecLoadError(self.issues)
        if node.tag not in type(self.constructor).yaml_constructors:
            self.issue(node, loc, f"unknown tag {_short(node.tag)}; a spec holds plain YAML values, so delete the tag")
            return
        if isinstance(node, yaml.ScalarNode):
            self._scalar(node, loc)
            return
        if id(node) in self._open:
            self.issue(node, loc, "an alias (*name) refers to a value that contains the alias itself, so it never ends")
            return
        if len(loc) >= MAX_DEPTH:
            self.issue(node, loc, f"nested {len(loc)} levels deep; a spec nests only a few levels, so flatten it")
            return
        self._open.add(id(node))
        if isinstance(node, yaml.MappingNode):
            self._mapping(node, loc)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                self.walk(item, (*loc, i))
        self._open.discard(id(node))

    def _mapping(self, node: yaml.MappingNode, loc: Loc) -> None:
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            line, column = self.position(key_node)
            if not isinstance(key_node, yaml.ScalarNode):
                self.issue(
                    key_node, loc, "a key must be a plain name, not a list or mapping; quote it or fix the indentation"
                )
                continue
            key = str(key_node.value)
            if key_node.tag not in (_STR_TAG, _MERGE_TAG) and not self._key_readable(key_node, (*loc, key)):
                continue
            if key in seen:
                self.issues.append(
                    Issue(
                        format_loc((*loc, key)),
                        f"key {_clip(key)} appears twice (first on line {seen[key]}); "
                        "YAML keeps only the last, so delete one",
                        self.filename,
                        line,
                        column,
                    )
                )
            seen[key] = line
            # A key's own position is where a reader looks for an unknown or misspelt key.
            self.positions[(*loc, key)] = (line, column)
            self.walk(value_node, (*loc, key))

    def _key_readable(self, node: yaml.ScalarNode, loc: Loc) -> bool:
        """A key YAML resolved or was told to read as something else than text: checked as a value is."""
        before = len(self.issues)
        if node.tag not in type(self.constructor).yaml_constructors:
            self.issue(node, loc, f"unknown tag {_short(node.tag)} on a key; a key is a plain name, so delete the tag")
        else:
            self._scalar(node, loc)
        return len(self.issues) == before

    def _scalar(self, node: yaml.ScalarNode, loc: Loc) -> None:
        """Construct the scalar now, so that a value YAML cannot read is reported at its field."""
        kind = _short(node.tag)
        try:
            value = self.constructor.construct_object(node)
        # PyYAML's scalar constructors raise these bare, without a position: a date like 2024-13-45
        # (ValueError), !!bool maybe (KeyError), an empty !!float (IndexError), !!timestamp soon
        # (AttributeError), bad !!binary.
        except (yaml.YAMLError, ValueError, KeyError, IndexError, AttributeError, TypeError, OverflowError) as e:
            fix = (
                "quote it if it is text, or write a real date as YYYY-MM-DD"
                if kind == "!!timestamp"
                else f"write a valid {kind.removeprefix('!!')} or quote the value to keep it as text"
            )
            reason = _unreadable(e)
            self.issue(node, loc, f"{_clip(node.value)} cannot be read as YAML {kind} ({reason}); {fix}")
            return
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT:
            self.issue(
                node,
                loc,
                f"integer {_clip(value)} is out of range; spec integers lie within +-{MAX_INT:,} (2**63 - 1)",
            )
        elif isinstance(value, float) and not math.isfinite(value):
            self.issue(node, loc, f"must be a finite number (got {_clip(node.value)}); write a number")


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
        line, col = _locate(loc, positions)
        issues.append(Issue(format_loc(loc), _clip_numbers(_message(err, loc)), filename, line, col))
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
    if isinstance(value, str) and len(value) > MAX_QUOTED:  # e.g. "unknown GPU '<a pasted blob>'"
        msg = msg.replace(repr(value), _clip(value)).replace(value, _clip(value))
    if isinstance(value, (str, int, float, bool)) and kind not in ("value_error", "assertion_error"):
        return f"{msg} (got {_clip(value)})"
    return msg


def _out_of_range(value: Any, loc: Loc) -> Iterator[tuple[Loc, str]]:
    """Numbers in a validated spec that the YAML checks could not see: those written as quoted text
    ("nan", "1e400", a 30-digit string), which pydantic reads as numbers."""
    if isinstance(value, float) and not math.isfinite(value):
        yield loc, f"must be a finite number (got {value!r}); write a number"
    elif isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT:
        yield loc, f"{_clip(value)} is out of range; spec integers lie within +-{MAX_INT:,} (2**63 - 1)"
    elif isinstance(value, BaseModel):
        for name in type(value).model_fields:
            yield from _out_of_range(getattr(value, name), (*loc, name))
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _out_of_range(item, (*loc, str(key)))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _out_of_range(item, (*loc, i))


def _clip_numbers(message: str) -> str:
    return _LONG_NUMBER.sub(lambda m: f"{m.group()[:12]}...({len(m.group())} digits)", message)


def _overflow_issues(data: Any, positions: dict[Loc, Position], filename: str, error: ArithmeticError) -> list[Issue]:
    """Issues for the numbers in ``data`` too large to compute with, after ``error`` stopped the rules."""
    issues = [
        Issue(
            format_loc(loc),
            f"{_clip(value)} is too large to compute with ({error}); use a number within +-{MAX_INT:,}",
            filename,
            *_locate(loc, positions),
        )
        for loc, value in _leaves(data, ())
        if _too_large(value)
    ]
    return issues or [
        Issue("", f"a number in the spec is too large to compute with ({error}); look for huge values", filename, 1, 1)
    ]


def _leaves(value: Any, loc: Loc) -> Iterator[tuple[Loc, Any]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, (*loc, str(key)))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _leaves(item, (*loc, i))
    else:
        yield loc, value


def _too_large(value: Any) -> bool:
    if isinstance(value, str):
        try:
            value = float(value.replace("_", ""))
        except ValueError:
            return False
    return isinstance(value, (int, float)) and not isinstance(value, bool) and not abs(value) <= MAX_INT


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
