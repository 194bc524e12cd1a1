"""The rules set 27's IAM and service-principal misses led to (written after its blind run, so not held out), each
planted in the shipped dev render beside its correct twin: an SSM parameter ARN with ``parameter//``
(iam-resource-matches), an action granted only on ARNs of a resource type it does not act on, read from the Service
Authorization table (iam-resource-type), a Pod Identity role whose trust policy lacks sts:TagSession
(service-role-trust), and a secret rotation whose function Secrets Manager may not invoke (service-admitted). The
planted defects are of other actions, resources and values than the held-out cases'."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from tests.proof.deployability.conftest import mutated, rendered, spec
from tests.proof.deployability.test_aws_join import _aws
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import Finding, iam_arns, iam_s3, iam_types, service_access, service_roles
from tokenplane.proof.render import ACCOUNT_ID, RenderedResource, mock_outputs

ROLE, ROLE_POLICY = "aws:iam/role:Role", "aws:iam/rolePolicy:RolePolicy"
POD_IDENTITY = "aws:eks/podIdentityAssociation:PodIdentityAssociation"
FUNCTION, PERMISSION = "aws:lambda/function:Function", "aws:lambda/permission:Permission"
ROTATION = "aws:secretsmanager/secretRotation:SecretRotation"
REGION = "eu-west-1"


def _graph(*extra: RenderedResource) -> deploy.Graph:
    return deploy.Graph(spec("dev"), mutated(rendered("dev"), lambda r: r, extra=list(extra)))


def _planted(check: Any, *extra: RenderedResource) -> list[Finding]:
    return [f for f in check(_graph(*extra)) if "planted" in f.urn]


def _policy(action: str, *resources: str) -> RenderedResource:
    statement = {"Effect": "Allow", "Action": action, "Resource": list(resources)}
    document = {"Version": "2012-10-17", "Statement": [statement]}
    return _aws(ROLE_POLICY, "planted-policy", {"role": "some-role", "policy": json.dumps(document)})


def _wired(typ: str, name: str, inputs: dict[str, Any], **refs: RenderedResource) -> RenderedResource:
    deps = {k: [r.urn] for k, r in refs.items()}
    return dataclasses.replace(
        _aws(typ, name, inputs), property_dependencies=deps, dependencies=[u for v in deps.values() for u in v]
    )


def test_the_shipped_render_has_no_void_grant_and_no_unadmitted_service() -> None:
    graph = _graph()
    assert not [*iam_types.check(graph), *iam_arns.check(graph), *service_roles.check(graph)]
    assert not list(service_access.check(graph))


# iam-resource-matches: an SSM parameter's ARN is parameter/ and its name without the leading slash -----------------

SSM = f"arn:aws:ssm:{REGION}:{ACCOUNT_ID}:parameter"


@pytest.mark.parametrize(
    ("action", "resource", "void"),
    [
        ("ssm:GetParameters", f"{SSM}//acme/gateway/url", True),
        ("ssm:GetParametersByPath", f"{SSM}//acme/gateway", True),
        ("ssm:PutParameter", "arn:aws:ssm:*:*:parameter//acme/*", True),  # wildcards do not undo the slash
        ("ssm:GetParameters", f"{SSM}/acme/gateway/url", False),
        ("ssm:GetParametersByPath", f"{SSM}/acme/*", False),
        ("ssm:PutParameter", f"{SSM}/*", False),
    ],
)
def test_an_ssm_parameter_arn_has_one_slash_after_parameter(action: str, resource: str, void: bool) -> None:
    said = _planted(iam_arns.check, _policy(action, resource))
    assert bool(said) == void, said
    assert all("leading '/'" in f.message and action in f.message for f in said), said


def test_the_mock_gives_a_parameter_the_arn_aws_forms() -> None:
    """The render's arn output of a parameter named with a path is parameter/ and the name without its slash."""
    outputs = mock_outputs("aws:ssm/parameter:Parameter", "p", {"name": "/acme/evals/suite"}, REGION)[1]
    assert outputs["arn"] == f"{SSM}/acme/evals/suite"
    assert not _planted(iam_arns.check, _policy("ssm:GetParameter", outputs["arn"]))
    group = mock_outputs("aws:cloudwatch/logGroup:LogGroup", "g", {"name": "/acme/usage"}, REGION)[1]
    assert group["arn"] == f"arn:aws:logs:{REGION}:{ACCOUNT_ID}:log-group:/acme/usage"  # no ':*', as the provider's


# iam-resource-type: an action is granted on an ARN of a resource type it acts on ---------------------------------

