"""Issue 27, "every reference resolves": the resolution invariants the mutation benchmark's misses showed.

``benchmarks/reference_mutations.py`` breaks every cross-reference of two rendered stacks once and counts who
notices; these are planted defects (each with a correct twin) for the three rules its misses led to, the defects
put back into minimal's rendered graph, the one pod-template accessor every pod rule now reads, and a fixed handful
of the benchmark's own mutations so that a lost catch fails here.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any

import pytest

from benchmarks.reference_mutations import Reference, apply, references
from tests.proof.deployability.conftest import findings, mutated, rendered, spec, with_inputs
from tests.proof.deployability.test_set3_invariants import STACK, deployment, plus, rule, shipped, system_pod
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.render import RenderedResource, RenderResult

NAME = "app.kubernetes.io/name"


def _edit(urn_end: str, edit: Any) -> RenderResult:
    """minimal with one resource's inputs edited."""

    def change(r: RenderedResource) -> RenderedResource:
        return with_inputs(r, edit) if r.urn.endswith(urn_end) else r

    return mutated(rendered(STACK), change)


# --- generated-name-resolves ---------------------------------------------------------------------------------------

GENERATED = "generated-name-resolves"


@pytest.mark.parametrize(
    ("urn_end", "edit", "expected"),
    [
        # another stack's node role (same logical name, another random suffix), on a policy attachment
        (
            "::minimal-us-cluster-node-policy-amazoneks_cni_policy",
            lambda i: i.update(role="minimal-us-cluster-node-role-0a1b2c3"),
            "minimal-us-cluster-node-role-a90b05c",
        ),
        # the cluster's role ARN, hand-built from a copied name
        (
            "::minimal-us-cluster-eks",
            lambda i: i.update(roleArn="arn:aws:iam::123456789012:role/minimal-us-cluster-cluster-role-39cfbbc"),
            "minimal-us-cluster-cluster-role-39cfbbb",
        ),
        # a node group in a subnet ID copied from another stack
        (
            "::minimal-us-gpu-chat-ng",
            lambda i: i.update(
                subnetIds=["minimal-us-network-private-a-bf37705-id", "minimal-us-network-private-b-0000000-id"]
            ),
            "minimal-us-network-private-b-f337f2d-id",
        ),
    ],
    ids=["role-name", "role-arn", "subnet-id"],
)
def test_a_hand_copied_generated_name_of_an_own_resource_is_caught(urn_end: str, edit: Any, expected: str) -> None:
    found = findings(STACK, _edit(urn_end, edit), rule=GENERATED)
    assert len(found) == 1 and found[0].urn.endswith(urn_end), found
    assert expected in found[0].message and "another stack" in found[0].message, found


def test_a_copied_bucket_name_in_a_policy_document_grants_nothing() -> None:
    result = rendered("dev")
    policy = next(
        r
        for r in result.resources
        if r.type == "aws:iam/rolePolicy:RolePolicy" and "registry-local" in r.inputs["policy"]
    )
    bucket = next(r for r in result.resources if r.type == "aws:s3/bucket:Bucket" and r.name == "dev-registry-local")
    actual = bucket.name + "-" + json.loads(policy.inputs["policy"])["Statement"][1]["Resource"][1].rsplit("-", 1)[-1]

    def change(r: RenderedResource) -> RenderedResource:
        if r.urn != policy.urn:
            return r
        return with_inputs(r, lambda i: i.update(policy=i["policy"].replace(actual, "dev-registry-local-1234567")))

    found = findings("dev", mutated(result, change), rule=GENERATED)
    assert found and all(f.urn == policy.urn for f in found), found
    assert "IAM denies" in found[0].message, found


def test_own_outputs_and_names_chosen_by_hand_are_not_flagged() -> None:
    assert not findings(STACK, rule=GENERATED)
    assert not findings("dev", rule=GENERATED)
    # an existing resource's own ID shape (vpc-0abc...) and a chosen name are not generated names of the graph's
    for edit in (
        lambda i: i.update(role="platform-node-role-2024"),
        lambda i: i.update(role="minimal-us-cluster-node-role-a90b05c"),
        lambda i: i.update(role="some-other-role-0a1b2c3"),  # a generated shape, but of no resource of the graph
    ):
        result = _edit("::minimal-us-cluster-node-policy-amazoneks_cni_policy", edit)
        assert not findings(STACK, result, rule=GENERATED)


# --- selector-selects ----------------------------------------------------------------------------------------------

SELECTS = "selector-selects"


