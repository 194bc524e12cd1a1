"""The rules set 18's service-role and first-run misses led to (written after its blind run, so not held out), each
planted in a shipped render beside its correct twin: a role handed to a service that its trust policy does not name
(service-role-trust), a logging state machine whose role may not set up log delivery (state-machine-log-delivery), a
composite alarm naming the program's alarms by literal strings (first-run-order), and a certificate validated
through a private zone (first-run-order's message)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from tests.proof.deployability.conftest import mutated, rendered, spec
from tests.proof.deployability.test_aws_join import _aws
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import first_run, service_roles, state_machine_logs
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.render import RenderedResource

ROLE = "aws:iam/role:Role"
ROLE_ARN = "arn:aws:iam::123456789012:role/planted-role"


def _graph(*extra: RenderedResource) -> deploy.Graph:
    return deploy.Graph(spec("dev"), mutated(rendered("dev"), lambda r: r, extra=list(extra)))


def _trust(*services: str) -> str:
    principal: Any = services[0] if len(services) == 1 else list(services)
    statement = {"Effect": "Allow", "Principal": {"Service": principal}, "Action": "sts:AssumeRole"}
    return json.dumps({"Version": "2012-10-17", "Statement": [statement]})


def _role(*services: str, **inputs: Any) -> RenderedResource:
    return _aws(ROLE, "planted-role", {"name": "planted-role", "assumeRolePolicy": _trust(*services), **inputs})


def _planted(findings: list[Finding], name: str) -> list[Finding]:
    return [f for f in findings if f.urn.endswith(f"::{name}")]


# service-role-trust: a role handed to a service trusts that service's principal ------------------------------------

HANDOFFS = [
    ("aws:scheduler/schedule:Schedule", {"target": {"arn": "arn:aws:sqs:eu-west-1:1:q", "roleArn": ROLE_ARN}}),
    ("aws:sfn/stateMachine:StateMachine", {"roleArn": ROLE_ARN, "definition": "{}"}),
    ("aws:lambda/function:Function", {"role": ROLE_ARN, "runtime": "python3.12"}),
    ("aws:kinesis/firehoseDeliveryStream:FirehoseDeliveryStream", {"extendedS3Configuration": {"roleArn": ROLE_ARN}}),
    ("aws:cloudwatch/eventTarget:EventTarget", {"rule": "r", "arn": "arn:aws:sqs:eu-west-1:1:q", "roleArn": ROLE_ARN}),
    ("aws:pipes/pipe:Pipe", {"roleArn": ROLE_ARN, "source": "s", "target": "t"}),
    ("aws:backup/selection:Selection", {"iamRoleArn": ROLE_ARN, "planId": "p"}),
]
PRINCIPALS = {h.type: h.principal for h in service_roles.HANDOFFS}


@pytest.mark.parametrize(("typ", "inputs"), HANDOFFS, ids=[t.split(":")[1] for t, _ in HANDOFFS])
@pytest.mark.parametrize("trusting", ["wrong", "right", "among-others"])
def test_a_role_handed_to_a_service_trusts_its_principal(typ: str, inputs: dict[str, Any], trusting: str) -> None:
    principal = PRINCIPALS[typ]
    wrong = "ec2.amazonaws.com" if principal != "ec2.amazonaws.com" else "events.amazonaws.com"
    services = {"wrong": (wrong,), "right": (principal,), "among-others": (wrong, principal)}[trusting]
    said = _planted(
        list(service_roles.check(_graph(_role(*services), _aws(typ, "planted-user", inputs)))), "planted-user"
    )
    assert bool(said) == (trusting == "wrong"), said
    assert all(principal in f.message and "planted-role" in f.message and principal in f.fix for f in said), said


def test_the_message_says_when_the_service_finds_out() -> None:
    schedule = _aws(HANDOFFS[0][0], "planted-schedule", HANDOFFS[0][1])
    target = _aws(HANDOFFS[4][0], "planted-target", HANDOFFS[4][1])
    said = list(service_roles.check(_graph(_role("lambda.amazonaws.com"), schedule, target)))
    create = _planted(said, "planted-schedule")
    run_time = _planted(said, "planted-target")
    assert create and all("CreateSchedule refuses it" in f.message and "target.roleArn" in f.message for f in create)
    assert run_time and all("at run time" in f.message for f in run_time), said


def test_a_regional_step_functions_principal_is_trusted() -> None:
    machine = _aws(HANDOFFS[1][0], "planted-user", HANDOFFS[1][1])
    assert not _planted(
        list(service_roles.check(_graph(_role("states.eu-west-1.amazonaws.com"), machine))), "planted-user"
    )


def test_another_programs_role_is_not_judged() -> None:
    schedule = _aws(
        "aws:scheduler/schedule:Schedule", "planted-user", {"target": {"roleArn": "arn:aws:iam::1:role/elsewhere"}}
    )
    assert not _planted(list(service_roles.check(_graph(_role("events.amazonaws.com"), schedule))), "planted-user")


# state-machine-log-delivery: a logging state machine's role may set up log delivery --------------------------------

MACHINE = "aws:sfn/stateMachine:StateMachine"
POLICY = "aws:iam/rolePolicy:RolePolicy"


def _machine(level: str | None) -> RenderedResource:
    logging = {"logDestination": "arn:aws:logs:eu-west-1:1:log-group:/x:*", "level": level} if level else None
    inputs: dict[str, Any] = {"roleArn": ROLE_ARN, "definition": "{}"}
    return _aws(MACHINE, "planted-machine", {**inputs, "loggingConfiguration": logging} if logging else inputs)


def _policy(*actions: str, resource: str = "*") -> RenderedResource:
    statements = [{"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": "arn:aws:sqs:eu-west-1:1:q"}]
    statements += [{"Effect": "Allow", "Action": list(actions), "Resource": resource}] if actions else []
    document = json.dumps({"Version": "2012-10-17", "Statement": statements})
    return _aws(POLICY, "planted-policy", {"role": "planted-role", "policy": document})


@pytest.mark.parametrize(
    ("level", "actions", "resource", "refused"),
    [
        ("ERROR", (), "*", True),
        ("ALL", state_machine_logs.DELIVERY[:-1], "*", True),
        ("ERROR", state_machine_logs.DELIVERY, "*", False),
        ("ERROR", ("logs:*",), "*", False),
        ("ERROR", state_machine_logs.DELIVERY, "arn:aws:logs:eu-west-1:1:log-group:/x:*", True),
        ("OFF", (), "*", False),
        (None, (), "*", False),
    ],
)
def test_a_logging_state_machine_role_may_deliver_logs(
    level: str | None, actions: tuple[str, ...], resource: str, refused: bool
) -> None:
    graph = _graph(_role("states.amazonaws.com"), _policy(*actions, resource=resource), _machine(level))
    said = _planted(list(state_machine_logs.check(graph)), "planted-machine")
    assert bool(said) == refused, said
    assert all("loggingConfiguration" in f.message and "planted-role" in f.message for f in said), said
    assert all("logs:CreateLogDelivery" in f.fix for f in said), said


def test_a_role_with_an_aws_managed_policy_is_not_judged() -> None:
    managed = ["arn:aws:iam::aws:policy/CloudWatchLogsFullAccess"]
    graph = _graph(_role("states.amazonaws.com", managedPolicyArns=managed), _policy(), _machine("ERROR"))
    assert not _planted(list(state_machine_logs.check(graph)), "planted-machine")


# first-run-order: a composite alarm waits for the alarms its rule names ---------------------------------------------


def _alarm(name: str) -> RenderedResource:
    return _aws("aws:cloudwatch/metricAlarm:MetricAlarm", f"planted-{name}", {"name": name, "threshold": 1})


@pytest.mark.parametrize(
    ("rule", "waits", "flagged"),
    [
        ("ALARM(acme-age) AND ALARM(acme-depth)", False, {"acme-age", "acme-depth"}),
        (
            'ALARM("acme-age") OR NOT OK(arn:aws:cloudwatch:eu-west-1:1:alarm:acme-depth)',
            False,
            {"acme-age", "acme-depth"},
        ),
        ("ALARM(acme-age) AND ALARM(acme-depth)", True, set()),
        ("ALARM(someone-elses) AND TRUE", False, set()),
    ],
)
def test_a_composite_alarm_waits_for_the_alarms_its_rule_names(rule: str, waits: bool, flagged: set[str]) -> None:
    age, depth = _alarm("acme-age"), _alarm("acme-depth")
    composite = _aws("aws:cloudwatch/compositeAlarm:CompositeAlarm", "planted-composite", {"alarmRule": rule})
    composite = dataclasses.replace(composite, dependencies=[age.urn, depth.urn] if waits else [])
    said = _planted(list(first_run.check(_graph(age, depth, composite))), "planted-composite")
    assert {n for n in ("acme-age", "acme-depth") if any(f"alarm {n} " in f.message for f in said)} == flagged, said
    assert all("alarmRule" in f.message and "depends_on" in f.fix for f in said), said


# first-run-order: a validation record in a private zone --------------------------------------------------------------


@pytest.mark.parametrize("private", [True, False])
def test_a_validation_record_in_a_private_zone_is_never_seen_by_acm(private: bool) -> None:
    zone_inputs: dict[str, Any] = {"name": "acme-llm.net"}
    zone = _aws(
        "aws:route53/zone:Zone", "planted-zone", {**zone_inputs, "vpcs": [{"vpcId": "v"}]} if private else zone_inputs
    )
    cert = _aws("aws:acm/certificate:Certificate", "planted-cert", {"domainName": "internal.acme-llm.net"})
    record = _aws("aws:route53/record:Record", "planted-record", {"name": "_x.internal.acme-llm.net", "type": "CNAME"})
    record = dataclasses.replace(record, property_dependencies={"name": [cert.urn], "zoneId": [zone.urn]})
    said = _planted(list(first_run.check(_graph(zone, cert, record))), "planted-record")
    assert len(said) == 1, said
    assert ("private zone" in said[0].message and "public zone" in said[0].fix) == private, said
    assert ("delegat" in said[0].message) == (not private), said
