"""Issue 27, fourth blind set: the invariants its misses showed, planted into minimal's rendered graph.

None of the planted defects is a set-4 program; each test fails when its check is removed, and each defect has a
correct twin the check must not flag.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.proof.deployability.conftest import mutated, rendered
from tests.proof.deployability.test_set3_invariants import STACK, deployment, plus, rule, system_pod
from tokenplane.proof.deployability.iam_arns import RULE as IAM_ARNS
from tokenplane.proof.deployability.read_only_root import RULE as READ_ONLY
from tokenplane.proof.render import ACCOUNT_ID, RenderedResource, RenderResult

# --- iam-resource-matches -----------------------------------------------------------------------------------------


def _aws(typ: str, name: str, inputs: dict[str, Any]) -> RenderedResource:
    return RenderedResource(
        urn=f"urn:pulumi:{STACK}::tokenplane::{typ}::planted-{name}",
        type=typ,
        name=f"planted-{name}",
        parent=None,
        provider=None,
        region="us",
        inputs=inputs,
        custom=True,
    )


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