def _policy(
    name: str, selector: dict[str, Any], peers: list[dict[str, Any]], namespace: str = "llm-data"
) -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"podSelector": {"matchLabels": selector}, "policyTypes": ["Ingress"], "ingress": [{"from": peers}]},
    }


def _spread(name: str, selector_name: str) -> dict[str, Any]:
    pod = system_pod()
    pod["topologySpreadConstraints"] = [
        {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": {NAME: selector_name}},
        }
    ]
    return deployment(name, pod, replicas=2)


@pytest.mark.parametrize(
    ("planted", "where"),
    [
        (_policy("qdrant-typo", {NAME: "qdratn"}, [{"podSelector": {}}]), "spec.podSelector"),
        (
            _policy("from-typo", {NAME: "qdrant"}, [{"podSelector": {"matchLabels": {NAME: "finops-consumr"}}}]),
            "from[0].podSelector",
        ),
        (
            _policy(
                "ns-typo",
                {NAME: "qdrant"},
                [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "llm-gatewya"}}}],
            ),
            "namespace 'llm-gatewya'",
        ),
        (_spread("reporting", "reportign"), "topologySpreadConstraints[0]"),
    ],
    ids=["policy-pods", "peer-pods", "peer-namespace", "spread"],
)
def test_a_selector_with_a_typo_is_caught(planted: dict[str, Any], where: str) -> None:
    found = rule(plus(planted), SELECTS)
    assert len(found) == 1 and found[0].urn.endswith(f"planted-{planted['metadata']['name']}"), found
    assert where in found[0].message, found


@pytest.mark.parametrize(
    "twin",
    [
        _policy("qdrant-ok", {NAME: "qdrant"}, [{"podSelector": {}}]),
        _policy("from-ok", {NAME: "qdrant"}, [{"podSelector": {"matchLabels": {NAME: "finops-consumer"}}}]),
        # an allow-list for a component this stack does not deploy: deliberate, not a typo
        _policy("from-absent", {NAME: "qdrant"}, [{"podSelector": {"matchLabels": {NAME: "search-indexer"}}}]),
        _policy(
            "ns-ok",
            {NAME: "qdrant"},
            [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "llm-gateway"}}}],
        ),
        _policy(
            "ns-elsewhere",
            {NAME: "qdrant"},
            [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ingress-nginx"}}}],
        ),
        _spread("reporting", "reporting"),
    ],
    ids=["policy-pods", "peer-pods", "peer-absent", "peer-namespace", "other-namespace", "spread"],
)
def test_a_selector_that_selects_or_means_something_absent_is_not_flagged(twin: dict[str, Any]) -> None:
    assert not rule(plus(twin), SELECTS)


def test_a_shipped_policy_with_a_typo_in_its_pod_selector_is_caught() -> None:
    result = _edit(
        "::minimal-us-qdrant-netpol", lambda i: i["spec"]["podSelector"]["matchLabels"].update({NAME: "qdrnat"})
    )
    found = rule(result, SELECTS)
    assert [f.urn.rsplit("::", 1)[-1] for f in found] == ["minimal-us-qdrant-netpol"], found
    assert f"{NAME}=qdrant" in found[0].message and not rule(rendered(STACK), SELECTS)


# --- cluster-name-resolves -----------------------------------------------------------------------------------------

NAMES = "cluster-name-resolves"


def _env(value: str) -> dict[str, Any]:
    pod = system_pod()
    pod["containers"][0]["env"] = [{"name": "UPSTREAM", "value": value}]
    return deployment("reporting", pod)


@pytest.mark.parametrize(
    ("planted", "expected"),
    [
        (_env("http://qdrant.llm-data.svc:6333"), None),  # the twin: Qdrant's Service
        (_env("http://qdrnat.llm-data.svc:6333"), "qdrnat.llm-data.svc"),
        (_env("grpc://otel-collectr.monitoring.svc.cluster.local:4317"), "otel-collectr.monitoring.svc"),
        (_env("http://otel-collector.monitoring.svc:4317"), None),
        (_env("http://kube-dns.kube-system.svc:53"), None),  # a namespace whose Services the graph does not hold
        (_env("http://search.llm-data.svc:80"), "search.llm-data.svc"),  # a namespace holding only the graph's
    ],
    ids=["own-ok", "own-typo", "chart-namespace-typo", "chart-namespace-ok", "unknown-namespace", "absent"],
)
def test_a_cluster_dns_name_names_a_service_that_exists(planted: dict[str, Any], expected: str | None) -> None:
    found = rule(plus(planted), NAMES)
    if expected is None:
        assert not found
    else:
        assert len(found) == 1 and found[0].urn.endswith("planted-reporting") and expected in found[0].message, found


