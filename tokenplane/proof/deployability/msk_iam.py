"""A role that reads or writes an MSK cluster's topics through IAM access control holds every action that takes.

With IAM access control, each Kafka request the client makes is authorized against the role's policies, action by
action and on the resource the request names: the cluster (``arn:aws:kafka:R:A:cluster/NAME/UUID``), a topic
(``.../topic/NAME/UUID/TOPIC``) or a consumer group (``.../group/NAME/UUID/GROUP``). MSK's table of actions lists
what each one requires besides itself (https://docs.aws.amazon.com/msk/latest/developerguide/kafka-actions.html):
``ReadData`` requires ``Connect`` (cluster), ``DescribeTopic`` (topic) and ``AlterGroup``; ``AlterGroup`` requires
``DescribeGroup``, both on the group; ``WriteData`` requires ``Connect`` and ``DescribeTopic``. A consumer in a group
(which every committing consumer is) joins it with JoinGroup/SyncGroup/OffsetCommit, authorized as ``AlterGroup`` and
``DescribeGroup`` on the group's ARN: a role allowed ``ReadData`` on topics but nothing on a group is refused with
GROUP_AUTHORIZATION_FAILED, so the pods run and pass their probes while nothing is ever consumed.

Judged per role, where every policy the role holds is known at render time (an AWS managed one, or one known only at
apply time, may grant what is missing). A statement's resource counts for a kind when its pattern can match an ARN of
that kind (``*``, ``arn:aws:kafka:*``, ``.../group/...``).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.iam_policy import ROLE, allowing, as_list, known_documents

RULE = "msk-iam-actions"
PREFIX = "kafka-cluster:"
# An ARN of each resource kind, to match a statement's resource patterns against.
SAMPLE = {
    "cluster": "arn:aws:kafka:r:1:cluster/c/u",
    "topic": "arn:aws:kafka:r:1:topic/c/u/t",
    "group": "arn:aws:kafka:r:1:group/c/u/g",
}
# Data action -> the actions it requires, each with the resource kind it must be allowed on (kafka-actions.html).
REQUIRES = {
    "ReadData": (
        ("Connect", "cluster"),
        ("DescribeTopic", "topic"),
        ("AlterGroup", "group"),
        ("DescribeGroup", "group"),
    ),
    "WriteData": (("Connect", "cluster"), ("DescribeTopic", "topic")),
}
WHY = {
    "cluster": "the client cannot authenticate to the brokers",
    "topic": "the client cannot read the topic's metadata, so it finds no partition leader",
    "group": "the consumer cannot join its consumer group (GROUP_AUTHORIZATION_FAILED) and consumes nothing",
}


def check(graph: Graph) -> Iterator[Finding]:
    for role in graph.of_type(ROLE):
        documents = known_documents(graph, role)
        if documents is None:
            continue
        for action, needs in REQUIRES.items():
            if not _allowed(documents, action, "topic"):
                continue
            missing = [(need, kind) for need, kind in needs if not _allowed(documents, need, kind)]
            if not missing:
                continue
            named = ", ".join(f"{PREFIX}{need} on a {kind} ARN" for need, kind in missing)
            kinds = sorted({kind for _, kind in missing})
            yield Finding(
                RULE,
                role.urn,
                f"role {role.name} may {PREFIX}{action} on MSK topics but not {named}: with IAM access control each "
                f"request is authorized by action and resource, so {'; '.join(WHY[k] for k in kinds)}; the pods "
                "run and nothing flows",
                "allow "
                + "; ".join(f"{PREFIX}{need} on {_arn(kind)}" for need, kind in missing)
                + " (msk_statements(..., groups=True) grants the groups)",
            )


def _arn(kind: str) -> str:
    tail = "" if kind == "cluster" else "/*"
    return f"arn:aws:kafka:REGION:ACCOUNT:{kind}/CLUSTER/UUID{tail}"


def _allowed(documents: list[Any], action: str, kind: str) -> bool:
    """Whether an Allow statement names ``kafka-cluster:ACTION`` on a resource that can be an ARN of ``kind``."""
    for value in documents:
        for statement in allowing(value, PREFIX + action):
            for pattern in as_list(statement.get("Resource")):
                if isinstance(pattern, str) and (fnmatch.fnmatchcase(SAMPLE[kind], pattern) or f":{kind}/" in pattern):
                    return True
    return False
