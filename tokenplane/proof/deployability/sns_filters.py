"""An SNS subscription's filter policy reads what the topic's publishers send.

A subscription's filter policy applies by default to the message's attributes (``FilterPolicyScope``
``MessageAttributes``); a message that lacks an attribute the policy names does not match, and SNS does not deliver
it (https://docs.aws.amazon.com/sns/latest/dg/sns-message-filtering-scope.html,
https://docs.aws.amazon.com/sns/latest/dg/sns-subscription-filter-policies.html). AWS services that publish to a
topic as their own principal set no message attributes: a CloudWatch alarm's notification, an EventBridge target's
event and an S3 event notification carry everything in the JSON body (``NewStateValue``, ``detail-type``,
``Records``), which is what the ``MessageBody`` scope filters on (payload-based filtering exists for publishers
that cannot set attributes: localstack/localstack and aws/aws-cdk#23108). So when every publisher of a topic the
program can see is such a service, a subscription filtering on attributes receives nothing, ever: it deploys and
never delivers.

The topic's publishers are the program's alarm actions, EventBridge targets and S3 notifications naming it (the
senders ``service_access`` knows). Any other possible publisher keeps the rule silent: an IAM policy of the program
allowing ``sns:Publish`` on the topic (a pod's or a function's role: code may set attributes), or a topic policy
admitting a principal other than those services. A policy key whose conditions include ``{"exists": false}``
matches a message without the attribute and is not counted.

It cannot see: publishers outside the program (another stack's code, a role created elsewhere), and services that
publish without appearing in the graph (Budgets, CodeStar notifications) unless the topic policy names them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.iam_policy import allowing, allows_on, arns_of, policy_documents
from tokenplane.proof.deployability.service_access import TOPIC, senders
from tokenplane.proof.render import RenderedResource

RULE = "sns-filter-scope"
SUBSCRIPTION = "aws:sns/topicSubscription:TopicSubscription"
TOPIC_POLICY = "aws:sns/topicPolicy:TopicPolicy"
# Service principals that publish to a topic with no message attributes (the page above; their notification formats).
BODY_ONLY = frozenset({"cloudwatch.amazonaws.com", "events.amazonaws.com", "s3.amazonaws.com"})


def check(graph: Graph) -> Iterator[Finding]:
    for subscription in graph.of_type(SUBSCRIPTION):
        scope = subscription.inputs.get("filterPolicyScope") or "MessageAttributes"
        keys = _attribute_keys(subscription.inputs.get("filterPolicy"))
        topic = _topic(graph, subscription)
        if scope != "MessageAttributes" or not keys or topic is None:
            continue
        publishers = sorted(
            {f"{s.service} ({s.resource.name})" for s in senders(graph) if s.destination.urn == topic.urn}
        )
        if not publishers or _other_publishers(graph, topic):
            continue
        yield Finding(
            RULE,
            subscription.urn,
            f"subscription {subscription.name} filters {topic.name} on message attribute(s) {', '.join(keys)} "
            f"(filterPolicyScope MessageAttributes, the default), but the topic's only publishers are "
            f"{', '.join(publishers)}, AWS services that set no message attributes: no message matches and the "
            "subscription never receives one",
            "set filter_policy_scope='MessageBody' to filter on the notification's JSON fields (e.g. NewStateValue), "
            "or drop the filter policy",
        )


def _attribute_keys(policy: Any) -> list[str]:
    """The policy's keys that a message without attributes fails (all must match); [] when it is not known."""
    if isinstance(policy, str):
        try:
            policy = json.loads(policy)
        except json.JSONDecodeError:
            return []
    if not isinstance(policy, dict):
        return []
    return sorted(
        k
        for k, conditions in policy.items()
        if k != "$or"
        and isinstance(conditions, list)
        and not any(isinstance(c, dict) and c.get("exists") is False for c in conditions)
    )


def _topic(graph: Graph, subscription: RenderedResource) -> RenderedResource | None:
    for urn in subscription.property_dependencies.get("topic", []):
        found = graph.by_urn.get(urn)
        if found is not None and found.type == TOPIC:
            return found
    return None


def _other_publishers(graph: Graph, topic: RenderedResource) -> bool:
    """Whether anyone but the body-only services may publish: an IAM policy or the topic's own policy allowing it."""
    arns = arns_of(graph, topic)
    topic_policies = [topic.inputs.get("policy")] + [
        p.inputs.get("policy")
        for p in graph.of_type(TOPIC_POLICY)
        if topic.urn in p.property_dependencies.get("arn", [])
    ]
    for policy in topic_policies:
        for statement in allowing(policy, "sns:Publish"):
            principal = statement.get("Principal")
            services = principal.get("Service") if isinstance(principal, dict) else None
            listed = services if isinstance(services, list) else [services]
            if not (isinstance(principal, dict) and set(principal) == {"Service"} and set(listed) <= BODY_ONLY):
                return True
    documents = [policy for holder, policy in policy_documents(graph) if holder.type != TOPIC_POLICY]
    return allows_on(documents, "sns:Publish", arns)
