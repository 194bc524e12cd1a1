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
probe restarts it in a loop. Judged only for images whose routes the program knows (``known_images``), and for
Python's own static file server: a container of a plain Python image (Docker Hub's ``python``) whose command is
``python -m http.server`` (or ``python3``) serves only the files under its directory (``--directory``/``-d``, else
the container's ``workingDir``) and answers 404 for any other path (``SimpleHTTPRequestHandler.send_head``:
"File not found"; https://docs.python.org/3/library/http.server.html). A path is judged only where every entry on
its way is known: a directory that is a ConfigMap volume's mount point lists the ConfigMap's keys (or its ``items``'
paths), a directory the plain Python image leaves empty (``PYTHON_EMPTY_DIRS``: Debian's and Alpine's base
``/srv`` and ``/mnt``) lists nothing, and each lists the mount points below it. Any other directory (the image's
own, an emptyDir or a claim something may fill, a mount with ``subPath``) is not judged, nor ``--cgi``, nor a
probe on another port. ``/`` always answers (a listing, or index.html).

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

import posixpath
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote

from tokenplane.contract import POOL_LABEL
from tokenplane.proof.deployability import known_images
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


def _http_probes(container: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any], str]]:
    """Each of the container's HTTP probes: its kind, its httpGet and the path the kubelet asks."""
    for kind in PROBES:
        http = lookup(container.get(kind), "httpGet")
        if isinstance(http, dict):
            yield kind, http, str(http.get("path") or "/")  # the kubelet asks "/" when no path is given


def _not_found(workload: KubeObject, container: dict[str, Any], kind: str, asked: str, fix: str) -> Finding:
    """A probe whose every answer is 404: ``asked`` says the path and why nothing serves it."""
    return Finding(
        PATH,
        workload.urn,
        f"{kind} of container {container.get('name')} ({workload.kind} {workload.namespace}/{workload.name}) asks "
        f"GET {asked}: every probe gets 404, counted as a failure, so {_failing_effect(kind)}",
        fix,
    )


def check_paths(graph: Graph) -> Iterator[Finding]:
    for workload in graph.pod_bearers():
        for container in _containers(workload):
            routes = get_routes(container)
            if routes is None:
                continue
            for kind, _, path in _http_probes(container):
                if path_served(path, routes):
                    continue
                yield _not_found(
                    workload,
                    container,
                    kind,
                    f"{path}, which its image ({container.get('image')}) does not serve",
                    f"probe one of the paths it serves: {', '.join(r for r in routes if '{' not in r)}",
                )
    yield from check_static_paths(graph)


# Directories the official Python images (Debian's base-files, Alpine's alpine-baselayout) ship empty.
PYTHON_EMPTY_DIRS = frozenset({"/srv", "/mnt"})
PYTHON_IMAGES = frozenset({"python", "library/python", "docker/library/python"})


def check_static_paths(graph: Graph) -> Iterator[Finding]:
    """``probe-path`` for ``python -m http.server``: a probe path that names no file under the served directory."""
    for workload in graph.pod_bearers():
        spec = pod_template(workload).get("spec") or {}
        for container in _containers(workload):
            served = _static_server(container)
            if served is None:
                continue
            directory, port = served
            for kind, http, path in _http_probes(container):
                if _port_number(http.get("port"), container) != port:
                    continue
                missing = _missing(graph, workload, spec, container, directory, path)
                if missing is None:
                    continue
                yield _not_found(
                    workload,
                    container,
                    kind,
                    f"{path} of Python's http.server, which serves only the files under {directory} ({missing} does "
                    "not exist there, File not found)",
                    f"probe / (the directory listing) or the path of a file that is served, e.g. a key of the "
                    f"ConfigMap mounted under {directory}",
                )