def test_a_statefulset_governed_by_a_service_that_does_not_exist_is_caught() -> None:
    planted = copy.deepcopy(shipped("StatefulSet", "qdrant"))
    planted["metadata"]["name"] = "qdrant-b"
    planted["spec"]["serviceName"] = "qdrant-headles"
    found = rule(plus(planted), NAMES)
    assert len(found) == 1 and "qdrant-headles" in found[0].message and "per-pod DNS" in found[0].message, found
    twin = copy.deepcopy(planted)
    twin["spec"]["serviceName"] = "qdrant-headless"
    assert not rule(plus(twin), NAMES)


def test_a_shipped_scaler_pointed_at_a_mistyped_prometheus_is_caught() -> None:
    def edit(i: dict[str, Any]) -> None:
        for trigger in i["spec"]["triggers"]:
            if "serverAddress" in trigger.get("metadata", {}):
                trigger["metadata"]["serverAddress"] = trigger["metadata"]["serverAddress"].replace(
                    "prometheus.", "promethues."
                )

    result = mutated(rendered("dev"), lambda r: with_inputs(r, edit) if r.name == "dev-local-pool-small-scaler" else r)
    found = findings("dev", result, rule=NAMES)
    assert found and all(f.urn.endswith("dev-local-pool-small-scaler") for f in found), found
    assert not findings("dev", rule=NAMES) and not findings(STACK, rule=NAMES)


# --- one pod-template accessor -------------------------------------------------------------------------------------


def test_every_pod_bearing_kind_is_read_by_the_reference_rules() -> None:
    pod = system_pod()
    pod["containers"][0]["env"] = [{"name": "K", "valueFrom": {"secretKeyRef": {"name": "nowhere", "key": "k"}}}]
    cron = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "nightly", "namespace": "llm-data"},
        "spec": {
            "schedule": "0 3 * * *",
            "jobTemplate": {"spec": {"template": {"spec": {**pod, "restartPolicy": "Never"}}}},
        },
    }
    bare = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "debug", "namespace": "llm-data"}, "spec": pod}
    found = {f.urn.rsplit("::", 1)[-1] for f in rule(plus(cron, bare), "references-exist")}
    assert found == {"planted-nightly", "planted-debug"}, found


# --- a fixed handful of the benchmark's mutations ------------------------------------------------------------------

# (reference kind, a substring of the referring resource's URN): one mutation each, every one caught today.
CAUGHT = [
    ("k8s:envFrom.secretRef", "model-gateway-deployment"),
    ("k8s:volume.configMap", "otel"),
    ("k8s:service.selector", "qdrant-service"),
    ("k8s:probe.port", "ai-gateway-deployment"),
    ("k8s:serviceAccountName", "ai-gateway-deployment"),
    ("k8s:metadata.namespace", "ai-gateway-config"),
    ("k8s:scaleTargetRef(ScaledObject)", "pool-chat-scaler"),
    ("k8s:matchLabels(NetworkPolicy)", "qdrant-netpol"),
    ("k8s:service-dns(in-object)", "pool-chat-scaler"),
    ("k8s:name-in-value(in-object)", "qdrant-statefulset"),
    ("aws:arn->iam/role", "cluster-eks"),
    ("aws:id->ec2/subnet", "gpu-chat-ng"),
    ("aws:irsa-subject->ServiceAccount", "model-gateway-role"),
]


@pytest.fixture(scope="module")
def minimal_refs() -> list[Reference]:
    return references(Graph(spec(STACK), rendered(STACK)))


@pytest.mark.parametrize(("kind", "where"), CAUGHT, ids=[k for k, _ in CAUGHT])
def test_a_broken_reference_of_each_kind_is_still_caught(minimal_refs: list[Reference], kind: str, where: str) -> None:
    ref = next((r for r in minimal_refs if r.kind == kind and where in r.urn), None)
    assert ref is not None, f"minimal no longer has a {kind} reference on {where}"
    baseline = {str(f) for f in findings(STACK)}
    new = [f for f in findings(STACK, apply(rendered(STACK), ref)) if str(f) not in baseline]
    assert any(f.urn in {ref.urn, *ref.targets} or any(n in f.message for n in ref.names) for f in new), (
        ref.describe(),
        new,
    )


def test_the_benchmark_enumerates_references_generically(minimal_refs: list[Reference]) -> None:
    kinds = {r.kind for r in minimal_refs}
    assert {"k8s:service.targetPort", "k8s:volume.configMap", "aws:id->ec2/vpc", "aws:arn->managed-policy"} <= kinds
    assert all(dataclasses.asdict(r)["value"] != r.wrong for r in minimal_refs)
