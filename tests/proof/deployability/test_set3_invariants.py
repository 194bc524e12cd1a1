"""Issue 27, third blind set: the invariants its misses showed, planted into minimal's rendered graph.

None of the planted defects is a set-3 program; each test fails when its check is removed, and each has a correct
twin the check must not flag.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from tests.proof.deployability.conftest import findings, mutated, planted, rendered
from tokenplane.proof.deployability import Finding
from tokenplane.proof.deployability.topology import HOSTNAME, ZONE
from tokenplane.proof.render import RenderedResource, RenderResult

STACK = "minimal"


def _resource(manifest: dict[str, Any]) -> RenderedResource:
    kind, name = manifest["kind"], manifest["metadata"]["name"]
    group = manifest["apiVersion"] if "/" in manifest["apiVersion"] else f"core/{manifest['apiVersion']}"
    return RenderedResource(
        urn=f"urn:pulumi:{STACK}::tokenplane::kubernetes:{group}:{kind}::planted-{name}",
        type=f"kubernetes:{group}:{kind}",
        name=f"planted-{name}",
        parent=None,
        # as a program's own objects are: on the cluster's provider, not Pulumi's default one (cluster-provider)
        provider=f"urn:pulumi:{STACK}::tokenplane::pulumi:providers:kubernetes::planted-k8s",
        region="us",
        inputs=manifest,
        custom=True,
    )


def plus(
    *objects: dict[str, Any], change: Callable[[RenderedResource], RenderedResource | None] | None = None
) -> RenderResult:
    """minimal with extra Kubernetes objects (as a program of one's own adds them) and an optional change."""
    return mutated(rendered(STACK), change or (lambda r: r), extra=[_resource(m) for m in objects])


def rule(result: RenderResult, name: str) -> list[Finding]:
    return findings(STACK, result, rule=name)


def shipped(kind: str, name: str) -> dict[str, Any]:
    """A deep copy of one of minimal's own manifests."""
    found = [
        r for r in rendered(STACK).resources if r.inputs.get("kind") == kind and r.inputs["metadata"]["name"] == name
    ]
    assert len(found) == 1, found
    return copy.deepcopy(found[0].inputs)


def renamed(manifest: dict[str, Any], name: str) -> dict[str, Any]:
    manifest["metadata"] = {**manifest["metadata"], "name": name}
    return manifest


def deployment(name: str, pod: dict[str, Any], *, replicas: int = 1, namespace: str = "llm-data") -> dict[str, Any]:
    labels = {"app.kubernetes.io/name": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": pod},
        },
    }


def system_pod(cpu: str = "100m", memory: str = "64Mi", **extra: Any) -> dict[str, Any]:
    resources = {"cpu": cpu, "memory": memory}
    return {
        "nodeSelector": {"tokenplane.io/node-role": "system"},
        "containers": [
            {"name": "app", "image": "nginx:1.27", "resources": {"requests": resources, "limits": resources}}
        ],
        **extra,
    }


# --- pod-fits-node ------------------------------------------------------------------------------------------------


def _gpu_pod(*per_container: int) -> dict[str, Any]:
    pod = copy.deepcopy(shipped("Deployment", "vllm-chat")["spec"]["template"]["spec"])
    base = pod["containers"][0]
    pod["containers"] = []
    for i, gpus in enumerate(per_container):
        container = copy.deepcopy(base)
        container["name"] = f"shard-{i}"
        container["resources"] = {"requests": {"nvidia.com/gpu": str(gpus)}, "limits": {"nvidia.com/gpu": str(gpus)}}
        pod["containers"].append(container)
    return pod


def test_a_pod_asking_more_memory_than_any_system_node_has_fits_no_node() -> None:
    result = plus(deployment("reporting", system_pod(memory="40Gi")))
    found = rule(result, "pod-fits-node")
    assert [f.urn.rsplit("::", 1)[-1] for f in found] == ["planted-reporting"], found
    assert "no node can ever hold this pod" in found[0].message and "m6i.xlarge" in found[0].message, found
    assert "40.0 GiB memory" in found[0].message and "15.4 GiB" in found[0].message, found
    # one root cause, one finding: the group total does not also report it
    assert not [f for f in rule(result, "node-capacity") if f.urn.endswith("planted-reporting")]