LOGS = f"arn:aws:logs:{REGION}:{ACCOUNT_ID}:log-group"
EKS = f"arn:aws:eks:{REGION}:{ACCOUNT_ID}"


@pytest.mark.parametrize(
    ("action", "resources", "types"),
    [
        # Stream actions on a log group's ARN (not the held-out case's PutLogEvents on its own group).
        ("logs:GetLogEvents", [f"{LOGS}:/aws/lambda/acme-metering"], "log-stream"),
        ("logs:PutLogEvents", ["arn:aws:logs:*:*:log-group:/acme/audit"], "log-stream"),
        ("logs:CreateLogStream", [f"{LOGS}:/acme/a", f"{LOGS}:/acme/b"], "log-stream"),
        # A cluster action on a node group's ARN.
        ("eks:DescribeCluster", [f"{EKS}:nodegroup/acme/cpu/0a1b2c3d"], "cluster"),
        # Correct twins: the group's streams, a stream, wildcards, group actions on the group.
        ("logs:GetLogEvents", [f"{LOGS}:/aws/lambda/acme-metering:*"], None),
        ("logs:PutLogEvents", [f"{LOGS}:/acme/audit:log-stream:*"], None),
        ("logs:CreateLogStream", [f"{LOGS}:/acme/a", f"{LOGS}:/acme/b:*"], None),  # one of them covers streams
        ("logs:PutLogEvents", ["*"], None),
        ("logs:PutLogEvents", [f"{LOGS}:*"], None),
        ("logs:DescribeLogStreams", [f"{LOGS}:/acme/audit"], None),
        ("logs:FilterLogEvents", [f"{LOGS}:/acme/audit"], None),
        ("eks:DescribeCluster", [f"{EKS}:cluster/acme"], None),
        # Not judged: an ARN of no type the table knows (a made-up one), another service's action.
        ("logs:PutLogEvents", [f"arn:aws:logs:{REGION}:{ACCOUNT_ID}:loggroup/x"], None),
        ("logs:PutLogEvents", ["arn:aws:s3:::acme-logs/*"], None),
        ("s3:GetObject", ["arn:aws:s3:::acme-logs"], None),  # iam_s3's table, judged there (once)
    ],
)
def test_an_action_is_granted_on_an_arn_of_a_type_it_acts_on(
    action: str, resources: list[str], types: str | None
) -> None:
    said = _planted(iam_types.check, _policy(action, *resources))
    assert bool(said) == bool(types), said
    assert all(types and f"acts on {types} resources" in f.message and action in f.message for f in said), said


def test_the_rule_runs_under_its_registered_id() -> None:
    policy = _policy("logs:GetLogEvents", f"{LOGS}:/acme/x")
    assert [f.rule for f in _planted(deploy.CHECKS[iam_s3.RULE], policy)] == [iam_s3.RULE]


def test_wildcards_overlap_as_globs_within_the_arns_segments() -> None:
    stream = "arn:${Partition}:logs:${Region}:${Account}:log-group:${LogGroupName}:log-stream:${LogStreamName}"
    assert iam_types._may_name("arn:aws:logs:*:*:log-group:/x:*", stream, "")
    assert iam_types._may_name("arn:aws:logs:eu-west-?:1:log-group:/x:log-stream:s", stream, "")
    assert iam_types._may_name("arn:aws:logs:*", stream, "")  # a trailing * matches on across segments
    assert not iam_types._may_name("arn:aws:logs:*:*:log-group:/x", stream, "")  # '*' is one region, one account
    assert not iam_types._may_name("arn:aws:logs:eu-west-1:1:log-group:/x", stream, "")
    assert not iam_types._may_name("arn:aws:eks:*:*:cluster/x", stream, "")


# service-role-trust: a Pod Identity role trusts pods.eks.amazonaws.com with sts:AssumeRole and sts:TagSession ------


def _trusting(actions: Any, service: str = "pods.eks.amazonaws.com") -> RenderedResource:
    statement = {"Effect": "Allow", "Principal": {"Service": service}, "Action": actions}
    trust = json.dumps({"Version": "2012-10-17", "Statement": [statement]})
    return _aws(ROLE, "planted-role", {"name": "planted-role", "assumeRolePolicy": trust})


def _association(role: RenderedResource) -> RenderedResource:
    inputs = {"clusterName": "acme", "namespace": "llm-data", "serviceAccount": "exporter", "roleArn": "unknown"}
    return _wired(POD_IDENTITY, "planted-association", inputs, roleArn=role)


