"""EKS clusters, nodes, load balancers and IAM names that AWS accepts and that never work, planted into minimal.

Each defect is put back into minimal's rendered graph (a shipped program) and has a correct twin that differs only
in the fix; each test fails when its check is removed.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.proof.deployability.conftest import mutated, planted, rendered, spec, with_inputs
from tokenplane import package_data
from tokenplane.proof.deployability import iam_names, lb_subnets, nodes_join
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource, RenderResult, physical_id

STACK = "minimal"
Change = Callable[[RenderedResource], RenderedResource | None]


def _one(pred: Callable[[RenderedResource], bool]) -> RenderedResource:
    found = [r for r in rendered(STACK).resources if pred(r)]
    assert len(found) == 1, [r.name for r in found]
    return found[0]


def _named(suffix: str) -> RenderedResource:
    return _one(lambda r: r.name.endswith(suffix) and r.type.startswith("aws:"))


def _edit(suffix: str, edit: Callable[[dict[str, Any]], None]) -> Change:
    return lambda r: with_inputs(r, edit) if r.name.endswith(suffix) and r.type.startswith("aws:") else r


def _drop(suffix: str) -> Change:
    return lambda r: None if r.name.endswith(suffix) and r.type.startswith("aws:") else r


def _chain(*changes: Change) -> Change:
    def change(r: RenderedResource) -> RenderedResource | None:
        out: RenderedResource | None = r
        for c in changes:
            out = c(out) if out is not None else None
        return out

    return change


def _aws(type_token: str, name: str, inputs: dict[str, Any]) -> RenderedResource:
    return planted(STACK, type_token, name, inputs)


def _kube(manifest: dict[str, Any]) -> RenderedResource:
    kind, name = manifest["kind"], manifest["metadata"]["name"]
    group = manifest["apiVersion"] if "/" in manifest["apiVersion"] else f"core/{manifest['apiVersion']}"
    typ = f"kubernetes:{group}:{kind}"
    # on the cluster's provider, as a program's own objects are (cluster-provider judges the default one)
    return dataclasses.replace(
        _aws(typ, f"planted-{name}", manifest),
        provider=f"urn:pulumi:{STACK}::tokenplane::pulumi:providers:kubernetes::planted-k8s",
    )


CHECKS = {"nodes-join": nodes_join.check, "lb-subnets": lb_subnets.check, "iam-name-exists": iam_names.check}


def _rule(rule: str, change: Change = lambda r: r, extra: list[RenderedResource] | None = None) -> list[str]:
    result: RenderResult = mutated(rendered(STACK), change, extra=extra)
    return [str(f) for f in CHECKS[rule](Graph(spec(STACK), result)) if f.rule == rule]


def test_minimal_is_clean_of_the_three_rules() -> None:
    for rule in ("nodes-join", "lb-subnets", "iam-name-exists"):
        assert _rule(rule) == [], rule


# nodes-join ----------------------------------------------------------------------------------------------------


def _set_trust(*services: str) -> Callable[[dict[str, Any]], None]:
    def edit(inputs: dict[str, Any]) -> None:
        statement = {"Effect": "Allow", "Principal": {"Service": list(services)}, "Action": "sts:AssumeRole"}
        inputs["assumeRolePolicy"] = json.dumps({"Version": "2012-10-17", "Statement": [statement]})

    return edit


def _private_rt_routes(routes: list[dict[str, Any]]) -> Change:
    return _chain(
        _edit("private-a-rt", lambda i: i.update(routes=routes)),
        _edit("private-b-rt", lambda i: i.update(routes=routes)),
    )


def _endpoints(services: list[str]) -> list[RenderedResource]:
    vpc = _named("network-private-a").inputs["vpcId"]
    tables = [physical_id("aws:ec2/routeTable:RouteTable", _named(f"private-{z}-rt").name) for z in "ab"]
    out = []
    for service in services:
        gateway = service == "s3"
        inputs: dict[str, Any] = {"vpcId": vpc, "serviceName": f"com.amazonaws.us-east-1.{service}"}
        inputs |= (
            {"vpcEndpointType": "Gateway", "routeTableIds": tables}
            if gateway
            else {"vpcEndpointType": "Interface", "privateDnsEnabled": True}
        )
        out.append(_aws("aws:ec2/vpcEndpoint:VpcEndpoint", f"planted-endpoint-{service}", inputs))
    return out


def _subnet_id(suffix: str) -> str:
    return physical_id("aws:ec2/subnet:Subnet", _named(suffix).name)


ALL_ENDPOINTS = ["ecr.api", "ecr.dkr", "s3", "ec2"]
IGW = {
    "cidrBlock": "0.0.0.0/0",
    "gatewayId": physical_id("aws:ec2/internetGateway:InternetGateway", "minimal-us-network-igw"),
}
NODE_CASES: dict[str, tuple[Change, list[RenderedResource], Change, list[RenderedResource]]] = {
    # name: (defect, its extra resources, correct twin, its extra resources)
    "ecr_read_policy_missing": (
        _drop("node-policy-amazonec2containerregistryreadonly"),
        [],
        _edit(
            "node-policy-amazonec2containerregistryreadonly",
            lambda i: i.update(policyArn="arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryPullOnly"),
        ),
        [],
    ),
    "node_role_trusts_eks_not_ec2": (
        _edit("cluster-node-role", _set_trust("eks.amazonaws.com")),
        [],
        _edit("cluster-node-role", _set_trust("eks.amazonaws.com", "ec2.amazonaws.com")),
        [],
    ),
    "cni_policy_missing_without_cni_role": (
        _drop("node-policy-amazoneks_cni_policy"),
        [],
        _chain(
            _drop("node-policy-amazoneks_cni_policy"),
            _edit("addon-vpc-cni", lambda i: i.update(serviceAccountRoleArn="arn:aws:iam::123456789012:role/cni")),
        ),
        [],
    ),
    "private_subnets_routed_to_igw_without_public_ips": (
        _private_rt_routes([IGW]),
        [],
        _chain(
            _private_rt_routes([IGW]),
            _edit("network-private-a", lambda i: i.update(mapPublicIpOnLaunch=True)),
            _edit("network-private-b", lambda i: i.update(mapPublicIpOnLaunch=True)),
        ),
        [],
    ),
    "isolated_subnets_without_ecr_endpoint": (
        _private_rt_routes([]),
        _endpoints(["ecr.api", "s3", "ec2"]),
        _private_rt_routes([]),
        _endpoints(ALL_ENDPOINTS),
    ),
    "nat_gateway_in_a_private_subnet": (
        _edit("network-nat-a", lambda i: i.update(subnetId=_subnet_id("network-private-b"))),
        [],
        _edit("network-nat-a", lambda i: i.update(subnetId=_subnet_id("network-public-b"))),
        [],
    ),
    "cluster_subnets_in_one_az": (
        _chain(
            *(
                _edit(f"network-{k}-{z}", lambda i: i.update(availabilityZone="us-east-1a"))
                for k in ("public", "private")
                for z in "ab"
            )
        ),
        [],
        _chain(
            *(_edit(f"network-{k}-a", lambda i: i.update(availabilityZone="us-east-1a")) for k in ("public", "private"))
        ),
        [],
    ),
    "cluster_role_without_cluster_policy": (
        _drop("cluster-cluster-policy"),
        [],
        _edit("cluster-cluster-policy", lambda i: i.update(policyArn="arn:aws:iam::aws:policy/AmazonEKSClusterPolicy")),
        [],
    ),
    "private_endpoint_with_dns_hostnames_off": (
        _chain(
            _edit("cluster-eks", lambda i: i["vpcConfig"].update(endpointPublicAccess=False)),
            _edit("network-vpc", lambda i: i.update(enableDnsHostnames=False)),
        ),
        [],
        _edit("cluster-eks", lambda i: i["vpcConfig"].update(endpointPublicAccess=False)),
        [],
    ),
}


@pytest.mark.parametrize("case", sorted(NODE_CASES))
def test_nodes_join_catches_the_defect_and_passes_its_twin(case: str) -> None:
    defect, defect_extra, twin, twin_extra = NODE_CASES[case]
    caught = _rule("nodes-join", defect, defect_extra)
    assert caught, f"{case}: not caught"
    assert all("Fix:" in f for f in caught)
    assert _rule("nodes-join", twin, twin_extra) == [], f"{case}: twin flagged"


def test_an_isolated_node_subnet_names_the_endpoints_it_lacks() -> None:
    caught = _rule("nodes-join", _private_rt_routes([]), _endpoints(["ecr.api", "s3", "ec2"]))
    assert any("for ecr.dkr" in f and "NodeCreationFailure" in f for f in caught), caught


# lb-subnets ----------------------------------------------------------------------------------------------------


def _untag(role: str) -> Callable[[dict[str, Any]], None]:
    return lambda i: i.update(tags={k: v for k, v in i["tags"].items() if k != role})


def _public_subnets(edit: Callable[[dict[str, Any]], None]) -> Change:
    return _chain(_edit("network-public-a", edit), _edit("network-public-b", edit))


def _gateway_service(edit: Callable[[dict[str, Any]], None]) -> Change:
    def change(r: RenderedResource) -> RenderedResource | None:
        if r.inputs.get("kind") == "Service" and r.inputs["metadata"]["name"] == "ai-gateway":
            return with_inputs(r, edit)
        return r

    return change


def _ingress(annotations: dict[str, str], service: str = "model-gateway", port: int = 8080) -> RenderedResource:
    return _kube(
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "Ingress",
            "metadata": {"name": "console", "namespace": "llm-gateway", "annotations": annotations},
            "spec": {
                "ingressClassName": "alb",
                "rules": [
                    {
                        "http": {
                            "paths": [
                                {
                                    "path": "/",
                                    "pathType": "Prefix",
                                    "backend": {"service": {"name": service, "port": {"number": port}}},
                                }
                            ]
                        }
                    }
                ],
            },
        }
    )


INTERNAL = {"alb.ingress.kubernetes.io/scheme": "internal", "alb.ingress.kubernetes.io/target-type": "ip"}
FOR_OTHER_CLUSTER: dict[str, str] = {"kubernetes.io/cluster/another": "shared"}
LB_CASES: dict[str, tuple[Change, list[RenderedResource], Change, list[RenderedResource]]] = {
    "public_subnets_not_tagged_elb": (
        _public_subnets(_untag("kubernetes.io/role/elb")),
        [],
        _chain(
            _public_subnets(_untag("kubernetes.io/role/elb")),
            _gateway_service(
                lambda i: i["metadata"]["annotations"].update(
                    {
                        "service.beta.kubernetes.io/aws-load-balancer-subnets": "minimal-us-network-public-a,minimal-us-network-public-b"
                    }
                )
            ),
        ),
        [],
    ),
    "elb_subnets_without_internet_gateway": (
        _edit("network-public-rt", lambda i: i.update(routes=[])),
        [],
        _chain(
            _edit("network-public-rt", lambda i: i.update(routes=[])),
            _gateway_service(
                lambda i: i["metadata"]["annotations"].update(
                    {"service.beta.kubernetes.io/aws-load-balancer-scheme": "internal"}
                )
            ),
        ),
        [],
    ),
    "internal_alb_subnets_tagged_for_another_cluster": (
        _chain(
            _edit("network-private-a", lambda i: i.update(tags={**_untag_cluster(i["tags"]), **FOR_OTHER_CLUSTER})),
            _edit("network-private-b", lambda i: i.update(tags={**_untag_cluster(i["tags"]), **FOR_OTHER_CLUSTER})),
        ),
        [_ingress(INTERNAL)],
        _chain(
            _edit("network-private-a", lambda i: i.update(tags={**i["tags"], **FOR_OTHER_CLUSTER})),
            _edit("network-private-b", lambda i: i.update(tags={**i["tags"], **FOR_OTHER_CLUSTER})),
        ),
        [_ingress(INTERNAL)],
    ),
    "alb_in_one_az": (
        _edit("network-private-b", _untag("kubernetes.io/role/internal-elb")),
        [_ingress(INTERNAL)],
        lambda r: r,
        [_ingress(INTERNAL)],
    ),
    "alb_instance_targets_on_a_cluster_ip_service": (
        lambda r: r,
        [_ingress({"alb.ingress.kubernetes.io/scheme": "internal"})],
        lambda r: r,
        [_ingress(INTERNAL)],
    ),
}


def _untag_cluster(tags: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in tags.items() if not k.startswith("kubernetes.io/cluster/")}


@pytest.mark.parametrize("case", sorted(LB_CASES))
def test_lb_subnets_catches_the_defect_and_passes_its_twin(case: str) -> None:
    defect, defect_extra, twin, twin_extra = LB_CASES[case]
    caught = _rule("lb-subnets", defect, defect_extra)
    assert caught, f"{case}: not caught"
    assert _rule("lb-subnets", twin, twin_extra) == [], f"{case}: twin flagged"


def test_the_controller_defaults_a_service_to_an_internal_scheme() -> None:
    """Without a scheme annotation the controller's NLB is internal: it needs internal-elb subnets, not elb ones."""
    no_scheme = _gateway_service(
        lambda i: i["metadata"]["annotations"].pop("service.beta.kubernetes.io/aws-load-balancer-scheme")
    )
    untagged = _chain(
        no_scheme,
        _edit("network-private-a", _untag("kubernetes.io/role/internal-elb")),
        _edit("network-private-b", _untag("kubernetes.io/role/internal-elb")),
    )
    assert _rule("lb-subnets", no_scheme) == []
    assert any("kubernetes.io/role/internal-elb" in f for f in _rule("lb-subnets", untagged))


