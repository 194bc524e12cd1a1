"""Network ACLs and security groups for pods in the reachability model behind ``flow-allowed``.

Each planted defect is one the review did not name: a stateless ACL that forgets the replies, a deny numbered
before its allow, an adopted default ACL, a public subnet's ACL that shuts out the internet, an ACL that forgets
DNS over UDP; a pod security group without egress rules, the nodes' groups that do not admit a pod's own group
(its DNS included), probes the pod's group refuses, a store that admits only the nodes' group. Each is caught for
its own reason (the message names the ACL or group and the rule), and the correct variants are not flagged.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from tests.proof.deployability.conftest import mutated, rendered, spec
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import Finding, flows, network_policy
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource, RenderResult, cluster_security_group_id, physical_id

SUBNET = "aws:ec2/subnet:Subnet"
SG = "aws:ec2/securityGroup:SecurityGroup"
PRIVATE = ["dev-local-network-private-a", "dev-local-network-private-b"]
PUBLIC = ["dev-local-network-public-a", "dev-local-network-public-b"]
VPC_RANGE = "10.0.0.0/16"


def found(result: RenderResult) -> list[Finding]:
    return list(deploy.CHECKS[flows.FLOW](Graph(spec("dev"), result)))


def with_extra(*extra: RenderedResource) -> RenderResult:
    return mutated(rendered("dev"), lambda r: r, extra=list(extra))


def aws(type_: str, name: str, inputs: dict[str, Any], deps: dict[str, list[str]] | None = None) -> RenderedResource:
    """A resource of the dev region's network, as the program would declare it beside the VPC."""
    vpc = next(r for r in rendered("dev").resources if r.name == "dev-local-network-vpc")
    urn = vpc.urn.rsplit("$", 1)[0] + f"${type_}::{name}"
    return dataclasses.replace(vpc, urn=urn, type=type_, name=name, inputs=inputs, property_dependencies=deps or {})


def subnet_ids(names: list[str]) -> list[str]:
    return [physical_id(SUBNET, n) for n in names]


def rule(
    number: int, cidr: str, low: int = 0, high: int = 0, protocol: str = "-1", action: str = "allow"
) -> dict[str, Any]:
    return {
        "ruleNo": number,
        "action": action,
        "protocol": protocol,
        "cidrBlock": cidr,
        "fromPort": low,
        "toPort": high,
    }


def acl(name: str, subnets: list[str], ingress: list[dict[str, Any]], egress: list[dict[str, Any]]) -> RenderedResource:
    return aws(
        "aws:ec2/networkAcl:NetworkAcl",
        name,
        {
            "vpcId": "dev-local-network-vpc-c2a0b04-id",
            "subnetIds": subnet_ids(subnets),
            "ingress": ingress,
            "egress": egress,
        },
    )


def matching(findings: list[Finding], *words: str) -> list[Finding]:
    return [f for f in findings if all(w in str(f) for w in words)]


def one(findings: list[Finding], *words: str) -> Finding:
    hits = matching(findings, *words)
    assert hits, f"no finding naming {words}; found:\n" + "\n".join(str(f) for f in findings)
    return hits[0]


# Network ACLs ------------------------------------------------------------------------------------------------------
ALL_OPEN = [rule(100, "0.0.0.0/0")]


def test_an_acl_that_admits_everything_both_ways_is_not_flagged() -> None:
    assert (
        found(
            with_extra(acl("private-acl", PRIVATE, ALL_OPEN, ALL_OPEN), acl("public-acl", PUBLIC, ALL_OPEN, ALL_OPEN))
        )
        == []
    )


def test_a_tight_stateless_acl_with_the_replies_and_dns_is_not_flagged() -> None:
    vpc_in = [
        rule(100, VPC_RANGE, 0, 65535, "tcp"),
        rule(110, VPC_RANGE, 53, 53, "udp"),
        rule(120, VPC_RANGE, 32768, 60999, "udp"),
    ]
    # The load balancer listens on 80 and 443; it reaches the pods, and its clients' replies go, on 1024-65535.
    public = [
        rule(90, "0.0.0.0/0", 80, 80, "tcp"),
        rule(100, "0.0.0.0/0", 443, 443, "tcp"),
        rule(110, "0.0.0.0/0", 1024, 65535, "tcp"),
        *vpc_in[1:],
    ]
    result = with_extra(acl("private-acl", PRIVATE, vpc_in, vpc_in), acl("public-acl", PUBLIC, public, public))
    assert found(result) == []


