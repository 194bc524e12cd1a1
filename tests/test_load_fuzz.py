"""Fuzzing the loader: whatever the text, it returns a spec or a located ``SpecLoadError``, never a crash.

The property tests mutate the shipped specs (``stacks/dev.yaml``, ``stacks/byteion.yaml``,
``stacks/minimal.yaml``) at two levels: the parsed data (a key deleted or renamed, a value
swapped for one of another type, numbers out of range, list entries duplicated) and the raw
text (truncation, stray characters, swapped or re-indented lines, duplicated keys, tags,
anchors and aliases). Each example is counted; the last test checks that every property ran
its planned number of cases and writes the counts to ``tests/.fuzz_counts.json``.

The regression tests below them reproduce, input for input, each weakness the fuzzing found
in ``tokenplane/load.py`` before it was fixed.
"""

from __future__ import annotations

import copy
import json
import math
import os
import re
from collections import Counter
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.paths import REPO_ROOT
from tokenplane.errors import SpecLoadError
from tokenplane.load import MAX_VALUES, load_spec_text
from tokenplane.spec import PlatformSpec

# Slow tier: fuzzes the loader with hypothesis.
pytestmark = pytest.mark.slow

ROOT = REPO_ROOT
SPEC_NAMES = ("dev", "byteion", "minimal")
TEXTS = {name: (ROOT / "stacks" / f"{name}.yaml").read_text(encoding="utf-8") for name in SPEC_NAMES}
DATA = {name: yaml.safe_load(text) for name, text in TEXTS.items()}
COUNTS_FILE = ROOT / "tests" / ".fuzz_counts.json"

# The longest message the loader writes is the memory-fit explanation (about 600 characters); anything
# far beyond that means a value was quoted back unclipped.
MAX_MESSAGE = 1200
# A repr of an object rather than a value: "<yaml.nodes.ScalarNode object at 0x7f...>", "ScalarNode(tag=".
# YAML's line breaks: its line numbers count these, not only "\n".
LINE_BREAK = re.compile("\r\n|[\n\r\x85\u2028\u2029]")
OBJECT_REPR = re.compile(r"<[\w.]+ object at 0x[0-9a-f]+>|\b(Scalar|Mapping|Sequence)Node\(")

# Examples per property, sized so that the file runs in well under 40 s on two cores; ``make bench``
# (benchmarks/fuzz.py) runs it at TOKENPLANE_FUZZ_SCALE times as many and records the counts.
SCALE = float(os.environ.get("TOKENPLANE_FUZZ_SCALE", "1"))
PLAN = {
    name: max(1, round(n * SCALE))
    for name, n in {"data_mutations": 700, "text_mutations": 700, "alias_graphs": 60}.items()
}
CASES: Counter[str] = Counter()


def fuzz(name: str) -> settings:
    """Settings for one property: its planned number of examples, no per-example deadline."""
    return settings(
        max_examples=PLAN[name],
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


def check_outcome(text: str, filename: str) -> PlatformSpec | SpecLoadError:
    """Load ``text``; any exception but ``SpecLoadError`` propagates and fails the property."""
    try:
        return load_spec_text(text, filename=filename)
    except SpecLoadError as error:
        assert_well_reported(error, text, filename)
        return error


def assert_well_reported(error: SpecLoadError, text: str, filename: str) -> None:
    assert error.issues, "a SpecLoadError must carry at least one issue"
    lines = len(LINE_BREAK.findall(text)) + 1
    for issue in error.issues:
        # load_spec_text always has text, so every issue has a line: even a missing top-level section is
        # placed at 1:1 (the document's start). Only load_spec's unreadable-file issues have none.
        assert issue.file == filename, issue
        assert issue.line is not None, f"unlocated issue: {issue}"
        assert 1 <= issue.line <= lines, f"line {issue.line} outside the {lines}-line text: {issue}"
        assert issue.column is not None
        assert issue.column >= 1, issue
        assert issue.message.strip(), f"empty message: {issue}"
        assert issue.path or len(issue.message) > 20, f"an issue without a path must explain itself: {issue}"
        assert len(issue.message) <= MAX_MESSAGE, f"message of {len(issue.message)} characters: {issue.message[:200]}"
    rendered = str(error)
    assert "Traceback" not in rendered
    assert not OBJECT_REPR.search(rendered), rendered[:500]


# --- data-level mutations ---------------------------------------------------------------------

Path_ = tuple[str | int, ...]


def paths(value: Any, here: Path_ = ()) -> list[Path_]:
    """Every path into ``value``: each mapping key and list index, at every depth."""
    found: list[Path_] = []
    if isinstance(value, dict):
        for key, item in value.items():
            found.append((*here, key))
            found.extend(paths(item, (*here, key)))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found.append((*here, i))
            found.extend(paths(item, (*here, i)))
    return found


def parent_of(data: Any, path: Path_) -> Any:
    for part in path[:-1]:
        data = data[part]
    return data


SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(10**400), max_value=10**400),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, -1, 1, 2**31, 2**63, -(2**63) - 1, 10**30, 1e308, -1e-308, 0.5, 1.0000001]),
    st.text(max_size=20),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=200),
    st.sampled_from(["", " ", "nan", "inf", "-inf", "1e400", "9" * 400, "H100", "A", "eu-west-1", "é" * 50]),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=8,
)