# iam-name-exists -----------------------------------------------------------------------------------------------


def _statement_actions(*actions: str) -> Callable[[dict[str, Any]], None]:
    def edit(inputs: dict[str, Any]) -> None:
        document = json.loads(inputs["policy"])
        document["Statement"] = [*document["Statement"], {"Effect": "Allow", "Action": list(actions), "Resource": "*"}]
        inputs["policy"] = json.dumps(document)

    return edit


def _first_role_policy() -> str:
    policies = sorted(r.name for r in rendered(STACK).resources if r.type == "aws:iam/rolePolicy:RolePolicy")
    return policies[0]


IAM_CASES: dict[str, tuple[Change, Change]] = {
    "managed_policy_name_typo": (
        _edit(
            "node-policy-amazoneksworkernodepolicy",
            lambda i: i.update(policyArn="arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicyy"),
        ),
        _edit(
            "node-policy-amazoneksworkernodepolicy",
            lambda i: i.update(policyArn="arn:aws:iam::aws:policy/AmazonEKSWorkerNodeMinimalPolicy"),
        ),
    ),
    "managed_policy_without_its_path": (
        _edit(
            "ebs-csi-role-amazonebscsidriverpolicy",
            lambda i: i.update(policyArn="arn:aws:iam::aws:policy/AmazonEBSCSIDriverPolicy"),
        ),
        _edit(
            "ebs-csi-role-amazonebscsidriverpolicy",
            lambda i: i.update(policyArn="arn:aws:iam::aws:policy/service-role/AmazonEBSCSIDriverPolicy"),
        ),
    ),
    "s3_action_typo": (
        lambda r: with_inputs(r, _statement_actions("s3:GetObjects")) if r.name == _first_role_policy() else r,
        lambda r: with_inputs(r, _statement_actions("s3:getobject")) if r.name == _first_role_policy() else r,
    ),
    "ecr_action_typo": (
        lambda r: with_inputs(r, _statement_actions("ecr:BatchGetImages")) if r.name == _first_role_policy() else r,
        lambda r: with_inputs(r, _statement_actions("ecr:BatchGetImage")) if r.name == _first_role_policy() else r,
    ),
    "kms_wildcard_matching_nothing": (
        lambda r: with_inputs(r, _statement_actions("kms:GenerateDataKeys*")) if r.name == _first_role_policy() else r,
        lambda r: with_inputs(r, _statement_actions("kms:GenerateDataKey*")) if r.name == _first_role_policy() else r,
    ),
}


