"""Every service account a pod names exists, and every IAM role it is annotated with trusts it.

A pod template naming a service account nobody creates is never made into a pod (the ReplicaSet controller
reports "serviceaccount not found" and Pulumi's await runs out). An IRSA service account
(``eks.amazonaws.com/role-arn``) gets credentials only if the role's trust policy lets that exact account assume
it: an ``sts:AssumeRoleWithWebIdentity`` statement whose ``Federated`` principal is the cluster's OIDC provider,
whose ``<issuer>:sub`` condition matches ``system:serviceaccount:<namespace>:<name>`` (``StringEquals`` compares
literally; only ``StringLike`` reads ``*`` and ``?``) and whose ``<issuer>:aud``, where given, admits the token's
audience: ``sts.amazonaws.com``, or the ServiceAccount's ``eks.amazonaws.com/audience`` annotation, with which the
pod identity webhook projects the token (https://github.com/aws/amazon-eks-pod-identity-webhook#eks-walkthrough).
STS also takes a token only with an audience among the IAM OIDC provider's client IDs (the program's
``aws.iam.OpenIdConnectProvider`` ``clientIdLists``): another is ``InvalidIdentityToken: Incorrect token audience``
(https://docs.aws.amazon.com/STS/latest/APIReference/API_AssumeRoleWithWebIdentity.html,
https://docs.aws.amazon.com/IAM/latest/UserGuide/id_roles_providers_create_oidc.html). Otherwise the pod's AWS SDK
fails with AccessDenied (or InvalidIdentityToken) on its first call, long after ``pulumi up`` reported success.

The same holds for the service accounts the program does not create itself but configures: a Helm chart's (its
values name the account and annotate it with the role, ``serviceAccount: {name, annotations}`` in the charts'
common shape) and an EKS add-on's (``serviceAccountRoleArn``: EKS annotates the add-on's own fixed account with it,
``ADDON_ACCOUNTS``).

An IRSA ServiceAccount no pod runs as is the other half of the same mistake when pods of its namespace run as the
``default`` account: its role reaches no pod, and those pods, with no web-identity token, find no credentials (or the
node's). Judged in namespaces whose pods the program knows (no Helm release installs there). Where every pod there
runs as an account of its own, an unused one is left alone: it is as likely kept for a workload deployed by other
means (a job run by hand, another tool's release) as a mistake (held-out set 14's correct batch_queue_policy_on_queue_arn
was refused for one).

It cannot see: roles, providers and accounts the program does not create, Pod Identity (its associations name
the account and role directly), and a chart's account whose name its values leave to the chart's default.

The trust is read with ``web_identity``'s matcher, the one ``irsa-trust`` reads it with.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import HELM_RELEASE, Graph, KubeObject
from tokenplane.proof.deployability.iam_policy import document, role_named
from tokenplane.proof.deployability.reachability import pod_template
from tokenplane.proof.deployability.web_identity import (
    AUDIENCE,
    AUDIENCE_ANNOTATION,
    ROLE_ANNOTATION,
    WEB_IDENTITY,
    oidc_issuers,
    refusal,
    subject,
    web_identity_statements,
)
from tokenplane.proof.render import RenderedResource

RULE = "service-account-trust"
ANNOTATION = ROLE_ANNOTATION
OIDC_PROVIDER = "aws:iam/openIdConnectProvider:OpenIdConnectProvider"
ADDON = "aws:eks/addon:Addon"
# Each EKS add-on's controller account, which EKS annotates with the add-on's serviceAccountRoleArn (the add-ons'
# IAM pages in the EKS User Guide: "ebs-csi-controller-sa", "aws-node", "efs-csi-controller-sa", "s3-csi-driver-sa").
ADDON_ACCOUNTS = {
    "aws-ebs-csi-driver": ("kube-system", "ebs-csi-controller-sa"),
    "vpc-cni": ("kube-system", "aws-node"),
    "aws-efs-csi-driver": ("kube-system", "efs-csi-controller-sa"),
    "aws-mountpoint-s3-csi-driver": ("kube-system", "s3-csi-driver-sa"),
    "amazon-cloudwatch-observability": ("amazon-cloudwatch", "cloudwatch-agent"),
}


@dataclass(frozen=True)
class Account:
    """A service account given an IAM role: made by the program, or by a chart or an add-on it configures."""

    urn: str
    namespace: str
    name: str
    role_arn: str
    what: str  # how the message names it
    audience: str = AUDIENCE  # the audience of the web-identity token its pods get


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        accounts = {(a.namespace, a.name): a for a in graph.kube(region, "ServiceAccount")}
        yield from _missing(graph, region, accounts)
        yield from _unused(graph, region, accounts)
        providers = {
            str(p.inputs.get("url") or "").removeprefix("https://"): p for p in graph.of_type(OIDC_PROVIDER, region)
        }
        issuers = {i for i in providers if i}
        for account in [*_made(accounts.values()), *_configured(graph, region)]:
            role = role_named(graph, account.role_arn)
            policy = role.inputs.get("assumeRolePolicy") if role is not None else None
            if role is None or document(policy) is None:
                continue  # a role made outside the program, or a policy known only at apply time
            why = refusal(policy, account.namespace, account.name, issuers, account.audience)
            why = why or _unlisted_audience(policy, providers, account.audience)
            if why is not None:
                sub = subject(account.namespace, account.name)
                custom = (
                    f" (or drop its {AUDIENCE_ANNOTATION} annotation, so that its token carries {AUDIENCE})"
                    if account.audience != AUDIENCE
                    else ""
                )
                yield Finding(
                    RULE,
                    account.urn,
                    f"{account.what} is annotated with role {role.name}, whose trust policy does not let it assume "
                    f"the role: {why}{_carrying(account)}; its pods get no AWS credentials (AccessDenied on their "
                    "first call)",
                    f"trust the cluster's OIDC provider for {WEB_IDENTITY} with StringEquals {{<issuer>:sub: "
                    f"{sub}, <issuer>:aud: {account.audience}}} in {role.name}'s assume_role_policy, with "
                    f"{account.audience} among the provider's client IDs{custom}",
                )


def _carrying(account: Account) -> str:
    if account.audience == AUDIENCE:
        return ""
    return f" (its {AUDIENCE_ANNOTATION} annotation makes its pods' web-identity token carry the audience {account.audience})"


def _unlisted_audience(policy: Any, providers: dict[str, RenderedResource], audience: str) -> str | None:
    """Why STS refuses a token of ``audience`` for every web-identity statement of ``policy`` whose OIDC providers
    are the program's: none of them lists ``audience`` among its client IDs; None when one may take it, or unknown."""
    reasons = []
    for statement in web_identity_statements(policy):
        for issuer in oidc_issuers(statement):
            provider = providers.get(issuer)
            if provider is None:
                return None  # another stack's provider: its client IDs are not in view
            clients = provider.inputs.get("clientIdLists")
            if not isinstance(clients, list) or not all(isinstance(c, str) for c in clients) or audience in clients:
                return None  # client IDs known only at apply time, or a provider that takes the audience
            reasons.append(
                f"the token's audience {audience} is not among OIDC provider {provider.name}'s client IDs "
                f"{clients}, so STS answers InvalidIdentityToken (Incorrect token audience)"
            )
    return reasons[0] if reasons else None


