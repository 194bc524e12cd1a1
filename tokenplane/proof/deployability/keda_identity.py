"""A KEDA AWS scaler with ``podIdentity.provider: aws`` calls AWS as an identity that has the scaler's permission.

KEDA's AWS pod identity (https://keda.sh/docs/2.20/authentication-providers/aws/; the pinned chart is 2.20.0)
has two owners. ``identityOwner: keda``, the default: the scaler calls AWS as the KEDA operator's own service account
(``keda-operator`` in the release's namespace), which has credentials only when it is given an IAM role: the chart's
``podIdentity.aws.irsa.enabled`` with ``podIdentity.aws.irsa.roleArn``, an ``eks.amazonaws.com/role-arn`` annotation
in its values, or a Pod Identity association for that account. Without one the scaler's first call
(sqs:GetQueueAttributes, cloudwatch:GetMetricData, ...) fails (no credentials, or AccessDenied as the node role), the
ScaledObject's trigger errors on every poll, and the workload never follows the load: from zero it is never woken.
``identityOwner: workload``: KEDA assumes the role of the scaled workload's service account, so that role must allow
the scaler's call.

Each scaler's call is the one its documentation's IAM example grants (https://keda.sh/docs/2.20/scalers/).

It cannot see: a KEDA installed outside the program (no release in the region: not judged), a ``roleArn`` in the
TriggerAuthentication (the operator's reach to it is IAM's to say), and whether the workload's role trusts the
operator (KEDA tries AssumeRoleWithWebIdentity, then AssumeRole).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject, lookup
from tokenplane.proof.deployability.iam_policy import POD_IDENTITY, ROLE_ANNOTATION, allows, pod_roles, role_grants

RULE = "keda-aws-identity"
KEDA_CHART = "keda"
OPERATOR_ACCOUNT = "keda-operator"
# The call each AWS scaler makes first, from the IAM policy its page documents.
SCALER_ACTIONS = {
    "aws-sqs-queue": "sqs:GetQueueAttributes",
    "aws-cloudwatch": "cloudwatch:GetMetricData",
    "aws-kinesis-stream": "kinesis:DescribeStreamSummary",
    "aws-dynamodb": "dynamodb:Query",
    "aws-dynamodb-streams": "dynamodb:DescribeStream",
}
SCALERS = ("ScaledObject", "ScaledJob")
AUTHS = ("TriggerAuthentication", "ClusterTriggerAuthentication")


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        auths = {(a.kind, a.namespace if a.kind == AUTHS[0] else "", a.name): a for a in graph.kube(region, *AUTHS)}
        for scaler in graph.kube(region, *SCALERS):
            for trigger in lookup(scaler.manifest, "spec.triggers") or []:
                action = SCALER_ACTIONS.get(str(trigger.get("type"))) if isinstance(trigger, dict) else None
                ref = trigger.get("authenticationRef") if action else None
                if not isinstance(ref, dict) or action is None:
                    continue
                kind = str(ref.get("kind") or AUTHS[0])
                auth = auths.get((kind, scaler.namespace if kind == AUTHS[0] else "", str(ref.get("name"))))
                identity = lookup(auth.manifest, "spec.podIdentity") if auth is not None else None
                if not isinstance(identity, dict) or identity.get("provider") != "aws" or identity.get("roleArn"):
                    continue
                if (identity.get("identityOwner") or "keda") == "keda":
                    yield from _operator(graph, region, scaler, trigger, action)
                else:
                    yield from _workload(graph, scaler, trigger, action)


def _operator(graph: Graph, region: str, scaler: KubeObject, trigger: dict[str, Any], action: str) -> Iterator[Finding]:
    releases = graph.releases(region, KEDA_CHART)
    if not releases:
        return  # KEDA is installed outside the program: its identity is not seen
    for release in releases:
        namespace = str(release.inputs.get("namespace") or "default")
        values = release.inputs.get("values") or {}
        account = str(lookup(values, "serviceAccount.operator.name") or OPERATOR_ACCOUNT)
        if lookup(values, "podIdentity.aws.irsa.enabled") and lookup(values, "podIdentity.aws.irsa.roleArn"):
            return
        if _annotated(values) or any(
            a.inputs.get("namespace") == namespace and a.inputs.get("serviceAccount") == account
            for a in graph.of_type(POD_IDENTITY, region)
        ):
            return
        yield Finding(
            RULE,
            scaler.urn,
            f"{scaler.kind} {scaler.namespace}/{scaler.name}'s {trigger.get('type')} trigger authenticates with "
            "podIdentity provider aws and identityOwner keda (the default), so KEDA calls AWS "
            f"({action}) as its operator's service account {namespace}/{account}, which has no IAM role (Helm "
            f"release {release.name}'s values give none, and no Pod Identity association names it): every poll fails "
            "and the workload never scales on this trigger",
            f"give the operator a role allowing {action} (values podIdentity.aws.irsa.enabled: true and roleArn, or "
            f"a Pod Identity association for {namespace}/{account}), or set identityOwner: workload with a "
            "workload role that allows it and trusts the operator",
        )


def _workload(graph: Graph, scaler: KubeObject, trigger: dict[str, Any], action: str) -> Iterator[Finding]:
    target = lookup(scaler.manifest, "spec.scaleTargetRef") or lookup(scaler.manifest, "spec.jobTargetRef")
    name = target.get("name") if isinstance(target, dict) else None
    workloads = [w for w in graph.pod_bearers(scaler.resource.region) if w.namespace == scaler.namespace]
    found = [w for w in workloads if w.name == name] if scaler.kind == SCALERS[0] else []
    if scaler.kind == SCALERS[0] and not found:
        return  # the target is not the program's: its account is not seen
    if scaler.kind == SCALERS[1]:
        spec = lookup(target, "template.spec") if isinstance(target, dict) else None
        account = str((spec or {}).get("serviceAccountName") or "default")
    else:
        account = str((found[0].pod_spec().get("serviceAccountName") if found else None) or "default")
    roles = pod_roles(graph, found[0], account) if found else []
    verdicts = [allows([d for _, d in role_grants(graph, r, aws_managed=True)], action) for r in roles]
    if True in verdicts or None in verdicts or (not roles and _role_unseen(graph, scaler, account)):
        return
    said = (
        f"its role{'s' if len(roles) > 1 else ''} ({', '.join(r.name for r in roles)}) do{'' if len(roles) > 1 else 'es'}"
        f" not allow {action}"
        if roles
        else "it has no IAM role"
    )
    yield Finding(
        RULE,
        scaler.urn,
        f"{scaler.kind} {scaler.namespace}/{scaler.name}'s {trigger.get('type')} trigger authenticates with podIdentity "
        f"provider aws and identityOwner workload, so KEDA calls AWS ({action}) with the role of the workload's "
        f"service account {scaler.namespace}/{account}, and {said}: every poll fails and the workload never scales "
        "on this trigger",
        f"allow {action} on the scaler's resource in the workload's role (and let the KEDA operator assume it)",
    )


def _annotated(values: Any) -> bool:
    """Whether a chart's values carry an IRSA role annotation anywhere (the operator's account's, in practice)."""
    if isinstance(values, dict):
        annotations = values.get("annotations")
        if isinstance(annotations, dict) and annotations.get(ROLE_ANNOTATION):
            return True
        return any(_annotated(v) for v in values.values())
    return isinstance(values, list) and any(_annotated(v) for v in values)


def _role_unseen(graph: Graph, scaler: KubeObject, account: str) -> bool:
    """Whether the account carries a role annotation whose role the program does not create (not judged)."""
    return any(
        sa.namespace == scaler.namespace
        and sa.name == account
        and (lookup(sa.manifest, "metadata.annotations") or {}).get(ROLE_ANNOTATION)
        for sa in graph.kube(scaler.resource.region, "ServiceAccount")
    )
