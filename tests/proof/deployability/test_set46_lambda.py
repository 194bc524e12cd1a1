"""The rules set 46's Lambda-status misses led to (written after its blind run, so not held out), planted in the
shipped dev render (eu-north-1, whose provider carries default tags) beside correct twins: a function's layer of
another Region (lambda-layer-region), IAM role and user tag keys that differ only by case from each other or from the
provider's default tags (iam-tag-keys-case), and a Lambda role's only S3 grant conditioned on aws:SourceVpc(e) that
its callers never send (identity-source-vpc). The planted defects differ from the held-out cases (a Datadog layer in
us-west-2, a layer version the program publishes in another Region, a second layer; a user's tag, a role's two own
keys, a ``Managed-By`` beside the default ``managed-by``; s3:GetObject under StringLike aws:SourceVpce, a managed
policy attached to the role, a function in a VPC without an S3 endpoint)."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

from tests.proof.deployability.conftest import planted, planted_findings, rendered
from tokenplane.proof.deployability import iam_tag_keys, lambda_layers, source_vpc
from tokenplane.proof.render import RenderedResource, physical_id

STACK = "dev"
REGION = "local"  # eu-north-1
_findings = partial(planted_findings, stack=STACK)
FUNCTION = "aws:lambda/function:Function"
ROLE = "aws:iam/role:Role"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
LAMBDA_TRUST = json.dumps(
    {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}
        ],
    }
)


def _provider() -> str:
    found = [r.urn for r in rendered(STACK).resources if r.type == "pulumi:providers:aws"]
    assert len(found) == 1, found
    return found[0]


def _aws(type_token: str, name: str, inputs: dict[str, Any], region: str = REGION) -> RenderedResource:
    return planted(STACK, type_token, name, inputs, region=region, provider=_provider())


def _function(name: str, **inputs: Any) -> RenderedResource:
    base = {"runtime": "python3.12", "handler": "app.handler", "role": f"arn:aws:iam::123456789012:role/{name}-role"}
    return _aws(FUNCTION, name, {**base, **inputs})


# --- lambda-layer-region ----------------------------------------------------------------------------------------


def _layer_findings(*resources: RenderedResource) -> list[str]:
    return [f.message for f in _findings(lambda_layers.check, *resources)]


def test_a_layer_arn_of_another_region_is_flagged() -> None:
    arn = "arn:aws:lambda:us-west-2:464622532012:layer:Datadog-Python312:98"
    found = _layer_findings(_function("planted-fn", layers=[arn]))
    assert len(found) == 1 and "us-west-2" in found[0] and "eu-north-1" in found[0], found


def test_a_second_layer_of_another_region_is_flagged_beside_a_local_one() -> None:
    ours = "arn:aws:lambda:eu-north-1:017000801446:layer:AWSLambdaPowertoolsPythonV3-python312-arm64:7"
    theirs = "arn:aws:lambda:ap-southeast-2:580247275435:layer:LambdaInsightsExtension:53"
    found = _layer_findings(_function("planted-fn", layers=[ours, theirs]))
    assert len(found) == 1 and "ap-southeast-2" in found[0], found


def test_a_layer_version_the_program_publishes_in_another_region_is_flagged() -> None:
    layer = _aws(
        "aws:lambda/layerVersion:LayerVersion", "planted-layer", {"layerName": "shared-deps"}, region="us-east-1"
    )
    arn = physical_id(layer.type, layer.name)
    found = _layer_findings(layer, _function("planted-fn", layers=[arn]))
    assert len(found) == 1 and "planted-layer" in found[0] and "us-east-1" in found[0], found


def test_layers_of_the_functions_own_region_pass() -> None:
    layer = _aws("aws:lambda/layerVersion:LayerVersion", "planted-layer", {"layerName": "shared-deps"})
    local = "arn:aws:lambda:eu-north-1:464622532012:layer:Datadog-Python312:98"
    assert _layer_findings(layer, _function("planted-fn", layers=[local, physical_id(layer.type, layer.name)])) == []


# --- iam-tag-keys-case ------------------------------------------------------------------------------------------


def _tag_findings(*resources: RenderedResource) -> list[str]:
    return [f.message for f in _findings(iam_tag_keys.check, *resources)]


def test_a_role_tag_spelling_a_default_tag_key_in_another_case_is_flagged() -> None:
    role = _aws(ROLE, "planted-role", {"assumeRolePolicy": LAMBDA_TRUST, "tags": {"Managed-By": "platform-team"}})
    found = _tag_findings(role)
    assert len(found) == 1 and "'Managed-By'" in found[0] and "'managed-by'" in found[0], found


def test_a_user_tag_spelling_a_default_tag_key_in_another_case_is_flagged() -> None:
    user = _aws("aws:iam/user:User", "planted-user", {"tags": {"TOKENPLANE:ENVIRONMENT": "dev"}})
    found = _tag_findings(user)
    assert len(found) == 1 and "CreateUser" in found[0], found


def test_two_own_keys_of_a_role_that_differ_only_by_case_are_flagged() -> None:
    role = _aws(ROLE, "planted-role", {"assumeRolePolicy": LAMBDA_TRUST, "tags": {"Owner": "a", "owner": "b"}})
    found = _tag_findings(role)
    assert len(found) == 1 and "'owner'" in found[0] and "'Owner'" in found[0], found


def test_same_spelling_new_keys_and_other_services_pass() -> None:
    role = _aws(ROLE, "planted-role", {"assumeRolePolicy": LAMBDA_TRUST, "tags": {"managed-by": "me", "team": "x"}})
    # EC2's tag keys are case-sensitive: Name and name are two tags.
    vpc = _aws("aws:ec2/vpc:Vpc", "planted-vpc", {"cidrBlock": "10.9.0.0/16", "tags": {"Managed-By": "x"}})
    assert _tag_findings(role, vpc) == []


# --- identity-source-vpc ----------------------------------------------------------------------------------------


def _policy(*statements: dict[str, Any]) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


def _lambda_role(name: str = "planted-fn-role") -> RenderedResource:
    return _aws(ROLE, name, {"name": name, "assumeRolePolicy": LAMBDA_TRUST})


def _vpc_findings(*resources: RenderedResource) -> list[str]:
    return [f.message for f in _findings(source_vpc.check_identity, *resources)]


GET_FROM_VPCE = {
    "Effect": "Allow",
    "Action": ["s3:GetObject"],
    "Resource": "arn:aws:s3:::models/*",
    "Condition": {"StringLike": {"aws:SourceVpce": "vpce-*"}},
}


def test_an_inline_get_object_only_through_an_endpoint_for_a_function_outside_a_vpc_is_flagged() -> None:
    grant = _aws(ROLE_POLICY, "planted-grant", {"role": "planted-fn-role", "policy": _policy(GET_FROM_VPCE)})
    found = _vpc_findings(_lambda_role(), grant, _function("planted-fn"))
    assert len(found) == 1 and "s3:GetObject" in found[0] and "outside any VPC" in found[0], found


def test_an_attached_managed_policy_with_source_vpc_is_flagged() -> None:
    managed = _aws(
        "aws:iam/policy:Policy",
        "planted-managed",
        {
            "name": "planted-managed",
            "policy": _policy(
                {
                    "Effect": "Allow",
                    "Action": "s3:PutObject",
                    "Resource": "arn:aws:s3:::reports/*",
                    "Condition": {"StringEquals": {"aws:SourceVpc": "vpc-0abc"}},
                }
            ),
        },
    )
    attach = _aws(
        "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
        "planted-attach",
        {"role": "planted-fn-role", "policyArn": physical_id(managed.type, managed.name)},
    )
    found = _vpc_findings(_lambda_role(), managed, attach, _function("planted-fn"))
    assert len(found) == 1 and "s3:PutObject" in found[0], found


def _private_subnet() -> str:
    found = [r for r in rendered(STACK).resources if r.type == "aws:ec2/subnet:Subnet" and "private-a" in r.name]
    assert len(found) == 1, found
    return physical_id(found[0].type, found[0].name)


def _vpc_id() -> str:
    found = [r for r in rendered(STACK).resources if r.type == "aws:ec2/vpc:Vpc"]
    assert len(found) == 1, found
    return physical_id(found[0].type, found[0].name)


def test_a_function_in_a_vpc_without_an_s3_endpoint_is_flagged() -> None:
    grant = _aws(ROLE_POLICY, "planted-grant", {"role": "planted-fn-role", "policy": _policy(GET_FROM_VPCE)})
    fn = _function("planted-fn", vpcConfig={"subnetIds": [_private_subnet()], "securityGroupIds": []})
    found = _vpc_findings(_lambda_role(), grant, fn)
    assert len(found) == 1 and "without an S3 endpoint" in found[0], found


def test_an_s3_endpoint_an_unconditioned_grant_or_another_caller_pass() -> None:
    grant = _aws(ROLE_POLICY, "planted-grant", {"role": "planted-fn-role", "policy": _policy(GET_FROM_VPCE)})
    endpoint = _aws(
        "aws:ec2/vpcEndpoint:VpcEndpoint",
        "planted-s3-endpoint",
        {"vpcId": _vpc_id(), "serviceName": "com.amazonaws.eu-north-1.s3", "vpcEndpointType": "Gateway"},
    )
    in_vpc = _function("planted-fn", vpcConfig={"subnetIds": [_private_subnet()], "securityGroupIds": []})
    assert _vpc_findings(_lambda_role(), grant, endpoint, in_vpc) == []
    also = dict(GET_FROM_VPCE)
    also.pop("Condition")
    both = _aws(ROLE_POLICY, "planted-grant", {"role": "planted-fn-role", "policy": _policy(GET_FROM_VPCE, also)})
    assert _vpc_findings(_lambda_role(), both, _function("planted-fn")) == []
    shared = _aws(
        ROLE,
        "planted-fn-role",
        {
            "name": "planted-fn-role",
            "assumeRolePolicy": _policy(
                {
                    "Effect": "Allow",
                    "Principal": {"Service": ["lambda.amazonaws.com", "ec2.amazonaws.com"]},
                    "Action": "sts:AssumeRole",
                }
            ),
        },
    )
    assert _vpc_findings(shared, grant, _function("planted-fn")) == []
