"""The rules set 17's IAM and AWS-call misses led to (written after its blind run, so not held out), each planted in
a shipped render beside its correct twin: an SQS drain whose role may receive but not delete (aws-cli-permissions),
an action with no resource type allowed only on ARNs (iam-resource-type), and an event pattern leaf that is not an
array (aws-api-values)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from tests.proof.deployability.conftest import mutated, rendered, spec
from tests.proof.deployability.test_aws_join import _aws
from tests.proof.deployability.test_set3_invariants import _resource
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import aws_cli, aws_values, event_sources, iam_s3, images_kept
from tokenplane.proof.render import RenderedResource

NAMESPACE = "llm-data"


def _graph(*extra: RenderedResource) -> deploy.Graph:
    return deploy.Graph(spec("minimal"), mutated(rendered("minimal"), lambda r: r, extra=list(extra)))


def _policy(*statements: tuple[list[str], list[str]]) -> str:
    listed = [{"Effect": "Allow", "Action": actions, "Resource": resources} for actions, resources in statements]
    return json.dumps({"Version": "2012-10-17", "Statement": listed})


def _pod_with_role(name: str, script: str, policy: str, env: dict[str, str], *extra: RenderedResource) -> deploy.Graph:
    role = _aws("aws:iam/role:Role", "planted-role", {"name": "planted-role", "inlinePolicies": [{"policy": policy}]})
    account = _resource(
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {
                "name": name,
                "namespace": NAMESPACE,
                "annotations": {"eks.amazonaws.com/role-arn": "arn:aws:iam::123456789012:role/planted-role"},
            },
        }
    )
    account = dataclasses.replace(account, property_dependencies={"metadata": [role.urn]})
    container: dict[str, Any] = {
        "name": name,
        "image": "public.ecr.aws/aws-cli/aws-cli:2.22.35",
        "command": ["sh", "-c", script],
        "env": [{"name": k, "value": v} for k, v in env.items()],
    }
    pod = {"serviceAccountName": name, "restartPolicy": "OnFailure", "containers": [container]}
    cron = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"schedule": "*/15 * * * *", "jobTemplate": {"spec": {"template": {"spec": pod}}}},
    }
    return _graph(role, account, _resource(cron), *extra)


# aws-cli-permissions: sqs commands, on the queue named by URL -----------------------------------------------------------

QUEUE = "planted-feedback"
URL = f"https://sqs.us-east-1.amazonaws.com/123456789012/{QUEUE}"
ON_QUEUE = f"arn:aws:sqs:*:*:{QUEUE}"
DRAIN = (
    'aws sqs receive-message --queue-url "$QUEUE_URL" --max-number-of-messages 10 > /tmp/batch.json\n'
    "cut -f 4 /tmp/batch.json | while read -r handle; do\n"
    '  aws sqs delete-message --queue-url "$QUEUE_URL" --receipt-handle "$handle"\n'
    "done\n"
)


@pytest.mark.parametrize(
    ("script", "policy", "missing"),
    [
        (DRAIN, _policy((["sqs:ReceiveMessage", "sqs:GetQueueAttributes"], [ON_QUEUE])), "sqs:DeleteMessage"),
        (DRAIN, _policy((["sqs:ReceiveMessage", "sqs:DeleteMessage"], [ON_QUEUE])), None),
        (DRAIN, _policy((["sqs:DeleteMessage"], [ON_QUEUE])), "sqs:ReceiveMessage"),
        (f"aws sqs send-message-batch --queue-url {URL} --entries file://e.json", _policy(), "sqs:SendMessage"),
        (f"aws sqs send-message-batch --queue-url {URL} --entries x", _policy((["sqs:Send*"], [ON_QUEUE])), None),
        ("aws sqs purge-queue --queue-url https://sqs.us-east-1.amazonaws.com/123456789012/other", _policy(), None),
    ],
)
def test_an_sqs_cli_command_needs_its_action_on_the_queue(script: str, policy: str, missing: str | None) -> None:
    queue = _aws("aws:sqs/queue:Queue", "planted-queue", {"name": QUEUE})
    graph = _pod_with_role("planted-drain", script, policy, {"QUEUE_URL": URL}, queue)
    said = [f for f in aws_cli.check(graph) if "planted-drain" in f.message]
    assert bool(said) == bool(missing), said
    for finding in said:
        assert missing in finding.message and QUEUE in finding.message and missing in finding.fix, finding
        assert "\0" not in finding.message, finding


# iam-resource-type: an action with no resource type is allowed only on "*" -----------------------------------------------

METRIC_ARN = "arn:aws:cloudwatch:*:*:metric/Tokenplane/Registry/*"


@pytest.mark.parametrize(
    ("actions", "resources", "refused"),
    [
        (["cloudwatch:PutMetricData"], [METRIC_ARN], True),
        (["cloudwatch:putmetricdata"], ["arn:aws:cloudwatch:*:*:*"], True),
        (["cloudwatch:PutMetricData"], ["*"], False),
        (["cloudwatch:PutMetricData"], [METRIC_ARN, "*"], False),
        (["cloudwatch:Put*"], [METRIC_ARN], False),  # a wildcard spans actions with resource types
        (["cloudwatch:PutMetricAlarm"], ["arn:aws:cloudwatch:*:*:alarm:x"], False),  # scoped to alarms
        (["ecr:GetAuthorizationToken"], ["arn:aws:ecr:*:*:repository/x"], True),
    ],
)
def test_an_action_without_resource_types_is_allowed_only_on_star(
    actions: list[str], resources: list[str], refused: bool
) -> None:
    role = _aws(
        "aws:iam/role:Role",
        "planted-metrics-role",
        {"name": "planted-metrics-role", "inlinePolicies": [{"policy": _policy((actions, resources))}]},
    )
    said = [f for f in iam_s3.check(_graph(role)) if f.urn == role.urn]
    assert bool(said) == refused, said
    for finding in said:
        assert actions[0] in finding.message and resources[0] in finding.message, finding
        assert '"*"' in finding.fix and actions[0] in finding.fix, finding


# aws-api-values: every leaf of an event pattern is an array -------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "refused"),
    [
        ({"source": "aws.ecr", "detail-type": ["ECR Image Scan"]}, "source"),
        ({"source": ["aws.ecr"], "detail-type": ["ECR Image Scan"]}, None),
        ({"source": ["aws.ecr"], "detail": {"scan-status": "COMPLETE"}}, "detail.scan-status"),
        ({"source": ["aws.ecr"], "detail": {"scan-status": ["COMPLETE"], "size": [{"numeric": [">", 0]}]}}, None),
        ({"source": []}, "source"),
        ({"$or": [{"source": ["aws.ecr"]}, {"source": "aws.s3"}]}, "$or[1].source"),
        ({"$or": [{"source": ["aws.ecr"]}, {"detail-type": ["x"]}]}, None),
    ],
)
def test_an_event_pattern_matches_each_field_with_an_array(pattern: dict[str, Any], refused: str | None) -> None:
    rule = _aws("aws:cloudwatch/eventRule:EventRule", "planted-scan-rule", {"eventPattern": json.dumps(pattern)})
    said = [f for f in aws_values.check(_graph(rule)) if f.urn == rule.urn]
    assert bool(said) == bool(refused), said
    for finding in said:
        assert f"eventPattern has {refused} " in finding.message and refused in finding.fix, finding


def test_a_lambda_event_filter_is_checked_as_a_pattern() -> None:
    filters = {"filters": [{"pattern": json.dumps({"body": {"kind": "publish"}})}]}
    mapping = _aws("aws:lambda/eventSourceMapping:EventSourceMapping", "planted-mapping", {"filterCriteria": filters})
    said = [f for f in aws_values.check(_graph(mapping)) if f.urn == mapping.urn]
    assert len(said) == 1 and "filterCriteria.filters[0].pattern has body.kind" in said[0].message, said


# event-source-permissions: the mapping waits for the policy that grants its calls ---------------------------------------

SOURCE = "arn:aws:sqs:us-east-1:123456789012:planted-publish-events"
SQS_ALL = ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"]


def _wired(typ: str, name: str, inputs: dict[str, Any], *after: RenderedResource, **refs: Any) -> RenderedResource:
    planted = _aws(typ, name, inputs)
    urns = {k: [r.urn] for k, r in refs.items()}
    waits = [*(u for us in urns.values() for u in us), *(r.urn for r in after)]
    return dataclasses.replace(planted, property_dependencies=urns, dependencies=waits)


@pytest.mark.parametrize(
    ("how", "late"),
    [
        ("role-policy", "planted-fn-sqs"),  # the mapping waits for the function and the queue only
        ("role-policy-waited", None),
        ("inline", None),  # in place once the role is, which the function waits for
        ("managed-attachment", "planted-fn-sqs-managed"),
    ],
)
def test_an_event_source_mapping_waits_for_the_grant_it_is_checked_against(how: str, late: str | None) -> None:
    grant = _policy((SQS_ALL, [SOURCE]))
    inline = [{"name": "sqs", "policy": grant}] if how == "inline" else []
    role = _aws("aws:iam/role:Role", "planted-fn-role", {"name": "planted-fn-role", "inlinePolicies": inline})
    grants: list[RenderedResource] = []
    if how.startswith("role-policy"):
        inputs = {"policy": grant, "role": "planted-fn-role"}
        grants.append(_wired("aws:iam/rolePolicy:RolePolicy", "planted-fn-sqs", inputs, role=role))
    elif how == "managed-attachment":
        arn = "arn:aws:iam::aws:policy/service-role/AWSLambdaSQSQueueExecutionRole"
        inputs = {"policyArn": arn, "role": "planted-fn-role"}
        grants.append(
            _wired("aws:iam/rolePolicyAttachment:RolePolicyAttachment", "planted-fn-sqs-managed", inputs, role=role)
        )
    function = _wired(
        "aws:lambda/function:Function",
        "planted-fn",
        {"name": "planted-fn", "role": "arn:aws:iam::123456789012:role/planted-fn-role", "timeout": 30},
        role=role,
    )
    after = grants if how == "role-policy-waited" else []
    inputs = {"eventSourceArn": SOURCE, "functionName": "arn:aws:lambda:us-east-1:123456789012:function:planted-fn"}
    mapping = _wired(
        "aws:lambda/eventSourceMapping:EventSourceMapping", "planted-mapping", inputs, *after, functionName=function
    )
    said = list(event_sources.check(_graph(role, *grants, function, mapping)))
    assert bool(said) == bool(late), said
    for finding in said:
        assert late and late in finding.message and "planted-mapping" in finding.message, finding
        assert "first pulumi up" in finding.message and late in finding.fix, finding


# image-kept: no ECR lifecycle rule expires by age the image pods run ----------------------------------------------------

REPOSITORY = "planted/serving"
IMAGE = f"123456789012.dkr.ecr.us-east-1.amazonaws.com/{REPOSITORY}"
DIGEST = "@sha256:" + "ab" * 32


def _age(status: str, days: int = 14, priority: int = 1, **tags: list[str]) -> dict[str, Any]:
    selection = {"tagStatus": status, "countType": "sinceImagePushed", "countUnit": "days", "countNumber": days}
    return {"rulePriority": priority, "selection": {**selection, **tags}, "action": {"type": "expire"}}


def _count(status: str, priority: int, **tags: list[str]) -> dict[str, Any]:
    selection = {"tagStatus": status, "countType": "imageCountMoreThan", "countNumber": 10, **tags}
    return {"rulePriority": priority, "selection": selection, "action": {"type": "expire"}}


@pytest.mark.parametrize(
    ("image", "rules", "expired"),
    [
        (IMAGE + DIGEST, [_age("any")], True),
        (IMAGE + ":v1.4.0", [_age("any")], True),
        (IMAGE + ":v1.4.0", [_age("tagged", tagPrefixList=["v"])], True),
        (IMAGE + ":v1.4.0", [_age("tagged", tagPatternList=["v1.*"])], True),
        (IMAGE + ":v1.4.0", [_age("tagged", tagPrefixList=["pr-"])], False),
        (IMAGE + ":v1.4.0", [_age("untagged", days=1)], False),
        (IMAGE + DIGEST, [_age("untagged", days=1)], False),
        (IMAGE + DIGEST, [_count("any", 1)], False),
        (IMAGE + ":v1.4.0", [_count("tagged", 1, tagPrefixList=["v"]), _age("any", priority=2)], False),
        (IMAGE + ":v1.4.0", [_count("tagged", 1, tagPrefixList=["pr-"]), _age("any", priority=2)], True),
        ("123456789012.dkr.ecr.us-east-1.amazonaws.com/someone/else:v1", [_age("any")], False),
    ],
)
def test_no_ecr_lifecycle_rule_expires_by_age_an_image_pods_run(
    image: str, rules: list[dict[str, Any]], expired: bool
) -> None:
    policy = _aws(
        "aws:ecr/lifecyclePolicy:LifecyclePolicy",
        "planted-lifecycle",
        {"repository": REPOSITORY, "policy": json.dumps({"rules": rules})},
    )
    pod = {"containers": [{"name": "app", "image": image}]}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "planted-app", "namespace": NAMESPACE},
        "spec": {
            "selector": {"matchLabels": {"app": "x"}},
            "template": {"metadata": {"labels": {"app": "x"}}, "spec": pod},
        },
    }
    said = [f for f in images_kept.check(_graph(policy, _resource(deployment))) if f.urn == policy.urn]
    assert bool(said) == expired, said
    for finding in said:
        assert "planted-app" in finding.message and "sinceImagePushed" in finding.message, finding
        assert REPOSITORY in finding.message and "imageCountMoreThan" in finding.fix, finding
