"""The two hardenings the security baseline asked of the shipped components, each put back to show its check fires."""

from __future__ import annotations

import json
from typing import Any

from tests.policies.fixtures import editing, kind_of, rendered
from tokenplane.policies import ALL
from tokenplane.proof.check import run_checks
from tokenplane.proof.render import RenderedResource, RenderResult


def failures(graph: RenderResult, policy: str) -> list[str]:
    [outcome] = [o for o in run_checks(graph, [p for p in ALL if p.name == policy]).outcomes]
    return [v.message for v in outcome.violations]


def replication_policy(r: RenderedResource) -> bool:
    return r.type == "aws:iam/rolePolicy:RolePolicy" and r.name.endswith("registry-replication-policy")


def test_the_registry_replication_role_uses_kms_only_through_s3() -> None:
    assert failures(rendered("byteion"), "iam-no-wildcards") == []

    def unconditioned(inputs: dict[str, Any]) -> None:
        document = json.loads(inputs["policy"])
        for statement in document["Statement"]:
            statement.pop("Condition", None)
        inputs["policy"] = json.dumps(document)

    graph = editing(rendered("byteion"), replication_policy, unconditioned, expect=1)
    [message] = failures(graph, "iam-no-wildcards")
    assert "kms:Decrypt" in message and "without a Condition" in message


def prefetch(r: RenderedResource) -> bool:
    return kind_of(r) == "DaemonSet" and r.name.endswith("-prefetch")


def test_the_warm_pool_prefetch_holder_runs_as_nobody_without_capabilities() -> None:
    graph = rendered("byteion")
    holders = [r for r in graph.resources if prefetch(r)]
    assert holders, "byteion has warm pools, so prefetch DaemonSets"
    assert failures(graph, "pods-run-as-non-root") == []

    def as_root(inputs: dict[str, Any]) -> None:
        # The pod's own context (the engine's non-root user) would still cover the holder: drop it too.
        inputs["spec"]["template"]["spec"].pop("securityContext", None)
        for c in inputs["spec"]["template"]["spec"]["containers"]:
            c["securityContext"] = {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True}

    broken = editing(graph, prefetch, as_root, expect=len(holders))
    assert len(failures(broken, "pods-run-as-non-root")) == len(holders)
    assert len(failures(broken, "pods-drop-all-capabilities")) == len(holders)
