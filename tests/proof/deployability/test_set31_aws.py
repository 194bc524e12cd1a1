"""The rules set 31's AWS misses led to (written after its blind run, so not held out), planted in the shipped dev
render beside correct twins: a resource policy's Deny that matches the program's own writers' requests
(resource-policy-admits-callers), SQS pollers above a function's reserved concurrency
(sqs-pollers-within-concurrency), a function failure destination its only invokers never use
(failure-destination-used), and SSM parameters and mapping scaling values PutParameter and CreateEventSourceMapping
refuse (aws-api-values). The planted defects are of other keys, operators and values than the held-out cases' (an
IfExists KMS key ID, an ACL header, a Null true, a NotAction deny; two mappings over a reservation of 6, a mapping
bounded above its reservation; an on-failure FunctionEventInvokeConfig, a Kinesis mapping without an on-failure
destination; an Advanced value over 8 KB, a name 16 levels deep, a name with a space, a maximum concurrency of 1)."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import pytest

from tests.proof.deployability.conftest import planted, planted_findings, rendered, spec
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import aws_values, policy_callers, sqs_consumers
from tokenplane.proof.render import RenderedResource

STACK = "dev"
REGION = "local"
_findings = partial(planted_findings, stack=STACK)
ACCOUNT = "123456789012"
FUNCTION = "aws:lambda/function:Function"
QUEUE = "aws:sqs/queue:Queue"
MAPPING = "aws:lambda/eventSourceMapping:EventSourceMapping"
PARAMETER = "aws:ssm/parameter:Parameter"


def _aws(type_token: str, name: str, inputs: dict[str, Any], **kw: Any) -> RenderedResource:
    return planted(STACK, type_token, name, inputs, region=REGION, **kw)


# --- resource-policy-admits-callers -----------------------------------------------------------------------------


def _batch_bucket() -> RenderedResource:
    found = [
        r for r in rendered(STACK).resources if r.type == "aws:s3/bucket:Bucket" and r.name.endswith("batch-results")
    ]
    assert len(found) == 1, found
    return found[0]


def _bucket_policy(*statements: dict[str, Any]) -> RenderedResource:
    bucket = _batch_bucket()
    arn = "arn:aws:s3:::dev-local-batch-results-7d9a558"
    for s in statements:
        s.setdefault("Resource", f"{arn}/*")
    return _aws(
        "aws:s3/bucketPolicy:BucketPolicy",
        "planted-policy",
        {
            "bucket": arn.rsplit(":", 1)[-1],
            "policy": json.dumps({"Version": "2012-10-17", "Statement": list(statements)}),
        },
        property_dependencies={"bucket": [bucket.urn], "policy": [bucket.urn]},
    )


def _deny(condition: dict[str, Any] | None, action: str = "s3:PutObject", **kw: Any) -> dict[str, Any]:
    statement: dict[str, Any] = {"Effect": "Deny", "Principal": "*", "Action": action, **kw}
    if condition is not None:
        statement["Condition"] = condition
    return statement


@pytest.mark.parametrize(
    "statement",
    [
        _deny({"StringNotEqualsIfExists": {"s3:x-amz-server-side-encryption-aws-kms-key-id": "arn:aws:kms:k"}}),
        _deny({"StringNotEquals": {"s3:x-amz-acl": "bucket-owner-full-control"}}),
        _deny({"Null": {"s3:x-amz-server-side-encryption": "true"}}),
        _deny(None, action="s3:*", Principal={"AWS": "*"}),
        {"Effect": "Deny", "Principal": "*", "NotAction": ["s3:GetObject"]},
    ],
)
def test_a_bucket_policy_deny_that_matches_the_programs_own_uploads_is_reported(statement: dict[str, Any]) -> None:
    found = _findings(policy_callers.check, _bucket_policy(statement))
    assert found and "dev-local-batch-role-policy" in found[0].message, found


@pytest.mark.parametrize(
    "statement",
    [
        _deny(
            {
                "StringNotEquals": {"s3:x-amz-server-side-encryption": "aws:kms"},
                "Null": {"s3:x-amz-server-side-encryption": "false"},
            }
        ),
        _deny({"Bool": {"aws:SecureTransport": "false"}}, action="s3:*"),
        _deny({"StringEquals": {"s3:x-amz-server-side-encryption": "AES256"}}),
        _deny({"StringNotEquals": {"aws:SourceVpce": "vpce-1"}}),  # a key this rule does not model
        _deny(None, Resource="arn:aws:s3:::another-bucket/*"),
        _deny(None, action="s3:DeleteBucket"),
    ],
)
def test_a_bucket_policy_deny_the_writers_requests_pass_is_not_reported(statement: dict[str, Any]) -> None:
    assert not _findings(policy_callers.check, _bucket_policy(statement))


def test_the_shipped_render_holds_none_of_these() -> None:
    graph = deploy.Graph(spec(STACK), rendered(STACK))
    assert not [
        *policy_callers.check(graph),
        *sqs_consumers.check_pollers(graph),
        *sqs_consumers.check_failures(graph),
        *[f for f in aws_values.check(graph) if "Systems Manager" in f.message or "maximumConcurrency" in f.message],
    ]


# --- Lambda consumers ------------------------------------------------------------------------------------------


def _function(name: str = "planted-fn", **inputs: Any) -> RenderedResource:
    return _aws(FUNCTION, name, {"runtime": "python3.13", "handler": "index.handler", **inputs})


def _queue(name: str = "planted-q", **inputs: Any) -> RenderedResource:
    return _aws(QUEUE, name, inputs)


def _mapping(name: str, function: RenderedResource, source: RenderedResource | str, **inputs: Any) -> RenderedResource:
    arn = source if isinstance(source, str) else f"arn:aws:sqs:eu-north-1:{ACCOUNT}:{source.name}"
    deps = {"functionName": [function.urn]}
    if not isinstance(source, str):
        deps["eventSourceArn"] = [source.urn]
    return _aws(
        MAPPING,
        name,
        {
            "functionName": f"arn:aws:lambda:eu-north-1:{ACCOUNT}:function:{function.name}",
            "eventSourceArn": arn,
            **inputs,
        },
        property_dependencies=deps,
    )


def test_two_unbounded_mappings_over_a_reservation_of_six_are_reported() -> None:
    fn, q1, q2 = _function(reservedConcurrentExecutions=6), _queue("planted-q1"), _queue("planted-q2")
    found = _findings(
        sqs_consumers.check_pollers, fn, q1, q2, _mapping("planted-m1", fn, q1), _mapping("planted-m2", fn, q2)
    )
    assert found and "up to 10 at once" in found[0].message, found


def test_a_mapping_bounded_above_the_reservation_is_reported() -> None:
    fn, q = _function(reservedConcurrentExecutions=3), _queue()
    found = _findings(
        sqs_consumers.check_pollers, fn, q, _mapping("planted-m", fn, q, scalingConfig={"maximumConcurrency": 10})
    )
    assert found, found


def test_a_reservation_of_two_under_an_unbounded_mapping_is_reported() -> None:
    fn, q = _function(reservedConcurrentExecutions=2), _queue()
    found = _findings(sqs_consumers.check_pollers, fn, q, _mapping("planted-m", fn, q, batchSize=10))
    assert found and "maximum_concurrency" in found[0].fix, found


@pytest.mark.parametrize(
    ("reserved", "scaling", "fifo"),
    [
        (2, {"maximumConcurrency": 2}, False),  # bounded at the reservation
        (5, None, False),  # the five pollers fit
        (None, None, False),  # unreserved
        (1, None, True),  # a FIFO queue's pollers follow message groups: not judged without a maximum
    ],
)
def test_pollers_within_the_reservation_are_not_reported(
    reserved: int | None, scaling: dict[str, int] | None, fifo: bool
) -> None:
    fn = _function(**({"reservedConcurrentExecutions": reserved} if reserved is not None else {}))
    q = _queue("planted-q.fifo", fifoQueue=True) if fifo else _queue()
    extra = {"scalingConfig": scaling} if scaling else {}
    assert not _findings(sqs_consumers.check_pollers, fn, q, _mapping("planted-m", fn, q, **extra))


def test_an_on_failure_invoke_config_on_a_function_only_sqs_invokes_is_reported() -> None:
    fn, q = _function(), _queue()
    config = _aws(
        "aws:lambda/functionEventInvokeConfig:FunctionEventInvokeConfig",
        "planted-invoke-config",
        {"functionName": "x", "destinationConfig": {"onFailure": {"destination": "arn:aws:sqs:eu-north-1:1:dlq"}}},
        property_dependencies={"functionName": [fn.urn]},
    )
    found = _findings(sqs_consumers.check_failures, fn, q, config, _mapping("planted-m", fn, q))
    assert found and "planted-invoke-config" in found[0].message, found


def test_a_function_dlq_over_a_kinesis_mapping_without_on_failure_is_reported() -> None:
    fn = _function(deadLetterConfig={"targetArn": "arn:aws:sqs:eu-north-1:1:dlq"})
    stream = f"arn:aws:kinesis:eu-north-1:{ACCOUNT}:stream/planted"
    found = _findings(sqs_consumers.check_failures, fn, _mapping("planted-m", fn, stream, startingPosition="LATEST"))
    assert found and "expires from the stream" in found[0].message, found


def test_a_function_dlq_over_a_queue_without_redrive_is_reported() -> None:
    fn, q = _function("planted-fn2", deadLetterConfig={"targetArn": "arn:aws:sns:eu-north-1:1:t"}), _queue("planted-q9")
    assert _findings(sqs_consumers.check_failures, fn, q, _mapping("planted-m", fn, q))


def test_failure_handling_where_the_poller_looks_is_not_reported() -> None:
    dlq = _queue("planted-dlq")
    redriven = _queue(
        "planted-q",
        redrivePolicy=json.dumps(
            {"deadLetterTargetArn": f"arn:aws:sqs:eu-north-1:{ACCOUNT}:planted-dlq", "maxReceiveCount": 5}
        ),
    )
    fn = _function(deadLetterConfig={"targetArn": "arn:aws:sqs:eu-north-1:1:dlq"})
    assert not _findings(sqs_consumers.check_failures, fn, dlq, redriven, _mapping("planted-m", fn, redriven))
    # a stream mapping with its own on-failure destination
    stream = f"arn:aws:kinesis:eu-north-1:{ACCOUNT}:stream/planted"
    on_failure = {"onFailure": {"destinationArn": "arn:aws:sqs:eu-north-1:1:dlq"}}
    assert not _findings(
        sqs_consumers.check_failures, fn, _mapping("planted-m", fn, stream, destinationConfig=on_failure)
    )
    # a function also invoked asynchronously (an EventBridge target) uses its DLQ
    q = _queue("planted-q2")
    target = _aws(
        "aws:cloudwatch/eventTarget:EventTarget",
        "planted-target",
        {"arn": "x", "rule": "r"},
        property_dependencies={"arn": [fn.urn]},
    )
    assert not _findings(sqs_consumers.check_failures, fn, q, target, _mapping("planted-m", fn, q))


# --- aws-api-values: SSM parameters and a mapping's maximum concurrency ---------------------------------------


def _parameter(value: str | None, *, tier: str | None = None, name: str | None = None) -> RenderedResource:
    inputs: dict[str, Any] = {"type": "String"}
    if tier:
        inputs["tier"] = tier
    if name:
        inputs["name"] = name
    resource = _aws(PARAMETER, "planted-param", {**inputs, "value": "[secret]" if value is not None else None})
    if value is not None:
        resource.secret_inputs["value"] = value
    return resource


@pytest.mark.parametrize(
    ("parameter", "says"),
    [
        (_parameter("x" * 8_193, tier="Advanced"), "8,193-character value in the Advanced tier"),
        (_parameter("x" * 9_000, tier="Intelligent-Tiering"), "Intelligent-Tiering"),
        (_parameter("x" * 4_097), "Standard tier"),  # the provider's default tier
        (_parameter("v", name="/" + "/".join(f"l{i}" for i in range(16))), "16 levels deep"),
        (_parameter("v", name="/tokenplane/rate table"), "characters other than"),
        (_parameter("v", name="/" + "n" * 1_000), "1,001-character name"),
    ],
)
def test_a_parameter_put_parameter_refuses_is_reported(parameter: RenderedResource, says: str) -> None:
    found = _findings(aws_values.check, parameter)
    assert found and says in found[0].message, found


@pytest.mark.parametrize(
    "parameter",
    [
        _parameter("x" * 4_096, tier="Standard"),
        _parameter("x" * 8_000, tier="Advanced"),
        _parameter("x" * 8_000, tier="Intelligent-Tiering"),
        _parameter(None, tier="Standard"),  # unknown at render time: not judged
        _parameter("v", name="/" + "/".join(f"l{i}" for i in range(15))),
    ],
)
def test_a_parameter_put_parameter_takes_is_not_reported(parameter: RenderedResource) -> None:
    assert not _findings(aws_values.check, parameter)


@pytest.mark.parametrize(("value", "fires"), [(1, True), (1_001, True), (2, False), (1_000, False)])
def test_a_mapping_maximum_concurrency_outside_2_to_1000_is_refused(value: int, fires: bool) -> None:
    fn, q = _function(), _queue()
    found = _findings(
        aws_values.check, fn, q, _mapping("planted-m", fn, q, scalingConfig={"maximumConcurrency": value})
    )
    assert bool([f for f in found if "maximumConcurrency" in f.message]) == fires, found