def test_gpus_summed_over_a_pods_containers_beyond_the_node_type_fit_no_node() -> None:
    found = rule(plus(deployment("sharded", _gpu_pod(3, 3), namespace="llm-serving")), "pod-fits-node")
    assert len(found) == 1 and "6 nvidia.com/gpu" in found[0].message and "g6.12xlarge" in found[0].message, found
    assert "4 nvidia.com/gpu" in found[0].message


def test_pods_that_fit_one_node_exactly_are_not_flagged() -> None:
    result = plus(
        deployment("sharded", _gpu_pod(2, 2), namespace="llm-serving"),
        deployment("reporting", system_pod(cpu="3", memory="8Gi")),
    )
    assert not rule(result, "pod-fits-node")
    assert not rule(rendered(STACK), "pod-fits-node")


# --- topology-placeable -------------------------------------------------------------------------------------------


def _anti(key: str) -> dict[str, Any]:
    term = {
        "topologyKey": key,
        "labelSelector": {
            "matchExpressions": [{"key": "app.kubernetes.io/name", "operator": "In", "values": ["search"]}]
        },
    }
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def test_zone_anti_affinity_with_more_replicas_than_the_two_zones_never_places_the_third() -> None:
    found = rule(plus(deployment("search", system_pod(affinity=_anti(ZONE)), replicas=3)), "topology-placeable")
    assert len(found) == 1 and "span 2 (us-east-1a, us-east-1b)" in found[0].message, found


def test_hostname_anti_affinity_beyond_the_groups_max_nodes_never_places_the_rest() -> None:
    # minimal's system group grows to 11 nodes; 12 replicas one per node cannot fit
    found = rule(plus(deployment("search", system_pod(affinity=_anti(HOSTNAME)), replicas=12)), "topology-placeable")
    assert len(found) == 1 and "grow to 11 nodes" in found[0].message, found


def test_spread_wanting_more_zones_than_exist_is_reported_and_skew_alone_is_not() -> None:
    spread = {
        "maxSkew": 1,
        "topologyKey": ZONE,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app.kubernetes.io/name": "search"}},
    }
    strict = deployment("search", system_pod(topologySpreadConstraints=[{**spread, "minDomains": 3}]), replicas=3)
    found = rule(plus(strict), "topology-placeable")
    assert len(found) == 1 and "minDomains 3" in found[0].message, found
    loose = deployment("search", system_pod(topologySpreadConstraints=[spread]), replicas=5)
    assert not rule(plus(loose), "topology-placeable")


def test_anti_affinity_within_the_zones_or_on_other_pods_is_not_flagged() -> None:
    fits = deployment("search", system_pod(affinity=_anti(ZONE)), replicas=2)
    other = deployment("indexer", system_pod(affinity=_anti(ZONE)), replicas=4)  # avoids search's pods, not its own
    assert not rule(plus(fits), "topology-placeable")
    assert not rule(plus(other), "topology-placeable")


# --- drain-blocked ------------------------------------------------------------------------------------------------


def _budget_of(name: str, spec: dict[str, Any]) -> Callable[[RenderedResource], RenderedResource]:
    def change(r: RenderedResource) -> RenderedResource:
        if r.inputs.get("kind") != "PodDisruptionBudget" or r.inputs["metadata"]["name"] != name:
            return r
        inputs = copy.deepcopy(r.inputs)
        inputs["spec"] = {"selector": inputs["spec"]["selector"], **spec}
        return dataclasses.replace(r, inputs=inputs)

    return change


