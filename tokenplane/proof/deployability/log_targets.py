"""EventBridge writes to a CloudWatch Logs target only where a CloudWatch Logs resource policy admits it (part of
``service-admitted``).

A rule target (``aws.cloudwatch.EventTarget``) whose ARN is a log group makes EventBridge call CreateLogStream and
PutLogEvents on that group as ``events.amazonaws.com`` (the user guide's policy also names
``delivery.logs.amazonaws.com``). CloudWatch Logs lets it only where a resource policy of the account and Region
(``PutResourcePolicy``, ``aws.cloudwatch.LogResourcePolicy``) allows those actions on the group's ARN: "When a rule
is triggered in EventBridge, all the targets associated with the rule are invoked ... For CloudWatch Logs, the
resource-based policy must allow EventBridge to write the logs"
(https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-use-resource-based.html#eb-cloudwatchlogs-permissions;
https://repost.aws/knowledge-center/cloudwatch-log-group-eventbridge: the console writes such a policy, the API and
infrastructure as code do not). PutTargets does not check it: the target is created, and every delivery fails
(EventBridge counts FailedInvocations) while the group stays empty.

Judged for the log groups the program creates, against every ``LogResourcePolicy`` of the program: each of the two
actions (IAM's wildcards) must be allowed to one of the two principals (or ``*``) by a statement whose Resource
matches the group's ARN or its streams' (``arn:...:log-group:NAME:*``; ARN wildcards, character by character). The
Resource's partition, Region and account are taken as given (the render's are mock values). With no resource policy
in the program the target is reported too: the program's own setup is incomplete, and it works only where a policy
made outside it (the console's ``TrustEventsToStoreLogEvent``) happens to cover the group; the message says so.

Cannot see: resource policies made outside the program, policies known only at apply time (not judged), conditions
in a statement (a statement naming the principal counts), ``NotResource`` (counted as admitting), groups named by a
literal ARN the program does not create; the Region a policy is written in (any of the program's policies counts).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.iam_policy import allowing, as_list, document

RULE = "service-admitted"
EVENT_TARGET = "aws:cloudwatch/eventTarget:EventTarget"
LOG_GROUP = "aws:cloudwatch/logGroup:LogGroup"
LOG_POLICY = "aws:cloudwatch/logResourcePolicy:LogResourcePolicy"
PRINCIPALS = ("events.amazonaws.com", "delivery.logs.amazonaws.com")
ACTIONS = ("logs:CreateLogStream", "logs:PutLogEvents")
GROUP_MARK = "log-group:"


def check(graph: Graph) -> Iterator[Finding]:
    policies = graph.of_type(LOG_POLICY)
    documents = [p.inputs.get("policyDocument") for p in policies]
    if any(document(d) is None for d in documents):
        return  # a policy known only at apply time may admit it
    for target in graph.of_type(EVENT_TARGET):
        named = [graph.by_urn.get(u) for u in target.property_dependencies.get("arn", [])]
        groups = [g for g in [*named, *graph.referenced(target, "arn")] if g is not None and g.type == LOG_GROUP]
        for group in groups[:1]:
            arn = target.inputs.get("arn")
            group_arn = arn.removesuffix(":*") if isinstance(arn, str) and GROUP_MARK in arn else None
            missing = [a for a in ACTIONS if not any(_admits(d, a, group_arn) for d in documents)]
            if not missing:
                continue
            name = group.inputs.get("name") or group.name
            fix = (
                f"add an aws.cloudwatch.LogResourcePolicy allowing Principal {{Service: [{', '.join(PRINCIPALS)}]}} "
                f"{' and '.join(ACTIONS)} on {group_arn or 'the group ARN'}:* (the group's arn output + ':*'), and "
                f"make {target.name} wait for it"
            )
            if not policies:
                said = "and the program writes no CloudWatch Logs resource policy admitting it"
            else:
                patterns = sorted(
                    {
                        str(r)
                        for d in documents
                        for a in ACTIONS
                        for s in _by_principal(d, a)
                        for r in as_list(s.get("Resource"))
                    }
                )
                on = f"only on {', '.join(patterns)}" if patterns else "nowhere"
                said = (
                    f"and the program's CloudWatch Logs resource policies ({', '.join(p.name for p in policies)}) "
                    f"allow it {', '.join(missing)} {on}, which does not match {group_arn or name}"
                )
            yield Finding(
                RULE,
                target.urn,
                f"EventBridge ({PRINCIPALS[0]}) writes {target.name}'s events into log group {name} "
                f"(CreateLogStream, PutLogEvents), {said}: PutTargets succeeds, but unless a resource policy made "
                "outside the program covers the group, every delivery is denied (EventBridge counts "
                "FailedInvocations) and the group stays empty",
                fix,
            )


def _by_principal(policy: Any, action: str) -> Iterator[dict[str, Any]]:
    for statement in allowing(policy, action):
        principal = statement.get("Principal")
        if principal == "*":
            yield statement
        elif isinstance(principal, dict):
            services = as_list(principal.get("Service"))
            if "*" in as_list(principal.get("AWS")) or any(s in services for s in PRINCIPALS):
                yield statement


def _admits(policy: Any, action: str, group_arn: str | None) -> bool:
    for statement in _by_principal(policy, action):
        if "Resource" not in statement or group_arn is None:
            return True  # NotResource, or a group whose ARN the render does not know
        if any(_matches(r, group_arn) for r in as_list(statement.get("Resource")) if isinstance(r, str)):
            return True
    return False


def _matches(pattern: str, group_arn: str) -> bool:
    """Whether a Resource pattern names the group or its log streams (ARN wildcards); the pattern's own partition,
    Region and account stand in for the mock's."""
    if GROUP_MARK in pattern and GROUP_MARK in group_arn:
        group_arn = pattern.split(GROUP_MARK, 1)[0] + GROUP_MARK + group_arn.split(GROUP_MARK, 1)[1]
    candidates = (group_arn, f"{group_arn}:*", f"{group_arn}:log-stream:stream")
    escaped = pattern.replace("[", "[[]")
    return any(fnmatch.fnmatchcase(c, escaped) for c in candidates)
