"""Probes a container can pass: patient enough for its start-up, and on a path its image serves.

``probe-patience``: the kubelet kills a container whose liveness probe fails ``failureThreshold`` times in a row;
while a startupProbe is set, the liveness probe waits until it succeeds, and the startupProbe itself kills the
container after ``initialDelaySeconds + failureThreshold x periodSeconds`` (defaults 0, 3 and 10:
``k8s.io/kubernetes/pkg/apis/core/v1/defaults.go`` SetDefaults_Probe; the prober in ``pkg/kubelet/prober``). A vLLM
server answers nothing (``/health`` included) until its engine has loaded the weights and started, so a window
shorter than that restarts the container before it ever serves, in a loop ("Container vllm failed startup probe,
will be restarted", then CrashLoopBackOff). Its start-up is the pool's cold start (``tokenplane.model.startup``:
the part after node boot, image pull and weight fetch) where the spec has the pool, else the least any vLLM takes,
the spec's default engine start with the weights already on NVMe.

The same holds for Hugging Face's model servers, Text Embeddings Inference and Text Generation Inference, given a
Hub model id (``--model-id`` or ``MODEL_ID``): they download the weights and load them before the port opens
("the model files need to be downloaded for the inference backend to start, and then the server starts listening",
huggingface/text-embeddings-inference#553, whose maintainer's answer is a longer startup timeout). Their floor is
``HUB_MODEL_LEAST_START_SECONDS``, deliberately low: a 300M-parameter embedding model alone took about 35 s to load
(vllm-project/semantic-router#809, which added a startupProbe for it), before any download. A liveness probe with
no startupProbe counts from the container's start (https://kubernetes.io/docs/tasks/configure-pod-container/
configure-liveness-readiness-startup-probes/#define-startup-probes, "protect slow starting containers").

``probe-path``: an HTTP probe gets a 404 from a path its process does not serve, and the kubelet counts anything
outside 200-399 as a failure: a readiness probe keeps the pod out of its Service for ever, a liveness or startup
probe restarts it in a loop. Judged only for images whose routes the program knows (``known_images``).

``probe-scheme``: an ``httpGet`` probe with ``scheme: HTTPS`` makes the kubelet open TLS ("Scheme to use for
connecting to the host (HTTP or HTTPS). Defaults to HTTP", https://kubernetes.io/docs/tasks/configure-pod-container/
configure-liveness-readiness-startup-probes/#http-probes); a server that speaks plain HTTP on that port answers the
handshake with an HTTP response ("http: server gave HTTP response to HTTPS client"), every probe fails, and the pod
never becomes Ready (readiness) or restarts in a loop (liveness, startup). Judged for the images the program knows
serve plain HTTP unless told otherwise: vLLM's OpenAI server (TLS only with ``--ssl-keyfile``/``--ssl-certfile``,
vLLM's serve CLI), tokenplane's serving image (its Starlette apps run on uvicorn with no TLS options), and Hugging
Face's Text Embeddings Inference and Text Generation Inference routers (no TLS options at all:
huggingface/text-embeddings-inference docs/source/en/cli_arguments.md, ``text-generation-launcher --help``). Any arg
or env variable naming SSL or TLS counts as TLS configured, and the probe is then not judged.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.contract import POOL_LABEL
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject, lookup
from tokenplane.proof.deployability.known_images import (
    get_routes,
    hub_model_server,
    path_served,
    serves_vllm,
)
from tokenplane.proof.deployability.reachability import pod_template
from tokenplane.spec import Autoscaling

PATIENCE = "probe-patience"
PATH = "probe-path"
SCHEME = "probe-scheme"
PROBES = ("startupProbe", "readinessProbe", "livenessProbe")
# The least a vLLM engine takes from container start to serving: the spec's default engine start with the
# weights already on local NVMe (Autoscaling.warm_start_seconds), one source of defaults.
VLLM_LEAST_START_SECONDS = float(Autoscaling.model_fields["warm_start_seconds"].default)
# The least a TEI or TGI server takes to download a Hub model and load it: below the ~35 s that loading a 300M
# embedding model alone took in vllm-project/semantic-router#809, so that only a window that cannot cover any
# model is reported.
HUB_MODEL_LEAST_START_SECONDS = 30.0


def window_seconds(probe: dict[str, Any]) -> float:
    """How long a probe lets a container fail before the kubelet restarts it, with the API's defaults."""
    return float(probe.get("initialDelaySeconds") or 0) + float(probe.get("failureThreshold") or 3) * float(
        probe.get("periodSeconds") or 10
    )


def _containers(workload: KubeObject) -> list[dict[str, Any]]:
    return list((pod_template(workload).get("spec") or {}).get("containers") or [])


def _engine_start(graph: Graph, workload: KubeObject) -> tuple[float, str]:
    labels = {
        **(lookup(pod_template(workload), "metadata.labels") or {}),
        **(lookup(workload.manifest, "metadata.labels") or {}),
    }
    pool_name = labels.get(POOL_LABEL)
    if graph.spec is not None and pool_name is not None:
        pool = next((p for p in graph.spec.pools if p.name == pool_name), None)
        if pool is not None:
            seconds = pool.autoscaling.cold_start_seconds
            return seconds, f"pool {pool.name}'s cold start of {seconds:.0f} s (autoscaling.cold_start_seconds)"
    return (
        VLLM_LEAST_START_SECONDS,
        f"at least {VLLM_LEAST_START_SECONDS:.0f} s (an engine start with its weights on NVMe)",
    )


