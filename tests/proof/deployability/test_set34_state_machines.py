"""The rules set 34's Step Functions misses led to (written after its blind run, so not held out), each defect
planted in a shipped render beside its correct twin: an integration pattern Step Functions does not offer there
(an Express machine's .sync or .waitForTaskToken, a .sync on an action without one: state-machine-definition), an
Express machine that cannot succeed within its five minutes (state-machine-express-duration), and a .sync Task whose
role may not start the job or set up its managed EventBridge rule (state-machine-sync-permissions)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.proof.deployability.conftest import mutated, planted, rendered, spec
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import state_machine_definition, state_machine_express, state_machine_sync_iam
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.render import RenderedResource

MACHINE = "aws:sfn/stateMachine:StateMachine"
ROLE = "aws:iam/role:Role"
POLICY = "aws:iam/rolePolicy:RolePolicy"
ACCOUNT = "123456789012"
ROLE_ARN = f"arn:aws:iam::{ACCOUNT}:role/planted-role"
REGION = "eu-north-1"  # dev's one region, "local"


def _aws(type_token: str, name: str, inputs: dict[str, Any]) -> RenderedResource:
    return planted("dev", type_token, name, inputs, region="local")


def _machine(definition: dict[str, Any], kind: str | None) -> RenderedResource:
    inputs: dict[str, Any] = {"roleArn": ROLE_ARN, "definition": json.dumps(definition)}
    return _aws(MACHINE, "planted-machine", {**inputs, "type": kind} if kind else inputs)


def _said(check: Callable[[deploy.Graph], Iterator[Finding]], *extra: RenderedResource) -> list[Finding]:
    graph = deploy.Graph(spec("dev"), mutated(rendered("dev"), lambda r: r, extra=list(extra)))
    return [f for f in check(graph) if f.urn.endswith("::planted-machine")]


def _task(resource: str, **more: Any) -> dict[str, Any]:
    return {"Type": "Task", "Resource": resource, **more}


def _one(state: dict[str, Any]) -> dict[str, Any]:
    """A machine of one state then a Succeed."""
    return {"StartAt": "Run", "States": {"Run": {**state, "Next": "Done"}, "Done": {"Type": "Succeed"}}}


def _in_parallel(state: dict[str, Any]) -> dict[str, Any]:
    branch = {"StartAt": "Inner", "States": {"Inner": {**state, "End": True}}}
    return _one(
        {"Type": "Parallel", "Branches": [{"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}}, branch]}
    )


def _in_map(state: dict[str, Any]) -> dict[str, Any]:
    processor = {"StartAt": "Inner", "States": {"Inner": {**state, "End": True}}}
    return _one({"Type": "Map", "ItemProcessor": processor})


# state-machine-definition: an integration pattern Step Functions offers there ---------------------------------------

PATTERNS = [
    # (id, definition, type, refused, what the message names)
    ("express-ecs-run-task-sync", _one(_task("arn:aws:states:::ecs:runTask.sync")), "EXPRESS", True, ".sync"),
    (
        "express-sqs-callback-in-a-branch",
        _in_parallel(_task("arn:aws:states:::sqs:sendMessage.waitForTaskToken")),
        "EXPRESS",
        True,
        ".waitForTaskToken",
    ),
    (
        "express-lambda-callback-in-a-map",
        _in_map(_task("arn:aws:states:::lambda:invoke.waitForTaskToken")),
        "express",
        True,
        ".waitForTaskToken",
    ),
    ("standard-lambda-invoke-sync", _one(_task("arn:aws:states:::lambda:invoke.sync")), "STANDARD", True, "lambda"),
    ("default-aws-sdk-sync", _one(_task("arn:aws:states:::aws-sdk:s3:getObject.sync")), None, True, "aws-sdk"),
    ("standard-batch-sync-2", _one(_task("arn:aws:states:::batch:submitJob.sync:2")), "STANDARD", True, "sync:2"),
    ("standard-glue-get-sync", _one(_task("arn:aws:states:::glue:getJobRun.sync")), "STANDARD", True, "glue"),
    # correct twins
    ("express-ecs-request-response", _one(_task("arn:aws:states:::ecs:runTask")), "EXPRESS", False, ""),
    (
        "express-lambda-function-arn",
        _one(_task(f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:f")),
        "EXPRESS",
        False,
        "",
    ),
    ("standard-ecs-run-task-sync", _one(_task("arn:aws:states:::ecs:runTask.sync")), "STANDARD", False, ""),
    (
        "standard-lambda-callback",
        _in_map(_task("arn:aws:states:::lambda:invoke.waitForTaskToken")),
        "STANDARD",
        False,
        "",
    ),
    ("standard-nested-sync-2", _one(_task("arn:aws:states:::states:startExecution.sync:2")), None, False, ""),
    ("standard-eks-outside-table", _one(_task("arn:aws:states:::eks:runJob.sync")), "STANDARD", False, ""),
    ("standard-sagemaker-sync", _one(_task("arn:aws:states:::sagemaker:createTrainingJob.sync")), None, False, ""),
]


@pytest.mark.parametrize(
    ("definition", "kind", "refused", "names"), [p[1:] for p in PATTERNS], ids=[p[0] for p in PATTERNS]
)
def test_an_integration_pattern_is_one_step_functions_offers_there(
    definition: dict[str, Any], kind: str | None, refused: bool, names: str
) -> None:
    said = [f for f in _said(state_machine_definition.check, _machine(definition, kind)) if "integration" in f.message]
    assert bool(said) == refused, said
    for finding in said:
        assert names in finding.message and "CreateStateMachine refuses it" in finding.message, finding
        assert ("STANDARD" in finding.fix) == (str(kind).upper() == "EXPRESS"), finding


# state-machine-express-duration: an Express machine can succeed within five minutes ---------------------------------


def _wait(seconds: Any, then: str, field: str = "Seconds") -> dict[str, Any]:
    return {"Type": "Wait", field: seconds, "Next": then}


SUCCEED = {"Type": "Succeed"}
DURATIONS = [
    # (id, definition, type, flagged)
    ("one-wait-of-300", {"StartAt": "W", "States": {"W": _wait(300, "Done"), "Done": SUCCEED}}, "EXPRESS", True),
    (
        "two-waits-adding-up",
        {"StartAt": "A", "States": {"A": _wait(200, "B"), "B": _wait(150.0, "Done"), "Done": SUCCEED}},
        "EXPRESS",
        True,
    ),
    (
        "every-choice-branch-waits",
        {
            "StartAt": "Pick",
            "States": {
                "Pick": {
                    "Type": "Choice",
                    "Choices": [{"Variable": "$.fast", "BooleanEquals": True, "Next": "Short"}],
                    "Default": "Long",
                },
                "Short": {"Type": "Wait", "Seconds": 400, "End": True},
                "Long": _wait(3600, "Done"),
                "Done": SUCCEED,
            },
        },
        "EXPRESS",
        True,
    ),
    (
        "a-parallel-branch-waits",
        _one(
            {
                "Type": "Parallel",
                "Branches": [
                    {"StartAt": "Quick", "States": {"Quick": {"Type": "Pass", "End": True}}},
                    {"StartAt": "Slow", "States": {"Slow": {"Type": "Wait", "Seconds": 900, "End": True}}},
                ],
            }
        ),
        "EXPRESS",
        True,
    ),
    # correct twins
    ("standard-waits-long", {"StartAt": "W", "States": {"W": _wait(3600, "Done"), "Done": SUCCEED}}, None, False),
    ("express-waits-299", {"StartAt": "W", "States": {"W": _wait(299, "Done"), "Done": SUCCEED}}, "EXPRESS", False),
    (
        "express-wait-set-at-run-time",
        {"StartAt": "W", "States": {"W": _wait("$.soak", "Done", "SecondsPath"), "Done": SUCCEED}},
        "EXPRESS",
        False,
    ),
    (
        "express-choice-with-a-quick-way",
        {
            "StartAt": "Pick",
            "States": {
                "Pick": {
                    "Type": "Choice",
                    "Choices": [{"Variable": "$.fast", "BooleanEquals": True, "Next": "Done"}],
                    "Default": "Long",
                },
                "Long": _wait(3600, "Done"),
                "Done": SUCCEED,
            },
        },
        "EXPRESS",
        False,
    ),
    (
        "express-catch-skips-the-wait",
        {
            "StartAt": "Call",
            "States": {
                "Call": _task(
                    "arn:aws:states:::sqs:sendMessage",
                    Next="W",
                    Catch=[{"ErrorEquals": ["States.ALL"], "Next": "Done"}],
                ),
                "W": _wait(600, "Done"),
                "Done": SUCCEED,
            },
        },
        "EXPRESS",
        False,
    ),
]


@pytest.mark.parametrize(("definition", "kind", "flagged"), [d[1:] for d in DURATIONS], ids=[d[0] for d in DURATIONS])
def test_an_express_machine_can_succeed_within_five_minutes(
    definition: dict[str, Any], kind: str | None, flagged: bool
) -> None:
    said = _said(state_machine_express.check, _machine(definition, kind))
    assert bool(said) == flagged, said
    for finding in said:
        assert "5 minutes" in finding.message and "States.Timeout" in finding.message, finding
        assert "STANDARD" in finding.fix, finding


# state-machine-sync-permissions: a .sync Task's role may start the job and set up its managed rule ------------------


def _role(**inputs: Any) -> RenderedResource:
    trust = {"Effect": "Allow", "Principal": {"Service": "states.amazonaws.com"}, "Action": "sts:AssumeRole"}
    document = json.dumps({"Version": "2012-10-17", "Statement": [trust]})
    return _aws(ROLE, "planted-role", {"name": "planted-role", "assumeRolePolicy": document, **inputs})


def _policy(*statements: dict[str, Any]) -> RenderedResource:
    document = json.dumps({"Version": "2012-10-17", "Statement": list(statements)})
    return _aws(POLICY, "planted-policy", {"role": "planted-role", "policy": document})


def _allow(actions: Any, resource: Any = "*") -> dict[str, Any]:
    return {"Effect": "Allow", "Action": actions, "Resource": resource}


def _rule(name: str) -> str:
    return f"arn:aws:events:{REGION}:{ACCOUNT}:rule/{name}"


EVENTS = ["events:PutTargets", "events:PutRule", "events:DescribeRule"]
ECS_RULE = _rule("StepFunctionsGetEventsForECSTaskRule")
SYNC_ROLES = [
    # (id, resource, statements, type, what the message names or None for a clean twin)
    (
        "ecs-without-events",
        "arn:aws:states:::ecs:runTask.sync",
        [_allow(["ecs:RunTask", "ecs:StopTask"])],
        None,
        ECS_RULE,
    ),
    (
        "batch-with-the-ecs-rule",
        "arn:aws:states:::batch:submitJob.sync",
        [_allow("batch:SubmitJob"), _allow(EVENTS, ECS_RULE)],
        "STANDARD",
        "StepFunctionsGetEventsForBatchJobsRule",
    ),
    (
        "training-job-with-put-rule-only",
        "arn:aws:states:::sagemaker:createTrainingJob.sync",
        [_allow("sagemaker:*"), _allow("events:PutRule", _rule("StepFunctionsGetEventsForSageMakerTrainingJobsRule"))],
        None,
        "events:PutTargets, events:DescribeRule on",
    ),
    (
        "nested-execution-without-start",
        "arn:aws:states:::states:startExecution.sync",
        [_allow(EVENTS, _rule("StepFunctionsGetEventsForStepFunctionsExecutionRule"))],
        None,
        "states:StartExecution",
    ),
    (
        "codebuild-with-events-in-another-region",
        "arn:aws:states:::codebuild:startBuild.sync",
        [_allow("codebuild:StartBuild"), _allow(EVENTS, "arn:aws:events:us-east-1:*:rule/*")],
        None,
        "StepFunctionsGetEventForCodeBuildStartBuildRule",
    ),
    # correct twins
    (
        "ecs-with-the-documented-policy",
        "arn:aws:states:::ecs:runTask.sync",
        [_allow("ecs:RunTask"), _allow(EVENTS, ECS_RULE)],
        None,
        None,
    ),
    (
        "batch-with-wildcards",
        "arn:aws:states:::batch:submitJob.sync",
        [_allow("batch:*"), _allow("events:*", "arn:aws:events:*:*:rule/StepFunctions*")],
        None,
        None,
    ),
    ("glue-polls", "arn:aws:states:::glue:startJobRun.sync", [_allow("glue:StartJobRun")], None, None),
    ("request-response-ecs", "arn:aws:states:::ecs:runTask", [_allow("ecs:RunTask")], None, None),
    ("express-is-judged-elsewhere", "arn:aws:states:::ecs:runTask.sync", [_allow("ecs:RunTask")], "EXPRESS", None),
]


@pytest.mark.parametrize(
    ("resource", "statements", "kind", "names"), [s[1:] for s in SYNC_ROLES], ids=[s[0] for s in SYNC_ROLES]
)
def test_a_sync_task_role_may_start_the_job_and_set_up_its_managed_rule(
    resource: str, statements: list[dict[str, Any]], kind: str | None, names: str | None
) -> None:
    machine = _machine(_one(_task(resource)), kind)
    said = _said(state_machine_sync_iam.check, _role(), _policy(*statements), machine)
    assert bool(said) == (names is not None), said
    for finding in said:
        assert str(names) in finding.message and "planted-role" in finding.message, finding
        assert "fails on every execution" in finding.message and "events:PutRule" in finding.fix, finding


def test_a_sync_task_is_not_judged_on_an_unknown_role_or_another_role_it_assumes() -> None:
    lacking = _policy(_allow("ecs:RunTask"))
    managed = _role(managedPolicyArns=["arn:aws:iam::aws:policy/AmazonEventBridgeFullAccess"])
    plain = _machine(_one(_task("arn:aws:states:::ecs:runTask.sync")), None)
    assumed = _one(_task("arn:aws:states:::ecs:runTask.sync", Credentials={"RoleArn": ROLE_ARN}))
    assert _said(state_machine_sync_iam.check, _role(), lacking, plain)  # the twin that is judged
    assert not _said(state_machine_sync_iam.check, managed, lacking, plain)
    assert not _said(state_machine_sync_iam.check, _role(), lacking, _machine(assumed, None))
