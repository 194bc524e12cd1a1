"""The ordering rules set 25's misses led to (written after its blind run, so not held out), each planted in a
shipped render beside its correct twin: External Secrets' custom resources validated against the CRDs the
external-secrets chart installs and held to waiting for that release (crd-order), and a managed node group that
waits for its node role's EKS policy attachments (first-run-order); the shipped GPU node groups wait for theirs."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from tests.proof.deployability.conftest import mutated, rendered
from tests.proof.deployability.test_aws_join import _aws
from tests.proof.deployability.test_set3_invariants import _resource, rule
from tokenplane.proof.deployability import first_run
from tokenplane.proof.deployability.graph import HELM_RELEASE, NODE_GROUP, Graph
from tokenplane.proof.render import ACCOUNT_ID, CRD_CHARTS, RenderedResource, physical_id, validate_manifest

STACK = "minimal"
KUBERNETES = "1.31"
ROLE = "aws:iam/role:Role"
ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
NODE_POLICIES = tuple(
    f"arn:aws:iam::aws:policy/{name}"
    for name in ("AmazonEKSWorkerNodePolicy", "AmazonEKS_CNI_Policy", "AmazonEC2ContainerRegistryReadOnly")
)

# crd-order and render/schema with the external-secrets chart's CRDs -----------------------------------------------------

STORE: dict[str, Any] = {
    "apiVersion": "external-secrets.io/v1beta1",
    "kind": "ClusterSecretStore",
    "metadata": {"name": "aws-secrets-manager"},
    "spec": {"provider": {"aws": {"service": "SecretsManager", "region": "eu-west-1"}}},
}


def test_the_external_secrets_groups_map_back_to_their_chart() -> None:
    assert CRD_CHARTS["external-secrets.io"] == "external-secrets"


@pytest.mark.parametrize(
    ("manifest", "refused"),
    [
        (STORE, None),
        ({**STORE, "apiVersion": "external-secrets.io/v1alpha1"}, None),
        (
            {**STORE, "spec": {"provider": {"aws": {"service": "SecretsManager", "regoin": "eu-west-1"}}}},
            "'region' is a required",
        ),
        (
            {
                "apiVersion": "external-secrets.io/v1beta1",
                "kind": "ExternalSecret",
                "metadata": {"name": "tenant-key", "namespace": "llm-gateway"},
                "spec": {
                    "secretStoreRef": {"name": "aws-secrets-manager", "kind": "ClusterSecretStore"},
                    "target": {"name": "tenant-key"},
                    "data": [{"secretKey": "key", "remoteRef": {"key": "acme/tenants/apps"}}],
                },
            },
            None,
        ),
        (
            {
                "apiVersion": "external-secrets.io/v1beta1",
                "kind": "ExternalSecret",
                "metadata": {"name": "tenant-key", "namespace": "llm-gateway"},
                "spec": {"data": [{"secretKey": "key", "remoteRef": {"kye": "acme/tenants/apps"}}]},
            },
            "'key' is a required",
        ),
    ],
    ids=["store-v1beta1", "store-v1alpha1", "store-typo", "external-secret", "external-secret-typo"],
)
def test_external_secrets_resources_are_validated_against_the_charts_crds(
    manifest: dict[str, Any], refused: str | None
) -> None:
    said = validate_manifest(manifest, KUBERNETES)
    assert (said is None) if refused is None else (said is not None and refused in said), said


def _external_secrets(*, after: bool) -> list[RenderedResource]:
    release = _resource({"apiVersion": "v1", "kind": "Release", "metadata": {"name": "external-secrets"}})
    release = dataclasses.replace(
        release,
        type=HELM_RELEASE,
        urn=release.urn.replace("kubernetes:v1:Release", HELM_RELEASE),
        inputs={"chart": "external-secrets", "version": "0.14.2", "namespace": "external-secrets"},
        custom=True,
    )
    store = _resource(STORE)
    return [release, dataclasses.replace(store, dependencies=[release.urn] if after else [])]


@pytest.mark.parametrize("after", [False, True], ids=["before-release", "after-release"])
def test_a_secret_store_waits_for_the_external_secrets_release_that_installs_its_crd(after: bool) -> None:
    result = mutated(rendered(STACK), lambda r: r, extra=_external_secrets(after=after))
    said = [f.message for f in rule(result, "crd-order") if "aws-secrets-manager" in f.message]
    if after:
        assert said == []
    else:
        [message] = said
        assert "ClusterSecretStore aws-secrets-manager (external-secrets.io)" in message
        assert "external-secrets release" in message


# first-run-order: a node group waits for its role's policy attachments ----------------------------------------------


def _node_group(holds: str) -> list[RenderedResource]:
    """A node role, its EKS policies (``waited``/``not-waited`` attachments or ``managed`` ARNs on the role) and a
    managed node group that runs as it."""
    managed = list(NODE_POLICIES) if holds == "managed" else []
    policy = json.dumps({"Version": "2012-10-17", "Statement": []})
    role = _aws(ROLE, "embed-node-role", {"assumeRolePolicy": policy, "managedPolicyArns": managed})
    name = physical_id(ROLE, "embed-node-role").removesuffix("-id")
    attachments = [
        _aws(ATTACHMENT, f"embed-node-{arn.rsplit('/', 1)[-1].lower()}", {"role": name, "policyArn": arn})
        for arn in (NODE_POLICIES if holds != "managed" else ())
    ]
    group = _aws(NODE_GROUP, "embed-nodes", {"nodeRoleArn": f"arn:aws:iam::{ACCOUNT_ID}:role/{name}"})
    waited = [role.urn, *(a.urn for a in attachments if holds == "waited")]
    return [role, *attachments, dataclasses.replace(group, dependencies=waited)]


@pytest.mark.parametrize(("holds", "flagged"), [("not-waited", True), ("waited", False), ("managed", False)], ids=str)
def test_a_node_group_waits_for_its_roles_policy_attachments(holds: str, flagged: bool) -> None:
    result = mutated(rendered(STACK), lambda r: r, extra=_node_group(holds))
    found = [f for f in first_run.check(Graph(None, result)) if "embed-nodes" in f.message]
    if not flagged:
        assert not found, found
        return
    [finding] = found
    assert "NodeGroup embed-nodes's node role embed-node-role" in finding.message
    assert "AmazonEKSWorkerNodePolicy" in finding.message and "InvalidParameterException" in finding.message
    assert "depends_on=[" in finding.fix and "embed-node-amazoneksworkernodepolicy" in finding.fix


def test_the_shipped_node_groups_wait_for_the_cluster_node_roles_attachments() -> None:
    result = rendered(STACK)
    graph = Graph(None, result)
    attachments = {a.urn for a in result.by_type(ATTACHMENT) if a.inputs.get("policyArn") in NODE_POLICIES}
    groups = result.by_type(NODE_GROUP)
    assert attachments and len(groups) >= 2  # the system group and at least one GPU group
    for group in groups:
        assert attachments <= graph.waits_for(group.urn), group.name
