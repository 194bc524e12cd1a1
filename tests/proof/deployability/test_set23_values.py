"""The rules set 23's value and quota misses led to (written after its blind run, so not held out), each planted in a
shipped render beside its correct twin: RDS allocated storage outside its engine's and storage type's range
(rds-values), a namespace quota without room for a rollout's surge pod (namespace-admits), and how aws-cli-permissions
reads an ``aws s3 cp`` to an object key and a shell redirection."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

from tests.proof.deployability.conftest import planted_findings
from tests.proof.deployability.test_aws_join import _aws
from tests.proof.deployability.test_set3_invariants import deployment, plus, rule
from tests.proof.deployability.test_set15_aws import BUCKET, LISTING, OBJECTS, _cli_graph, _policy
from tokenplane.proof.deployability import aws_cli, rds_values

INSTANCE = "aws:rds/instance:Instance"


_findings = partial(planted_findings, stack="dev")


# rds-values: allocated storage ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("inputs", "refused"),
    [
        ({"storageType": "gp3", "allocatedStorage": 10, "maxAllocatedStorage": 200}, "allocatedStorage=10 GiB"),
        ({"storageType": "gp3", "allocatedStorage": 20, "maxAllocatedStorage": 200}, None),
        ({"allocatedStorage": 10}, "gp2 (the default)"),
        ({"storageType": "io1", "allocatedStorage": 50, "iops": 3000}, "allocatedStorage=50 GiB"),
        ({"storageType": "io2", "allocatedStorage": 100, "iops": 3000}, None),
        ({"storageType": "standard", "allocatedStorage": 5}, None),
        ({"storageType": "standard", "allocatedStorage": 4000}, "5 to 3072"),
        ({"storageType": "gp3", "allocatedStorage": 100, "maxAllocatedStorage": 50}, "maxAllocatedStorage=50"),
        ({"storageType": "gp3", "allocatedStorage": 100, "maxAllocatedStorage": 0}, None),
        ({"storageType": "gp3", "allocatedStorage": 100, "iops": 12000}, "sets iops on 100 GiB"),
        ({"storageType": "gp3", "allocatedStorage": 400, "iops": 12000, "storageThroughput": 500}, None),
    ],
)
def test_allocated_storage_lies_in_its_engines_and_storage_types_range(
    inputs: dict[str, Any], refused: str | None
) -> None:
    said = _findings(
        rds_values.check, _aws(INSTANCE, "planted-db", {"engine": "postgres", "engineVersion": "16", **inputs})
    )
    assert bool(said) == bool(refused), said
    assert all(refused and refused in f.message and "planted-db" in f.message for f in said), said
    assert all(f.fix.startswith(("set ", "drop ")) for f in said), said


def test_aurora_storage_is_not_judged() -> None:
    cluster = _aws("aws:rds/cluster:Cluster", "planted-aurora", {"engine": "aurora-postgresql", "allocatedStorage": 1})
    assert _findings(rds_values.check, cluster) == []


# namespace-admits: a quota with room for the rollout's surge pod ----------------------------------------------------

EMBED = "planted-embedding"


def _quota(pods: int, cpu: int, memory: int) -> dict[str, Any]:
    hard = {"pods": str(pods), "requests.cpu": str(cpu), "limits.cpu": str(cpu)}
    hard |= {"requests.memory": f"{memory}Gi", "limits.memory": f"{memory}Gi"}
    meta = {"name": "embedding-quota", "namespace": EMBED}
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": meta, "spec": {"hard": hard}}


def _embedder(replicas: int, strategy: dict[str, Any] | None = None, kind: str = "Deployment") -> dict[str, Any]:
    resources = {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"cpu": "1", "memory": "2Gi"}}
    pod = {"containers": [{"name": "tei", "image": "ghcr.io/huggingface/tei:1.5", "resources": resources}]}
    manifest = deployment("planted-embedder", pod, replicas=replicas, namespace=EMBED)
    manifest["kind"] = kind
    if strategy is not None:
        manifest["spec"]["strategy" if kind == "Deployment" else "updateStrategy"] = strategy
    return manifest


@pytest.mark.parametrize(
    ("quota", "workload", "refused"),
    [
        ((2, 2, 4), _embedder(2), "pods 3 (allows 2)"),  # the default 25% surge rounds up to 1
        ((3, 3, 6), _embedder(2), None),
        (
            (2, 2, 4),
            _embedder(2, {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}),
            None,
        ),
        ((2, 2, 4), _embedder(2, {"type": "Recreate"}), None),
        ((2, 2, 4), _embedder(2, kind="StatefulSet"), None),
        ((10, 10, 20), _embedder(8), None),  # 25% of 8 surges 2: 10 fits
        ((9, 9, 18), _embedder(8), "requests.cpu 10 (allows 9)"),
    ],
)
def test_a_quota_leaves_room_for_a_rollouts_surge(
    quota: tuple[int, int, int], workload: dict[str, Any], refused: str | None
) -> None:
    said = [f for f in rule(plus(workload, _quota(*quota)), "namespace-admits") if EMBED in f.message]
    assert bool(said) == bool(refused), [f.message for f in said]
    assert all(refused and refused in f.message and "embedding-quota" in f.message for f in said), said
    assert all("maxSurge 0, maxUnavailable 1" in f.fix for f in said), said


# aws-cli-permissions: an object's own key, a key built at run time, and a shell redirection ------------------------

REPORT = 'aws s3 cp /tmp/inventory.txt "s3://${BUCKET}/reports/inventory-$(date +%F).txt"'
LISTED = f"aws s3 ls s3://{BUCKET}/ --recursive > /tmp/inventory.txt 2>&1"
WRITES = ["s3:PutObject"]


@pytest.mark.parametrize(
    ("script", "policy", "missing"),
    [
        (
            REPORT,
            _policy((WRITES, [f"arn:aws:s3:::{BUCKET}/reports"])),
            f"on arn:aws:s3:::{BUCKET}/reports/inventory-*.txt ",
        ),
        (REPORT, _policy((WRITES, [f"arn:aws:s3:::{BUCKET}/reports/*"])), None),
        (REPORT, _policy((WRITES, [f"arn:aws:s3:::{BUCKET}/reports/inventory-2026-01-01.txt"])), "inventory-*.txt"),
        (
            f"aws s3 cp /tmp/r.json s3://{BUCKET}/reports/r.json",
            _policy((WRITES, [f"arn:aws:s3:::{BUCKET}/reports/r.json"])),
            None,
        ),
        (
            f"aws s3 cp /tmp/r.json s3://{BUCKET}/reports/",
            _policy((WRITES, [f"arn:aws:s3:::{BUCKET}/reports/*"])),
            None,
        ),
        (LISTED, _policy(LISTING), None),
        (LISTED, _policy(OBJECTS), f"`aws s3 ls s3://{BUCKET}/ --recursive`, which needs s3:ListBucket"),
    ],
)
def test_a_cli_command_is_read_as_the_shell_runs_it(script: str, policy: str, missing: str | None) -> None:
    said = list(aws_cli.check(_cli_graph(script, policy)))
    assert bool(said) == bool(missing), [f.message for f in said]
    assert all(missing and missing in f.message and "/*" not in f.message.split(" which ")[-1] for f in said), said
    assert all("'>'" not in f.message and "2>&1" not in f.message for f in said), said
