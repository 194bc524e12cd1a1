"""The rules set 47's log and policy-language misses led to (written after its blind run, so not held out), planted
in the shipped dev render beside correct twins: a log group named under the reserved ``aws/`` (aws-api-values), an
EventBridge target on a log group that no CloudWatch Logs resource policy of the program admits (service-admitted),
and policy variables in a document without Version 2012-10-17 (policy-variables-versioned). The planted defects
differ from the held-out cases: other names, a namePrefix, a policy on another group, a wildcard pattern of another
path, only one of the two actions, other principals; a role inline policy, a bucket policy, a 2008-10-17 version
and a Condition-only variable."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import pytest

from tests.proof.deployability.conftest import planted, planted_findings
from tokenplane.proof.deployability import aws_values, policy_variables, service_access
from tokenplane.proof.render import RenderedResource

STACK = "dev"
REGION = "local"
_findings = partial(planted_findings, stack=STACK)
LOG_GROUP = "aws:cloudwatch/logGroup:LogGroup"
TARGET = "aws:cloudwatch/eventTarget:EventTarget"
LOG_POLICY = "aws:cloudwatch/logResourcePolicy:LogResourcePolicy"
PREFIX = "arn:aws:logs:us-east-1:123456789012:log-group:"


def _aws(type_token: str, name: str, inputs: dict[str, Any], **kw: Any) -> RenderedResource:
    return planted(STACK, type_token, name, inputs, region=REGION, **kw)


# --- aws-api-values: reserved log group names ------------------------------------------------------------------


@pytest.mark.parametrize(
    "inputs",
    [{"name": "aws/lambda/report"}, {"name": "aws/vpc/flow-logs"}, {"namePrefix": "aws/audit-"}],
)
def test_a_log_group_named_under_aws_slash_is_refused(inputs: dict[str, Any]) -> None:
    found = _findings(aws_values.check, _aws(LOG_GROUP, "planted-group", inputs))
    assert [f for f in found if "can't start with the string aws/" in f.message], found


@pytest.mark.parametrize(
    "inputs", [{"name": "/aws/lambda/report"}, {"name": "awsome/logs"}, {"name": "/team/aws/logs"}, {}]
)
def test_other_log_group_names_are_accepted(inputs: dict[str, Any]) -> None:
    found = _findings(aws_values.check, _aws(LOG_GROUP, "planted-group", inputs))
    assert not [f for f in found if "aws/" in f.message], found


# --- service-admitted: EventBridge to CloudWatch Logs ----------------------------------------------------------


def _group_and_target(name: str) -> list[RenderedResource]:
    group = _aws(LOG_GROUP, "planted-group", {"name": name, "retentionInDays": 30.0})
    target = _aws(
        TARGET,
        "planted-target",
        {"arn": f"{PREFIX}{name}", "rule": "planted-rule"},
        property_dependencies={"arn": [group.urn]},
    )
    return [group, target]


def _log_policy(
    resource: str, *, actions: tuple[str, ...] = ("logs:CreateLogStream", "logs:PutLogEvents"), principal: Any = None
) -> RenderedResource:
    statement = {
        "Effect": "Allow",
        "Principal": principal or {"Service": ["events.amazonaws.com", "delivery.logs.amazonaws.com"]},
        "Action": list(actions),
        "Resource": resource,
    }
    document = json.dumps({"Version": "2012-10-17", "Statement": [statement]})
    return _aws(LOG_POLICY, "planted-log-policy", {"policyName": "planted", "policyDocument": document})


def _log_findings(*extra: RenderedResource) -> list[str]:
    return [f.message for f in _findings(service_access.check, *extra) if "CreateLogStream" in f.message]


@pytest.mark.parametrize(
    "policy",
    [
        None,  # no resource policy at all
        _log_policy(f"{PREFIX}/other/group:*"),  # another group
        _log_policy(f"{PREFIX}/aws/vendedlogs/*"),  # a wildcard of another path
        _log_policy(f"{PREFIX}/audit/ec2-changes:*", actions=("logs:PutLogEvents",)),  # one action only
        _log_policy(f"{PREFIX}/audit/ec2-changes:*", principal={"Service": "logs.amazonaws.com"}),  # other principal
    ],
)
def test_an_eventbridge_log_target_no_policy_admits_is_reported(policy: RenderedResource | None) -> None:
    extra = [*_group_and_target("/audit/ec2-changes"), *([policy] if policy else [])]
    found = _log_findings(*extra)
    assert found and "FailedInvocations" in found[0], found


@pytest.mark.parametrize(
    "policy",
    [
        _log_policy(f"{PREFIX}/audit/ec2-changes:*"),
        _log_policy(f"{PREFIX}/audit/*"),
        _log_policy("*"),
        _log_policy("arn:aws:logs:*:*:log-group:/audit/ec2-changes:log-stream:*", principal="*"),
        _log_policy(f"{PREFIX}/audit/ec2-changes:*", actions=("logs:*",)),
    ],
)
def test_an_eventbridge_log_target_a_policy_admits_is_clean(policy: RenderedResource) -> None:
    assert not _log_findings(*_group_and_target("/audit/ec2-changes"), policy)


# --- policy-variables-versioned --------------------------------------------------------------------------------


def _doc(version: str | None, statement: dict[str, Any]) -> str:
    body: dict[str, Any] = {"Statement": [statement]}
    if version is not None:
        body = {"Version": version, **body}
    return json.dumps(body)


HOME = {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::home/${aws:userid}/*"}
TAGGED = {
    "Effect": "Allow",
    "Action": "ec2:StopInstances",
    "Resource": "*",
    "Condition": {"StringEquals": {"aws:ResourceTag/owner": "${aws:username}"}},
}


def _holders(version: str | None) -> list[RenderedResource]:
    return [
        _aws("aws:iam/role:Role", "planted-role", {"inlinePolicies": [{"name": "own", "policy": _doc(version, HOME)}]}),
        _aws("aws:iam/policy:Policy", "planted-policy", {"policy": _doc(version, TAGGED)}),
        _aws(
            "aws:s3/bucketPolicy:BucketPolicy",
            "planted-bucket-policy",
            {"bucket": "home", "policy": _doc(version, {**HOME, "Principal": {"AWS": "*"}})},
        ),
    ]


@pytest.mark.parametrize("version", [None, "2008-10-17"])
@pytest.mark.parametrize("index", [0, 1, 2])
def test_policy_variables_without_the_2012_version_are_reported(version: str | None, index: int) -> None:
    found = _findings(policy_variables.check, _holders(version)[index])
    assert len(found) == 1 and "literal text" in found[0].message, found


@pytest.mark.parametrize("index", [0, 1, 2])
def test_policy_variables_with_the_2012_version_are_clean(index: int) -> None:
    assert not _findings(policy_variables.check, _holders("2012-10-17")[index])


def test_a_versionless_policy_without_variables_is_clean() -> None:
    plain = {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::home/*"}
    assert not _findings(
        policy_variables.check, _aws("aws:iam/policy:Policy", "planted-p", {"policy": _doc(None, plain)})
    )
