"""The rules set 11's misses led to (written after its blind run, so not held out), each planted in a shipped render
beside its correct twin: a KMS key policy no AWS principal may put again (aws-api-values, KMS's lockout safety
check), and a pod asking for a node's whole memory, which allocatable never holds (pod-fits-node)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.proof.deployability.conftest import mutated, rendered, spec
from tests.proof.deployability.test_aws_join import _aws
from tests.proof.deployability.test_set3_invariants import deployment, plus, rule
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import aws_values
from tokenplane.proof.deployability.pod_fits import allocatable_memory


def _key(statements: list[dict[str, Any]], **inputs: Any) -> list[str]:
    key = _aws(
        "aws:kms/key:Key",
        "planted-key",
        {"policy": json.dumps({"Version": "2012-10-17", "Statement": statements}), **inputs},
    )
    result = mutated(rendered("dev"), lambda r: r, extra=[key])
    return [f.message for f in aws_values.check(deploy.Graph(spec("dev"), result)) if "planted-key" in f.message]


LOGS = {
    "Effect": "Allow",
    "Principal": {"Service": "logs.amazonaws.com"},
    "Action": ["kms:Encrypt*", "kms:Decrypt*"],
    "Resource": "*",
}
ROOT = {"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::123456789012:root"}, "Action": "kms:*", "Resource": "*"}
DEPLOYER = {
    "Effect": "Allow",
    "Principal": {"AWS": "arn:aws:iam::123456789012:role/ci"},
    "Action": "kms:PutKeyPolicy",
    "Resource": "*",
}


@pytest.mark.parametrize(
    ("statements", "inputs", "refused"),
    [
        ([LOGS], {}, True),
        ([LOGS, ROOT], {}, False),
        ([LOGS, DEPLOYER], {}, False),  # the caller may be that role: not judged
        ([LOGS], {"bypassPolicyLockoutSafetyCheck": True}, False),
    ],
)
def test_a_key_policy_no_aws_principal_may_put_again_is_refused(
    statements: list[dict[str, Any]], inputs: dict[str, Any], refused: bool
) -> None:
    found = _key(statements, **inputs)
    assert bool(found) == refused and all("lockout" in m for m in found), found


def test_allocatable_memory_is_under_the_instance_types_total() -> None:
    # m6i.xlarge: 16 GiB. A pod asking all of it never fits; one asking 15 GiB may.
    assert 15 * 2**30 < allocatable_memory(16) < 16 * 2**30


@pytest.mark.parametrize(("memory", "found"), [("16Gi", True), ("12Gi", False)])
def test_a_pod_asking_a_whole_nodes_memory_fits_no_node(memory: str, found: bool) -> None:
    resources = {"requests": {"cpu": "500m", "memory": memory}, "limits": {"cpu": "500m", "memory": memory}}
    container = {"name": "app", "image": "nginx:1.27", "resources": resources}
    said = [
        f
        for f in rule(plus(deployment("planted-big", {"containers": [container]})), "pod-fits-node")
        if "planted-big" in f.message
    ]
    assert bool(said) == found and all("memory" in f.message for f in said), said
