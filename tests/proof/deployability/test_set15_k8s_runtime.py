"""The Kubernetes runtime invariants set 15's misses led to (written after its blind run, so not held out), each
planted in minimal's render beside its correct twin: a host port a chart's DaemonSet already holds on the same nodes
(host-port-free), a claim used against its volumeMode (volume-mode-used), and a ``$(VAR)`` the kubelet cannot
expand (env-reference-defined)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.proof.deployability.conftest import with_inputs
from tests.proof.deployability.test_set3_invariants import deployment, plus, rule, system_pod
from tokenplane.proof.deployability.env_references import references
from tokenplane.proof.render import RenderedResource

# host-port-free: kube-prometheus-stack's node-exporter holds 9100 on every node -----------------------------------


def _daemonset(name: str, pod: dict[str, Any]) -> dict[str, Any]:
    manifest = deployment(name, pod, namespace="monitoring")
    manifest["kind"] = "DaemonSet"
    del manifest["spec"]["replicas"]
    return manifest


def _exporter_pod(port: dict[str, Any], **extra: Any) -> dict[str, Any]:
    pod = system_pod(**extra)
    del pod["nodeSelector"]  # every node it tolerates, as a node agent is
    pod["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists"}]
    pod["containers"][0]["ports"] = [{"name": "metrics", **port}]
    return pod


def _chart_values(edit: Callable[[dict[str, Any]], None]) -> Callable[[RenderedResource], RenderedResource]:
    def change(r: RenderedResource) -> RenderedResource:
        if r.inputs.get("chart") != "kube-prometheus-stack":
            return r
        return with_inputs(r, lambda inputs: edit(inputs.setdefault("values", {})))

    return change


def _no_exporter(values: dict[str, Any]) -> None:
    values["nodeExporter"] = {"enabled": False}


def _exporter_on_9200(values: dict[str, Any]) -> None:
    values.setdefault("prometheus-node-exporter", {})["service"] = {"port": 9200}


@pytest.mark.parametrize(
    ("port", "extra", "values", "refused"),
    [
        ({"containerPort": 9100, "hostPort": 9100}, {}, None, True),
        ({"containerPort": 9100}, {"hostNetwork": True}, None, True),
        ({"containerPort": 9100}, {}, None, False),  # no host port at all
        ({"containerPort": 9100, "hostPort": 9101}, {}, None, False),
        ({"containerPort": 9100, "hostPort": 9100, "protocol": "UDP"}, {}, None, False),
        ({"containerPort": 9100, "hostPort": 9100}, {}, _no_exporter, False),
        ({"containerPort": 9100, "hostPort": 9100}, {}, _exporter_on_9200, False),
    ],
)
def test_a_daemonset_may_not_take_a_host_port_the_charts_node_exporter_holds(
    port: dict[str, Any], extra: dict[str, Any], values: Callable[[dict[str, Any]], None] | None, refused: bool
) -> None:
    planted = _daemonset("node-cache-exporter", _exporter_pod(port, **extra))
    found = rule(plus(planted, change=_chart_values(values) if values else None), "host-port-free")
    said = [f.message for f in found if "node-cache-exporter" in f.message]
    assert bool(said) == refused, said
    assert all("host port 9100/TCP" in m and "prometheus-node-exporter" in m for m in said), said


def test_a_deployment_with_a_host_port_on_nodes_a_daemonset_holds_it_on_is_refused_and_elsewhere_not() -> None:
    daemon = _daemonset("agent", system_pod())  # on the system nodes only
    daemon["spec"]["template"]["spec"]["containers"][0]["ports"] = [{"containerPort": 7000, "hostPort": 7000}]
    on_system = deployment("relay", system_pod(), namespace="monitoring")
    on_system["spec"]["template"]["spec"]["containers"][0]["ports"] = [{"containerPort": 7000, "hostPort": 7000}]
    on_gpus = deployment("gpu-relay", system_pod(), namespace="monitoring")
    gpu_pod = on_gpus["spec"]["template"]["spec"]
    gpu_pod["nodeSelector"] = {"tokenplane.io/pool": "chat"}
    gpu_pod["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists"}]
    gpu_pod["containers"][0]["ports"] = [{"containerPort": 7000, "hostPort": 7000}]
    said = [f.message for f in rule(plus(daemon, on_system, on_gpus), "host-port-free")]
    assert [m for m in said if "monitoring/relay" in m], said
    assert not [m for m in said if "gpu-relay" in m], said  # no node both may land on


# volume-mode-used: a Block claim through volumeDevices, a Filesystem one through volumeMounts -----------------------


def _claim(name: str, mode: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "20Gi"}}}
    if mode is not None:
        spec["volumeMode"] = mode
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "llm-data"},
        "spec": spec,
    }


def _claiming_pod(claim: str, use: str) -> dict[str, Any]:
    pod = system_pod(volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": claim}}])
    pod["containers"][0][use] = [
        {"name": "data", "mountPath": "/data"} if use == "volumeMounts" else {"name": "data", "devicePath": "/dev/xvdb"}
    ]
    return pod


@pytest.mark.parametrize(
    ("mode", "use", "refused"),
    [
        ("Block", "volumeMounts", "volumeMode Block"),
        ("Block", "volumeDevices", None),
        ("Filesystem", "volumeDevices", "volumeMode Filesystem"),
        (None, "volumeDevices", "volumeMode Filesystem"),  # the default mode
        (None, "volumeMounts", None),
    ],
)
def test_a_claim_reaches_a_container_the_way_its_volume_mode_allows(
    mode: str | None, use: str, refused: str | None
) -> None:
    planted = plus(_claim("cache-data", mode), deployment("session-cache", _claiming_pod("cache-data", use)))
    said = [f.message for f in rule(planted, "volume-mode-used") if "session-cache" in f.message]
    assert bool(said) == bool(refused), said
    assert all(refused in m and f"in {use}" in m and "cache-data" in m for m in said), said


@pytest.mark.parametrize(("mode", "refused"), [("Block", True), ("Filesystem", False)])
def test_a_statefulset_claim_template_is_held_to_its_volume_mode(mode: str, refused: bool) -> None:
    pod = _claiming_pod("unused", "volumeMounts")
    del pod["volumes"]
    sts = deployment("block-store", pod)
    sts["kind"] = "StatefulSet"
    sts["spec"]["serviceName"] = "block-store"
    template = _claim("data", mode)
    sts["spec"]["volumeClaimTemplates"] = [{"metadata": {"name": "data"}, "spec": template["spec"]}]
    said = [f.message for f in rule(plus(sts), "volume-mode-used") if "block-store" in f.message]
    assert bool(said) == refused and all("volumeClaimTemplates data" in m for m in said), said


# env-reference-defined: $(VAR) expands only from variables defined there ------------------------------------------


def _embedder(args: list[str], env: list[dict[str, Any]], **container: Any) -> dict[str, Any]:
    pod = system_pod()
    pod["containers"][0] |= {"args": args, "env": env, **container}
    return deployment("embedder", pod, namespace="llm-serving")


MODEL = {"name": "EMBEDDING_MODEL", "value": "BAAI/bge-small-en-v1.5"}
MODEL_ID = {"name": "MODEL_ID", "value": "BAAI/bge-small-en-v1.5"}
CONFIG = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "embedder-env", "namespace": "llm-serving"},
    "data": {"ID": "BAAI/bge-small-en-v1.5"},
}


@pytest.mark.parametrize(
    ("args", "env", "container", "refused"),
    [
        (["--model-id", "$(MODEL_ID)"], [MODEL], {}, "args[1]"),
        (["--model-id", "$(MODEL_ID)"], [MODEL_ID], {}, None),
        (["--model-id", "$$(MODEL_ID)"], [MODEL], {}, None),  # escaped: the literal text is meant
        (["--model-id", "$(MODEL_ID)"], [], {"envFrom": [{"configMapRef": {"name": "embedder-env"}}]}, "args[1]"),
        (
            ["--model-id", "$(MODEL_ID)"],
            [],
            {"envFrom": [{"configMapRef": {"name": "embedder-env"}, "prefix": "MODEL_"}]},
            None,
        ),
        (["--model-id", "$(MODEL_ID)"], [], {"envFrom": [{"secretRef": {"name": "made-elsewhere"}}]}, None),
        (["--port", "$(KUBERNETES_SERVICE_PORT)"], [], {}, None),  # a Service link variable
        ([], [{"name": "URL", "value": "http://$(HOST):80"}, {"name": "HOST", "value": "x"}], {}, "env URL value"),
        ([], [{"name": "HOST", "value": "x"}, {"name": "URL", "value": "http://$(HOST):80"}], {}, None),
        (["-c", "exec tei --model-id $(hostname)"], [], {"command": ["/bin/sh"]}, None),
    ],
)
def test_a_variable_reference_names_a_variable_defined_there(
    args: list[str], env: list[dict[str, Any]], container: dict[str, Any], refused: str | None
) -> None:
    planted = plus(CONFIG, _embedder(args, env, **container))
    said = [f.message for f in rule(planted, "env-reference-defined") if "embedder" in f.message]
    assert bool(said) == bool(refused), said
    assert all(refused and refused in m and "container app" in m for m in said), said


def test_references_are_read_as_the_kubelet_reads_them() -> None:
    assert list(references("$(A)-$$(B)-$(C")) == ["A"]
    assert list(references("$$$(D) $(cat /x) $((1 + 2)) $E")) == ["D"]