def _start(graph: Graph, workload: KubeObject, container: dict[str, Any]) -> tuple[float, str, str] | None:
    """The least time the container's server takes before it answers, why, and what it runs; None if not known."""
    if serves_vllm(container):
        needed, why = _engine_start(graph, workload)
        return needed, f"which serves nothing until its engine has started, {why}", "vLLM"
    server, model = hub_model_server(container)
    if server is None or model is None:
        return None
    why = (
        f"which opens its port only once it has downloaded {model} from the Hub and loaded it, "
        f"at least {HUB_MODEL_LEAST_START_SECONDS:.0f} s"
    )
    return HUB_MODEL_LEAST_START_SECONDS, why, server


def check_patience(graph: Graph) -> Iterator[Finding]:
    for workload in graph.pod_bearers():
        for container in _containers(workload):
            start = _start(graph, workload, container)
            if start is None:
                continue
            kind = "startupProbe" if container.get("startupProbe") else "livenessProbe"
            probe = container.get(kind)
            if not probe:
                continue
            window = window_seconds(probe)
            needed, why, server = start
            if window >= needed:
                continue
            yield Finding(
                PATIENCE,
                workload.urn,
                f"container {container.get('name')} of {workload.kind} {workload.namespace}/{workload.name} runs "
                f"{server}, {why}; its {kind} gives up after {window:.0f} s "
                "(initialDelaySeconds + failureThreshold x periodSeconds): the kubelet restarts it before it ever "
                f'serves ("failed {kind.removesuffix("Probe")} probe, will be restarted"), in a loop, CrashLoopBackOff',
                f"give it a startupProbe whose failureThreshold x periodSeconds covers {needed:.0f} s with margin"
                + (" (components/vllm_pool.py: cold start / 10 + 6 checks of 10 s)" if server == "vLLM" else "")
                + "; the liveness probe then waits for it",
            )


def _failing_effect(kind: str) -> str:
    """What a probe of ``kind`` that always fails does to its pod."""
    if kind == "readinessProbe":
        return "the pod never becomes Ready and its Service never sends it traffic"
    return "the kubelet restarts it in a loop (CrashLoopBackOff)"


def check_paths(graph: Graph) -> Iterator[Finding]:
    for workload in graph.pod_bearers():
        for container in _containers(workload):
            routes = get_routes(container)
            if routes is None:
                continue
            for kind in PROBES:
                http = lookup(container.get(kind), "httpGet")
                if not isinstance(http, dict):
                    continue
                path = str(http.get("path") or "/")  # the kubelet asks "/" when no path is given
                if path_served(path, routes):
                    continue
                effect = _failing_effect(kind)
                yield Finding(
                    PATH,
                    workload.urn,
                    f"{kind} of container {container.get('name')} ({workload.kind} {workload.namespace}/"
                    f"{workload.name}) asks GET {path}, which its image ({container.get('image')}) does not serve: "
                    f"every probe gets 404, counted as a failure, so {effect}",
                    f"probe one of the paths it serves: {', '.join(r for r in routes if '{' not in r)}",
                )


def _plain_http_server(container: dict[str, Any]) -> str | None:
    """The server a container runs where the program knows it speaks plain HTTP, with no TLS in its args or env."""
    if serves_vllm(container):
        server: str | None = "vLLM's OpenAI server"
    elif get_routes(container) is not None:
        server = "tokenplane's serving image"
    else:
        server = hub_model_server(container)[0]
    if server is None:
        return None
    words = [str(a) for a in [*(container.get("command") or []), *(container.get("args") or [])]]
    words += [str(e.get("name")) for e in container.get("env") or [] if isinstance(e, dict)]
    if any("ssl" in w.lower() or "tls" in w.lower() for w in words) or container.get("envFrom"):
        return None  # TLS may be configured (vLLM's --ssl-certfile, uvicorn's --ssl-keyfile, a mounted config)
    return server


def check_schemes(graph: Graph) -> Iterator[Finding]:
    for workload in graph.pod_bearers():
        for container in _containers(workload):
            server = _plain_http_server(container)
            if server is None:
                continue
            for kind in PROBES:
                http = lookup(container.get(kind), "httpGet")
                if not isinstance(http, dict) or str(http.get("scheme") or "HTTP").upper() != "HTTPS":
                    continue
                effect = _failing_effect(kind)
                yield Finding(
                    SCHEME,
                    workload.urn,
                    f"{kind} of container {container.get('name')} ({workload.kind} {workload.namespace}/"
                    f"{workload.name}) sets httpGet.scheme HTTPS on port {http.get('port')}, where its image "
                    f"({container.get('image')}, {server}) serves plain HTTP with no TLS configured: the TLS handshake "
                    f"gets an HTTP response, every probe fails, so {effect}",
                    f"drop httpGet.scheme (HTTP is the default) from the {kind}, or configure TLS on the server "
                    "(vLLM: --ssl-keyfile and --ssl-certfile)",
                )