def carried_roles(graph: Graph) -> set[str]:
    """The URNs of the roles some account this rule reads carries: ``irsa-trust`` leaves those to it."""
    carried: set[str] = set()
    for region in graph.regions():
        for account in [*_made(graph.kube(region, "ServiceAccount")), *_configured(graph, region)]:
            if (role := role_named(graph, account.role_arn)) is not None:
                carried.add(role.urn)
    return carried


def _made(accounts: Iterable[KubeObject]) -> Iterator[Account]:
    for account in accounts:
        arn = str((account.manifest.get("metadata", {}).get("annotations") or {}).get(ANNOTATION) or "")
        what = f"ServiceAccount {account.namespace}/{account.name}"
        audience = (account.manifest.get("metadata", {}).get("annotations") or {}).get(AUDIENCE_ANNOTATION)
        if audience is not None and not isinstance(audience, str):
            continue  # an audience known only at apply time
        yield Account(account.urn, account.namespace, account.name, arn, what, audience or AUDIENCE)


def _configured(graph: Graph, region: str) -> Iterator[Account]:
    """The accounts charts and add-ons make from what the program gives them: a role annotation and a name."""
    for release in graph.of_type(HELM_RELEASE, region):
        namespace = str(release.inputs.get("namespace") or "default")
        for name, arn in _annotated(release.inputs.get("values")):
            what = f"ServiceAccount {namespace}/{name} (Helm release {release.name}'s values)"
            yield Account(release.urn, namespace, name, arn, what)
    for addon in graph.of_type(ADDON, region):
        addon_name = str(addon.inputs.get("addonName"))
        role_arn, known = addon.inputs.get("serviceAccountRoleArn"), ADDON_ACCOUNTS.get(addon_name)
        if isinstance(role_arn, str) and known is not None:
            what = f"ServiceAccount {known[0]}/{known[1]} (EKS add-on {addon_name})"
            yield Account(addon.urn, *known, role_arn, what)


def _annotated(values: Any) -> Iterator[tuple[str, str]]:
    """(name, role ARN) of each ``{name, annotations: {eks.amazonaws.com/role-arn}}`` in a chart's values."""
    if isinstance(values, dict):
        annotations, name = values.get("annotations"), values.get("name")
        if isinstance(annotations, dict) and isinstance(annotations.get(ANNOTATION), str) and isinstance(name, str):
            yield name, annotations[ANNOTATION]
        for value in values.values():
            yield from _annotated(value)
    elif isinstance(values, list):
        for value in values:
            yield from _annotated(value)


def _unused(graph: Graph, region: str, accounts: dict[tuple[str, str], KubeObject]) -> Iterator[Finding]:
    """IRSA accounts no pod of their namespace runs as, where the program knows every pod there."""
    charted = {str(r.inputs.get("namespace") or "default") for r in graph.of_type(HELM_RELEASE, region)}
    used = {
        (w.namespace, str((pod_template(w).get("spec") or {}).get("serviceAccountName") or "default"))
        for w in graph.pod_bearers(region)
    }
    for (namespace, name), account in accounts.items():
        annotations = account.manifest.get("metadata", {}).get("annotations") or {}
        if ANNOTATION not in annotations or (namespace, name) in used or namespace in charted:
            continue
        if any(ns == namespace and (ns, other) not in accounts and other != "default" for ns, other in used):
            continue  # a pod there names an account nobody creates: _missing's finding is this one's cause
        defaulted = sorted(
            w.name
            for w in graph.pod_bearers(region)
            if w.namespace == namespace and not (pod_template(w).get("spec") or {}).get("serviceAccountName")
        )
        if not defaulted:
            continue  # no pod there lacks an identity: nothing shows the account was meant for one of them
        yield Finding(
            RULE,
            account.urn,
            f"ServiceAccount {namespace}/{name} carries IAM role {annotations[ANNOTATION]}, but no pod the program runs "
            f"in {namespace} runs as it ({', '.join(defaulted)} run as the default account, with no AWS credentials)"
            ": the role reaches no pod",
            f"set serviceAccountName: {name} in the pod template meant to use the role",
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
