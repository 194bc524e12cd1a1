"""Every regular container of a Job's pod exits: a server in one keeps the Job from completing.

A Job succeeds when its pods succeed, and a pod succeeds only once every regular container has terminated with
exit 0 (``containers``; ``pkg/controller/job``, the pod phase Succeeded): a container whose process is a server (a
log shipper, a proxy, a collector) runs for ever, the pod stays Running after the main container exits, and the
Job never gets its Complete condition. Kubernetes' supported form for a helper that lives as long as the pod is a
native sidecar, an init container with ``restartPolicy: Always``, which the kubelet stops once the regular
containers have exited (https://kubernetes.io/docs/concepts/workloads/pods/sidecar-containers/#jobs-with-sidecar-
containers). pulumi-kubernetes awaits a Job until it is Complete (10 minutes by default), so ``pulumi up`` fails
(https://www.pulumi.com/registry/packages/kubernetes/api-docs/batch/v1/job/); with the ``pulumi.com/skipAwait``
annotation the up does not wait, but the Job still never completes. A CronJob's Jobs never complete either, so
each run holds its pod for ever (and with ``concurrencyPolicy: Forbid`` no later run starts).

"Never exits" is judged only from what is known: an image whose default process is a server
(``known_images.LONG_RUNNING``: the nginx images, the OpenTelemetry Collector's, Envoy's) run with its default
argv (or, for the collector, args that keep the collector's command), or an argv that starts a known server in
the foreground (``otelcol*``; ``nginx -g 'daemon off;'``; ``envoy`` other than ``--mode validate``). Cannot see:
other images' processes, argv through a shell, servers told to exit by the main container (a shared-process
namespace, a ``/quitquitquit`` call).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject, lookup
from tokenplane.proof.deployability.image_commands import nginx_options, nginx_server_options, nginx_stays_up
from tokenplane.proof.deployability.known_images import long_running

RULE = "job-containers-exit"
OTEL_PROGRAMS = frozenset({"otelcol", "otelcol-contrib", "otelcol-k8s"})
# The collector's commands and flags that print and exit instead of running the pipelines (its cobra CLI).
OTEL_NOT_SERVING = frozenset({"validate", "components", "featuregate", "help", "--version", "-v", "--help", "-h"})
ENVOY_NOT_SERVING = frozenset({"--version", "--help", "-h"})
SKIP_AWAIT = "pulumi.com/skipAwait"


def check(graph: Graph) -> Iterator[Finding]:
    for obj in graph.kube(None, "Job", "CronJob"):
        job = lookup(obj.manifest, "spec.jobTemplate") if obj.kind == "CronJob" else obj.manifest
        pod = lookup(job, "spec.template.spec") if isinstance(job, dict) else None
        if not isinstance(pod, dict):
            continue
        for container in pod.get("containers") or []:
            if isinstance(container, dict) and (server := server_process(container)) is not None:
                yield _finding(obj, container, server)


def server_process(container: dict[str, Any]) -> str | None:
    """What server the container's process runs, where it is known to run until stopped; None otherwise."""
    image = str(container.get("image") or "")
    command, args = container.get("command") or [], container.get("args") or []
    if not isinstance(command, list) or not isinstance(args, list):
        return None
    if not all(isinstance(word, str) for word in [*command, *args]):
        return None
    default = long_running(image)
    options = nginx_options(container)
    if options is not None:
        return "nginx in the foreground (daemon off)" if nginx_stays_up(options) else None
    if command:
        argv = [*command, *args]
    elif default is not None:
        argv = [*default[0], *(args or default[1])]
    else:
        return None
    if argv and argv[0].rsplit("/", 1)[-1] == "docker-entrypoint.sh":
        argv = argv[1:]
    program = argv[0].rsplit("/", 1)[-1] if argv else ""
    if program in OTEL_PROGRAMS and not set(argv[1:]) & OTEL_NOT_SERVING:
        return f"the OpenTelemetry Collector ({program})"
    if program == "envoy" and not set(argv[1:]) & ENVOY_NOT_SERVING and not _envoy_exits(argv[1:]):
        return "Envoy"
    options = nginx_server_options(argv)
    if options is not None and nginx_stays_up(options):
        return "nginx in the foreground (daemon off)"
    return None


def _envoy_exits(words: list[str]) -> bool:
    """Whether envoy's ``--mode`` is ``validate`` or ``init_only`` (it checks the config and exits)."""
    for i, word in enumerate(words):
        mode = word.split("=", 1)[1] if word.startswith("--mode=") else None
        if word == "--mode" and i + 1 < len(words):
            mode = words[i + 1]
        if mode in ("validate", "init_only"):
            return True
    return False


def _finding(obj: KubeObject, container: dict[str, Any], server: str) -> Finding:
    where = f"container {container.get('name')} of {obj.kind} {obj.namespace}/{obj.name} ({container.get('image')})"
    skip = str((obj.manifest.get("metadata") or {}).get("annotations", {}).get(SKIP_AWAIT, "")).lower() == "true"
    if obj.kind == "CronJob":
        effect = (
            "none of the Jobs it starts ever completes: each run's pod stays Running and holds its resources, and "
            "with concurrencyPolicy Forbid no later run starts"
        )
    elif skip:
        effect = (
            f"the Job never gets its Complete condition ({SKIP_AWAIT} keeps `pulumi up` from waiting, but the pod "
            "stays Running and holds its resources for ever, and whatever waits on the Job never proceeds)"
        )
    else:
        effect = (
            "the pod stays Running after the other containers exit and the Job never gets its Complete condition; "
            "pulumi-kubernetes awaits the Job's completion, so `pulumi up` fails after its timeout (10 minutes)"
        )
    return Finding(
        RULE,
        obj.urn,
        f"{where} is a regular container whose process is {server}, a server that never exits: a Job's pod "
        f"succeeds only when every regular container has terminated, so {effect}",
        f"run {container.get('name')} as a native sidecar: move it to initContainers with restartPolicy: Always "
        "(Kubernetes 1.29+), which the kubelet stops once the regular containers have exited",
    )