@pytest.mark.parametrize("case", sorted(IAM_CASES))
def test_iam_name_exists_catches_the_defect_and_passes_its_twin(case: str) -> None:
    defect, twin = IAM_CASES[case]
    caught = _rule("iam-name-exists", defect)
    assert caught, f"{case}: not caught"
    assert _rule("iam-name-exists", twin) == [], f"{case}: twin flagged"


def test_a_typo_names_what_was_meant() -> None:
    assert (
        iam_names.unknown_action("s3:GetObjects") == "s3:GetObjects is not an action of s3 (did you mean s3:GetObject?)"
    )
    assert iam_names.unknown_action("sqs:SendMessage") is None
    assert iam_names.unknown_action("unlisted-service:Anything") is None


def test_the_iam_tables_hold_their_sources_and_the_actions_the_components_name() -> None:
    actions = json.loads(package_data.path(package_data.IAM_ACTIONS).read_text(encoding="utf-8"))
    policies = json.loads(package_data.path(package_data.AWS_MANAGED_POLICIES).read_text(encoding="utf-8"))
    assert actions["source"] and actions["read"] and policies["source"] and policies["read"]
    assert all(
        v["url"].startswith("https://docs.aws.amazon.com/") and v["actions"] for v in actions["services"].values()
    )
    assert "service-role/AmazonEBSCSIDriverPolicy" in policies["policies"]
    for name in ("dev", "byteion"):
        assert list(iam_names.check(Graph(spec(name), rendered(name)))) == [], name


