"""Issue 27, fourth blind set: IAM resources no ARN matches, images that write under a read-only root, and the Load
Balancer Controller's permissions for ALB Ingresses; planted into minimal's rendered graph.

None of the planted defects is a set-4 program; each test fails when its check is removed, and each defect has a
correct twin the check must not flag.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.proof.deployability.conftest import mutated, planted, rendered
from tests.proof.deployability.test_set3_invariants import STACK, deployment, plus, rule, system_pod
from tests.proof.deployability.test_set3_invariants import _resource as _resource_of
from tokenplane.proof.deployability.iam_arns import RULE as IAM_ARNS
from tokenplane.proof.deployability.lb_permissions import RULE as LB_PERMISSIONS
from tokenplane.proof.deployability.read_only_root import RULE as READ_ONLY
from tokenplane.proof.render import ACCOUNT_ID, RenderedResource, RenderResult

# --- iam-resource-matches -----------------------------------------------------------------------------------------


def _aws(type_token: str, name: str, inputs: dict[str, Any]) -> RenderedResource:
    return planted(STACK, type_token, f"planted-{name}", inputs)


def _granting(*resources: str, queue: bool = False) -> RenderResult:
    """minimal with a role policy that allows reads on ``resources`` (and an SQS queue named audit-events)."""
    policy = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": ["secretsmanager:GetSecretValue"], "Resource": list(resources)}],
    }
    extra = [_aws("aws:iam/rolePolicy:RolePolicy", "audit-policy", {"role": "x", "policy": json.dumps(policy)})]
    if queue:
        extra.append(_aws("aws:sqs/queue:Queue", "audit-events", {"name": "audit-events"}))
    return mutated(rendered(STACK), lambda r: r, extra=extra)


SECRET = f"arn:aws:secretsmanager:us-east-1:{ACCOUNT_ID}:secret:acme/audit/webhook"
QUEUE = f"arn:aws:sqs:us-east-1:{ACCOUNT_ID}:audit-events"


@pytest.mark.parametrize(
    ("arn", "why"),
    [
        (SECRET, "six random characters"),  # the secret's name without its suffix
        (f"arn:aws-cn:secretsmanager:us-east-1:{ACCOUNT_ID}:secret:acme/audit/webhook-*", "partition aws, not aws-cn"),
        ("arn:aws:s3:cn-north-1::acme-weights/*", "partition aws-cn"),
    ],
)
def test_an_arn_no_resource_can_have_grants_nothing(arn: str, why: str) -> None:
    found = rule(_granting(arn), IAM_ARNS)
    assert len(found) == 1 and why in found[0].message and arn in found[0].message, found


@pytest.mark.parametrize(
    ("arn", "why"),
    [
        (QUEUE.replace("us-east-1", "us-west-2"), "creates in us-east-1, in us-west-2"),
        (QUEUE.replace(ACCOUNT_ID, "210987654321"), "in account 210987654321"),
    ],
)
def test_an_arn_naming_the_programs_resource_elsewhere_grants_nothing(arn: str, why: str) -> None:
    found = rule(_granting(arn, queue=True), IAM_ARNS)
    assert len(found) == 1 and why in found[0].message, found


@pytest.mark.parametrize(
    "arn",
    [
        f"{SECRET}-*",
        f"{SECRET}-??????",
        f"{SECRET}-AbC123",  # the full ARN
        f"arn:aws:secretsmanager:us-east-1:{ACCOUNT_ID}:secret:${{aws:PrincipalTag/team}}/*",
        QUEUE,
        f"arn:aws:sqs:*:{ACCOUNT_ID}:audit-events",
        f"arn:aws-cn:secretsmanager:cn-north-1:{ACCOUNT_ID}:secret:acme/audit/webhook-*",
        f"arn:aws:sqs:us-west-2:{ACCOUNT_ID}:someone-elses-queue",  # not the program's: its region is not known
    ],
)
def test_arns_a_resource_can_have_are_not_flagged(arn: str) -> None:
    assert not rule(_granting(arn, queue=True), IAM_ARNS)


def test_minimal_and_its_created_secret_arns_are_not_flagged() -> None:
    assert not rule(rendered(STACK), IAM_ARNS)


# --- read-only-root -----------------------------------------------------------------------------------------------


def _hardened(image: str, *mounts: dict[str, Any], **container: Any) -> dict[str, Any]:
    pod = system_pod()
    pod["containers"][0] |= {
        "image": image,
        "securityContext": {"readOnlyRootFilesystem": True},
        "volumeMounts": list(mounts),
        **container,
    }
    pod["volumes"] = [{"name": m["name"], "emptyDir": {}} for m in mounts]
    return pod


def _mount(name: str, path: str, **more: Any) -> dict[str, Any]:
    return {"name": name, "mountPath": path, **more}


@pytest.mark.parametrize(
    ("pod", "missing"),
    [
        (_hardened("nginxinc/nginx-unprivileged:1.27.3-alpine"), "/tmp"),
        (_hardened("docker.io/library/nginx:1.27", _mount("cache", "/var/cache/nginx")), "/var/run"),
        (
            _hardened("nginx:1.27", _mount("run", "/run"), _mount("cache", "/var/cache/nginx", readOnly=True)),
            "/var/cache/nginx",
        ),
        (_hardened("public.ecr.aws/nginx/nginx-unprivileged:1.27", _mount("t", "/tmp/client_temp")), "/tmp"),
    ],
)
def test_a_read_only_root_without_a_volume_where_the_image_writes_never_starts(
    pod: dict[str, Any], missing: str
) -> None:
    found = rule(plus(deployment("status", pod)), READ_ONLY)
    assert len(found) == 1 and f"writes to {missing} at start" in found[0].message, found
    assert f"emptyDir at {missing}" in found[0].fix


@pytest.mark.parametrize(
    "pod",
    [
        _hardened("nginxinc/nginx-unprivileged:1.27.3-alpine", _mount("tmp", "/tmp")),
        _hardened("nginx:1.27", _mount("run", "/var/run"), _mount("cache", "/var/cache")),
        _hardened("nginx:1.27", _mount("conf", "/etc/nginx/nginx.conf", subPath="nginx.conf")),  # its own paths
        _hardened("nginx:1.27", command=["/bin/sh", "-c", "sleep infinity"]),  # not the image's process
        _hardened("registry.example.com/acme/status:1.0"),  # an image whose writes are not known
        {**system_pod(), "containers": [{**system_pod()["containers"][0], "image": "nginx:1.27"}]},  # writable root
    ],
)
def test_a_read_only_root_with_volumes_where_the_image_writes_or_an_unknown_image_is_not_flagged(
    pod: dict[str, Any],
) -> None:
    assert not rule(plus(deployment("status", pod)), READ_ONLY)


# --- controller-permissions ---------------------------------------------------------------------------------------

CONTROLLER_ROLE_ID = "minimal-us-aws-lb-controller-role-4e49821-id"
ALB_ACTIONS = [
    "elasticloadbalancing:CreateRule",
    "elasticloadbalancing:ModifyRule",
    "elasticloadbalancing:DeleteRule",
    "waf-regional:GetWebACLForResource",
    "wafv2:GetWebACLForResource",
    "shield:GetSubscriptionState",
]


def _ingress(*, rules: bool = True, by_annotation: bool = False, klass: str = "alb") -> dict[str, Any]:
    backend = {"service": {"name": "grafana", "port": {"number": 80}}}
    spec: dict[str, Any] = {} if by_annotation else {"ingressClassName": klass}
    if rules:
        spec["rules"] = [
            {
                "host": "grafana.example.com",
                "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": backend}]},
            }
        ]
    else:
        spec["defaultBackend"] = backend
    metadata: dict[str, Any] = {"name": "grafana", "namespace": "llm-data"}
    if by_annotation:
        metadata["annotations"] = {"kubernetes.io/ingress.class": klass}
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": metadata, "spec": spec}


def _without_actions(r: RenderedResource, actions: tuple[str, ...] | list[str]) -> RenderedResource:
    """The shipped controller role's policy with ``actions`` taken away again (the role before set 30's fix)."""
    if not r.name.endswith("aws-lb-controller-role-policy") or not actions:
        return r
    document = json.loads(r.inputs["policy"])
    for statement in document["Statement"]:
        kept = [a for a in statement["Action"] if a not in actions]
        statement["Action"] = kept or ["ec2:DescribeTags"]
    return dataclasses.replace(r, inputs={**r.inputs, "policy": json.dumps(document)})


def _with(
    ingress: dict[str, Any],
    *,
    grant: tuple[str, ...] | list[str] = (),
    flags: dict[str, bool] | None = None,
    taken: tuple[str, ...] | list[str] = tuple(ALB_ACTIONS),
) -> RenderResult:
    extra = [_resource_of(ingress)]
    if grant:
        policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": list(grant), "Resource": "*"}]}
        extra.append(
            _aws(
                "aws:iam/rolePolicy:RolePolicy", "alb-extra", {"role": CONTROLLER_ROLE_ID, "policy": json.dumps(policy)}
            )
        )

    def change(r: RenderedResource) -> RenderedResource:
        r = _without_actions(r, taken)
        if not flags or not r.name.endswith("aws-lb-controller") or "Release" not in r.type:
            return r
        return dataclasses.replace(r, inputs={**r.inputs, "values": {**r.inputs["values"], **flags}})

    return mutated(rendered(STACK), change, extra=extra)


def _missing(result: RenderResult) -> list[str]:
    found = rule(result, LB_PERMISSIONS)
    assert len(found) <= 1, found
    return [a for a in ALB_ACTIONS if found and a in found[0].message]


NO_WAF = {"enableWaf": False, "enableWafv2": False, "enableShield": False}


def test_an_alb_ingress_with_a_host_rule_needs_rules_and_the_per_alb_reads_the_nlb_role_lacks() -> None:
    assert _missing(_with(_ingress())) == ALB_ACTIONS


def test_an_alb_ingress_by_annotation_without_rules_needs_only_the_per_alb_reads() -> None:
    assert _missing(_with(_ingress(rules=False, by_annotation=True))) == ALB_ACTIONS[3:]


def test_with_waf_and_shield_turned_off_only_the_rule_actions_are_needed() -> None:
    assert _missing(_with(_ingress(), flags=NO_WAF)) == ALB_ACTIONS[:3]


@pytest.mark.parametrize("action", ALB_ACTIONS)
def test_the_shipped_role_with_one_alb_action_taken_away_again_is_flagged_for_it(action: str) -> None:
    assert _missing(_with(_ingress(), taken=[action])) == [action]


@pytest.mark.parametrize(
    "result",
    [
        lambda: _with(_ingress(), grant=ALB_ACTIONS),
        lambda: _with(_ingress(), grant=["elasticloadbalancing:*Rule", "waf*:GetWebACLForResource", "shield:Get*"]),
        lambda: _with(_ingress(rules=False), flags=NO_WAF),
        lambda: _with(_ingress(klass="nginx")),  # another controller's Ingress
        lambda: rendered(STACK),
        lambda: _with(_ingress(), taken=()),  # the shipped role (set 30: it grants the ALB actions)
    ],
)
def test_a_controller_role_that_allows_what_its_albs_need_is_not_flagged(result: Callable[[], RenderResult]) -> None:
    assert not rule(result(), LB_PERMISSIONS)
