"""Every service account a pod names exists, and every IAM role it is annotated with trusts it.

A pod template naming a service account nobody creates is never made into a pod (the ReplicaSet controller
reports "serviceaccount not found" and Pulumi's await runs out). An IRSA service account
(``eks.amazonaws.com/role-arn``) gets credentials only if the role's trust policy lets that exact account assume
it: an ``sts:AssumeRoleWithWebIdentity`` statement whose ``Federated`` principal is the cluster's OIDC provider,
whose ``<issuer>:sub`` condition matches ``system:serviceaccount:<namespace>:<name>`` (``StringEquals`` compares
literally; only ``StringLike`` reads ``*`` and ``?``) and whose ``<issuer>:aud``, where given, is
``sts.amazonaws.com``. Otherwise the pod's AWS SDK fails with AccessDenied on its first call, long after
``pulumi up`` reported success.

It cannot see: roles, providers and accounts the program does not create, Pod Identity (its associations name
the account and role directly), and charts' own service accounts.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import HELM_RELEASE, Graph, KubeObject
from tokenplane.proof.deployability.iam_policy import role_named
from tokenplane.proof.deployability.reachability import pod_template

RULE = "service-account-trust"
ANNOTATION = "eks.amazonaws.com/role-arn"
OIDC_PROVIDER = "aws:iam/openIdConnectProvider:OpenIdConnectProvider"
AUDIENCE = "sts.amazonaws.com"
WEB_IDENTITY = "sts:AssumeRoleWithWebIdentity"
POD_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob")


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        accounts = {(a.namespace, a.name): a for a in graph.kube(region, "ServiceAccount")}
        yield from _missing(graph, region, accounts)
        issuers = {
            str(p.inputs.get("url") or "").removeprefix("https://") for p in graph.of_type(OIDC_PROVIDER, region)
        }
        for account in accounts.values():
            arn = str((account.manifest.get("metadata", {}).get("annotations") or {}).get(ANNOTATION) or "")
            role = role_named(graph, arn)
            policy = _policy(role.inputs.get("assumeRolePolicy")) if role is not None else None
            if role is None or policy is None:
                continue  # a role made outside the program, or a policy known only at apply time
            why = _refusal(policy, account.namespace, account.name, {i for i in issuers if i})
            if why is not None:
                subject = f"system:serviceaccount:{account.namespace}:{account.name}"
                yield Finding(
                    RULE,
                    account.urn,
                    f"ServiceAccount {account.namespace}/{account.name} is annotated with role {role.name}, whose "
                    f"trust policy does not let it assume the role: {why}; its pods get no AWS credentials "
                    "(AccessDenied on their first call)",
                    f"trust the cluster's OIDC provider for {WEB_IDENTITY} with StringEquals {{<issuer>:sub: "
                    f"{subject}, <issuer>:aud: {AUDIENCE}}} in {role.name}'s assume_role_policy",
                )


def _missing(graph: Graph, region: str, accounts: dict[tuple[str, str], KubeObject]) -> Iterator[Finding]:
    """Pods naming a service account no one creates, in a namespace whose contents the program knows."""
    charted = {str(r.inputs.get("namespace") or "default") for r in graph.of_type(HELM_RELEASE, region)}
    for workload in graph.kube(region, *POD_KINDS):
        name = (pod_template(workload).get("spec") or {}).get("serviceAccountName")
        namespace = workload.namespace
        if not name or name == "default" or (namespace, name) in accounts:
            continue
        if namespace in charted or namespace in graph.assumed.namespaces:
            continue  # a chart, or whoever made the namespace, may create it
        yield Finding(
            RULE,
            workload.urn,
            f"{workload.kind} {namespace}/{workload.name} runs as service account {name}, which nothing creates "
            f'in {namespace}: its pods are never created (serviceaccount "{name}" not found)',
            f"create ServiceAccount {namespace}/{name} before the {workload.kind}, or name one that exists",
        )


def _policy(value: object) -> dict[str, Any] | None:
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            loaded = json.loads(value)
        except json.JSONDecodeError:
            return None
        return loaded if isinstance(loaded, dict) else None
    return None


def _listed(value: object) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else ([str(value)] if value is not None else [])


def _refusal(policy: dict[str, Any], namespace: str, name: str, issuers: set[str]) -> str | None:
    """None when some statement lets the account assume the role, else why the closest one does not."""
    subject = f"system:serviceaccount:{namespace}:{name}"
    reasons: list[str] = []
    for statement in _listed_statements(policy.get("Statement")):
        if str(statement.get("Effect")) != "Allow":
            continue
        actions = _listed(statement.get("Action"))
        if not any(a in (WEB_IDENTITY, "sts:*", "*") for a in actions):
            continue
        federated = [
            f.split(":oidc-provider/", 1)[1]
            for f in _listed((statement.get("Principal") or {}).get("Federated"))
            if ":oidc-provider/" in f
        ]
        if not federated:
            reasons.append("its web-identity statement names no OIDC provider as its Federated principal")
            continue
        foreign = [f for f in federated if issuers and f not in issuers]
        if foreign and len(foreign) == len(federated):
            reasons.append(f"it trusts OIDC provider {foreign[0]}, not this cluster's ({', '.join(sorted(issuers))})")
            continue
        why = _conditions(statement.get("Condition") or {}, federated, subject)
        if why is None:
            return None
        reasons.append(why)
    return reasons[0] if reasons else f"no statement allows {WEB_IDENTITY}"


def _listed_statements(value: object) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        return [value]
    return [s for s in value if isinstance(s, dict)] if isinstance(value, list) else []


def _conditions(conditions: dict[str, Any], issuers: list[str], subject: str) -> str | None:
    for operator, pairs in conditions.items():
        if not isinstance(pairs, dict):
            continue
        for key, value in pairs.items():
            issuer, _, claim = str(key).rpartition(":")
            if claim not in ("sub", "aud"):
                continue
            if issuer not in issuers:
                return f"its {operator} condition reads {key}, a claim of another issuer than the statement trusts"
            wanted = subject if claim == "sub" else AUDIENCE
            values = _listed(value)
            like = operator.startswith("StringLike") or operator.endswith(":StringLike")
            equals = operator.startswith("StringEquals") or operator.endswith(":StringEquals")
            if like and not any(fnmatch.fnmatchcase(wanted, v) for v in values):
                return f"its StringLike {claim} condition {values} does not match {wanted}"
            if equals and wanted not in values:
                literal = (
                    " (StringEquals compares literally: a * matches only a *)" if any("*" in v for v in values) else ""
                )
                return f"its StringEquals {claim} condition {values} is not {wanted}{literal}"
    return None
