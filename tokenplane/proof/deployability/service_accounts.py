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

The trust is read with ``web_identity``'s matcher, the one ``irsa-trust`` reads it with.
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import HELM_RELEASE, Graph, KubeObject
from tokenplane.proof.deployability.iam_policy import document, role_named
from tokenplane.proof.deployability.reachability import pod_template
from tokenplane.proof.deployability.web_identity import AUDIENCE, ROLE_ANNOTATION, WEB_IDENTITY, refusal, subject

RULE = "service-account-trust"
ANNOTATION = ROLE_ANNOTATION
OIDC_PROVIDER = "aws:iam/openIdConnectProvider:OpenIdConnectProvider"


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
            policy = role.inputs.get("assumeRolePolicy") if role is not None else None
            if role is None or document(policy) is None:
                continue  # a role made outside the program, or a policy known only at apply time
            why = refusal(policy, account.namespace, account.name, {i for i in issuers if i})
            if why is not None:
                sub = subject(account.namespace, account.name)
                yield Finding(
                    RULE,
                    account.urn,
                    f"ServiceAccount {account.namespace}/{account.name} is annotated with role {role.name}, whose "
                    f"trust policy does not let it assume the role: {why}; its pods get no AWS credentials "
                    "(AccessDenied on their first call)",
                    f"trust the cluster's OIDC provider for {WEB_IDENTITY} with StringEquals {{<issuer>:sub: "
                    f"{sub}, <issuer>:aud: {AUDIENCE}}} in {role.name}'s assume_role_policy",
                )


def _missing(graph: Graph, region: str, accounts: dict[tuple[str, str], KubeObject]) -> Iterator[Finding]:
    """Pods naming a service account no one creates, in a namespace whose contents the program knows."""
    charted = {str(r.inputs.get("namespace") or "default") for r in graph.of_type(HELM_RELEASE, region)}
    for workload in graph.pod_bearers(region):
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