def _controller_chart(version: str) -> Change:
    def change(r: RenderedResource) -> RenderedResource | None:
        if r.type == "kubernetes:helm.sh/v3:Release" and r.inputs.get("chart") == "aws-load-balancer-controller":
            return with_inputs(r, lambda i: i.update(version=version))
        return r

    return change


def test_a_recent_controller_falls_back_on_public_subnets_when_none_is_tagged() -> None:
    """From v2.12.1 (chart 1.12.1) untagged public subnets serve an internet-facing scheme; no public subnet still
    leaves it without one."""
    untagged = _public_subnets(_untag("kubernetes.io/role/elb"))
    assert _rule("lb-subnets", _chain(untagged, _controller_chart("1.13.0"))) == []
    assert _rule("lb-subnets", _chain(untagged, _controller_chart("1.11.0")))
    no_public = _chain(untagged, _controller_chart("1.13.0"), _edit("network-public-rt", lambda i: i.update(routes=[])))
    assert any("unable to resolve at least one subnet" in f for f in _rule("lb-subnets", no_public))


def test_the_controllers_default_target_type_decides_for_an_unannotated_ingress() -> None:
    def ip_default(r: RenderedResource) -> RenderedResource | None:
        if r.type == "kubernetes:helm.sh/v3:Release" and r.inputs.get("chart") == "aws-load-balancer-controller":
            return with_inputs(r, lambda i: i["values"].update(defaultTargetType="ip"))
        return r

    unannotated = [_ingress({"alb.ingress.kubernetes.io/scheme": "internal"})]
    assert _rule("lb-subnets", lambda r: r, unannotated)
    assert _rule("lb-subnets", ip_default, unannotated) == []
