"""lb-attributes: load balancer and target group attributes, set through the Load Balancer Controller's annotations,
that Elastic Load Balancing refuses. Each planted pair is beside a twin it takes; the keys per type come from
botocore's ELBv2 model, and each value range the rule holds is the one that model's text states."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import botocore  # type: ignore[import-untyped]
import pytest

from tests.proof.deployability.test_controllers_and_readiness import (
    LB_SERVICE,
    _annotation,
    _ingress,
    added,
    edited,
    fired,
)
from tokenplane.proof.deployability import lb_attributes

NLB_ATTRIBUTES = "service.beta.kubernetes.io/aws-load-balancer-attributes"
NLB_TARGETS = "service.beta.kubernetes.io/aws-load-balancer-target-group-attributes"
ALB_ATTRIBUTES = "alb.ingress.kubernetes.io/load-balancer-attributes"
ALB_TARGETS = "alb.ingress.kubernetes.io/target-group-attributes"


def _doc(shape: str) -> str:
    model = Path(botocore.__file__).parent / "data" / "elbv2" / "2015-12-01" / "service-2.json.gz"
    with gzip.open(model) as f:
        text: str = json.load(f)["shapes"][shape]["members"]["Key"]["documentation"]
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", text))


def test_the_keys_per_type_are_read_from_botocores_model() -> None:
    balancer, group = lb_attributes.supported("LoadBalancerAttribute"), lb_attributes.supported("TargetGroupAttribute")
    assert balancer["idle_timeout.timeout_seconds"] == {lb_attributes.ALB}
    assert balancer["dns_record.client_routing_policy"] == {lb_attributes.NLB}
    assert balancer["deletion_protection.enabled"] == lb_attributes.ALL_TYPES
    assert (
        lb_attributes.NLB in group["proxy_protocol_v2.enabled"]
        and lb_attributes.ALB not in group["proxy_protocol_v2.enabled"]
    )
    assert group["slow_start.duration_seconds"] == {lb_attributes.ALB}
    assert "lb_cookie" not in group and "inspect_immediately" not in group  # values listed under a key, not keys
    assert len(balancer) >= 20 and len(group) >= 20


# Each range as botocore's text states it: the rule's numbers must be the model's, not remembered ones.
STATED = {
    "idle_timeout.timeout_seconds": "The valid range is 1-4000 seconds",
    "client_keep_alive.seconds": "The valid range is 60-604800 seconds",
    "secondary_ips.auto_assigned.per_subnet": "The valid range is 0 to 7",
    "deregistration_delay.timeout_seconds": "The range is 0-3600 seconds",
    "slow_start.duration_seconds": "The range is 30-900 seconds",
    "stickiness.app_cookie.duration_seconds": "The range is 1 second to 1 week (604800 seconds)",
    "stickiness.lb_cookie.duration_seconds": "The range is 1 second to 1 week (604800 seconds)",
    "target_group_health.dns_failover.minimum_healthy_targets.percentage": "off or an integer from 1 to 100",
    "target_group_health.unhealthy_state_routing.minimum_healthy_targets.percentage": "off or an integer from 1 to 100",
}


@pytest.mark.parametrize("key", sorted(lb_attributes.VALUES))
def test_each_value_rule_is_the_one_botocores_text_states(key: str) -> None:
    doc = _doc("LoadBalancerAttribute") + " " + _doc("TargetGroupAttribute")
    said = doc[doc.index(key) :][:700]
    _, allowed = lb_attributes.VALUES[key]
    if key in STATED:
        assert STATED[key] in said, said
    else:  # an enumeration: each value the rule takes is one the text names
        for value in allowed.split(" or "):
            assert value in said, (value, said)


@pytest.mark.parametrize(
    ("annotation", "bad", "good", "said"),
    [
        (NLB_ATTRIBUTES, "idle_timeout.timeout_seconds=3600", "load_balancing.cross_zone.enabled=true",
         "not supported on load balancers with type 'network'"),
        (NLB_ATTRIBUTES, "deletion_protection.enable=true", "deletion_protection.enabled=false", "not recognized"),
        (NLB_ATTRIBUTES, "dns_record.client_routing_policy=zonal_affinity",
         "dns_record.client_routing_policy=partial_availability_zone_affinity", "value 'zonal_affinity'"),
        (NLB_ATTRIBUTES, "load_balancing.cross_zone.enabled=yes", "load_balancing.cross_zone.enabled=true",
         "value 'yes'"),
        (NLB_TARGETS, "deregistration_delay.timeout_seconds=7200", "deregistration_delay.timeout_seconds=30",
         "value '7200'"),
        (NLB_TARGETS, "stickiness.enabled=true,stickiness.type=lb_cookie",
         "stickiness.enabled=true,stickiness.type=source_ip", "value 'lb_cookie'"),
        (NLB_TARGETS, "slow_start.duration_seconds=60", "preserve_client_ip.enabled=false", "type 'network'"),
        (NLB_TARGETS, "proxy_protocol_v2.enabled: true", "proxy_protocol_v2.enabled=true", "not key=value"),
    ],
)  # fmt: skip
def test_an_nlb_attribute_elb_refuses_is_flagged_and_its_twin_is_not(
    annotation: str, bad: str, good: str, said: str
) -> None:
    found = fired(lb_attributes.check, edited(LB_SERVICE, _annotation(annotation, bad)))
    assert len(found) == 1 and said in found[0].message and found[0].urn.endswith(LB_SERVICE), found
    assert "FailedDeployModel" in found[0].message or "FailedBuildModel" in found[0].message
    assert annotation in found[0].fix
    assert fired(lb_attributes.check, edited(LB_SERVICE, _annotation(annotation, good))) == []


@pytest.mark.parametrize(
    ("annotation", "bad", "good", "said"),
    [
        (ALB_ATTRIBUTES, "idle_timeout.timeout_seconds=4001", "idle_timeout.timeout_seconds=4000", "value '4001'"),
        (ALB_ATTRIBUTES, "routing.http.desync_mitigation_mode=strict",
         "routing.http.desync_mitigation_mode=strictest", "value 'strict'"),
        (ALB_ATTRIBUTES, "dns_record.client_routing_policy=any_availability_zone", "routing.http2.enabled=false",
         "type 'application'"),
        (ALB_TARGETS, "slow_start.duration_seconds=10", "slow_start.duration_seconds=0", "value '10'"),
        (ALB_TARGETS, "load_balancing.algorithm.type=least_connections",
         "load_balancing.algorithm.type=least_outstanding_requests", "value 'least_connections'"),
        (ALB_TARGETS, "load_balancing.cross_zone.enabled=auto",
         "load_balancing.cross_zone.enabled=use_load_balancer_configuration", "value 'auto'"),
    ],
)  # fmt: skip
def test_an_alb_attribute_elb_refuses_is_flagged_and_its_twin_is_not(
    annotation: str, bad: str, good: str, said: str
) -> None:
    found = fired(lb_attributes.check, added(_ingress({annotation: bad})))
    assert len(found) == 1 and said in found[0].message and "its ALB" in found[0].message, found
    assert fired(lb_attributes.check, added(_ingress({annotation: good}))) == []


def test_objects_another_controller_builds_are_not_judged() -> None:
    # Another controller ignores these annotations: nothing is refused, so nothing is a finding.
    other = _ingress({ALB_ATTRIBUTES: "idle_timeout.timeout_seconds=99999"})
    other["spec"]["ingressClassName"] = "nginx"
    assert fired(lb_attributes.check, added(other)) == []

    def auto_mode(manifest: dict[str, object]) -> None:
        _annotation(NLB_ATTRIBUTES, "idle_timeout.timeout_seconds=3600")(manifest)
        manifest["spec"]["loadBalancerClass"] = "eks.amazonaws.com/nlb"  # type: ignore[index]
        manifest["metadata"]["annotations"].pop("service.beta.kubernetes.io/aws-load-balancer-type")  # type: ignore[index]

    assert fired(lb_attributes.check, edited(LB_SERVICE, auto_mode)) == []


def test_deletion_protection_on_a_controller_load_balancer_is_flagged_for_the_delete_that_hangs() -> None:
    on = fired(lb_attributes.check, edited(LB_SERVICE, _annotation(NLB_ATTRIBUTES, "deletion_protection.enabled=true")))
    assert len(on) == 1 and "cannot delete the service" in on[0].message and "protect=True" in on[0].fix, on
    off = _annotation(NLB_ATTRIBUTES, "deletion_protection.enabled=false")
    assert fired(lb_attributes.check, edited(LB_SERVICE, off)) == []
    alb = fired(lb_attributes.check, added(_ingress({ALB_ATTRIBUTES: "deletion_protection.enabled=true"})))
    assert len(alb) == 1 and "finalizer" in alb[0].message