def test_an_acl_that_forgets_the_replies_blocks_redis_between_the_two_private_subnets() -> None:
    # Stateful thinking on a stateless filter: 6379 in and out, nothing for the replies on the client's ports.
    only_redis = [rule(100, VPC_RANGE, 6379, 6379, "tcp")]
    findings = found(with_extra(acl("private-acl", PRIVATE, ALL_OPEN, only_redis)))
    finding = one(findings, "ai-gateway", "ElastiCache dev-local-redis-rg:6379", "network ACL private-acl")
    assert "32768-60999" in finding.message and "stateless" in finding.fix


def test_a_deny_numbered_before_its_allow_blocks_the_kafka_clients() -> None:
    # Rule order, not rule content: the first match decides, and rule 50 denies what rule 100 would allow.
    msk = aws(
        "aws:ec2/networkAclRule:NetworkAclRule",
        "private-deny-kafka",
        {
            "networkAclId": physical_id("aws:ec2/networkAcl:NetworkAcl", "private-acl"),
            "ruleNumber": 50,
            "egress": False,
            "protocol": "tcp",
            "ruleAction": "deny",
            "cidrBlock": "10.0.16.0/20",
            "fromPort": 9098,
            "toPort": 9098,
        },
    )
    findings = found(with_extra(acl("private-acl", PRIVATE, ALL_OPEN, ALL_OPEN), msk))
    finding = one(findings, "MSK dev-local-kafka-msk:9098", "network ACL private-acl")
    assert "rule 50 deny tcp 10.0.16.0/20 ports 9098-9098 matches it" in finding.message


def test_adopting_the_default_acl_without_rules_shuts_every_cross_subnet_flow() -> None:
    # aws.ec2.DefaultNetworkAcl removes every rule it does not declare: the VPC's subnets then deny everything.
    vpc = next(r for r in rendered("dev").resources if r.name == "dev-local-network-vpc")
    default = aws("aws:ec2/defaultNetworkAcl:DefaultNetworkAcl", "default-acl", {}, {"defaultNetworkAclId": [vpc.urn]})
    findings = found(with_extra(default))
    one(findings, "internet -> load balancer of llm-gateway/ai-gateway", "network ACL default-acl")
    one(findings, "ai-gateway", "ElastiCache", "network ACL default-acl", "final rule denies")
    # Adopted with allow-all rules, the same resource is harmless.
    assert found(with_extra(dataclasses.replace(default, inputs={"ingress": ALL_OPEN, "egress": ALL_OPEN}))) == []


def test_a_public_acl_that_admits_https_only_from_the_vpc_shuts_out_the_gateways_clients() -> None:
    vpc_only = [rule(100, VPC_RANGE)]
    findings = found(with_extra(acl("public-acl", PUBLIC, vpc_only, ALL_OPEN)))
    finding = one(findings, "internet -> load balancer of llm-gateway/ai-gateway", "network ACL public-acl")
    assert "ingress" in finding.message and "0.0.0.0/0" in finding.message
    assert not matching(findings, "ElastiCache")  # the private subnets are untouched


def test_an_acl_for_tcp_alone_blocks_dns_over_udp() -> None:
    tcp_only = [rule(100, VPC_RANGE, 0, 65535, "tcp"), rule(200, "0.0.0.0/0", 0, 65535, "tcp")]
    findings = found(with_extra(acl("private-acl", PRIVATE, tcp_only, tcp_only)))
    one(findings, "ai-gateway (llm-gateway) -> cluster DNS", "network ACL private-acl", "UDP 53")
    assert not matching(findings, "ElastiCache")  # every TCP flow still gets through


