"""The rules set 33's load balancer misses led to (written after its blind run, so not held out), planted in the
single-region example beside correct twins: a load balancer's access logs into a bucket Elastic Load Balancing cannot
write (lb-access-log-bucket), and a CloudWatch alarm whose dimension is a resource of the program in a namespace that
resource type never publishes to (alarm-metric-exists). The planted defects are of other load balancers, keys,
regions and namespaces than the held-out cases' (an ALB's connection logs under a customer managed key, an NLB's and
a Classic one's under aws/s3, a policy naming us-east-1's ELB account, a policy the ALB does not wait for, an Ingress
and an NLB Service made by the controller; a queue's name as a FunctionName, a TCP target group under
AWS/ApplicationELB, an NLB in AWS/ELB through metric math, a Classic name under AWS/ApplicationELB, an ALB metric
name under AWS/ELB)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from tests.proof.deployability.test_controllers_and_readiness import (
    LB_SERVICE,
    _annotation,
    _ingress,
    base,
    edited,
    fired,
)
from tokenplane.proof.deployability import alarm_metrics, lb_access_logs
from tokenplane.proof.render import RenderedResource, RenderResult, mock_outputs

REGION = "eu-central-1"
ELB_ACCOUNT = "054676820928"  # eu-central-1's (the ALB access-logging page's table)
BUCKET, SSE, POLICY = "aws:s3/bucket:Bucket", "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration", "aws:s3/bucketPolicy:BucketPolicy"  # fmt: skip
LB, CLB, KEY = "aws:lb/loadBalancer:LoadBalancer", "aws:elb/loadBalancer:LoadBalancer", "aws:kms/key:Key"
ALARM = "aws:cloudwatch/metricAlarm:MetricAlarm"
LOGS = mock_outputs(BUCKET, "planted-logs", {}, REGION)[1]["bucket"]  # the planted bucket's name
REGISTRY = "eu-registry-fc76023"  # the example's secure_bucket: SSE-KMS under aws/s3


def _aws(type_token: str, name: str, inputs: dict[str, Any], depends: list[str] | None = None) -> RenderedResource:
    return RenderedResource(
        urn=f"urn:pulumi:dev::single-region::{type_token}::{name}",
        type=type_token,
        name=name,
        parent=None,
        provider=None,
        region=REGION,
        inputs=inputs,
        custom=True,
        dependencies=depends or [],
    )


def _with(*resources: RenderedResource, result: RenderResult | None = None) -> RenderResult:
    result = result or base()
    return dataclasses.replace(result, resources=[*result.resources, *resources], issues=list(result.issues))


def _bucket(sse: dict[str, Any] | None = None, own: dict[str, Any] | None = None) -> list[RenderedResource]:
    """The planted log bucket (its own ``serverSideEncryptionConfiguration`` from ``own``), with an SSE config."""
    inputs: dict[str, Any] = {"serverSideEncryptionConfiguration": own} if own else {}
    out = [_aws(BUCKET, "planted-logs", inputs)]
    if sse is not None:
        rules = [{"applyServerSideEncryptionByDefault": sse}]
        out.append(_aws(SSE, "planted-logs-sse", {"bucket": LOGS, "rules": rules}))
    return out


def _policy(principal: Any, resource: str = f"arn:aws:s3:::{LOGS}/tools/AWSLogs/*") -> RenderedResource:
    statement = {"Effect": "Allow", "Principal": principal, "Action": "s3:PutObject", "Resource": resource}
    document = json.dumps({"Version": "2012-10-17", "Statement": [statement]})
    return _aws(POLICY, "planted-logs-policy", {"bucket": LOGS, "policy": document})


ACCOUNT_PRINCIPAL = {"AWS": f"arn:aws:iam::{ELB_ACCOUNT}:root"}
POLICY_URN = _policy(ACCOUNT_PRINCIPAL).urn


def _alb(key: str = "accessLogs", kind: str = "application", waits: bool = True, **logs: Any) -> RenderedResource:
    block = {"enabled": True, "bucket": LOGS, "prefix": "tools", **logs}
    inputs = {"loadBalancerType": kind, "internal": True, key: block}
    return _aws(LB, "planted-lb", inputs, depends=[POLICY_URN] if waits else [])


def _logs(*resources: RenderedResource) -> list[str]:
    return [f.message for f in fired(lb_access_logs.check, _with(*resources)) if "planted" in f.urn]


# --- lb-access-log-bucket ---------------------------------------------------------------------------------------

SSE_S3 = {"sseAlgorithm": "AES256"}
AWS_S3_KEY = {"sseAlgorithm": "aws:kms"}
CMK = _aws(KEY, "planted-logs-key", {"description": "log key"})  # no policy: the default admits the account only
CMK_ID = mock_outputs(KEY, CMK.name, CMK.inputs, REGION)[0]
CMK_FOR_DELIVERY = _aws(
    KEY,
    "planted-logs-key",
    {
        "policy": json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::123456789012:root"}, "Action": "kms:*",
                     "Resource": "*"},
                    {"Effect": "Allow", "Principal": {"Service": "delivery.logs.amazonaws.com"},
                     "Action": ["kms:GenerateDataKey*", "kms:Decrypt"], "Resource": "*"},
                ],
            }
        )
    },
)  # fmt: skip


@pytest.mark.parametrize(
    ("planted", "said"),
    [
        # An ALB's connection logs under a customer managed key: only SSE-S3 is supported, whatever the key.
        (
            [*_bucket({"sseAlgorithm": "aws:kms", "kmsMasterKeyId": CMK_ID}), CMK, _policy(ACCOUNT_PRINCIPAL),
             _alb("connectionLogs")],
            "Application Load Balancer connection logs support only SSE-S3",
        ),
        # DSSE-KMS is SSE-KMS too.
        (
            [*_bucket({"sseAlgorithm": "aws:kms:dsse"}), _policy(ACCOUNT_PRINCIPAL), _alb()],
            "support only SSE-S3",
        ),
        # An NLB's logs under the AWS managed aws/s3 key (SSE-KMS with no key ID).
        ([*_bucket(AWS_S3_KEY), _alb(kind="network")], "the aws/s3 key's policy admits only callers in this account"),
        # An NLB's logs under a key of the program whose policy admits no delivery service.
        (
            [*_bucket({"sseAlgorithm": "aws:kms", "kmsMasterKeyId": CMK_ID}), CMK, _alb(kind="network")],
            "does not let delivery.logs.amazonaws.com",
        ),
        # A Classic Load Balancer (access logs on by default) into a bucket whose own configuration names aws/s3.
        (
            [*_bucket(own={"rule": {"applyServerSideEncryptionByDefault": {"sseAlgorithm": "aws:kms",
                                                                           "kmsMasterKeyId": "alias/aws/s3"}}}),
             _policy(ACCOUNT_PRINCIPAL),
             _aws(CLB, "planted-clb", {"accessLogs": {"bucket": LOGS, "bucketPrefix": "tools"}}, [POLICY_URN])],
            "the aws/s3 key's policy admits only callers",
        ),
        # An SSE-S3 bucket whose policy names another region's ELB account.
        (
            [*_bucket(SSE_S3), _policy({"AWS": "arn:aws:iam::127311923021:root"}), _alb()],
            "127311923021 (us-east-1), another region's ELB account",
        ),
        # The right account, another prefix than the ALB writes under.
        (
            [*_bucket(SSE_S3), _policy(ACCOUNT_PRINCIPAL, f"arn:aws:s3:::{LOGS}/alb/AWSLogs/*"), _alb()],
            f"no bucket policy on it lets {REGION}'s Elastic Load Balancing account",
        ),
        # No bucket policy at all.
        ([*_bucket(SSE_S3), _alb()], "no bucket policy on it lets"),
        # The right policy, not waited for.
        ([*_bucket(SSE_S3), _policy(ACCOUNT_PRINCIPAL), _alb(waits=False)], "without waiting for planted-logs-policy"),
    ],
)  # fmt: skip
def test_logs_elb_cannot_write_are_flagged(planted: list[RenderedResource], said: str) -> None:
    found = _logs(*planted)
    assert len(found) == 1 and said in found[0], found
    assert "Access Denied for bucket" in found[0]


@pytest.mark.parametrize(
    "planted",
    [
        # The held-out correct variant's shape: SSE-S3, the region's account on the prefix, waited for.
        [*_bucket(SSE_S3), _policy(ACCOUNT_PRINCIPAL), _alb()],
        # No SSE configuration: S3's default is SSE-S3. The service principal of newer regions; a bare account ID.
        [*_bucket(), _policy({"Service": "logdelivery.elasticloadbalancing.amazonaws.com"}), _alb()],
        [*_bucket(SSE_S3), _policy({"AWS": ELB_ACCOUNT}, f"arn:aws:s3:::{LOGS}/*"), _alb()],
        # Access logs off: the bucket is never checked.
        [*_bucket(AWS_S3_KEY), _alb(enabled=False)],
        # An NLB under a customer managed key that admits the delivery service; an NLB under SSE-S3 with no policy.
        [*_bucket({"sseAlgorithm": "aws:kms", "kmsMasterKeyId": CMK_ID}), CMK_FOR_DELIVERY, _alb(kind="network")],
        [*_bucket(SSE_S3), _alb(kind="network")],
        # A key outside the program: its policy is not known.
        [*_bucket({"sseAlgorithm": "aws:kms", "kmsMasterKeyId": "arn:aws:kms:eu-central-1:1:key/x"}),
         _alb(kind="network")],
        # A bucket outside the program.
        [_alb(bucket="someone-elses-bucket")],
    ],
)  # fmt: skip
def test_logs_elb_can_write_are_not_flagged(planted: list[RenderedResource]) -> None:
    assert _logs(*planted) == []


def test_a_policy_known_only_at_apply_time_is_not_judged() -> None:
    unknown = dataclasses.replace(_policy(ACCOUNT_PRINCIPAL), inputs={"bucket": LOGS})
    assert _logs(*_bucket(SSE_S3), unknown, _alb()) == []


ALB_ATTRIBUTES = "alb.ingress.kubernetes.io/load-balancer-attributes"


def test_an_ingress_alb_logging_to_a_kms_bucket_is_flagged_and_an_sse_s3_twin_is_not() -> None:
    # The example's registry is a secure_bucket: SSE-KMS under aws/s3.
    pairs = "access_logs.s3.enabled=true,access_logs.s3.bucket={},access_logs.s3.prefix=web"
    found = [f.message for f in fired(lb_access_logs.check, added_ingress(pairs.format(REGISTRY)))]
    # Two faults: the encryption, and no policy admitting eu-central-1's ELB account (the registry's denies non-TLS).
    assert len(found) == 2 and all("Ingress llm-gateway/web's Application Load Balancer" in m for m in found), found
    assert "support only SSE-S3" in found[0] and "FailedDeployModel" in found[0]
    assert f"Elastic Load Balancing account ({ELB_ACCOUNT})" in found[1]
    twin = [*_bucket(SSE_S3), _policy(ACCOUNT_PRINCIPAL, f"arn:aws:s3:::{LOGS}/web/AWSLogs/*")]
    assert fired(lb_access_logs.check, _with(*twin, result=added_ingress(pairs.format(LOGS)))) == []
    off = "access_logs.s3.enabled=false,access_logs.s3.bucket=" + REGISTRY
    assert fired(lb_access_logs.check, added_ingress(off)) == []


def added_ingress(pairs: str) -> RenderResult:
    return edited("", lambda _: None, _ingress({ALB_ATTRIBUTES: pairs}))


def test_a_controller_nlb_logging_under_aws_s3_is_flagged_and_under_sse_s3_is_not() -> None:
    def logs_to(bucket: str) -> RenderResult:
        def edit(manifest: dict[str, Any]) -> None:
            _annotation("service.beta.kubernetes.io/aws-load-balancer-access-log-enabled", "true")(manifest)
            _annotation("service.beta.kubernetes.io/aws-load-balancer-access-log-s3-bucket-name", bucket)(manifest)

        return edited(LB_SERVICE, edit)

    found = fired(lb_access_logs.check, logs_to(REGISTRY))
    assert len(found) == 1 and "Network Load Balancer" in found[0].message and "aws/s3" in found[0].message, found
    assert fired(lb_access_logs.check, _with(*_bucket(SSE_S3), result=logs_to(LOGS))) == []


# --- alarm-metric-exists: a resource's value in its own namespace ------------------------------------------------

QUEUE, FUNCTION, TG = "aws:sqs/queue:Queue", "aws:lambda/function:Function", "aws:lb/targetGroup:TargetGroup"


def _output(resource: RenderedResource, key: str) -> str:
    return str(mock_outputs(resource.type, resource.name, resource.inputs, REGION)[1][key])


def _suffix(resource: RenderedResource) -> str:
    return _output(resource, "arnSuffix")


PLANTED_ALB = _aws(LB, "planted-alb", {"loadBalancerType": "application", "internal": True})
PLANTED_NLB = _aws(LB, "planted-nlb", {"loadBalancerType": "network"})
TCP_GROUP = _aws(TG, "planted-tcp", {"protocol": "TCP", "port": 8080, "targetType": "ip"})
HTTP_GROUP = _aws(TG, "planted-http", {"protocol": "HTTP", "port": 8080, "targetType": "ip"})
ORDERS = _aws(QUEUE, "planted-orders", {"name": "orders"})
HANDLER = _aws(FUNCTION, "planted-handler", {"name": "orders-handler"})
CLASSIC = _aws(CLB, "planted-classic", {"name": "legacy-web"})
RESOURCES = [PLANTED_ALB, PLANTED_NLB, TCP_GROUP, HTTP_GROUP, ORDERS, HANDLER, CLASSIC]


def _alarm(namespace: str, metric: str, dimensions: dict[str, str], math: bool = False) -> RenderedResource:
    watched = {"namespace": namespace, "metricName": metric, "dimensions": dimensions}
    inputs: dict[str, Any] = {"comparisonOperator": "GreaterThanThreshold", "threshold": 1.0, "evaluationPeriods": 1.0}
    if math:
        inputs["metricQueries"] = [
            {"id": "m1", "metric": {**watched, "period": 300.0, "stat": "Sum"}, "returnData": False},
            {"id": "e1", "expression": "m1 * 2", "returnData": True},
        ]
    else:
        inputs |= {**watched, "statistic": "Sum", "period": 300.0}
    return _aws(ALARM, "planted-alarm", inputs)


def _alarms(alarm: RenderedResource, *extra: RenderedResource) -> list[str]:
    result = _with(*RESOURCES, *extra, alarm)
    return [f.message for f in fired(alarm_metrics.check, result) if "planted-alarm" in f.urn]


@pytest.mark.parametrize(
    ("alarm", "said"),
    [
        # A queue's name as a FunctionName: AWS/Lambda knows the dimension, no function has that name.
        (_alarm("AWS/Lambda", "Errors", {"FunctionName": "orders"}),
         "is SQS queue planted-orders's name, and SQS queues publish their metrics to AWS/SQS"),
        # A function's name as a QueueName.
        (_alarm("AWS/SQS", "ApproximateAgeOfOldestMessage", {"QueueName": "orders-handler"}),
         "Lambda functions publish their metrics to AWS/Lambda"),
        # A TCP target group (an NLB's) under AWS/ApplicationELB.
        (_alarm("AWS/ApplicationELB", "UnHealthyHostCount",
                {"TargetGroup": _suffix(TCP_GROUP), "LoadBalancer": _suffix(PLANTED_ALB)}),
         "target groups publish their metrics to AWS/NetworkELB"),
        # An NLB's arn_suffix under AWS/ELB, through metric math.
        (_alarm("AWS/ELB", "UnHealthyHostCount", {"LoadBalancer": _suffix(PLANTED_NLB)}, math=True),
         "AWS/ELB holds Classic Load Balancer metrics only"),
        # The held-out case's namespace with the ALB's name under LoadBalancerName.
        (_alarm("AWS/ELB", "HTTPCode_ELB_5XX", {"LoadBalancerName": _output(PLANTED_ALB, "name")}),
         "Application Load Balancers publish their metrics to AWS/ApplicationELB"),
        # A Classic Load Balancer's name in the right namespace, with an ALB's metric name.
        (_alarm("AWS/ELB", "HTTPCode_Target_5XX_Count", {"LoadBalancerName": "legacy-web"}),
         "AWS/ELB (Classic Load Balancers) publishes no metric 'HTTPCode_Target_5XX_Count'"),
        # An ALB in the right namespace, with a Classic metric name.
        (_alarm("AWS/ApplicationELB", "Latency", {"LoadBalancer": _suffix(PLANTED_ALB)}),
         "Latency is a Classic Load Balancer metric"),
    ],
)  # fmt: skip
def test_an_alarm_on_a_resource_outside_its_namespace_is_flagged(alarm: RenderedResource, said: str) -> None:
    found = _alarms(alarm)
    assert len(found) == 1 and said in found[0], found
    assert "no metric of that name and dimensions is ever published" in found[0]


@pytest.mark.parametrize(
    "alarm",
    [
        _alarm("AWS/ApplicationELB", "HTTPCode_ELB_5XX_Count", {"LoadBalancer": _suffix(PLANTED_ALB)}),
        _alarm("AWS/ApplicationELB", "UnHealthyHostCount",
               {"TargetGroup": _suffix(HTTP_GROUP), "LoadBalancer": _suffix(PLANTED_ALB)}),
        _alarm("AWS/NetworkELB", "UnHealthyHostCount",
               {"TargetGroup": _suffix(TCP_GROUP), "LoadBalancer": _suffix(PLANTED_NLB)}, math=True),
        _alarm("AWS/ELB", "HTTPCode_ELB_5XX", {"LoadBalancerName": "legacy-web"}),
        _alarm("AWS/SQS", "ApproximateAgeOfOldestMessage", {"QueueName": "orders"}),
        _alarm("AWS/Lambda", "Errors", {"FunctionName": "orders-handler"}),
        # A value of no resource of the program, and a custom namespace: not judged.
        _alarm("AWS/Lambda", "Errors", {"FunctionName": "elsewhere"}),
        _alarm("Tokenplane/Gateway", "Errors", {"LoadBalancer": _suffix(PLANTED_ALB)}),
    ],
)  # fmt: skip
def test_an_alarm_on_a_resource_in_its_namespace_is_not_flagged(alarm: RenderedResource) -> None:
    assert _alarms(alarm) == []


def test_a_name_two_resources_share_is_judged_by_the_one_in_the_namespace() -> None:
    # A function also named "orders": FunctionName=orders is that function's, not the queue's.
    twin = _aws(FUNCTION, "planted-orders-fn", {"name": "orders"})
    assert _alarms(_alarm("AWS/Lambda", "Errors", {"FunctionName": "orders"}), twin) == []
