"""A KEDA Prometheus trigger's query returns at most one element.

KEDA's Prometheus scaler runs the query as an instant query and reads ``data.result``: zero elements are "target may
be lost" (or 0 with ``ignoreNullValues``), one is the metric, and more than one fails the poll with "prometheus query
... returned multiple elements" (kedacore/keda v2.20.0 pkg/scalers/prometheus_scaler.go, ExecutePromQuery; the
pinned chart is 2.20.0; https://keda.sh/docs/latest/scalers/prometheus/). The external metric then errors on every
poll and the HPA KEDA made never acts: the workload stays where it is under any load.

The query's shape says how many elements it may return: a number, ``scalar()``, ``time()`` and ``vector()`` one; an
aggregation (``sum``, ``avg``, ``max``, ``min``, ``count``, ``quantile``, ...) one when it groups by nothing or only
by labels every selector inside pins with ``=``, and ``histogram_quantile`` over a ``by (le)`` aggregation one;
``topk(1, ...)`` one; a function or a scalar operation as many as its vector argument; a vector operation with
one-to-one matching (or ``and``/``unless``) at most as many as its smaller (left) side. A bare selector returns one
series per scraped target it matches, so it is judged many when the region's Prometheus stores it from more than one
target or from a workload that may run more than one replica (its replicas, its HPA's or ScaledObject's maximum, a
DaemonSet). A query that cannot be read, or a selector whose writers are unknown, is not judged.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject, lookup
from tokenplane.proof.deployability.metrics import writers
from tokenplane.proof.deployability.promql import PromQLError, Selector, selectors, tokens
from tokenplane.proof.deployability.scrape import Exported, exported, known

RULE = "keda-query-single"
# Aggregations that fold their input to one element per group.
REDUCE = frozenset({"sum", "avg", "min", "max", "count", "group", "stddev", "stdvar", "quantile"})
# Aggregations that keep up to k input elements per group (k is their first argument).
KEEP_K = frozenset({"topk", "bottomk", "limitk"})
# Aggregations that keep as many elements as their input.
KEEP_ALL = frozenset({"count_values", "limit_ratio"})
SCALAR_FUNCTIONS = frozenset({"scalar", "time", "pi"})
ONE_FUNCTIONS = frozenset({"vector", "absent", "absent_over_time"})
MODIFIERS = frozenset({"bool", "on", "ignoring", "group_left", "group_right"})
# Binary operators by precedence, lowest first (https://prometheus.io/docs/prometheus/latest/querying/operators/).
LEVELS = (("or",), ("and", "unless"), ("==", "!=", "<=", ">=", "<", ">"), ("+", "-"), ("*", "/", "%", "atan2"), ("^",))


class _Unread(Exception):
    """A query this reading does not follow: it is not judged."""


@dataclass(frozen=True)
class Shape:
    """How many elements an expression may return: ``scalar``, ``one``, ``le`` (one per bucket) or ``many``."""

    kind: str
    why: str = ""


SCALAR, ONE = Shape("scalar"), Shape("one")


class _Reader:
    """Recursive descent over the query's tokens, returning the shape of what it evaluates to."""

    def __init__(self, query: str, spread: Callable[[Selector], str | None]) -> None:
        self.query, self.tokens, self.i, self.spread = query, tokens(query), 0, spread

    def peek(self, ahead: int = 0) -> str:
        at = self.i + ahead
        return self.tokens[at].text if at < len(self.tokens) else ""

    def take(self, text: str | None = None) -> str:
        if self.i >= len(self.tokens) or (text is not None and self.tokens[self.i].text != text):
            raise _Unread(text)
        self.i += 1
        return self.tokens[self.i - 1].text

    def read(self) -> Shape:
        shape = self.binary(0)
        if self.i != len(self.tokens):
            raise _Unread(self.peek())
        return shape

    def binary(self, level: int) -> Shape:
        if level == len(LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        while self.peek().lower() in LEVELS[level]:
            op = self.take().lower()
            grouping = self.modifiers()
            right = self.binary(level + 1)
            left = _combine(op, grouping, left, right)
        return left

    def modifiers(self) -> str:
        grouping = ""
        while self.peek().lower() in MODIFIERS:
            word = self.take().lower()
            grouping = word if word.startswith("group_") else grouping
            if self.peek() == "(":
                self.labels()
        return grouping

    def labels(self) -> list[str]:
        self.take("(")
        names: list[str] = []
        while self.peek() != ")":
            token = self.take()
            if token != ",":
                names.append(token)
        self.take(")")
        return names

    def unary(self) -> Shape:
        while self.peek() in ("-", "+"):
            self.take()
        return self.postfix(self.primary())

    def postfix(self, shape: Shape) -> Shape:
        while self.i < len(self.tokens):
            token = self.tokens[self.i]
            if token.kind == "range":
                self.take()
            elif token.text.lower() == "offset":
                self.take()
                self.unary_duration()
            elif token.text == "@":
                self.take()
                self.take()
                if self.peek() == "(":
                    self.take("(")
                    self.take(")")
            else:
                break
        return shape

    def unary_duration(self) -> None:
        if self.peek() == "-":
            self.take()
        self.take()

    def primary(self) -> Shape:
        if self.i >= len(self.tokens):
            raise _Unread("end")
        token = self.tokens[self.i]
        if token.kind in ("number", "string") or token.text.lower() in ("inf", "nan"):
            self.take()
            return SCALAR
        if token.text == "(":
            self.take()
            shape = self.binary(0)
            self.take(")")
            return shape
        if token.text == "{":
            return self.selector()
        if token.kind != "name":
            raise _Unread(token.text)
        name = token.text
        if name in REDUCE | KEEP_K | KEEP_ALL and (self.peek(1) == "(" or self.peek(1) in ("by", "without")):
            return self.aggregation()
        if self.peek(1) == "(":
            return self.function()
        return self.selector()

    def selector(self) -> Shape:
        start = self.i
        if self.peek() != "{":
            self.take()
        if self.peek() == "{":
            depth = 0
            while True:
                text = self.take()
                depth += {"{": 1, "}": -1}.get(text, 0)
                if depth == 0:
                    break
        text = self.query[self.tokens[start].at : self.tokens[self.i - 1].at + len(self.tokens[self.i - 1].text)]
        try:
            (read,) = selectors(text)
        except (PromQLError, ValueError) as e:
            raise _Unread(text) from e
        why = self.spread(read)
        return Shape("many", why) if why else ONE

    def arguments(self) -> list[tuple[Shape, int, int]]:
        """Each argument's shape and its token span."""
        self.take("(")
        out: list[tuple[Shape, int, int]] = []
        while self.peek() != ")":
            start = self.i
            out.append((self.binary(0), start, self.i))
            if self.peek() == ",":
                self.take()
        self.take(")")
        return out

    def aggregation(self) -> Shape:
        name = self.take().lower()
        grouping: tuple[str, list[str]] | None = None
        if self.peek() in ("by", "without"):
            grouping = (self.take(), self.labels())
        start = self.i
        args = self.arguments()
        if self.peek() in ("by", "without"):
            grouping = (self.take(), self.labels())
        if not args:
            raise _Unread(name)
        inner = args[-1][0]
        if inner.kind in ("one", "scalar"):
            return ONE
        if name in KEEP_ALL:
            return inner
        if name in KEEP_K:
            first = self.tokens[args[0][1] : args[0][2]]
            if grouping is None and len(first) == 1 and first[0].kind == "number" and float(first[0].text) == 1:
                return ONE
            return inner
        if grouping is None:
            return ONE
        word, labels = grouping
        if word == "without":
            return Shape("many", f"{name} without ({', '.join(labels)}) keeps every other label")
        pinned = _pinned(self.query[self.tokens[start].at : self.tokens[self.i - 1].at])
        free = [label for label in labels if label not in pinned]
        if not free:
            return ONE
        if free == ["le"]:
            return Shape("le", f"{name} by (le) returns one series per bucket")
        return Shape("many", f"{name} by ({', '.join(free)}) returns one series per value of {', '.join(free)}")

    def function(self) -> Shape:
        name = self.take().lower()
        args = self.arguments()
        if name in SCALAR_FUNCTIONS:
            return SCALAR
        if name in ONE_FUNCTIONS:
            return ONE
        vectors = [shape for shape, _, _ in args if shape.kind != "scalar"]
        if name == "histogram_quantile" and vectors and vectors[0].kind == "le":
            return ONE
        return vectors[0] if vectors else SCALAR


def _pinned(text: str) -> set[str]:
    """Labels every selector in ``text`` fixes to one value with ``=``."""
    read = selectors(text)
    sets = [{m.label for m in s.matchers if m.op == "=" and not m.templated} for s in read]
    return set.intersection(*sets) if sets else set()


def _combine(op: str, grouping: str, left: Shape, right: Shape) -> Shape:
    if op in ("and", "unless"):
        return left
    if op == "or":
        return ONE if left.kind == right.kind == "one" else _many(left, right)
    if left.kind == "scalar":
        return right
    if right.kind == "scalar":
        return left
    if grouping == "group_left":
        return left
    if grouping == "group_right":
        return right
    return ONE if "one" in (left.kind, right.kind) else _many(left, right)


def _many(left: Shape, right: Shape) -> Shape:
    for shape in (left, right):
        if shape.kind == "many":
            return shape
        if shape.kind == "le":
            return Shape("many", shape.why)
    return ONE


def shape(query: str, spread: Callable[[Selector], str | None]) -> Shape | None:
    """How many elements ``query`` may return, given ``spread`` (why a selector may match several targets' series,
    or None); None when the query cannot be read."""
    try:
        return _Reader(query, spread).read()
    except (_Unread, PromQLError, ValueError, IndexError):
        return None


def check(graph: Graph) -> Iterator[Finding]:
    everything = known(graph)
    for region in graph.regions():
        scaled = [s for s in graph.kube(region, "ScaledObject", "ScaledJob") if _prometheus_triggers(s)]
        if not scaled:
            continue
        stored = exported(graph, region)
        spread = functools.partial(_spread, stored=stored, everything=everything, replicas=_replicas(graph, region))
        for scaler in scaled:
            for trigger, query in _prometheus_triggers(scaler):
                found = shape(query, spread)
                if found is None or found.kind not in ("many", "le"):
                    continue
                where = f"{scaler.kind} {scaler.namespace}/{scaler.name} trigger {trigger}"
                yield Finding(
                    RULE,
                    scaler.urn,
                    f"{where} queries {query!r}, which returns more than one element ({found.why}): KEDA's "
                    'Prometheus scaler fails every poll with "prometheus query ... returned multiple elements", the '
                    "external metric errors and the HPA KEDA made never scales",
                    f"aggregate the query to one series in {where}'s metadata.query, e.g. sum({query}) (or avg/max), "
                    "with no by() grouping",
                )


def _prometheus_triggers(scaler: KubeObject) -> list[tuple[str, str]]:
    return [
        (str(t.get("name") or f"#{i}"), str(lookup(t, "metadata.query")))
        for i, t in enumerate(lookup(scaler.manifest, "spec.triggers") or [])
        if t.get("type") == "prometheus" and lookup(t, "metadata.query")
    ]


def _replicas(graph: Graph, region: str) -> dict[str, tuple[int, str]]:
    """A workload's URN -> the most replicas it may run, and why."""
    out: dict[str, tuple[int, str]] = {}
    by_name: dict[tuple[str, str, str], str] = {}
    for workload in graph.kube(region, "Deployment", "StatefulSet", "ReplicaSet", "DaemonSet"):
        what = f"{workload.kind} {workload.namespace}/{workload.name}"
        if workload.kind == "DaemonSet":
            out[workload.urn] = (2, f"{what} runs a pod per node")
            continue
        count = _count(lookup(workload.manifest, "spec.replicas"), 1)
        out[workload.urn] = (count, f"{what} runs {count} replicas")
        by_name[(workload.namespace, workload.kind, workload.name)] = workload.urn
    for scaler in graph.kube(region, "HorizontalPodAutoscaler", "ScaledObject"):
        ref = lookup(scaler.manifest, "spec.scaleTargetRef") or {}
        urn = by_name.get((scaler.namespace, str(ref.get("kind") or "Deployment"), str(ref.get("name"))))
        spec = scaler.manifest.get("spec") or {}
        most = _count(
            spec.get("maxReplicas") if scaler.kind == "HorizontalPodAutoscaler" else spec.get("maxReplicaCount", 100), 0
        )
        if urn is not None and most > out[urn][0]:
            what = out[urn][1].split(" runs ")[0]
            out[urn] = (most, f"{what} scales to {most} replicas ({scaler.kind} {scaler.name})")
    return out


def _count(value: object, default: int) -> int:
    """A replica count as rendered (an int, or a float where it went through JSON numbers)."""
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else default


def _spread(
    selector: Selector, stored: Exported, everything: dict[str, str], replicas: dict[str, tuple[int, str]]
) -> str | None:
    """Why ``selector`` may match series of more than one scraped target, or None (one, or unknown)."""
    if selector.name is None:
        return None
    found = writers(selector, stored, everything)
    targets = sorted({(s.target.urn, s.target.what, s.job) for s in found})
    if len(targets) > 1:
        return f"{selector} is stored from {len(targets)} targets: {', '.join(what for _, what, _ in targets[:3])}"
    for urn, _, _ in targets:
        count, why = replicas.get(urn, (1, ""))
        if count > 1:
            return f"{selector} is stored per pod and {why}"
    return None