def test_an_acl_attached_by_association_is_the_one_that_filters() -> None:
    closed = acl("closed-acl", [], [], [])
    association = aws(
        "aws:ec2/networkAclAssociation:NetworkAclAssociation",
        "private-b-closed",
        {
            "networkAclId": physical_id("aws:ec2/networkAcl:NetworkAcl", "closed-acl"),
            "subnetId": subnet_ids(PRIVATE[1:])[0],
        },
    )
    assert found(with_extra(closed)) == []  # an ACL on no subnet filters nothing
    one(found(with_extra(closed, association)), "network ACL closed-acl", "dev-local-network-private-b")


# Security groups for pods -----------------------------------------------------------------------------------------
def pod_group(ingress: list[dict[str, Any]], egress: list[dict[str, Any]]) -> RenderedResource:
    return aws(
        SG, "gateway-pods-sg", {"vpcId": "dev-local-network-vpc-c2a0b04-id", "ingress": ingress, "egress": egress}
    )


def policy(groups: list[str], selector: dict[str, Any] | None = None) -> RenderedResource:
    """A SecurityGroupPolicy for the AI gateway's pods, made from a NetworkPolicy resource of the same namespace."""
    template = next(r for r in rendered("dev").resources if r.name.endswith("ns-llm-gateway-default-deny"))
    manifest = {
        "apiVersion": "vpcresources.k8s.aws/v1beta1",
        "kind": "SecurityGroupPolicy",
        "metadata": {"name": "ai-gateway-pods", "namespace": "llm-gateway"},
        "spec": {
            **(selector or {"podSelector": {"matchLabels": {"app.kubernetes.io/name": "ai-gateway"}}}),
            "securityGroups": {"groupIds": groups},
        },
    }
    urn = (
        template.urn.rsplit("$", 1)[0] + "$kubernetes:vpcresources.k8s.aws/v1beta1:SecurityGroupPolicy::ai-gateway-pods"
    )
    return dataclasses.replace(
        template, urn=urn, type=urn.split("$")[-1].split("::")[0], name="ai-gateway-pods", inputs=manifest
    )


POD_SG = physical_id(SG, "gateway-pods-sg")
CLUSTER_SG = cluster_security_group_id("dev-local-cluster-eks")
FROM_VPC = [{"protocol": "tcp", "fromPort": 0, "toPort": 65535, "cidrBlocks": [VPC_RANGE]}]
TO_ANYWHERE = [{"protocol": "-1", "fromPort": 0, "toPort": 0, "cidrBlocks": ["0.0.0.0/0"]}]


def test_a_pod_group_beside_the_cluster_group_with_egress_and_vpc_ingress_is_not_flagged() -> None:
    # The usual correct shape: the pod's own group plus EKS's cluster group, so the nodes still admit it.
    assert found(with_extra(pod_group(FROM_VPC, TO_ANYWHERE), policy([POD_SG, CLUSTER_SG]))) == []


def test_a_policy_that_selects_no_pod_changes_nothing() -> None:
    misses = {"serviceAccountSelector": {"matchLabels": {"app.kubernetes.io/name": "ai-gatway"}}}
    assert found(with_extra(pod_group([], []), policy([POD_SG], misses))) == []


def test_a_pod_group_without_egress_rules_blocks_the_gateways_calls() -> None:
    # The provider removes AWS's default allow-all egress on create: a group that declares none lets nothing out.
    # (Beside EKS's cluster group the pod would leave through that group's allow-all: the union of its groups.)
    assert found(with_extra(pod_group(FROM_VPC, []), policy([POD_SG, CLUSTER_SG]))) == []
    findings = found(with_extra(pod_group(FROM_VPC, []), policy([POD_SG])))
    finding = one(findings, "ai-gateway", "ElastiCache dev-local-redis-rg:6379", "on the way out")
    assert "gateway-pods-sg has no egress rule for TCP 6379" in finding.message
    one(findings, "ai-gateway (llm-gateway) -> model-gateway (llm-gateway):8080", "on the way out")
    assert "no egress rule unless it declares one" in finding.fix


def test_a_pod_group_the_nodes_do_not_admit_cuts_the_gateway_off_dns_and_the_model_gateway() -> None:
    # Without the cluster group on the pod, EKS's cluster group (which admits only itself) refuses it.
    findings = found(with_extra(pod_group(FROM_VPC, TO_ANYWHERE), policy([POD_SG])))
    dns = one(findings, "ai-gateway (llm-gateway) -> cluster DNS", "security groups for pods")
    assert "UDP 53" in dns.message and "cluster security group" in dns.message
    one(findings, "ai-gateway (llm-gateway) -> model-gateway (llm-gateway):8080", "security groups for pods")


