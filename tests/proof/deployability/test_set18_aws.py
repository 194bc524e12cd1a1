"""The AWS rules set 18's misses led to (written after its blind run, so not held out), each planted in dev's render
beside its correct twin: a Lambda function stopped by a reserved concurrency of 0 while the program invokes it
(function-invocable), a backup plan whose retention is outside its vault's lock (backup-retention), and an S3 event
rule on a bucket that sends EventBridge no events (events-emitted)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from tests.proof.deployability.conftest import mutated, rendered, spec
from tests.proof.deployability.test_aws_join import _aws
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import backup_selection, events_emitted, lambda_concurrency
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.render import RenderedResource, physical_id


def _wired(typ: str, name: str, inputs: dict[str, Any], **refs: RenderedResource) -> RenderedResource:
    return dataclasses.replace(_aws(typ, name, inputs), property_dependencies={k: [r.urn] for k, r in refs.items()})


def _planted(*extra: RenderedResource) -> deploy.Graph:
    return deploy.Graph(spec("dev"), mutated(rendered("dev"), lambda r: r, extra=list(extra)))


def _about(findings: list[Finding], rule: str) -> list[str]:
    return [f.message for f in findings if f.rule == rule and "planted" in f.message]


# function-invocable: reserved concurrency 0 stops a function the program invokes ---------------------------------------

FUNCTION_ARN = "arn:aws:lambda:eu-central-1:123456789012:function:planted-rollup"


def _invoker(kind: str, function: RenderedResource) -> list[RenderedResource]:
    if kind == "event-target":
        return [_wired("aws:cloudwatch/eventTarget:EventTarget", "planted-target", {"arn": FUNCTION_ARN}, arn=function)]
    if kind == "permission":  # named by its name alone, no dependency recorded
        inputs = {"function": "planted-rollup", "principal": "events.amazonaws.com", "action": "lambda:InvokeFunction"}
        return [_aws("aws:lambda/permission:Permission", "planted-invoke", inputs)]
    if kind == "sns":  # named by a qualified ARN
        inputs = {"protocol": "lambda", "endpoint": f"{FUNCTION_ARN}:live", "topic": "arn:aws:sns:x:1:t"}
        return [_aws("aws:sns/topicSubscription:TopicSubscription", "planted-subscription", inputs)]
    return []


@pytest.mark.parametrize(
    ("reserved", "invoker", "found"),
    [
        (0, "event-target", True),
        (0, "permission", True),
        (0, "sns", True),
        (0, None, False),  # stopped, and nothing of the program invokes it
        (-1, "event-target", False),  # the provider's "unreserved"
        (None, "event-target", False),
        (5, "permission", False),
    ],
)
def test_a_function_the_program_invokes_is_not_stopped(reserved: int | None, invoker: str | None, found: bool) -> None:
    inputs: dict[str, Any] = {"name": "planted-rollup", "role": "arn:aws:iam::123456789012:role/r"}
    if reserved is not None:
        inputs["reservedConcurrentExecutions"] = float(reserved)
    function = _aws("aws:lambda/function:Function", "planted-rollup", inputs)
    said = _about(
        list(lambda_concurrency.check(_planted(function, *_invoker(invoker or "", function)))), lambda_concurrency.RULE
    )
    said = [m for m in said if "reservedConcurrentExecutions 0" in m]
    assert bool(said) == found, said
    assert all("planted-rollup" in m and "throttles every invocation" in m for m in said), said


def test_function_invocable_runs_in_the_checks() -> None:
    function = _aws(
        "aws:lambda/function:Function", "planted-rollup", {"name": "planted-rollup", "reservedConcurrentExecutions": 0}
    )
    out = deploy.run(spec("dev"), mutated(rendered("dev"), lambda r: r, extra=[function, *_invoker("sns", function)]))
    [finding] = [f for f in out if f.rule == lambda_concurrency.RULE]
    assert "reservedConcurrentExecutions" in finding.fix and "-1" in finding.fix


# backup-retention: a plan's lifecycle within its vault's lock ----------------------------------------------------------


def _vault_lock(low: float, high: float | None) -> RenderedResource:
    inputs: dict[str, Any] = {"backupVaultName": "planted-vault", "minRetentionDays": low}
    if high is not None:
        inputs["maxRetentionDays"] = high
    return _aws("aws:backup/vaultLockConfiguration:VaultLockConfiguration", "planted-lock", inputs)


def _plan(delete_after: float | None, copy_after: float | None = None) -> RenderedResource:
    rule: dict[str, Any] = {"ruleName": "daily", "targetVaultName": "planted-vault", "schedule": "cron(0 3 * * ? *)"}
    if delete_after is not None:
        rule["lifecycle"] = {"deleteAfter": delete_after}
    if copy_after is not None:
        arn = "arn:aws:backup:eu-central-1:123456789012:backup-vault:planted-vault"
        rule["targetVaultName"] = "planted-other"
        rule["copyActions"] = [{"destinationVaultArn": arn, "lifecycle": {"deleteAfter": copy_after}}]
    return _aws("aws:backup/plan:Plan", "planted-plan", {"name": "planted-daily", "rules": [rule]})


@pytest.mark.parametrize(
    ("plan", "high", "field"),
    [
        (_plan(14), 365.0, "lifecycle.deleteAfter"),  # shorter than the lock's minimum
        (_plan(35), 365.0, None),  # the twin: within 35-365
        (_plan(400), 365.0, "lifecycle.deleteAfter"),  # longer than its maximum
        (_plan(400), None, None),  # no maximum
        (_plan(None), 365.0, None),  # kept forever: not judged
        (_plan(None, copy_after=7), 365.0, "copyActions[0].lifecycle.deleteAfter"),  # a copy into the locked vault
        (_plan(None, copy_after=60), 365.0, None),
    ],
)
def test_a_backup_plan_keeps_recovery_points_within_its_vaults_lock(
    plan: RenderedResource, high: float | None, field: str | None
) -> None:
    said = _about(
        list(backup_selection.check_retention(_planted(_vault_lock(35.0, high), plan))), backup_selection.RETENTION
    )
    said = [m for m in said if "planted-daily" in m]
    assert bool(said) == (field is not None), said
    assert all(field in m and "planted-vault" in m and "planted-lock" in m for m in said if field), said


def test_backup_retention_runs_in_the_checks() -> None:
    out = deploy.run(spec("dev"), mutated(rendered("dev"), lambda r: r, extra=[_vault_lock(35.0, 365.0), _plan(14)]))
    [finding] = [f for f in out if f.rule == backup_selection.RETENTION]
    assert "35-365 days" in finding.fix


# events-emitted: an S3 event rule's bucket sends its events to EventBridge ---------------------------------------------

BUCKET = _aws("aws:s3/bucket:Bucket", "planted-registry", {})
BUCKET_ID = physical_id(BUCKET.type, BUCKET.name).removesuffix("-id")


def _s3_rule(bucket_name: str) -> RenderedResource:
    pattern = f'{{"source": ["aws.s3"], "detail-type": ["Object Created"], "detail": {{"bucket": {{"name": ["{bucket_name}"]}}}}}}'
    return _wired("aws:cloudwatch/eventRule:EventRule", "planted-object-created", {"eventPattern": pattern})


def _notification(eventbridge: bool) -> RenderedResource:
    inputs = {"bucket": BUCKET_ID, "eventbridge": eventbridge}
    return _wired("aws:s3/bucketNotification:BucketNotification", "planted-notification", inputs, bucket=BUCKET)


@pytest.mark.parametrize(
    ("extra", "found"),
    [
        ([], True),  # no notification configuration on the bucket
        ([_notification(False)], True),  # one without EventBridge
        ([_notification(True)], False),  # the twin: EventBridge enabled
    ],
)
def test_an_s3_event_rule_waits_for_a_bucket_that_sends_eventbridge_its_events(
    extra: list[RenderedResource], found: bool
) -> None:
    said = _about(list(events_emitted.check(_planted(BUCKET, _s3_rule(BUCKET_ID), *extra))), events_emitted.RULE)
    assert bool(said) == found, said
    assert all("planted-registry" in m and "BucketNotification" in m for m in said), said


def test_a_rule_on_a_bucket_of_another_program_is_not_judged() -> None:
    assert _about(list(events_emitted.check(_planted(_s3_rule("someone-elses-bucket")))), events_emitted.RULE) == []


def test_events_emitted_runs_in_the_checks() -> None:
    out = deploy.run(spec("dev"), mutated(rendered("dev"), lambda r: r, extra=[BUCKET, _s3_rule(BUCKET_ID)]))
    [finding] = [f for f in out if f.rule == events_emitted.RULE]
    assert "eventbridge=True" in finding.fix