def _statefulset_with_budget(budget: dict[str, Any]) -> list[dict[str, Any]]:
    sts = deployment("ledger", system_pod(), replicas=3)
    sts["kind"] = "StatefulSet"
    sts["spec"]["serviceName"] = "ledger"
    selector = {"matchExpressions": [{"key": "app.kubernetes.io/name", "operator": "In", "values": ["ledger"]}]}
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "ledger", "namespace": "llm-data"},
        "spec": {"selector": selector, **budget},
    }
    return [sts, pdb]


def test_a_budget_as_large_as_the_hpas_minimum_blocks_every_drain() -> None:
    # ai-gateway's HPA may scale it to 6, but at its minimum of 2 a minAvailable of 2 allows no eviction
    found = rule(plus(change=_budget_of("ai-gateway", {"minAvailable": 2})), "drain-blocked")
    assert [f.urn.rsplit("::", 1)[-1] for f in found] == ["minimal-us-ai-gateway-pdb"], found
    assert "at its 2 replica(s)" in found[0].message and "maxUnavailable: 1" in found[0].fix


def test_a_zero_max_unavailable_over_a_statefulset_blocks_every_drain() -> None:
    found = rule(plus(*_statefulset_with_budget({"maxUnavailable": 0})), "drain-blocked")
    assert len(found) == 1 and "StatefulSet ledger at its 3 replica(s)" in found[0].message, found


def test_budgets_that_leave_one_pod_to_evict_are_not_flagged() -> None:
    assert not rule(plus(*_statefulset_with_budget({"minAvailable": "50%"})), "drain-blocked")
    assert not rule(plus(change=_budget_of("ai-gateway", {"minAvailable": 1})), "drain-blocked")
    assert not rule(rendered(STACK), "drain-blocked")


# --- api-validation: cross-field rules ----------------------------------------------------------------------------


def _spec_of(
    kind: str, name: str, edit: Callable[[dict[str, Any]], None]
) -> Callable[[RenderedResource], RenderedResource]:
    def change(r: RenderedResource) -> RenderedResource:
        if r.inputs.get("kind") != kind or r.inputs["metadata"]["name"] != name:
            return r
        inputs = copy.deepcopy(r.inputs)
        edit(inputs["spec"])
        return dataclasses.replace(r, inputs=inputs)

    return change


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"minReadySeconds": 60, "progressDeadlineSeconds": 60}, "progressDeadlineSeconds 60, not greater than"),
        ({"minReadySeconds": 900}, "progressDeadlineSeconds 600 (the default), not greater than minReadySeconds 900"),
    ],
)
def test_a_progress_deadline_not_above_min_ready_is_rejected(fields: dict[str, int], says: str) -> None:
    result = plus(change=_spec_of("Deployment", "model-gateway", lambda s: s.update(fields)))
    found = [f for f in rule(result, "api-validation") if "progressDeadline" in f.message]
    assert len(found) == 1 and says in found[0].message, found


def test_a_scaled_object_whose_minimum_exceeds_its_maximum_is_rejected() -> None:
    edit = _spec_of("ScaledObject", "finops-consumer", lambda s: s.update(minReplicaCount=5, maxReplicaCount=2))
    found = rule(plus(change=edit), "api-validation")
    assert len(found) == 1 and "minReplicaCount 5 above maxReplicaCount 2" in found[0].message, found


def test_cross_field_values_the_api_server_accepts_are_not_flagged() -> None:
    deadline = _spec_of("Deployment", "model-gateway", lambda s: s.update(minReadySeconds=599))
    assert not rule(plus(change=deadline), "api-validation")
    equal = _spec_of("ScaledObject", "finops-consumer", lambda s: s.update(minReplicaCount=2, maxReplicaCount=2))
    assert not rule(plus(change=equal), "api-validation")


# --- access-mode-supported ----------------------------------------------------------------------------------------


def _claim(name: str, modes: list[str], storage_class: str, **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "llm-data"},
        "spec": {
            "accessModes": modes,
            "storageClassName": storage_class,
            "resources": {"requests": {"storage": "1Gi"}},
            **extra,
        },
    }