def test_a_pod_group_that_refuses_the_nodes_fails_the_kubelets_probes() -> None:
    only_the_kafka_group = [
        {"protocol": "tcp", "fromPort": 8080, "toPort": 8080, "securityGroups": [physical_id(SG, "dev-local-kafka-sg")]}
    ]
    findings = found(with_extra(pod_group(only_the_kafka_group, TO_ANYWHERE), policy([POD_SG])))
    probe = one(findings, "kubelet -> ai-gateway (llm-gateway):8080", "never becomes Ready")
    assert "admits TCP 8080 only from dev-local-kafka-sg" in probe.message
    one(findings, "prometheus", "ai-gateway (llm-gateway):9000", "security groups for pods")  # its scrape, too


def test_a_store_that_admits_only_the_nodes_group_refuses_a_pod_on_its_own_group() -> None:
    def nodes_only(r: RenderedResource) -> RenderedResource:
        if r.name != "dev-local-redis-sg":
            return r
        return dataclasses.replace(
            r,
            inputs={
                **r.inputs,
                "ingress": [{"protocol": "tcp", "fromPort": 6379, "toPort": 6379, "securityGroups": [CLUSTER_SG]}],
            },
        )

    before = mutated(rendered("dev"), nodes_only)
    assert found(before) == []  # the nodes' group is admitted, and every pod carries it
    result = mutated(before, lambda r: r, extra=[pod_group(FROM_VPC, TO_ANYWHERE), policy([POD_SG])])
    finding = one(
        found(result),
        "ai-gateway",
        "ElastiCache dev-local-redis-rg:6379",
        "SecurityGroupPolicy llm-gateway/ai-gateway-pods",
    )
    assert "admits TCP 6379 only from" in finding.message


# pod-groups-enforced: the policy only takes effect where the CNI and the cluster's role let it -------------------
def enforced(result: RenderResult) -> list[Finding]:
    return list(deploy.CHECKS[network_policy.POD_GROUPS](Graph(spec("dev"), result)))


def pod_eni(on: bool, controller: bool) -> RenderResult:
    """dev with a SecurityGroupPolicy; the CNI's ENABLE_POD_ENI and the cluster role's policy as asked."""

    def change(r: RenderedResource) -> RenderedResource:
        if r.type == "aws:eks/addon:Addon" and r.inputs.get("addonName") == "vpc-cni" and on:
            config = {**json.loads(r.inputs["configurationValues"]), "env": {"ENABLE_POD_ENI": "true"}}
            return dataclasses.replace(r, inputs={**r.inputs, "configurationValues": json.dumps(config)})
        return r

    extra = [pod_group(FROM_VPC, TO_ANYWHERE), policy([POD_SG, CLUSTER_SG])]
    if controller:
        template = next(r for r in rendered("dev").resources if r.name == "dev-local-cluster-cluster-policy")
        extra.append(
            dataclasses.replace(
                template,
                urn=template.urn + "-vpc-resource-controller",
                name=template.name + "-vpc-resource-controller",
                inputs={**template.inputs, "policyArn": network_policy.VPC_RESOURCE_CONTROLLER},
            )
        )
    return mutated(rendered("dev"), change, extra=extra)


def test_a_policy_on_a_cluster_whose_cni_and_role_allow_it_is_not_flagged() -> None:
    assert enforced(pod_eni(on=True, controller=True)) == []
    assert enforced(rendered("dev")) == []  # no policy, nothing to enforce


def test_a_policy_without_the_cnis_pod_eni_is_found() -> None:
    [finding] = enforced(pod_eni(on=False, controller=True))
    assert "without ENABLE_POD_ENI" in finding.message and finding.urn.endswith("addon-vpc-cni")


def test_a_policy_on_a_cluster_whose_role_lacks_the_vpc_resource_controller_is_found() -> None:
    [finding] = enforced(pod_eni(on=True, controller=False))
    assert "lacks AmazonEKSVPCResourceController" in finding.message and finding.urn.endswith("cluster-cluster-role")
