"""Prometheus scrapes each pod on a port the pod declares.

Prometheus's ``pod`` role discovers a target per declared container port (``__address__`` is the pod's IP and that
port, or the bare IP for a container that declares none), and the platform's scrape job (``tokenplane-pods`` in
``tokenplane.components.observability``) rewrites the address to the pod IP and its ``prometheus.io/port``
annotation. https://prometheus.io/docs/prometheus/latest/configuration/configuration/#kubernetes_sd_config ("The
pod role discovers all pods and exposes their containers as targets. For each declared port of a container, a single
target is generated"). That address is the pod's own: a Service's ``port`` (say 80 in front of ``targetPort`` 9000)
exists only on the ClusterIP, https://kubernetes.io/docs/concepts/services-networking/service/ (port vs targetPort),
so an annotation naming it makes Prometheus connect where nothing listens: the target is down ("connection refused")
and none of the pod's series is ever stored, so the queries, alerts and dashboards on them return no data.

The invariant: the address each of the Prometheus's own jobs (``additionalScrapeConfigs``) keeps for a pod, after
relabelling (``scrape.pod_scrapes``), is on one of the containerPorts the pod declares, where it declares any.

Cannot see: a process listening on a port its pod does not declare (declaring is optional, so a pod that declares
none is not judged, and one that declares some is taken to declare every port it serves); PodMonitors and
ServiceMonitors (``metrics-exported``'s idle monitors judge those).
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.scrape import pod_scrapes

RULE = "scrape-port"
PORT_ANNOTATION = "prometheus.io/port"


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        said: set[tuple[str, str, int]] = set()
        for pod, job, address in pod_scrapes(graph, region):
            host, _, port = address.rpartition(":")
            if not host or not port.isdigit() or not pod.declared or int(port) in pod.declared:
                continue
            if (pod.urn, job, int(port)) in said:
                continue  # one target per declared port, all rewritten to the same address
            said.add((pod.urn, job, int(port)))
            declared = ", ".join(str(p) for p in sorted(pod.declared))
            annotated = pod.annotations.get(PORT_ANNOTATION)
            why = f"its pod annotation {PORT_ANNOTATION} {annotated!r}" if annotated == port else "its relabel_configs"
            yield Finding(
                RULE,
                pod.urn,
                f"{pod.what}: Prometheus's job {job} scrapes its pods at <pod IP>:{port} (from {why}), but the pod "
                f"declares only containerPorts {declared}: nothing listens on {port} in the pod (a Service's port "
                "exists only on its ClusterIP), so the target is down and none of its series is ever stored",
                f"set {PORT_ANNOTATION} to the containerPort the metrics are served on (one of {declared}), or declare "
                f"port {port} on the container that serves them",
            )
