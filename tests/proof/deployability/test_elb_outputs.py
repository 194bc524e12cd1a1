"""Load balancers and target groups as ELBv2 names them, and the two checks that read those names.

The mocks give ``aws.lb.LoadBalancer`` and ``aws.lb.TargetGroup`` AWS's forms (ARN, ``arn_suffix``, DNS name,
canonical zone). With them, ``alarm-metric-exists`` judges an ELB alarm's ``LoadBalancer``/``TargetGroup``
dimension (the ARN's final portion, not the ARN or the name) and ``alias-target-zone`` judges an alias built from a
balancer's outputs. Each program below is rendered for real under the mock runtime; only the one input named
differs between a defect and its correct twin.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pulumi_aws as aws
import pytest

from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import alarm_metrics, alias_targets
from tokenplane.proof.elb_zones import ELB_ZONES
from tokenplane.proof.render import mock_outputs, render_program

REGION = "eu-west-1"


def _balancer(kind: str) -> tuple[aws.lb.LoadBalancer, aws.lb.TargetGroup]:
    lb = aws.lb.LoadBalancer("edge", load_balancer_type=kind, subnets=["subnet-a", "subnet-b"])
    tg = aws.lb.TargetGroup("pool", port=8000, protocol="HTTP" if kind == "application" else "TCP", vpc_id="vpc-1")
    return lb, tg


def _findings(check: Callable[[deploy.Graph], Any], program: Callable[[], None]) -> list[deploy.Finding]:
    result = render_program(program, regions={REGION: REGION}, kubernetes_version=None, default_region=REGION)
    return list(check(deploy.Graph(None, result)))


def _alarm(namespace: str, dimensions: dict[str, Any]) -> None:
    aws.cloudwatch.MetricAlarm(
        "errors",
        namespace=namespace,
        metric_name="HTTPCode_Target_5XX_Count" if namespace.endswith("ApplicationELB") else "UnHealthyHostCount",
        dimensions=dimensions,
        statistic="Sum",
        period=60,
        evaluation_periods=5,
        threshold=10,
        comparison_operator="GreaterThanThreshold",
    )


ALARMS: dict[str, tuple[str, str, Callable[[aws.lb.LoadBalancer, aws.lb.TargetGroup], dict[str, Any]], bool]] = {
    # case: (balancer kind, namespace, dimensions, reported?)
    "alb by arn": ("application", "AWS/ApplicationELB", lambda lb, tg: {"LoadBalancer": lb.arn}, True),
    "alb by name": ("application", "AWS/ApplicationELB", lambda lb, tg: {"LoadBalancer": lb.name}, True),
    "target group by arn": (
        "application",
        "AWS/ApplicationELB",
        lambda lb, tg: {"LoadBalancer": lb.arn_suffix, "TargetGroup": tg.arn},
        True,
    ),
    "alb under the nlb namespace": (
        "application",
        "AWS/NetworkELB",
        lambda lb, tg: {"LoadBalancer": lb.arn_suffix},
        True,
    ),
    "nlb by arn": ("network", "AWS/NetworkELB", lambda lb, tg: {"LoadBalancer": lb.arn}, True),
    "literal name": ("application", "AWS/ApplicationELB", lambda lb, tg: {"LoadBalancer": "edge-alb"}, True),
    # Correct twins: the arn_suffix outputs, and a literal in ELB's own form.
    "alb by arn_suffix": ("application", "AWS/ApplicationELB", lambda lb, tg: {"LoadBalancer": lb.arn_suffix}, False),
    "alb and its target group": (
        "application",
        "AWS/ApplicationELB",
        lambda lb, tg: {"LoadBalancer": lb.arn_suffix, "TargetGroup": tg.arn_suffix},
        False,
    ),
    "nlb by arn_suffix": ("network", "AWS/NetworkELB", lambda lb, tg: {"LoadBalancer": lb.arn_suffix}, False),
    "literal suffix": (
        "network",
        "AWS/NetworkELB",
        lambda lb, tg: {"LoadBalancer": "net/edge/0123456789abcdef"},
        False,
    ),
}


@pytest.mark.parametrize("case", ALARMS)
def test_an_elb_alarm_names_its_balancer_by_the_arns_final_portion(case: str) -> None:
    kind, namespace, dimensions, reported = ALARMS[case]

    def program() -> None:
        lb, tg = _balancer(kind)
        _alarm(namespace, dimensions(lb, tg))

    found = _findings(alarm_metrics.check, program)
    assert [("final portion of the ARN" in f.message and "arn_suffix" in f.fix) for f in found] == (
        [True] if reported else []
    ), found


@pytest.mark.parametrize("kind", ["application", "network"])
@pytest.mark.parametrize("own_zone", [True, False])
def test_an_alias_to_a_balancer_names_the_balancers_zone_not_the_records(kind: str, own_zone: bool) -> None:
    def program() -> None:
        lb, _ = _balancer(kind)
        zone = aws.route53.Zone("apex", name="llm.acme.dev")
        aws.route53.Record(
            "api",
            zone_id=zone.zone_id,
            name="api.llm.acme.dev",
            type="A",
            aliases=[
                aws.route53.RecordAliasArgs(
                    name=lb.dns_name, zone_id=zone.zone_id if own_zone else lb.zone_id, evaluate_target_health=True
                )
            ],
        )

    found = _findings(alias_targets.check, program)
    assert [("InvalidChangeBatch" in f.message) for f in found] == ([True] if own_zone else []), found


def test_the_mock_balancers_are_in_elbv2s_forms() -> None:
    _, alb = mock_outputs("aws:lb/loadBalancer:LoadBalancer", "edge", {"internal": True}, REGION)
    _, nlb = mock_outputs("aws:lb/loadBalancer:LoadBalancer", "edge", {"loadBalancerType": "network"}, REGION)
    _, tg = mock_outputs("aws:lb/targetGroup:TargetGroup", "pool", {"name": "pool"}, REGION)
    assert alb["arn"].endswith(f":loadbalancer/{alb['arnSuffix']}") and alb["arnSuffix"].startswith("app/")
    assert alb["dnsName"].startswith("internal-") and alb["dnsName"].endswith(f".{REGION}.elb.amazonaws.com")
    assert nlb["arnSuffix"].startswith("net/") and nlb["dnsName"].endswith(f".elb.{REGION}.amazonaws.com")
    assert (alb["zoneId"], nlb["zoneId"]) == ELB_ZONES[REGION]
    for balancer, zone in ((alb, ELB_ZONES[REGION][0]), (nlb, ELB_ZONES[REGION][1])):
        canonical = alias_targets.canonical_zone(balancer["dnsName"])  # the name reads as the kind it is
        assert canonical is not None and canonical[0] == zone, balancer
    assert tg["arnSuffix"].startswith("targetgroup/pool/") and tg["arn"].endswith(tg["arnSuffix"])
