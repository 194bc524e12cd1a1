"""The series a PromQL query reads: each vector selector's metric name and label matchers.

A tokenizer (whether a rule parses at all is ``rule_expressions``'s, with a real parser) that knows the
grammar's few places where a name is not a metric: function and aggregation calls (``rate(``), the label
lists of ``by``/``without``/``on``/``ignoring``/``group_left``/``group_right``, keywords (``and``, ``or``,
``offset``, ``bool``), durations (``[5m]``, ``offset 1h``) and strings. Grafana's ``label_values(metric,
label)`` variable query is read too: it needs ``label`` on ``metric``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

KEYWORDS = frozenset(
    {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right", "offset", "bool"}
)
# Words that are numbers, not names.
LITERALS = frozenset({"inf", "nan"})
# Keywords followed by a parenthesised list of label names, never of series.
LABEL_LISTS = frozenset({"by", "without", "on", "ignoring", "group_left", "group_right"})
OPERATORS = ("=~", "!~", "!=", "=")

_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<comment>\#[^\n]*)
  | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)
  | (?P<range>\[[^\]]*\])
  | (?P<duration>(?:\d+(?:ms|[smhdwy]))+(?![\w.]))
  | (?P<number>0x[0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<name>[A-Za-z_:][A-Za-z0-9_:]*)
  | (?P<variable>\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>=~|!~|!=|==|<=|>=|[-+*/%^<>=(){},@])
    """,
    re.VERBOSE,
)


class PromQLError(ValueError):
    """A query that cannot be read; the message quotes the query and the place."""


@dataclass(frozen=True)
class Matcher:
    """``label op "value"`` inside a selector's braces."""

    label: str
    op: str
    value: str

    @property
    def templated(self) -> bool:
        """The value holds a Grafana variable (``$pool``): only the dashboard's user fixes it."""
        return "$" in self.value

    def matches(self, value: str) -> bool:
        """Whether a series whose label holds ``value`` (``""`` when absent) is selected, as Prometheus would."""
        if self.op in ("=", "!="):
            return (value == self.value) == (self.op == "=")
        try:
            hit = re.fullmatch(self.value, value) is not None  # Prometheus anchors its regexes
        except re.error:
            return True  # RE2 syntax Python lacks: do not claim a mismatch
        return hit == (self.op == "=~")

    def __str__(self) -> str:
        return f'{self.label}{self.op}"{self.value}"'


@dataclass(frozen=True)
class Selector:
    """One vector selector: a metric name (None for ``{__name__=~...}``) and its matchers."""

    name: str | None
    matchers: tuple[Matcher, ...] = ()

    def __str__(self) -> str:
        inner = ",".join(str(m) for m in self.matchers)
        return f"{self.name or ''}{{{inner}}}" if inner else str(self.name)


@dataclass(frozen=True)
class _Token:
    kind: str
    text: str
    at: int


def _tokens(query: str) -> list[_Token]:
    out: list[_Token] = []
    at = 0
    while at < len(query):
        found = _TOKEN.match(query, at)
        if found is None:
            raise PromQLError(f"cannot read {query!r} at offset {at}: {query[at : at + 20]!r}")
        kind = found.lastgroup or ""
        if kind not in ("space", "comment"):
            out.append(_Token(kind, found.group(), at))
        at = found.end()
    return out


def tokens(query: str) -> list[_Token]:
    """The query's tokens (``kind``, ``text``, offset ``at``), spaces and comments dropped.

    Raises:
        PromQLError: a character no token starts with.
    """
    return _tokens(query)


def _unquote(text: str) -> str:
    body = text[1:-1]
    return body if text[0] == "`" else re.sub(r"\\(.)", r"\1", body)


def _matchers(tokens: list[_Token], i: int, query: str) -> tuple[list[Matcher], int]:
    """The matchers of the braces opening at ``tokens[i]``, and the index after the closing brace."""
    matchers: list[Matcher] = []
    i += 1
    while i < len(tokens) and tokens[i].text != "}":
        if tokens[i].text == ",":
            i += 1
            continue
        label, op, value = tokens[i : i + 3] if i + 3 <= len(tokens) else (tokens[i], tokens[i], tokens[i])
        if label.kind != "name" or op.text not in OPERATORS or value.kind != "string":
            raise PromQLError(f'{query!r}: expected label="value" at offset {label.at}')
        matchers.append(Matcher(label.text, op.text, _unquote(value.text)))
        i += 3
    if i >= len(tokens):
        raise PromQLError(f"{query!r}: unclosed {{")
    return matchers, i + 1


def _skip_group(tokens: list[_Token], i: int, query: str) -> int:
    """The index after the parenthesised group opening at ``tokens[i]``."""
    depth = 0
    for j in range(i, len(tokens)):
        depth += {"(": 1, ")": -1}.get(tokens[j].text, 0)
        if depth == 0:
            return j + 1
    raise PromQLError(f"{query!r}: unclosed ( at offset {tokens[i].at}")


def selectors(query: str) -> list[Selector]:
    """Every vector selector ``query`` reads, in order.

    Raises:
        PromQLError: the query cannot be tokenized or a selector's braces are malformed.
    """
    tokens = _tokens(query)
    out: list[Selector] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        following = tokens[i + 1].text if i + 1 < len(tokens) else ""
        if token.kind == "name" and token.text in LABEL_LISTS and following == "(":
            i = _skip_group(tokens, i + 1, query)
        elif token.kind == "name" and token.text == "label_values" and following == "(":
            out.append(_label_values(tokens, i, query))
            i = _skip_group(tokens, i + 1, query)
        elif token.kind == "name" and (following == "(" or following in ("by", "without")):
            i += 1  # a function or an aggregation (``sum by (le) (...)``): its arguments are read as they come
        elif token.kind == "name" and token.text.lower() not in KEYWORDS | LITERALS:
            matchers: list[Matcher] = []
            i += 1
            if following == "{":
                matchers, i = _matchers(tokens, i, query)
            out.append(Selector(token.text, tuple(matchers)))
        elif token.text == "{":
            matchers, i = _matchers(tokens, i, query)
            names = [m.value for m in matchers if m.label == "__name__" and m.op == "="]
            rest = tuple(m for m in matchers if not (m.label == "__name__" and m.op == "="))
            out.append(Selector(names[0] if names else None, rest))
        else:
            i += 1
    return out


def _label_values(tokens: list[_Token], i: int, query: str) -> Selector:
    """Grafana's ``label_values(metric{...}, label)``: the metric's selector, needing ``label`` set."""
    end = _skip_group(tokens, i + 1, query)
    inner = tokens[i + 2 : end - 1]
    commas = [k for k, t in enumerate(inner) if t.text == ","]
    if not commas or inner[-1].kind != "name":
        raise PromQLError(f"{query!r}: label_values needs (metric, label)")
    head = selectors(query[inner[0].at : inner[commas[-1]].at])
    if len(head) != 1:
        raise PromQLError(f"{query!r}: label_values needs one metric selector")
    label = inner[-1].text
    return Selector(head[0].name, (*head[0].matchers, Matcher(label, "=~", ".+")))