def plain_number(value: Any) -> bool:
    """A finite int or float small enough to scale, not a bool."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) < 1e300


def numeric_variants(value: float) -> st.SearchStrategy[Any]:
    return st.sampled_from(
        [-value, 0, value * 10**6, value + 1e-9, int(value) * 10**25, math.nan, math.inf, -math.inf, str(value)]
    )


def typo(key: str) -> st.SearchStrategy[str]:
    return st.one_of(
        st.just(key.upper()),
        st.just(key[:-1] or "x"),
        st.just(key + "s"),
        st.just(key.replace("_", "-")),
        st.just(" " + key),
        st.text(min_size=1, max_size=12),
    )


@st.composite
def mutated_data(draw: st.DrawFn) -> tuple[str, Any]:
    name = draw(st.sampled_from(SPEC_NAMES))
    data = copy.deepcopy(DATA[name])
    for _ in range(draw(st.integers(1, 3))):
        candidates = paths(data)
        if not candidates:
            break
        path = draw(st.sampled_from(candidates))
        parent, last = parent_of(data, path), path[-1]
        current = parent[last]
        kind = draw(st.sampled_from(["delete", "replace", "numbers", "duplicate", "rename"]))
        if kind == "delete":
            del parent[last]
        elif kind == "replace":
            parent[last] = draw(VALUES)
        elif kind == "numbers" and plain_number(current):
            parent[last] = draw(numeric_variants(float(current)))
        elif kind == "duplicate" and isinstance(current, list) and current:
            current.append(copy.deepcopy(draw(st.sampled_from(current))))
        elif kind == "rename" and isinstance(parent, dict):
            new = draw(typo(str(last)))
            parent[new] = parent.pop(last)
        else:
            parent[last] = draw(SCALARS)
    return name, data


@given(case=mutated_data(), as_json=st.booleans())
@fuzz("data_mutations")
def test_mutated_spec_data_loads_or_is_rejected_with_located_issues(case: tuple[str, Any], as_json: bool) -> None:
    CASES["data_mutations"] += 1
    name, data = case
    text = json.dumps(data, indent=1) if as_json else yaml.safe_dump(data, allow_unicode=True, sort_keys=False)
    check_outcome(text, f"stacks/{name}.{'json' if as_json else 'yaml'}")


# --- text-level mutations ---------------------------------------------------------------------

YAML_BITS = st.sampled_from(
    [
        ":", ": ", "-", "- ", "[", "]", "{", "}", ",", "#", "&", "*", "!", "|", ">", "?", "%", "@", "`", '"', "'",
        "\t", " ", "  ", "\n", "\r\n", "---\n", "...\n", "<<: ", "!!float ", "!!int ", "!!bool ", "!!timestamp ",
        "!!binary ", "!!set ", "!!omap ", "!!python/object:os.system ", "!custom ", "&a ", "*a", "*nowhere",
        "~", "=", "0x", "1e400", ".nan", ".inf", "-.inf", "2024-13-45", "9" * 30, "\x00", "\x07", "\x1b",
        "\ud800", "\ufeff", "\u2028", "\x85", "é",
    ]
)  # fmt: skip
INSERTS = st.one_of(YAML_BITS, st.text(max_size=6), st.text(alphabet=st.characters(codec=None), max_size=3))


@st.composite
def mutated_text(draw: st.DrawFn) -> tuple[str, str]:
    name = draw(st.sampled_from(SPEC_NAMES))
    text = TEXTS[name]
    for _ in range(draw(st.integers(1, 4))):
        lines = text.split("\n")
        at = draw(st.integers(0, max(0, len(text))))
        line = draw(st.integers(0, len(lines) - 1))
        kind = draw(
            st.sampled_from(
                ["truncate", "insert", "delete", "swap", "duplicate", "indent", "tab", "anchor", "tag", "replace"]
            )
        )
        if kind == "truncate":
            text = text[:at]
        elif kind == "insert":
            text = text[:at] + draw(INSERTS) + text[at:]
        elif kind == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 40)) :]
        elif kind == "swap":
            other = draw(st.integers(0, len(lines) - 1))
            lines[line], lines[other] = lines[other], lines[line]
            text = "\n".join(lines)
        elif kind == "duplicate":  # a repeated "key: value" line is a duplicate key
            lines.insert(line, lines[line])
            text = "\n".join(lines)
        elif kind == "indent":
            shift = draw(st.integers(-4, 4))
            lines[line] = " " * shift + lines[line] if shift >= 0 else lines[line][-shift:]
            text = "\n".join(lines)
        elif kind == "tab":
            lines[line] = lines[line].replace("  ", "\t", draw(st.integers(1, 3)))
            text = "\n".join(lines)
        elif kind == "anchor":  # anchor one value and alias it from another line
            source, target = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
            if ": " in lines[source] and ": " in lines[target]:
                lines[source] = lines[source].replace(": ", ": &x ", 1)
                key = lines[target].split(": ", 1)[0]
                lines[target] = f"{key}: *x"
            text = "\n".join(lines)
        elif kind == "tag":
            if ": " in lines[line]:
                key, value = lines[line].split(": ", 1)
                lines[line] = f"{key}: {draw(YAML_BITS)}{value}"
            text = "\n".join(lines)
        else:  # replace a value with a random one, keeping the key
            if ": " in lines[line]:
                key = lines[line].split(": ", 1)[0]
                lines[line] = f"{key}: {draw(INSERTS)}"
            text = "\n".join(lines)
    return name, text


@given(case=mutated_text())
@fuzz("text_mutations")
def test_mutated_spec_text_loads_or_is_rejected_with_located_issues(case: tuple[str, str]) -> None:
    CASES["text_mutations"] += 1
    name, text = case
    check_outcome(text, f"stacks/{name}.yaml")


@st.composite
def alias_graphs(draw: st.DrawFn) -> str:
    """Anchors whose values alias earlier anchors: from harmless reuse up to exponential bombs."""
    levels = draw(st.integers(1, 12))
    fanout = draw(st.integers(1, 12))
    flow = draw(st.booleans())
    lines = [f"l0: &l0 [{', '.join(['lol'] * fanout)}]"]
    for i in range(1, levels):
        refs = [f"*l{draw(st.integers(0, i - 1))}" for _ in range(fanout)]
        lines.append(
            f"l{i}: &l{i} [{', '.join(refs)}]" if flow else f"l{i}: &l{i}\n" + "".join(f"  - {r}\n" for r in refs)
        )
    where = draw(st.sampled_from(["top", "pool-classes", "tenants"]))
    body = TEXTS["minimal"]
    top = levels - 1
    if where == "pool-classes":
        body = body.replace("    classes: [A]", f"    classes: *l{top}")
    elif where == "tenants":
        body += f"tenants: *l{top}\n"
    return "\n".join(lines) + "\n" + body


@given(text=alias_graphs())
@fuzz("alias_graphs")
def test_alias_graphs_are_loaded_bounded_or_rejected(text: str) -> None:
    # No clock here (machines are shared): a bomb that escaped MAX_VALUES would hang this test for minutes.
    CASES["alias_graphs"] += 1
    check_outcome(text, "stacks/aliases.yaml")


# --- regressions: each input below crashed, hung or was accepted before the fix in load.py ------

MINIMAL = TEXTS["minimal"]


def rejected(text: str, filename: str = "stacks/test.yaml") -> SpecLoadError:
    with pytest.raises(SpecLoadError) as info:
        load_spec_text(text, filename=filename)
    assert_well_reported(info.value, text, filename)
    return info.value


def line_of(text: str, fragment: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if fragment in line)


@pytest.mark.parametrize(
    ("char", "what"),
    [("\x07", "U+0007 is a control character"), ("\x00", "U+0000 is a control character"),
     ("\ud800", "U+D800 is a lone surrogate")],
)  # fmt: skip
def test_a_character_yaml_forbids_is_reported_at_its_line_and_column(char: str, what: str) -> None:
    # Was: yaml.reader.ReaderError (control characters) and UnicodeEncodeError (surrogates), uncaught.
    text = MINIMAL.replace("  name: minimal", f"  name: min{char}imal")
    [issue] = rejected(text).issues
    assert (issue.line, issue.column) == (line_of(text, "name: min"), 12)
    assert what in issue.message
    assert "delete it" in issue.message


def test_an_impossible_date_is_reported_at_its_field_with_the_fix() -> None:
    # Was: ValueError("month must be in 1..12") from PyYAML's timestamp constructor.
    text = MINIMAL.replace("cloud_region: us-east-1", "cloud_region: 2024-13-45")
    [issue] = rejected(text).issues
    assert (issue.path, issue.line) == ("regions[0].cloud_region", line_of(text, "2024-13-45"))
    assert "'2024-13-45' cannot be read as YAML !!timestamp (month must be in 1..12)" in issue.message
    assert "quote it if it is text" in issue.message


@pytest.mark.parametrize(
    ("tagged", "reason"),
    [
        ("!!float abc", "could not convert string to float"),  # was ValueError
        ("!!int abc", "invalid literal for int()"),  # was ValueError
        ("!!bool abc", "not one of true, false, yes, no, on, off"),  # was KeyError
        ("!!timestamp abc", "not a date or time"),  # was AttributeError
    ],
)
def test_an_explicitly_tagged_scalar_yaml_cannot_read_is_reported_at_its_field(tagged: str, reason: str) -> None:
    text = MINIMAL.replace("peak_rps: 5", f"peak_rps: {tagged}")
    [issue] = rejected(text).issues
    assert (issue.path, issue.line, issue.column) == ("platform.peak_rps", line_of(text, tagged), 13)
    assert reason in issue.message


@pytest.mark.parametrize(
    ("tagged", "reason"),
    [
        ("!!float peak_rps", "cannot be read as YAML !!float"),  # was ValueError: found by the 8x fuzz run
        ("!!int peak_rps", "cannot be read as YAML !!int"),  # was ValueError
        ("!custom peak_rps", "unknown tag !custom on a key"),  # was ConstructorError
    ],
)
def test_a_tagged_key_yaml_cannot_read_is_reported_at_the_key(tagged: str, reason: str) -> None:
    text = MINIMAL.replace("peak_rps: 5", f"{tagged}: 5")
    [issue] = rejected(text).issues
    assert (issue.path, issue.line, issue.column) == ("platform.peak_rps", line_of(text, tagged), 3)
    assert reason in issue.message


@pytest.mark.parametrize("tag", ["!!python/name:os.system", "!custom", "!!python/object:os.system"])
def test_an_unknown_tag_is_reported_at_its_field(tag: str) -> None:
    # Was: yaml.constructor.ConstructorError, uncaught (the document was constructed outside the try).
    text = MINIMAL.replace("peak_rps: 5", f"peak_rps: {tag} 5")
    [issue] = rejected(text).issues
    assert issue.path == "platform.peak_rps"
    assert f"unknown tag {tag.replace('!custom', '!custom')}" in issue.message
    assert "delete the tag" in issue.message


def test_a_merge_key_of_a_scalar_is_reported_where_the_merge_is() -> None:
    # Was: ConstructorError "expected a mapping or list of mappings for merging", uncaught.
    text = MINIMAL.replace("  peak_rps: 5", "  <<: 1")
    [issue] = rejected(text).issues
    assert issue.line == line_of(text, "<<: 1")
    assert "expected a mapping or list of mappings for merging" in issue.message


def test_a_list_used_as_a_key_is_reported_at_the_key() -> None:
    # Was: ConstructorError "found unhashable key", uncaught.
    text = MINIMAL + "? [1]\n: 2\n"
    [issue] = rejected(text).issues
    assert issue.line == line_of(text, "? [1]")
    assert "a key must be a plain name, not a list or mapping" in issue.message


@pytest.mark.parametrize("cycle", ["x: &a [*a]\n", "x: &a {y: *a}\n", "x: &a\n  - [1, *a]\n"])
def test_a_recursive_alias_is_reported_not_recursed_into(cycle: str) -> None:
    # Was: RecursionError from the position walk.
    text = MINIMAL + cycle
    issues = rejected(text).issues
    assert any("refers to a value that contains the alias itself" in i.message for i in issues)


def test_a_billion_laughs_alias_bomb_is_rejected_at_the_value_bound() -> None:
    # Was: a hang; nine levels of nine aliases walk 9**10 nodes.
    bomb = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
        f"{b}: &{b} [{', '.join([f'*{a}'] * 9)}]\n" for a, b in zip("abcdefghi", "bcdefghij", strict=True)
    )
    [issue] = rejected(bomb + MINIMAL).issues
    assert f"the spec expands to more than {MAX_VALUES:,} values" in issue.message
    assert issue.line is not None


def test_modest_alias_reuse_still_loads() -> None:
    text = MINIMAL.replace("  mix: {small: 1.0}", "  mix: &mix {small: 1.0}") + "  # reuse\n"
    text = text.replace("    classes: [A]", "    classes: &classes [A]")
    assert "\ntenants:\n" in text
    text += "".join(  # minimal.yaml ends with its tenants list: these 50 extend it
        f"  - {{name: t{i}, rpm: 10, tpm: 100, api_key_secret: 'env://K{i}', allowed_tiers: [small]}}\n"
        for i in range(50)
    )
    spec = load_spec_text(text)
    assert isinstance(spec, PlatformSpec) and len(spec.tenants) == 51


def test_an_integer_too_large_for_the_rules_is_reported_at_its_field() -> None:
    # Was: OverflowError("int too large to convert to float") from the memory-fit rule.
    text = MINIMAL.replace("    classes: [A]", "    classes: [A]\n    engine: {max_model_len: " + "9" * 400 + "}")
    [issue] = rejected(text).issues
    assert issue.path == "pools[0].engine.max_model_len"
    assert "is out of range; spec integers lie within" in issue.message
    assert "(400 characters)" in issue.message  # the value is clipped, not quoted in full


def test_a_quoted_number_too_large_for_the_rules_is_reported_at_its_field() -> None:
    # Was: OverflowError: pydantic reads the string as an int, then the rules convert it to float. The
    # range check runs before the rules, so a quoted number gets the same answer as a bare one.
    text = MINIMAL.replace("    classes: [A]", "    classes: [A]\n    engine: {max_model_len: '" + "9" * 400 + "'}")
    issues = rejected(text).issues
    assert [i.path for i in issues] == ["pools[0].engine.max_model_len"]
    assert "is out of range; spec integers lie within" in issues[0].message


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf", "nan", "'inf'", "1e400"])
def test_a_non_finite_number_is_rejected_at_its_field(value: str) -> None:
    # Was: accepted; a NaN price passes "price <= 0" and poisons every cost the planner computes.
    text = MINIMAL.replace("budget:\n", f"pricing:\n  instances: {{g6.xlarge: {value}}}\nbudget:\n")
    [issue] = rejected(text).issues
    assert issue.path == "pricing.instances.g6.xlarge"
    assert issue.line == line_of(text, "g6.xlarge")
    assert "finite number" in issue.message  # the loader's own words, or pydantic's (allow_inf_nan=False)


def test_a_lone_equals_sign_is_read_as_text() -> None:
    # Was: ConstructorError for YAML 1.1's !!value tag, which the safe loader resolves but cannot build.
    text = MINIMAL.replace("gpu: L4", "gpu: =")
    [issue] = rejected(text).issues
    assert issue.path == "pools[0].gpu"
    assert "unknown GPU '='" in issue.message


def test_a_huge_value_is_clipped_in_the_message() -> None:
    # Was: a 100,000-character message quoting the whole value back.
    text = MINIMAL.replace("gpu: L4", "gpu: " + "x" * 100_000)
    [issue] = rejected(text).issues
    assert len(issue.message) < 300
    assert "(100002 characters)" in issue.message


def test_nesting_far_deeper_than_a_spec_is_reported() -> None:
    text = MINIMAL + "x: " + "[" * 200 + "]" * 200 + "\n"
    [issue] = rejected(text).issues
    assert "levels deep" in issue.message or "nesting depth" in issue.message


@pytest.mark.parametrize("tagged", ["!!float ''", "!!int ''"])
def test_an_empty_tagged_number_is_reported_at_its_field(tagged: str) -> None:
    # Was: IndexError ("string index out of range") from PyYAML's float and int constructors.
    text = MINIMAL.replace("peak_rps: 5", f"peak_rps: {tagged}")
    [issue] = rejected(text).issues
    assert issue.path == "platform.peak_rps"
    assert "cannot be read as YAML" in issue.message


def test_an_error_at_the_end_of_a_text_without_a_newline_is_placed_on_the_last_line() -> None:
    # Was: line 39 of a 38-line text; libyaml marks the end of the stream on the line after the last.
    text = MINIMAL.rstrip("\n") + "\nm"
    [issue] = rejected(text).issues
    assert (issue.line, issue.column) == (len(text.splitlines()), 2)
    assert "could not find expected ':'" in issue.message


def test_lines_are_counted_as_yaml_counts_them() -> None:
    text = MINIMAL.replace("  name: minimal\n", "  name: minimal\u2028\n").replace("gpu: L4", "gpu: H1000")
    [issue] = rejected(text).issues
    assert issue.line == line_of(MINIMAL, "gpu: L4") + 1  # U+2028 is a line break to YAML


def test_a_quoted_huge_number_is_clipped_before_the_rules_see_it() -> None:
    # Was: a 1,341-character message repeating a 400-digit token count (read by pydantic from a string).
    text = MINIMAL.replace("prompt_tokens: {min: 50, max: 1000}", "prompt_tokens: {min: 50, max: '" + "9" * 400 + "'}")
    issues = rejected(text).issues
    assert [i.path for i in issues] == ["workload_classes.A.prompt_tokens.max"]
    assert all(len(i.message) < 400 for i in issues)
    assert "(400 characters) is out of range" in issues[0].message


# --- the counts the closing note quotes -------------------------------------------------------


def test_zz_every_property_ran_its_planned_cases() -> None:
    """Runs last (file order): checks the counts and writes them for the lead's closing note."""
    if set(CASES) != set(PLAN):
        pytest.skip(f"only {sorted(CASES)} of the properties ran in this session")
    for name, planned in PLAN.items():
        assert CASES[name] >= planned, f"{name}: {CASES[name]} cases, planned {planned}"
    counts = json.loads(COUNTS_FILE.read_text(encoding="utf-8")) if COUNTS_FILE.exists() else {}
    counts["load"] = {"cases": dict(CASES), "total": sum(CASES.values()), "crashes": 0}
    COUNTS_FILE.write_text(json.dumps(counts, indent=2) + "\n", encoding="utf-8")
