"""The AWS Load Balancer Controller's role allows the calls it makes for what the program asks of it.

The controller reconciles an ALB Ingress (``ingressClassName: alb``, or the ``kubernetes.io/ingress.class: alb``
annotation) with its IRSA role: it creates the load balancer, its security group, target groups and listener, a
listener rule per host or path (``elasticloadbalancing:CreateRule``), and reads the WAF and Shield state of every ALB
(``wafv2:GetWebACLForResource``, ``waf-regional:GetWebACLForResource``, ``shield:GetSubscriptionState``) unless the
chart's ``enableWafv2`` / ``enableWaf`` / ``enableShield`` is false. A call the role does not allow fails with
"Failed deploy model due to AccessDenied", the controller retries for ever, the Ingress never gets an address and
Pulumi's await on it times out. The actions are those of the controller's published IAM policy for the pinned chart
(``lb_controller_iam.json``, with its source). An Ingress's annotations add what they make the controller call (the
table's ``per_annotation``, from the controller's source): ``auth-type: cognito`` needs
``cognito-idp:DescribeUserPoolClient``, ``wafv2-acl-arn`` ``wafv2:AssociateWebACL`` (and its read),
``waf-acl-id`` ``waf-regional:AssociateWebACL``, ``shield-advanced-protection: "true"`` ``shield:CreateProtection``
and ``shield:DescribeProtection``, a ``certificate-arn`` naming an IAM server certificate
``iam:GetServerCertificate``; the WAF and Shield ones only while the chart's flag for them is on. Annotations on a
backend Service, and values known only at apply time, are not read.

Judged for the controller releases whose role the program creates and whose policies it shows (an attached policy
it does not show makes the verdict unknown: not judged), against the ALB Ingresses of the release's region.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from typing import Any

from tokenplane import package_data
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject, lookup
from tokenplane.proof.deployability.iam_policy import allows, role_documents, role_named
from tokenplane.proof.render import LB_CONTROLLER_CHART

RULE = "controller-permissions"
ROLE_ANNOTATION = "eks.amazonaws.com/role-arn"


@cache
def _table() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(package_data.path(package_data.LB_CONTROLLER_IAM).read_text(encoding="utf-8"))
    return data


def is_alb(ingress: KubeObject) -> bool:
    manifest = ingress.resource.inputs
    annotations = (manifest.get("metadata") or {}).get("annotations") or {}
    return (manifest.get("spec") or {}).get("ingressClassName") == "alb" or annotations.get(
        "kubernetes.io/ingress.class"
    ) == "alb"


def needed(values: dict[str, Any], ingresses: list[KubeObject]) -> list[str]:
    """The actions the controller calls for ``ingresses`` (ALB ones), with the chart's ``values``."""
    if not ingresses:
        return []
    table = _table()
    out = list(table["alb_ingress"])
    if any((i.resource.inputs.get("spec") or {}).get("rules") for i in ingresses):
        out += table["alb_ingress_rules"]
    for flag, actions in table["per_alb"].items():
        if values.get(flag) is not False:
            out += actions
    for entry in table["per_annotation"]:
        if entry.get("flag") and values.get(entry["flag"]) is False:
            continue
        if any(_asks(i, entry) for i in ingresses):
            out += [a for a in entry["actions"] if a not in out]
    return out


def _asks(ingress: KubeObject, entry: dict[str, Any]) -> bool:
    """Whether the Ingress's annotation asks for what ``entry`` of the table's ``per_annotation`` describes."""
    value = ((ingress.resource.inputs.get("metadata") or {}).get("annotations") or {}).get(entry["annotation"])
    if not isinstance(value, str) or not value.strip() or value.strip().lower() == "none":
        return False
    if "equals" in entry:
        return value.strip().lower() == str(entry["equals"])
    return "contains" not in entry or str(entry["contains"]) in value


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        ingresses = [i for i in graph.kube(region, "Ingress") if is_alb(i)]
        if not ingresses:
            continue
        for release in graph.releases(region, LB_CONTROLLER_CHART):
            values: dict[str, Any] = release.inputs.get("values") or {}
            annotations = lookup(values, "serviceAccount.annotations")
            role = role_named(graph, annotations.get(ROLE_ANNOTATION) if isinstance(annotations, dict) else None)
            if role is None:
                continue
            documents = role_documents(graph, role)
            missing = [a for a in needed(values, ingresses) if allows(documents, a) is False]
            if not missing:
                continue
            names = ", ".join(f"{i.namespace}/{i.name}" for i in ingresses)
            yield Finding(
                RULE,
                release.urn,
                f"the {LB_CONTROLLER_CHART}'s role {role.name} does not allow {', '.join(missing)}, which the "
                f"controller calls for the ALB Ingress(es) {names}: it logs 'Failed deploy model due to "
                "AccessDenied', retries for ever, and the Ingress never gets an address",
                f"grant {', '.join(missing)} to the controller's role (the controller's published iam_policy.json: "
                f"{_table()['source']})",
            )
