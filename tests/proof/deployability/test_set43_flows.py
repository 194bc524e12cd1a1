"""The rules set 43's flow misses led to (written after its blind run, so not held out), planted in the shipped dev
render beside correct twins: a data store that names no security group falls back to its VPC's default group, which
the program manages without a rule for the store's port (store-port-open); AWS Budgets publishing to a topic whose
policy or key does not admit ``budgets.amazonaws.com`` (service-admitted); and a fixed tag pushed to an immutable ECR
repository (immutable-tag-moves). The planted defects are of other resources and values than the held-out cases' (a
replication group, an RDS instance, a Memcached serverless cache, an OpenSearch domain; a budget action, a topic
policy admitting CloudWatch only, a key policy without Budgets; ``latest``, a ``docker`` Image, the two exclusion
modes)."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import pytest

from tests.proof.deployability.conftest import planted, planted_findings, rendered, spec
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import immutable_tags, service_access, store_ports
from tokenplane.proof.render import RenderedResource, physical_id

STACK = "dev"
REGION = "local"
_findings = partial(planted_findings, stack=STACK)
SUBNET = "aws:ec2/subnet:Subnet"
SG = "aws:ec2/securityGroup:SecurityGroup"
DEFAULT_SG = "aws:ec2/defaultSecurityGroup:DefaultSecurityGroup"
INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
PRIVATE_A = physical_id(SUBNET, "dev-local-network-private-a")
PRIVATE_B = physical_id(SUBNET, "dev-local-network-private-b")
DEV_DEFAULT_SG = physical_id(DEFAULT_SG, "dev-local-network-default-sg")
TOPIC = "aws:sns/topic:Topic"
TOPIC_POLICY = "aws:sns/topicPolicy:TopicPolicy"
KEY = "aws:kms/key:Key"
BUDGET = "aws:budgets/budget:Budget"
BUDGET_ACTION = "aws:budgets/budgetAction:BudgetAction"
REPOSITORY = "aws:ecr/repository:Repository"
BUILD = "docker-build:index:Image"
DOCKER_IMAGE = "docker:index/image:Image"
REGISTRY = "123456789012.dkr.ecr.eu-north-1.amazonaws.com"


def _aws(type_token: str, name: str, inputs: dict[str, Any], **kw: Any) -> RenderedResource:
    return planted(STACK, type_token, name, inputs, region=REGION, **kw)


def test_the_shipped_render_holds_none_of_these() -> None:
    graph = deploy.Graph(spec(STACK), rendered(STACK))
    assert not [*store_ports.check(graph), *immutable_tags.check(graph)]
    assert not [f for f in service_access.check(graph) if "budgets" in f.message]


# store-port-open: a store without groups of its own, in a VPC whose default group the program keeps closed -------


def _rds_subnets() -> RenderedResource:
    return _aws("aws:rds/subnetGroup:SubnetGroup", "planted-db-subnets", {"subnetIds": [PRIVATE_A, PRIVATE_B]})


def _cache_subnets() -> RenderedResource:
    return _aws("aws:elasticache/subnetGroup:SubnetGroup", "planted-cache-subnets", {"subnetIds": [PRIVATE_A]})


def _own_group(port: int) -> RenderedResource:
    rule = {"protocol": "tcp", "fromPort": port, "toPort": port, "cidrBlocks": ["10.0.0.0/16"]}
    return _aws(SG, "planted-store-sg", {"vpcId": "x", "ingress": [rule]})


def _default_opens(port: int) -> RenderedResource:
    inputs = {"securityGroupId": DEV_DEFAULT_SG, "ipProtocol": "tcp", "fromPort": port, "toPort": port}
    return _aws(INGRESS, "planted-default-ingress", {**inputs, "cidrIpv4": "10.0.0.0/16"})


REPLICATION_GROUP = _aws(
    "aws:elasticache/replicationGroup:ReplicationGroup",
    "planted-sessions",
    {
        "engine": "redis",
        "subnetGroupName": physical_id("aws:elasticache/subnetGroup:SubnetGroup", "planted-cache-subnets"),
    },
)
POSTGRES = _aws(
    "aws:rds/instance:Instance",
    "planted-db",
    {
        "engine": "postgres",
        "instanceClass": "db.t4g.micro",
        "dbSubnetGroupName": physical_id("aws:rds/subnetGroup:SubnetGroup", "planted-db-subnets"),
    },
)
MEMCACHED = _aws(
    "aws:elasticache/serverlessCache:ServerlessCache", "planted-memo", {"engine": "memcached", "subnetIds": [PRIVATE_B]}
)
SEARCH = _aws(
    "aws:opensearch/domain:Domain",
    "planted-search",
    {"clusterConfig": {"instanceType": "r6g.large.search"}, "vpcOptions": {"subnetIds": [PRIVATE_A]}},
)


@pytest.mark.parametrize(
    ("resources", "port"),
    [
        ((REPLICATION_GROUP, _cache_subnets()), "6379"),
        ((POSTGRES, _rds_subnets()), "5432"),
        ((MEMCACHED,), "11211 or 11212"),
        ((SEARCH,), "443"),
        # The default group opens another port than the store's.
        ((POSTGRES, _rds_subnets(), _default_opens(3306)), "5432"),
    ],
)
def test_a_store_without_groups_is_held_to_the_managed_default_group(
    resources: tuple[RenderedResource, ...], port: str
) -> None:
    said = _findings(store_ports.check, *resources)
    assert len(said) == 1, said
    assert "names no security group" in said[0].message, said
    assert "dev-local-network-default-sg" in said[0].message, said
    assert f"TCP {port}" in said[0].message, said


@pytest.mark.parametrize(
    "resources",
    [
        # Its own group admits the port.
        (
            _aws(
                "aws:elasticache/serverlessCache:ServerlessCache",
                "planted-cache",
                {
                    "engine": "valkey",
                    "subnetIds": [PRIVATE_A],
                    "securityGroupIds": [physical_id(SG, "planted-store-sg")],
                },
            ),
            _own_group(6379),
        ),
        # The default group admits the store's port.
        (POSTGRES, _rds_subnets(), _default_opens(5432)),
        # An Aurora instance takes its cluster's groups.
        (
            _aws(
                "aws:rds/instance:Instance",
                "planted-aurora-1",
                {
                    "engine": "aurora-postgresql",
                    "clusterIdentifier": "planted-aurora",
                    "dbSubnetGroupName": physical_id("aws:rds/subnetGroup:SubnetGroup", "planted-db-subnets"),
                },
            ),
            _rds_subnets(),
        ),
        # No subnet group: the account's default VPC, whose default group the program does not manage.
        (_aws("aws:elasticache/replicationGroup:ReplicationGroup", "planted-sessions", {"engine": "redis"}),),
        # A public OpenSearch domain (no VPC) has no security group at all.
        (
            _aws(
                "aws:opensearch/domain:Domain",
                "planted-search",
                {"clusterConfig": {"instanceType": "r6g.large.search"}},
            ),
        ),
    ],
)
def test_a_store_with_a_way_in_is_not_flagged(resources: tuple[RenderedResource, ...]) -> None:
    assert not _findings(store_ports.check, *resources)


# service-admitted: AWS Budgets publishes to SNS as budgets.amazonaws.com -------------------------------------------


def _topic(name: str = "planted-alerts", **inputs: Any) -> RenderedResource:
    return _aws(TOPIC, name, {"name": name, **inputs})


def _statement(service: str, action: str = "SNS:Publish") -> dict[str, Any]:
    return {"Effect": "Allow", "Principal": {"Service": service}, "Action": action, "Resource": "*"}


def _policy_doc(*statements: dict[str, Any]) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


def _topic_policy(topic: RenderedResource, *statements: dict[str, Any]) -> RenderedResource:
    return _aws(
        TOPIC_POLICY,
        "planted-alerts-policy",
        {"arn": f"arn:aws:sns:eu-north-1:123456789012:{topic.name}", "policy": _policy_doc(*statements)},
        property_dependencies={"arn": [topic.urn]},
    )


def _budget(topic: RenderedResource) -> RenderedResource:
    notification = {
        "comparisonOperator": "GREATER_THAN",
        "notificationType": "ACTUAL",
        "threshold": 80.0,
        "thresholdType": "PERCENTAGE",
        "subscriberSnsTopicArns": [f"arn:aws:sns:eu-north-1:123456789012:{topic.name}"],
    }
    inputs = {"budgetType": "COST", "limitAmount": "900", "limitUnit": "USD", "timeUnit": "QUARTERLY"}
    return _aws(
        BUDGET,
        "planted-budget",
        {**inputs, "notifications": [notification]},
        property_dependencies={"notifications": [topic.urn]},
    )


def _budget_action(topic: RenderedResource) -> RenderedResource:
    subscriber = {"address": f"arn:aws:sns:eu-north-1:123456789012:{topic.name}", "subscriptionType": "SNS"}
    return _aws(
        BUDGET_ACTION,
        "planted-budget-action",
        {"actionType": "APPLY_SCP_POLICY", "notificationType": "ACTUAL", "subscribers": [subscriber]},
        property_dependencies={"subscribers": [topic.urn]},
    )


def _key(*statements: dict[str, Any]) -> RenderedResource:
    root = {"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::123456789012:root"}, "Action": "kms:*"}
    return _aws(KEY, "planted-alerts-key", {"policy": _policy_doc(root, *statements)})


KEY_ID = physical_id(KEY, "planted-alerts-key")
BUDGETS_KMS = {
    "Effect": "Allow",
    "Principal": {"Service": "budgets.amazonaws.com"},
    "Action": ["kms:GenerateDataKey*", "kms:Decrypt"],
    "Resource": "*",
}
ADMITS = _statement("budgets.amazonaws.com")


@pytest.mark.parametrize(
    ("resources", "says"),
    [
        # A budget to a topic with no policy but SNS's default.
        ((_topic(), _budget(_topic())), "resource policy does not allow it sns:Publish"),
        # A budget action's SNS subscriber.
        ((_topic(), _budget_action(_topic())), "resource policy does not allow it sns:Publish"),
        # A topic policy that admits CloudWatch, not Budgets.
        (
            (_topic(), _budget(_topic()), _topic_policy(_topic(), _statement("cloudwatch.amazonaws.com"))),
            "resource policy does not allow it sns:Publish",
        ),
        # A topic policy that admits Budgets, and a customer key whose policy does not.
        (
            (
                _topic(kmsMasterKeyId=KEY_ID),
                _key(),
                _budget(_topic()),
                _topic_policy(_topic(), ADMITS),
            ),
            "must use KMS key planted-alerts-key",
        ),
    ],
)
def test_budgets_must_be_admitted_by_the_topic_it_notifies(resources: tuple[RenderedResource, ...], says: str) -> None:
    said = _findings(service_access.check, *resources)
    assert len(said) == 1, said
    assert "budgets.amazonaws.com" in said[0].message and says in said[0].message, said


@pytest.mark.parametrize(
    "resources",
    [
        (_topic(), _budget(_topic()), _topic_policy(_topic(), ADMITS)),
        (_topic(policy=_policy_doc(ADMITS)), _budget_action(_topic())),
        (_topic(kmsMasterKeyId=KEY_ID), _key(BUDGETS_KMS), _budget(_topic()), _topic_policy(_topic(), ADMITS)),
        # A topic the program does not create (a literal ARN): not judged.
        (
            _aws(
                BUDGET,
                "planted-budget",
                {"notifications": [{"subscriberSnsTopicArns": ["arn:aws:sns:eu-north-1:123456789012:ops"]}]},
            ),
        ),
    ],
)
def test_a_topic_that_admits_budgets_is_not_flagged(resources: tuple[RenderedResource, ...]) -> None:
    assert not _findings(service_access.check, *resources)


# immutable-tag-moves ---------------------------------------------------------------------------------------------


def _repo(mutability: str, *filters: str) -> RenderedResource:
    inputs: dict[str, Any] = {"name": "dev/planted-app", "imageTagMutability": mutability}
    if filters:
        inputs["imageTagMutabilityExclusionFilters"] = [{"filter": f, "filterType": "WILDCARD"} for f in filters]
    return _aws(REPOSITORY, "planted-app-repo", inputs)


def _build(tag: str, push: bool = True) -> RenderedResource:
    return planted(
        STACK, BUILD, "planted-app-build", {"push": push, "tags": [f"{REGISTRY}/dev/planted-app:{tag}"]}, region=None
    )


def _docker_image(tag: str) -> RenderedResource:
    return planted(
        STACK, DOCKER_IMAGE, "planted-app-image", {"imageName": f"{REGISTRY}/dev/planted-app:{tag}"}, region=None
    )


@pytest.mark.parametrize(
    ("resources", "tag"),
    [
        ((_repo("IMMUTABLE"), _build("latest")), "latest"),
        ((_repo("IMMUTABLE"), _docker_image("prod")), "prod"),
        ((_repo("IMMUTABLE_WITH_EXCLUSION", "release-*"), _build("stable")), "stable"),
        ((_repo("MUTABLE_WITH_EXCLUSION", "prod*"), _build("production")), "production"),
    ],
)
def test_a_fixed_tag_pushed_to_an_immutable_repository_is_flagged(
    resources: tuple[RenderedResource, ...], tag: str
) -> None:
    said = _findings(immutable_tags.check, *resources)
    assert len(said) == 1, said
    assert f"the image tag '{tag}' already exists" in said[0].message, said


@pytest.mark.parametrize(
    "resources",
    [
        (_repo("IMMUTABLE"), _build("app-3fa9c2e1d4b5a6f7")),  # a hash of the sources
        (_repo("IMMUTABLE"), _build("v1.4.2")),  # a version
        (_repo("IMMUTABLE_WITH_EXCLUSION", "latest*"), _build("latest")),
        (_repo("MUTABLE_WITH_EXCLUSION", "release-*"), _build("latest")),
        (_repo("MUTABLE"), _build("latest")),
        (_repo("IMMUTABLE"), _build("latest", push=False)),
    ],
)
def test_a_tag_that_changes_with_the_image_or_may_move_is_not_flagged(resources: tuple[RenderedResource, ...]) -> None:
    assert not _findings(immutable_tags.check, *resources)