def test_a_read_only_many_claim_on_ekss_gp2_is_reported() -> None:
    found = rule(plus(_claim("shared-models", ["ReadOnlyMany"], "gp2")), "access-mode-supported")
    assert len(found) == 1 and "ReadOnlyMany" in found[0].message and "kubernetes.io/aws-ebs" in found[0].message, found


def test_a_read_write_many_volume_claim_template_on_the_programs_ebs_class_is_reported() -> None:
    sts = deployment("ledger", system_pod(), replicas=2)
    sts["kind"] = "StatefulSet"
    sts["spec"]["volumeClaimTemplates"] = [
        {"metadata": {"name": "journal"}, "spec": _claim("journal", ["ReadWriteMany"], "gp3-encrypted")["spec"]}
    ]
    found = rule(plus(sts), "access-mode-supported")
    assert len(found) == 1 and "volumeClaimTemplate journal" in found[0].message and "efs.csi.aws.com" in found[0].fix


def test_claims_their_provisioner_supports_are_not_flagged() -> None:
    efs = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": "efs"},
        "provisioner": "efs.csi.aws.com",
    }
    result = plus(
        efs,
        _claim("shared", ["ReadWriteMany"], "efs"),
        _claim("own", ["ReadWriteOncePod"], "gp3-encrypted"),
        _claim("raw", ["ReadWriteMany"], "gp3-encrypted", volumeMode="Block"),
    )
    assert not rule(result, "access-mode-supported")
    assert not rule(rendered(STACK), "access-mode-supported")


# --- subnet-range -------------------------------------------------------------------------------------------------


def _aws(type_token: str, name: str, inputs: dict[str, Any]) -> RenderedResource:
    return planted(STACK, type_token, name, inputs)


def _with_aws(*resources: RenderedResource) -> RenderResult:
    return mutated(rendered(STACK), lambda r: r, extra=list(resources))


def _subnet(name: str, cidr: str) -> RenderedResource:
    vpc = next(r for r in rendered(STACK).resources if r.type == "aws:ec2/vpc:Vpc")
    vpc_id = next(r.inputs["vpcId"] for r in rendered(STACK).resources if r.type == "aws:ec2/subnet:Subnet")
    assert vpc.region == "us"
    return _aws("aws:ec2/subnet:Subnet", name, {"vpcId": vpc_id, "cidrBlock": cidr, "availabilityZone": "us-east-1a"})


@pytest.mark.parametrize(
    ("cidr", "says"),
    [
        ("172.16.0.0/24", "outside every IPv4 block"),  # another private range than the VPC's 10.0.0.0/16
        ("10.0.8.0/24", "overlaps subnet minimal-us-network-private-a (10.0.0.0/20)"),
        ("10.0.250.0/29", "is a /29"),
    ],
)
def test_subnet_ranges_ec2_rejects_are_reported(cidr: str, says: str) -> None:
    found = rule(_with_aws(_subnet("planted-endpoints", cidr)), "subnet-range")
    assert len(found) == 1 and says in found[0].message, found


def test_a_subnet_in_a_secondary_block_and_a_free_range_are_not_flagged() -> None:
    vpc_id = _subnet("x", "10.0.0.0/24").inputs["vpcId"]
    association = _aws(
        "aws:ec2/vpcIpv4CidrBlockAssociation:VpcIpv4CidrBlockAssociation",
        "planted-secondary",
        {"vpcId": vpc_id, "cidrBlock": "100.64.0.0/16"},
    )
    result = _with_aws(association, _subnet("planted-pods", "100.64.0.0/18"), _subnet("planted-free", "10.0.64.0/24"))
    assert not rule(result, "subnet-range")
    assert not rule(rendered(STACK), "subnet-range")


# --- egress-allowed -----------------------------------------------------------------------------------------------

DNS_RULE = {
    "to": [
        {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
            "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
        }
    ],
    "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
}


