"""A log group named for a Lambda function of the program is the group that function writes to.

A Lambda function sends its logs to ``/aws/lambda/<function name>`` unless its ``LoggingConfig.LogGroup`` names
another group (https://docs.aws.amazon.com/lambda/latest/dg/monitoring-cloudwatchlogs.html, "By default, Lambda
sends logs to a log group named /aws/lambda/<function name>";
https://docs.aws.amazon.com/lambda/latest/dg/monitoring-cloudwatchlogs-advanced.html). A function without a
``name`` is autonamed by Pulumi ``<logical name>-<7 random hex>``
(https://www.pulumi.com/docs/iac/concepts/resources/names/#autonaming), so a program's ``aws.cloudwatch.LogGroup``
named ``/aws/lambda/<logical name>`` is not its group: the function writes to ``/aws/lambda/<logical>-xxxxxxx``, which
Lambda creates itself (no retention, no key), and the program's group, its retention and its metric filters and
subscriptions stay empty. The same holds for a function whose ``name`` is set to something other than the logical
name the group spells.

Judged where the group's name is written out, names a function of the program by its logical name, no function of
the program is named so, and no function's ``loggingConfig.logGroup`` is (or may be, unknown at render time) the
group. It cannot see: functions of other stacks (a group for one of them is not judged), names known only at apply
time.
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, lookup
from tokenplane.proof.render import RenderedResource

RULE = "lambda-log-group-written"
FUNCTION = "aws:lambda/function:Function"
LOG_GROUP = "aws:cloudwatch/logGroup:LogGroup"
PREFIX = "/aws/lambda/"


def check(graph: Graph) -> Iterator[Finding]:
    functions = graph.of_type(FUNCTION)
    named = {n for f in functions if isinstance(n := f.inputs.get("name"), str)}
    for group in graph.of_type(LOG_GROUP):
        name = group.inputs.get("name")
        if not isinstance(name, str) or not name.startswith(PREFIX):
            continue
        target = name.removeprefix(PREFIX)
        if target in named or any(_logs_to(f, group) for f in functions):
            continue
        for function in (f for f in functions if f.name == target):
            explicit = function.inputs.get("name")
            if explicit is not None and not isinstance(explicit, str):
                continue  # a name known only at apply time
            actual = f"{target}-xxxxxxx (Pulumi's autoname)" if explicit is None else repr(explicit)
            elsewhere = lookup(function.inputs, "loggingConfig.logGroup")
            writes = (
                f"its loggingConfig.logGroup sends its logs to {elsewhere!r}"
                if isinstance(elsewhere, str)
                else f"it has no loggingConfig.logGroup and writes to {PREFIX}<its own name>, which Lambda creates "
                "itself"
            )
            yield Finding(
                RULE,
                group.urn,
                f"log group {group.name} is named {name!r}, for Lambda function {function.name}, but that function "
                f"is named {actual} and {writes}, so this group (its retention, metric filters and subscriptions) "
                "never receives a log event",
                f"name the group from the function's output (pulumi.Output.concat('{PREFIX}', "
                f"{function.name}.name)), or set the function's logging_config.log_group to this group",
            )


def _logs_to(function: RenderedResource, group: RenderedResource) -> bool:
    """Whether the function's loggingConfig.logGroup is (or may be, unknown at render time) the group."""
    config = function.inputs.get("loggingConfig")
    if config is None:
        return False
    target = lookup(config, "logGroup") if isinstance(config, dict) else None
    if not isinstance(config, dict) or (target is not None and not isinstance(target, str)):
        return True  # unknown at render time
    deps = function.property_dependencies.get("loggingConfig", [])
    return group.urn in deps or target == group.inputs.get("name")
