"""service-account-trust: every service account a pod names exists, and the IAM role it is annotated with trusts it.

Each planted defect is one the review did not name: a trust policy for another namespace, a wildcard under
StringEquals, a wrong audience, another cluster's OIDC provider, a pod naming an account nobody creates. The
shipped stacks and the correct variants (a wildcard under StringLike) are not flagged.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.proof.deployability.conftest import mutated, rendered, spec
from tokenplane.proof.deployability import Finding, service_accounts
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource, RenderResult

ROLE = "dev-local-ai-gateway-role"


def found(result: RenderResult, name: str = "dev") -> list[Finding]:
    return list(service_accounts.check(Graph(spec(name), result)))


def trust(change: Callable[[dict[str, Any]], None]) -> RenderResult:
    """dev with the AI gateway's role trust policy edited by ``change`` (its one statement)."""

    def edit(r: RenderedResource) -> RenderedResource:
        if r.name != ROLE:
            return r
        policy = json.loads(r.inputs["assumeRolePolicy"])
        change(policy["Statement"][0])
        return dataclasses.replace(r, inputs={**r.inputs, "assumeRolePolicy": json.dumps(policy)})

    return mutated(rendered("dev"), edit)


def _condition(operator: str, claim: str, value: str) -> Callable[[dict[str, Any]], None]:
    def change(statement: dict[str, Any]) -> None:
        pairs = statement["Condition"].pop("StringEquals")
        key = next(k for k in pairs if k.endswith(f":{claim}"))
        statement["Condition"] = {"StringEquals": {k: v for k, v in pairs.items() if k != key}, operator: {key: value}}

    return change


@pytest.mark.parametrize("name", ["dev", "minimal"])
def test_the_shipped_stacks_service_accounts_exist_and_are_trusted(name: str) -> None:
    assert found(rendered(name), name) == []


def test_a_wildcard_under_string_like_is_trusted() -> None:
    assert found(trust(_condition("StringLike", "sub", "system:serviceaccount:llm-gateway:*"))) == []


def test_a_trust_policy_for_another_namespace_is_found() -> None:
    [finding] = found(trust(_condition("StringEquals", "sub", "system:serviceaccount:llm-gateways:ai-gateway")))
    assert finding.urn.endswith("ai-gateway-sa") or "ServiceAccount llm-gateway/ai-gateway" in finding.message
    assert "is not system:serviceaccount:llm-gateway:ai-gateway" in finding.message and ROLE in finding.message


def test_a_wildcard_under_string_equals_is_found_as_literal() -> None:
    [finding] = found(trust(_condition("StringEquals", "sub", "system:serviceaccount:llm-gateway:*")))
    assert "StringEquals compares literally" in finding.message


def test_a_wrong_audience_is_found() -> None:
    [finding] = found(trust(_condition("StringEquals", "aud", "sts.amazonaws.com.cn")))
    assert "aud condition" in finding.message and "is not sts.amazonaws.com" in finding.message


def test_another_clusters_oidc_provider_is_found() -> None:
    def elsewhere(statement: dict[str, Any]) -> None:
        old = statement["Principal"]["Federated"].split(":oidc-provider/", 1)[1]
        new = "oidc.eks.us-east-1.amazonaws.com/id/0000000000000000000000000000AAAA"
        statement["Principal"]["Federated"] = statement["Principal"]["Federated"].replace(old, new)
        statement["Condition"] = json.loads(json.dumps(statement["Condition"]).replace(old, new))

    [finding] = found(trust(elsewhere))
    assert "trusts OIDC provider oidc.eks.us-east-1.amazonaws.com" in finding.message


def test_a_pod_naming_a_service_account_nobody_creates_is_found() -> None:
    def rename(r: RenderedResource) -> RenderedResource:
        if r.inputs.get("kind") != "Deployment" or r.inputs["metadata"]["name"] != "model-gateway":
            return r
        inputs = json.loads(json.dumps(r.inputs))
        inputs["spec"]["template"]["spec"]["serviceAccountName"] = "model-gatway"
        return dataclasses.replace(r, inputs=inputs)

    [finding] = found(mutated(rendered("dev"), rename))
    assert (
        'serviceaccount "model-gatway" not found' in finding.message and "llm-gateway/model-gateway" in finding.message
    )


def sub_renamed(role: str, account: str, typo: str) -> RenderResult:
    """dev with ``role``'s trust naming ``typo`` where it named the service account ``account``."""

    def edit(r: RenderedResource) -> RenderedResource:
        if r.name != role:
            return r
        policy = r.inputs["assumeRolePolicy"].replace(f":{account}", f":{typo}")
        assert policy != r.inputs["assumeRolePolicy"], f"{role} does not trust {account}"
        return dataclasses.replace(r, inputs={**r.inputs, "assumeRolePolicy": policy})

    return mutated(rendered("dev"), edit)


@pytest.mark.parametrize(
    ("role", "account", "made_by"),
    [
        ("dev-local-cluster-ebs-csi-role", "ebs-csi-controller-sa", "EKS add-on aws-ebs-csi-driver"),
        ("dev-local-cluster-autoscaler-role", "cluster-autoscaler", "Helm release"),
        ("dev-local-aws-lb-controller-role", "aws-load-balancer-controller", "Helm release"),
    ],
)
def test_a_role_that_does_not_trust_the_account_a_chart_or_add_on_makes_is_found(
    role: str, account: str, made_by: str
) -> None:
    # The account is not in the graph (the chart or EKS makes it), but the program names it and gives it the role.
    [finding] = found(sub_renamed(role, account, account + "s"))
    assert f"kube-system/{account} ({made_by}" in finding.message and role in finding.message, finding.message