@pytest.mark.parametrize(
    ("actions", "service", "missing"),
    [
        ("sts:TagSession", "pods.eks.amazonaws.com", "sts:AssumeRole"),
        (["sts:AssumeRole", "sts:TagSession"], "ec2.amazonaws.com", "sts:AssumeRole and sts:TagSession"),
        (["sts:AssumeRoleWithWebIdentity"], "pods.eks.amazonaws.com", "sts:AssumeRole and sts:TagSession"),
        (["sts:AssumeRole", "sts:TagSession"], "pods.eks.amazonaws.com", None),
        ("sts:*", "pods.eks.amazonaws.com", None),
        (["sts:TagSession", "sts:AssumeRole"], "pods.eks.amazonaws.com", None),
    ],
)
def test_a_pod_identity_role_lets_eks_tag_the_session(actions: Any, service: str, missing: str | None) -> None:
    role = _trusting(actions, service)
    said = _planted(service_roles.check, role, _association(role))
    assert bool(said) == bool(missing), said
    assert all(missing and f"does not allow {missing} to Service" in f.message for f in said), said
    assert all("sts:TagSession" in f.fix and "AssumeRoleForPodIdentity" in f.message for f in said), said


def test_other_services_need_no_tag_session() -> None:
    role = _trusting("sts:AssumeRole", "lambda.amazonaws.com")
    function = _wired(FUNCTION, "planted-fn", {"runtime": "python3.12", "role": "unknown"}, role=role)
    assert not _planted(service_roles.check, role, function)


# service-admitted: Secrets Manager may invoke a rotation function ------------------------------------------------


def _function(name: str) -> RenderedResource:
    return _aws(FUNCTION, name, {"name": name, "runtime": "python3.13", "handler": "rotate.handler"})


def _rotation(name: str, function: RenderedResource) -> RenderedResource:
    inputs = {"secretId": "acme/db", "rotationLambdaArn": "unknown", "rotationRules": {"automaticallyAfterDays": 30}}
    return _wired(ROTATION, name, inputs, rotationLambdaArn=function)


def _permission(name: str, principal: str, function: RenderedResource | str) -> RenderedResource:
    inputs = {"action": "lambda:InvokeFunction", "principal": principal}
    if isinstance(function, str):
        return _aws(PERMISSION, name, {**inputs, "function": function})
    return _wired(PERMISSION, name, {**inputs, "function": "unknown"}, function=function)


def _admitted(*planted: RenderedResource) -> list[Finding]:
    return [f for f in _planted(service_access.check, *planted) if "secretsmanager" in f.message]


def test_a_rotation_function_without_a_permission_refuses_rotate_secret() -> None:
    function = _function("planted-rotator")
    said = _admitted(function, _rotation("planted-rotation", function))
    assert len(said) == 1 and "RotateSecret answers AccessDeniedException" in said[0].message, said
    assert "secretsmanager.amazonaws.com" in said[0].fix
    # AWS's rotation guide: aws:SourceArn would tie the function to one secret; it recommends aws:SourceAccount.
    assert "aws:SourceAccount" in said[0].fix and "aws:SourceArn" not in said[0].fix, said[0].fix


def test_a_permission_for_another_service_or_function_does_not_admit_secrets_manager() -> None:
    function, other = _function("planted-rotator"), _function("planted-other")
    wrong_principal = _permission("planted-events", "events.amazonaws.com", function)
    wrong_function = _permission("planted-elsewhere", "secretsmanager.amazonaws.com", other)
    said = _admitted(function, other, wrong_principal, wrong_function, _rotation("planted-rotation", function))
    assert [f.urn.rsplit("::", 1)[-1] for f in said] == ["planted-rotation"], said


def test_of_two_rotations_only_the_one_without_a_permission_is_refused() -> None:
    first, second = _function("planted-rotator-a"), _function("planted-rotator-b")
    granted = _permission("planted-grant", "secretsmanager.amazonaws.com", first)
    planted = (first, second, granted, _rotation("planted-rotation-a", first), _rotation("planted-rotation-b", second))
    assert [f.urn.rsplit("::", 1)[-1] for f in _admitted(*planted)] == ["planted-rotation-b"]


@pytest.mark.parametrize("by", ["reference", "name", "arn"])
def test_a_permission_for_secrets_manager_admits_the_rotation(by: str) -> None:
    function = _function("planted-rotator")
    target = {
        "reference": function,
        "name": "planted-rotator",
        "arn": f"arn:aws:lambda:{REGION}:{ACCOUNT_ID}:function:planted-rotator",
    }[by]
    grant = _permission("planted-grant", "secretsmanager.amazonaws.com", target)
    assert not _admitted(function, grant, _rotation("planted-rotation", function))