def _egress_policy(namespace: str, *rules: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "lock-egress", "namespace": namespace},
        "spec": {"podSelector": {}, "policyTypes": ["Egress"], "egress": list(rules)},
    }


def _https_to(cidr: str, *excepted: str) -> dict[str, Any]:
    block: dict[str, Any] = {"cidr": cidr, **({"except": list(excepted)} if excepted else {})}
    return {"to": [{"ipBlock": block}], "ports": [{"protocol": "TCP", "port": 443}]}


def test_a_default_deny_egress_in_the_data_namespace_cuts_dns_and_aws_from_its_irsa_pods() -> None:
    found = rule(plus(_egress_policy("llm-data")), "egress-allowed")
    pods = {f.urn.rsplit("::", 1)[-1] for f in found}
    assert {"minimal-us-clickhouse-statefulset", "minimal-us-finops-consumer-deployment"} <= pods, pods
    assert any("cannot resolve" in f.message for f in found) and any("TCP 443" in f.message for f in found)


def test_an_egress_policy_with_dns_but_no_https_cuts_the_publish_job_from_s3() -> None:
    found = rule(plus(_egress_policy("llm-serving", DNS_RULE)), "egress-allowed")
    job = [f for f in found if "publish-qwen-7b-chat-v1" in f.message]
    assert len(job) == 1 and "TCP 443" in job[0].message and "cannot resolve" not in job[0].message, found


def test_egress_policies_that_keep_dns_and_aws_endpoints_are_not_flagged() -> None:
    internet = _egress_policy("llm-serving", DNS_RULE, _https_to("0.0.0.0/0", "10.0.0.0/8"))
    assert not rule(plus(internet), "egress-allowed")
    endpoints = _egress_policy("llm-data", DNS_RULE, _https_to("10.0.0.0/16"))  # interface VPC endpoints
    vpc_id = _subnet("x", "10.0.0.0/24").inputs["vpcId"]
    interface = [
        _aws(
            "aws:ec2/vpcEndpoint:VpcEndpoint",
            f"planted-{service}",
            {
                "vpcId": vpc_id,
                "serviceName": f"com.amazonaws.us-east-1.{service}",
                "vpcEndpointType": "Interface",
                "privateDnsEnabled": True,
            },
        )
        for service in ("sts", "s3")
    ]
    with_endpoints = mutated(plus(endpoints), lambda r: r, extra=interface)
    assert not rule(with_endpoints, "egress-allowed")


# --- one-autoscaler -----------------------------------------------------------------------------------------------


def test_an_hpa_beside_a_scaled_object_on_the_same_deployment_is_rejected() -> None:
    hpa = renamed(shipped("HorizontalPodAutoscaler", "ai-gateway"), "finops-cpu")
    hpa["metadata"]["namespace"] = "llm-data"
    hpa["spec"]["scaleTargetRef"]["name"] = "finops-consumer"
    found = rule(plus(hpa), "one-autoscaler")
    assert len(found) == 1 and found[0].urn.endswith("planted-finops-cpu"), found
    assert "ScaledObject finops-consumer already scales" in found[0].message and "webhook" in found[0].message


def test_two_hpas_on_one_deployment_scale_neither() -> None:
    hpa = renamed(shipped("HorizontalPodAutoscaler", "model-gateway"), "model-gateway-memory")
    found = rule(plus(hpa), "one-autoscaler")
    assert len(found) == 1 and "AmbiguousSelector" in found[0].message, found


def test_one_autoscaler_per_workload_is_not_flagged() -> None:
    hpa = renamed(shipped("HorizontalPodAutoscaler", "model-gateway"), "model-gateway-memory")
    hpa["spec"]["scaleTargetRef"]["name"] = "otel-collector"
    hpa["metadata"]["namespace"] = "monitoring"
    assert not rule(plus(hpa), "one-autoscaler")
    assert not rule(rendered(STACK), "one-autoscaler")
