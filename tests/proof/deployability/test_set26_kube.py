"""The rules set 26's Kubernetes misses led to (written after its blind run, so not held out), each planted in a
shipped render beside its correct twin: a StatefulSet whose governing Service is not headless or misses its pods
(governing-service-headless), peers of a set that their namespace's policies keep apart: by per-pod DNS names, by
their own Service's short name, or on a clustered store's peer port (flow-allowed), and a scale target named in a
group/version the cluster does not serve it in (target-exists)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.proof.deployability.test_set3_invariants import deployment, plus, rule, system_pod
from tokenplane.proof.deployability import cluster_names, flows, targets
from tokenplane.proof.render import served_versions

KV = "kv"  # an etcd-like store: members peer on 2380, clients call 2379
KV_LABELS = {"app.kubernetes.io/name": KV}
NS = "llm-data"  # minimal's: ingress denied by default


def _service(name: str, *, headless: bool = True, cluster_ip: str | None = None, app: str = KV) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "selector": {"app.kubernetes.io/name": app},
        "ports": [{"name": "client", "port": 2379, "targetPort": 2379}, {"name": "peer", "port": 2380}],
    }
    if headless:
        spec["clusterIP"] = "None"
    elif cluster_ip:
        spec["clusterIP"] = cluster_ip
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": NS}, "spec": spec}


def _statefulset(
    args: list[str], *, image: str = "quay.io/coreos/etcd:v3.5.17", env: list[dict[str, str]] | None = None
) -> dict[str, Any]:
    pod = system_pod()
    pod["containers"][0].update(
        image=image,
        args=args,
        env=env or [],
        ports=[{"name": "client", "containerPort": 2379}, {"name": "peer", "containerPort": 2380}],
    )
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": KV, "namespace": NS, "labels": KV_LABELS},
        "spec": {
            "serviceName": f"{KV}-peers",
            "replicas": 3,
            "selector": {"matchLabels": KV_LABELS},
            "template": {"metadata": {"labels": KV_LABELS}, "spec": pod},
        },
    }


def _admit(name: str, port: int, peer: dict[str, Any], app: str = KV) -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "podSelector": {"matchLabels": {"app.kubernetes.io/name": app}},
            "policyTypes": ["Ingress"],
            "ingress": [{"from": [peer], "ports": [{"port": port, "protocol": "TCP"}]}],
        },
    }


PEERS = "--initial-cluster=kv-0=http://kv-0.kv-peers:2380,kv-1=http://kv-1.kv-peers:2380,kv-2=http://kv-2.kv-peers:2380"
OWN_PODS = {"podSelector": {"matchLabels": KV_LABELS}}


# governing-service-headless ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("service", "args", "said"),
    [
        (_service("kv-peers", headless=False), [PEERS], "kv-0.kv-peers:2380"),  # pod names written: they never resolve
        (_service("kv-peers", headless=False, cluster_ip="172.20.10.10"), [], "clusterIP 172.20.10.10"),
        (_service("kv-peers", app="kv-store"), [PEERS], "do not all carry"),  # headless, but selects other pods
        (_service("kv-peers"), [PEERS], None),  # the twin: headless, selecting the set's pods
    ],
)
def test_a_statefulset_is_governed_by_a_headless_service_of_its_pods(
    service: dict[str, Any], args: list[str], said: str | None
) -> None:
    found = [f.message for f in rule(plus(_statefulset(args), service), cluster_names.HEADLESS)]
    assert bool(found) == (said is not None), found
    assert all(f"StatefulSet {NS}/{KV}" in m and said in m for m in found if said), found


def test_the_shipped_statefulsets_are_governed_by_headless_services() -> None:
    assert rule(plus(), cluster_names.HEADLESS) == []


# flow-allowed: peers by pod DNS names, own Service, a clustered store's peer port ----------------------------------------


def _flows(*objects: dict[str, Any]) -> list[str]:
    return [f.message for f in rule(plus(*objects), flows.FLOW) if "kv (llm-data)" in f.message]


@pytest.mark.parametrize(
    ("objects", "port"),
    [
        # members bootstrap from one another by <pod>.<service>: only the client port is admitted
        ((_statefulset([PEERS]), _service("kv-peers"), _admit("kv-clients", 2379, OWN_PODS)), 2380),
        # fully qualified, from a client Deployment the set's policy does not admit
        (
            (
                _statefulset([]),
                _service("kv-peers"),
                _admit("kv-peers", 2380, OWN_PODS),
                deployment(
                    "kv-client",
                    {
                        **system_pod(),
                        "containers": [
                            {
                                "name": "app",
                                "image": "curlimages/curl:8.11.1",
                                "args": ["curl", "http://kv-1.kv-peers.llm-data.svc.cluster.local:2379/health"],
                            }
                        ],
                    },
                ),
            ),
            2379,
        ),
        # a member calling its own (ClusterIP) Service by its short name reaches its own pods too
        (
            (
                _statefulset(["--endpoints=http://kv:2379"]),
                _service("kv-peers"),
                {**_service(KV, headless=False)},
                _admit("kv-peers", 2380, OWN_PODS),
            ),
            2379,
        ),
        # a clustered Qdrant on a moved p2p port, with no URL naming it
        (
            (
                _statefulset(
                    [],
                    image="qdrant/qdrant:v1.13.4",
                    env=[
                        {"name": "QDRANT__CLUSTER__ENABLED", "value": "true"},
                        {"name": "QDRANT__CLUSTER__P2P__PORT", "value": "7000"},
                    ],
                ),
                _service("kv-peers"),
                _admit("kv-clients", 6333, OWN_PODS),
            ),
            7000,
        ),
    ],
)
def test_peers_of_a_set_must_be_admitted_by_its_own_policies(objects: tuple[dict[str, Any], ...], port: int) -> None:
    found = _flows(*objects)
    assert found, "no flow-allowed finding"
    assert all(f":{port}" in m and "is blocked" in m for m in found), found


@pytest.mark.parametrize(
    "objects",
    [
        (_statefulset([PEERS]), _service("kv-peers"), _admit("kv-peers", 2380, OWN_PODS)),
        (  # the same Qdrant with its peers admitted on the moved port
            _statefulset(
                [],
                image="qdrant/qdrant:v1.13.4",
                env=[
                    {"name": "QDRANT__CLUSTER__ENABLED", "value": "true"},
                    {"name": "QDRANT__CLUSTER__P2P__PORT", "value": "7000"},
                ],
            ),
            _service("kv-peers"),
            _admit("kv-peers", 7000, OWN_PODS),
        ),
        # a name like a pod's that is not one of the set's (another host's), and no peer port to keep
        (_statefulset(["--proxy=http://kv-0.kv-peers-old:2380"]), _service("kv-peers")),
    ],
)
def test_admitted_peers_are_not_flagged(objects: tuple[dict[str, Any], ...]) -> None:
    assert _flows(*objects) == []


def test_a_single_qdrant_has_no_peers() -> None:
    one = _statefulset([], image="qdrant/qdrant:v1.13.4", env=[{"name": "QDRANT__CLUSTER__ENABLED", "value": "true"}])
    one["spec"]["replicas"] = 1
    assert _flows(one, _service("kv-peers")) == []


# target-exists: the group/version a scale target is named in ------------------------------------------------------------

WEB = deployment("web", system_pod())


def _hpa(api_version: str, kind: str = "Deployment", name: str = "web") -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": NS},
        "spec": {
            "scaleTargetRef": {"apiVersion": api_version, "kind": kind, "name": name},
            "minReplicas": 1,
            "maxReplicas": 3,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}},
                }
            ],
        },
    }


def _scaled_object(api_version: str | None) -> dict[str, Any]:
    ref: dict[str, Any] = {"name": "web", **({"apiVersion": api_version} if api_version else {})}
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": "web", "namespace": NS},
        "spec": {
            "scaleTargetRef": ref,
            "triggers": [{"type": "cpu", "metricType": "Utilization", "metadata": {"value": "70"}}],
        },
    }


def _statefulset_web() -> dict[str, Any]:
    web = _statefulset([])
    web["metadata"]["name"] = "web"
    return web


@pytest.mark.parametrize(
    ("objects", "said"),
    [
        ((WEB, _hpa("extensions/v1beta1", "ReplicaSet", "web-rs")), 'group "extensions"'),  # another kind it dropped
        ((_statefulset_web(), _hpa("extensions/v1beta1", "StatefulSet")), 'group "extensions"'),  # never served there
        ((WEB, _scaled_object("apps/v1beta2")), 'version "apps/v1beta2"'),  # KEDA maps the version too
        ((WEB, _hpa("v1")), 'group ""'),  # the core group has no Deployment
    ],
)
def test_a_scale_target_is_named_in_a_group_that_serves_its_kind(
    objects: tuple[dict[str, Any], ...], said: str
) -> None:
    found = [f.message for f in rule(plus(*objects), targets.RULE) if "in " in f.message and "serve" in f.message]
    assert found, "no target-exists finding on the apiVersion"
    assert all(said in m for m in found), found


@pytest.mark.parametrize(
    "objects",
    [
        (WEB, _hpa("apps/v1")),
        (WEB, _hpa("apps/v1beta2")),  # the HPA maps the group only: any version of apps finds apps/v1 Deployments
        (WEB, _scaled_object(None)),  # KEDA's default: apps/v1
        (WEB, _scaled_object("apps/v1")),
    ],
)
def test_a_served_scale_target_is_not_flagged(objects: tuple[dict[str, Any], ...]) -> None:
    assert [f.message for f in rule(plus(*objects), targets.RULE) if "serve" in f.message] == []


def test_served_versions_reads_the_schemas_of_the_clusters_kubernetes() -> None:
    assert served_versions("apps", "Deployment", "1.35") == ("apps/v1",)
    assert served_versions("extensions", "Deployment", "1.35") == ()
    assert served_versions("", "ReplicationController", "1.35") == ("v1",)
    assert "autoscaling/v2" in served_versions("autoscaling", "HorizontalPodAutoscaler", "1.20")  # oldest schemas held
