"""Reading a web-identity (IRSA) trust policy: the statements that let an OIDC token assume the role, and what
their ``sub``/``aud`` conditions admit.

One matcher for the two rules that read these policies: ``service-account-trust`` (a ServiceAccount against the
role it is annotated with) and ``irsa-trust`` (a role's trust against what carries it). IAM's semantics, as STS
applies them to ``sts:AssumeRoleWithWebIdentity``: a condition key is ``<issuer>:<claim>``; ``StringEquals``
compares literally (a ``*`` matches only a ``*``), ``StringLike`` reads ``*`` and ``?``; the set operators
(``ForAnyValue:``, ``ForAllValues:``) and ``...IfExists`` keep their base operator's matching. Other operators
(``StringNotEquals``, ...) are not read: they never make an admitted claim refused here.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tokenplane.proof.deployability.iam_policy import statements

AUDIENCE = "sts.amazonaws.com"  # the audience EKS's ServiceAccount tokens carry, unless AUDIENCE_ANNOTATION says
# The ServiceAccount annotation that sets the audience of the token the pod identity webhook projects
# (https://github.com/aws/amazon-eks-pod-identity-webhook#eks-walkthrough: default sts.amazonaws.com).
AUDIENCE_ANNOTATION = "eks.amazonaws.com/audience"
WEB_IDENTITY = "sts:AssumeRoleWithWebIdentity"
ROLE_ANNOTATION = "eks.amazonaws.com/role-arn"
CLAIMS = ("sub", "aud")


def listed(value: object) -> list[str]:
    """A policy value that may be one string or a list of them, as a list."""
    return [str(v) for v in value] if isinstance(value, list) else ([str(value)] if value is not None else [])


def subject(namespace: str, name: str) -> str:
    """The ``sub`` claim of a ServiceAccount's token."""
    return f"system:serviceaccount:{namespace}:{name}"


@dataclass(frozen=True)
class Condition:
    """One string condition on a token claim: ``operator`` {``issuer``:``claim``: ``values``}."""

    operator: str
    key: str
    issuer: str
    claim: str
    values: list[str]

    @property
    def _base(self) -> str:
        return self.operator.rsplit(":", 1)[-1].removesuffix("IfExists")

    @property
    def like(self) -> bool:
        return self._base == "StringLike"

    @property
    def equals(self) -> bool:
        return self._base in ("StringEquals", "StringEqualsIgnoreCase")

    def admits(self, wanted: str) -> bool:
        if self.like:
            return any(fnmatch.fnmatchcase(wanted, v) for v in self.values)
        if self._base == "StringEqualsIgnoreCase":
            return wanted.casefold() in {v.casefold() for v in self.values}
        if self.equals:
            return wanted in self.values
        return True  # an operator this matcher does not read

    def refusal(self, wanted: str) -> str | None:
        """Why the condition refuses ``wanted``, or None when it admits it."""
        if self.admits(wanted):
            return None
        if self.like:
            return f"its StringLike {self.claim} condition {self.values} does not match {wanted}"
        literal = (
            " (StringEquals compares literally: a * matches only a *)" if any("*" in v for v in self.values) else ""
        )
        return f"its StringEquals {self.claim} condition {self.values} is not {wanted}{literal}"

    @property
    def literals(self) -> list[str]:
        """The values that name exactly one claim value (no wildcard a StringLike would read)."""
        return [v for v in self.values if self.equals or not any(c in v for c in "*?")]


def web_identity_statements(document: Any) -> list[dict[str, Any]]:
    """The Allow statements of a trust policy whose actions include ``sts:AssumeRoleWithWebIdentity``."""
    out = []
    for statement in statements(document):
        if str(statement.get("Effect")) != "Allow":
            continue
        if any(a in (WEB_IDENTITY, "sts:*", "*") for a in listed(statement.get("Action"))):
            out.append(statement)
    return out


def federated(statement: dict[str, Any]) -> list[str]:
    """The statement's Federated principals' values (an OIDC provider's ARN, or anything else written there)."""
    principal = statement.get("Principal")
    return listed(principal.get("Federated")) if isinstance(principal, dict) else []


def oidc_issuers(statement: dict[str, Any]) -> list[str]:
    """The issuers (``oidc.eks.REGION.amazonaws.com/id/ID``) of the OIDC providers the statement trusts."""
    return [f.split(":oidc-provider/", 1)[1] for f in federated(statement) if ":oidc-provider/" in f]


def conditions(statement: dict[str, Any], claim: str | None = None) -> list[Condition]:
    """The statement's conditions on the ``sub`` and ``aud`` claims (``claim`` only, when given)."""
    out = []
    for operator, pairs in (statement.get("Condition") or {}).items():
        if not isinstance(pairs, dict):
            continue
        for key, value in pairs.items():
            issuer, _, name = str(key).rpartition(":")
            if name in CLAIMS and (claim is None or name == claim):
                out.append(Condition(str(operator), str(key), issuer, name, listed(value)))
    return out


def refusal(document: Any, namespace: str, name: str, issuers: Iterable[str], audience: str = AUDIENCE) -> str | None:
    """None when some statement lets ServiceAccount ``namespace/name``'s token (whose ``aud`` is ``audience``)
    assume the role (trusting one of the cluster's ``issuers``; any, when none is known), else why the closest
    statement does not."""
    wanted_sub = subject(namespace, name)
    known = set(issuers)
    reasons: list[str] = []
    for statement in web_identity_statements(document):
        trusted = oidc_issuers(statement)
        if not trusted:
            reasons.append("its web-identity statement names no OIDC provider as its Federated principal")
            continue
        foreign = [f for f in trusted if known and f not in known]
        if foreign and len(foreign) == len(trusted):
            reasons.append(f"it trusts OIDC provider {foreign[0]}, not this cluster's ({', '.join(sorted(known))})")
            continue
        why = _statement_refusal(statement, trusted, wanted_sub, audience)
        if why is None:
            return None
        reasons.append(why)
    return reasons[0] if reasons else f"no statement allows {WEB_IDENTITY}"


def _statement_refusal(statement: dict[str, Any], trusted: list[str], wanted_sub: str, audience: str) -> str | None:
    for condition in conditions(statement):
        if condition.issuer not in trusted:
            return (
                f"its {condition.operator} condition reads {condition.key}, a claim of another issuer than the "
                "statement trusts"
            )
        why = condition.refusal(wanted_sub if condition.claim == "sub" else audience)
        if why is not None:
            return why
    return None
