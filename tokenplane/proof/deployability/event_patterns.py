"""EventBridge event patterns are objects whose leaves are arrays: a bare value is refused at create time.

An event pattern names each field to match with a non-empty array of values or match expressions
(``"source": ["aws.ecr"]``, ``"size": [{"numeric": [">", 0]}]``), or an object of such fields for a nested one
(``"detail": {...}``); ``$or`` takes an array of patterns. A leaf that is a bare string, number, boolean or null
(``"source": "aws.ecr"``) is refused: PutRule answers InvalidEventPatternException "Event pattern is not valid.
Reason: "source" must be an object or an array", and ``pulumi up`` fails at the rule, its targets and what waits for
them (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-event-patterns.html, "the values to match are in
arrays"; aws/event-ruler ``JsonRuleCompiler``, which EventBridge uses, refuses a non-array leaf and an empty array).
The same syntax filters EventBridge Pipes (``sourceParameters.filterCriteria.filters[].pattern``) and Lambda event
source mappings (``filterCriteria.filters[].pattern``,
https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventfiltering.html), checked alike.

Judged on patterns that are literal JSON at render time; the match expressions inside arrays are not read.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, lookup
from tokenplane.proof.render import RenderedResource

RULE = "aws-api-values"
EVENT_RULE = "aws:cloudwatch/eventRule:EventRule"
PIPE = "aws:pipes/pipe:Pipe"
MAPPING = "aws:lambda/eventSourceMapping:EventSourceMapping"


def check(graph: Graph) -> Iterator[Finding]:
    for rule in graph.of_type(EVENT_RULE):
        yield from _judge(rule, "eventPattern", rule.inputs.get("eventPattern"))
    for resource, path in [(p, "sourceParameters.filterCriteria") for p in graph.of_type(PIPE)] + [
        (m, "filterCriteria") for m in graph.of_type(MAPPING)
    ]:
        for i, item in enumerate(lookup(resource.inputs, f"{path}.filters") or []):
            if isinstance(item, dict):
                yield from _judge(resource, f"{path}.filters[{i}].pattern", item.get("pattern"))


def _judge(resource: RenderedResource, field: str, text: Any) -> Iterator[Finding]:
    if not isinstance(text, str):
        return  # unknown at render time
    try:
        pattern = json.loads(text)
    except json.JSONDecodeError:
        return  # not JSON: the schema checks report that
    for where, why, fix in _faults(pattern, ""):
        yield Finding(
            RULE,
            resource.urn,
            f"{resource.name}'s {field} has {where or 'the pattern'} {why}: every value to match in an event "
            "pattern is a non-empty array (or an object of such fields), and the service refuses the pattern "
            "(InvalidEventPatternException: Event pattern is not valid) when pulumi up creates it",
            f"write {where or 'the pattern'} as {fix}",
        )


def _faults(value: Any, path: str) -> Iterator[tuple[str, str, str]]:
    """Each (field path, what is wrong, what to write instead) of a pattern."""
    if not isinstance(value, dict):
        yield path, f"as {json.dumps(value)}, not an object", "an object of fields"
        return
    for key, child in value.items():
        where = f"{path}.{key}" if path else str(key)
        if key == "$or":
            if not isinstance(child, list) or not child:
                yield where, "not a non-empty array of patterns", "an array of pattern objects"
            else:
                for i, branch in enumerate(child):
                    yield from _faults(branch, f"{where}[{i}]")
        elif isinstance(child, dict):
            yield from _faults(child, where)
        elif not isinstance(child, list):
            bare = json.dumps(child)
            yield where, f"= {bare}, a bare value (must be an object or an array)", f"an array: [{bare}]"
        elif not child:
            yield where, "= [], an empty array", "an array of the values to match, or leave the field out"