def _static_server(container: dict[str, Any]) -> tuple[str, int] | None:
    """(served directory, port) of a plain Python image's container that runs ``python -m http.server``."""
    if known_images.repository(str(container.get("image") or "")) not in PYTHON_IMAGES:
        return None
    words = [a for a in [*(container.get("command") or []), *(container.get("args") or [])]]
    if not words or not all(isinstance(w, str) for w in words):
        return None
    if posixpath.basename(words[0]) not in ("python", "python3") or words[1:3] != ["-m", "http.server"]:
        return None
    directory = container.get("workingDir")
    port = 8000
    rest = words[3:]
    i = 0
    while i < len(rest):
        word = rest[i]
        if word in ("--directory", "-d") and i + 1 < len(rest):
            directory, i = rest[i + 1], i + 2
        elif word.startswith("--directory="):
            directory, i = word.split("=", 1)[1], i + 1
        elif word in ("--bind", "-b", "--protocol", "-p") and i + 1 < len(rest):
            i += 2
        elif word.isdigit():
            port, i = int(word), i + 1
        else:
            return None  # --cgi, or an option this reading does not know
    if not isinstance(directory, str) or not directory.startswith("/"):
        return None
    return posixpath.normpath(directory), port


def _port_number(port: Any, container: dict[str, Any]) -> int | None:
    if isinstance(port, bool):
        return None
    if isinstance(port, (int, float)) and float(port).is_integer():
        return int(port)
    if isinstance(port, str):
        if port.isdigit():
            return int(port)
        for entry in container.get("ports") or []:
            if isinstance(entry, dict) and entry.get("name") == port:
                number = entry.get("containerPort")
                if isinstance(number, (int, float)) and not isinstance(number, bool):
                    return int(number)
    return None


def _missing(
    graph: Graph,
    workload: KubeObject,
    spec: dict[str, Any],
    container: dict[str, Any],
    directory: str,
    path: str,
) -> str | None:
    """The first entry of ``path`` that surely does not exist under ``directory`` (as http.server resolves it),
    or None where it exists or is not known."""
    path = unquote(path.split("?", 1)[0].split("#", 1)[0])
    parts = [p for p in posixpath.normpath("/" + path).split("/") if p and p not in (".", "..")]
    volumes = {str(v.get("name")): v for v in spec.get("volumes") or [] if isinstance(v, dict)}
    mounts: dict[str, dict[str, Any] | None] = {}
    for mount in container.get("volumeMounts") or []:
        if not isinstance(mount, dict) or not isinstance(mount.get("mountPath"), str):
            return None
        volume = None if mount.get("subPath") or mount.get("subPathExpr") else volumes.get(str(mount.get("name")))
        mounts[posixpath.normpath(mount["mountPath"])] = volume
    if any(_below(directory, m) and m != directory for m in mounts):
        return None  # the served directory lies inside a volume: its entries are the volume's
    current = directory
    for part in parts:
        listing = _listing(graph, workload, mounts, current)
        if listing is None:
            return None
        if part not in listing:
            return posixpath.join(current, part)
        current = posixpath.join(current, part)
    return None


def _below(inner: str, outer: str) -> bool:
    return inner == outer or inner.startswith(outer.rstrip("/") + "/")


def _listing(
    graph: Graph, workload: KubeObject, mounts: dict[str, dict[str, Any] | None], directory: str
) -> set[str] | None:
    """The entries of ``directory`` in the container, where every one is known."""
    if directory in mounts:
        names = _config_map_entries(graph, workload, mounts[directory])
        if names is None:
            return None
    elif directory in PYTHON_EMPTY_DIRS and not any(_below(directory, m) and m != directory for m in mounts):
        names = set()
    else:
        return None
    for mount in mounts:
        if mount != directory and _below(mount, directory):
            names.add(mount[len(directory.rstrip("/")) + 1 :].split("/", 1)[0])
    return names


def _config_map_entries(graph: Graph, workload: KubeObject, volume: dict[str, Any] | None) -> set[str] | None:
    """The top-level entries a ConfigMap volume holds: its ``items``' paths, else the ConfigMap's keys."""
    ref = (volume or {}).get("configMap")
    if not isinstance(ref, dict) or not isinstance(ref.get("name"), str):
        return None
    items = ref.get("items")
    if items:
        paths = [i.get("path") if isinstance(i, dict) else None for i in items]
        if not all(isinstance(p, str) for p in paths):
            return None
        return {str(p).lstrip("/").split("/", 1)[0] for p in paths}
    for obj in graph.kube(workload.resource.region, "ConfigMap"):
        if obj.namespace == workload.namespace and obj.name == ref["name"]:
            keys: set[str] = set()
            for field in ("data", "binaryData"):
                data = obj.manifest.get(field) or {}
                if not isinstance(data, dict):
                    return None
                keys |= {str(k) for k in data}
            return keys
    return None


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
