"""The one web-identity trust matcher that ``service-account-trust`` and ``irsa-trust`` both read with."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tokenplane.proof.deployability import irsa, service_accounts, web_identity
from tokenplane.proof.deployability.web_identity import AUDIENCE, refusal

ISSUER = "oidc.eks.us-east-1.amazonaws.com/id/ABC"
PROVIDER = f"arn:aws:iam::123456789012:oidc-provider/{ISSUER}"


def trust(condition: dict[str, Any], *, action: object = "sts:AssumeRoleWithWebIdentity", **extra: Any) -> str:
    statement = {
        "Effect": "Allow",
        "Principal": {"Federated": PROVIDER},
        "Action": action,
        "Condition": condition,
        **extra,
    }
    return json.dumps({"Version": "2012-10-17", "Statement": [statement]})


def sub(operator: str, value: object) -> dict[str, Any]:
    return {operator: {f"{ISSUER}:sub": value, f"{ISSUER}:aud": AUDIENCE}}


@pytest.mark.parametrize(
    "condition",
    [
        sub("StringEquals", "system:serviceaccount:serving:vllm"),
        sub("StringLike", "system:serviceaccount:serving:*"),
        sub("StringLike", ["system:serviceaccount:other:x", "system:serviceaccount:serving:vll?"]),
        sub("ForAnyValue:StringEquals", ["system:serviceaccount:serving:vllm"]),
        sub("StringEqualsIfExists", "system:serviceaccount:serving:vllm"),
        sub("StringEqualsIgnoreCase", "System:ServiceAccount:Serving:VLLM"),
        {"StringNotEquals": {f"{ISSUER}:sub": "system:serviceaccount:serving:other"}},
    ],
)
def test_trusts_that_admit_the_account(condition: dict[str, Any]) -> None:
    assert refusal(trust(condition), "serving", "vllm", {ISSUER}) is None
    assert refusal(trust(condition, action=["sts:*"]), "serving", "vllm", set()) is None


@pytest.mark.parametrize(
    ("document", "why"),
    [
        (trust(sub("StringEquals", "system:serviceaccount:serving:*")), "compares literally"),
        (trust(sub("StringLike", "system:serviceaccount:other:*")), "StringLike sub condition"),
        (trust({"StringEquals": {f"{ISSUER}:aud": "sts.amazonaws.com.cn"}}), "StringEquals aud condition"),
        (trust({"StringEquals": {"oidc.eks.eu-west-1.amazonaws.com/id/X:sub": "x"}}), "another issuer"),
        (trust({}, action="sts:AssumeRole"), "no statement allows"),
        (json.dumps({"Statement": {"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "*"}}), "no OIDC provider"),
    ],
)
def test_trusts_that_refuse_the_account_say_why(document: str, why: str) -> None:
    found = refusal(document, "serving", "vllm", {ISSUER})
    assert found is not None and why in found, found


def test_a_provider_of_another_cluster_is_refused_only_when_the_cluster_is_known() -> None:
    document = trust(sub("StringEquals", "system:serviceaccount:serving:vllm"))
    assert "not this cluster's" in str(refusal(document, "serving", "vllm", {"oidc.eks.x/id/OTHER"}))
    assert refusal(document, "serving", "vllm", set()) is None


def test_literals_are_the_values_naming_one_account() -> None:
    [like] = web_identity.conditions(
        json.loads(trust(sub("StringLike", ["a:b:c:d", "a:b:c:*"])))["Statement"][0], "sub"
    )
    assert like.literals == ["a:b:c:d"]


def test_both_iam_trust_rules_read_with_this_matcher() -> None:
    # One matcher: neither rule keeps a condition reader of its own (the duplication issue 27 left behind).
    for module in (irsa, service_accounts):
        assert not any(hasattr(module, name) for name in ("_conditions", "_refusal", "_listed_statements")), module
    assert vars(service_accounts)["refusal"] is web_identity.refusal
    assert vars(irsa)["conditions"] is web_identity.conditions
