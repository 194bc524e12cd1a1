"""What a region's Prometheus stores: each scraped pod's series, with their labels after relabelling.

Service discovery is modelled as Prometheus's ``kubernetes_sd_configs`` role ``pod`` sees a pod template
(its ``__meta_kubernetes_*`` labels), then each scrape job's ``relabel_configs`` are applied as Prometheus
applies them (keep, drop, replace, labeldrop, labelkeep, labelmap). An exported label that collides with
a target label is renamed ``exported_<name>`` unless the job sets ``honor_labels``: that is how a DCGM
exporter's ``pod`` label (the pod using the GPU) is lost to the exporter's own pod name.

The exporters' families come from real sources: vLLM's from the committed scrape of the real engine
(``tokenplane.vllm_metrics``), the others from ``exporters.json`` (package data; each entry names its source). A
container runs an exporter of the file by its ``python -m`` module, or by its image's repository (the entry's
``images``, as ``known_images.repository`` names an image) unless its args hold one of the entry's ``not_with_args``.

A pod no job keeps is reported with the keep or drop rule that refused it and the value it refused: Prometheus
anchors every relabel regex at both ends (``^(?:regex)$``, https://prometheus.io/docs/prometheus/latest/configuration/configuration/#relabel_config),
so a ``prometheus.io/scrape`` annotation of "True" fails a keep regex ``true``.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from tokenplane import package_data
from tokenplane.proof.deployability import label_selectors
from tokenplane.proof.deployability.graph import HELM_RELEASE, Graph, KubeObject, lookup
from tokenplane.proof.deployability.known_images import repository
from tokenplane.proof.deployability.reachability import selects
from tokenplane.proof.deployability.vllm_argv import vllm_version
from tokenplane.vllm_metrics import MetricsSchemaMissing, load_metrics

PROMETHEUS_CHART = "kube-prometheus-stack"
DCGM_CHART = "dcgm-exporter"
KSM = "kube-state-metrics"
VLLM = "vllm"
DCGM_PORT = 9400  # the dcgm-exporter chart's container port, named "metrics"
POD_IP = "10.0.0.10"  # any address: relabelling rewrites its port, nothing reads the host
# The name a controller would give a pod of each kind: relabelling copies it into ``pod``, and a matcher such
# as pod=~"vllm-small-.*" must match it.
POD_SUFFIX = {"Deployment": "-5f7d8c9b6d-x2x4z", "StatefulSet": "-0"}
DEFAULT_POD_SUFFIX = "-x2x4z"
SCRAPE_SERIES = ("up", "scrape_duration_seconds", "scrape_samples_scraped", "scrape_series_added")
# How an exporter's client library names the samples of each family type (absent: each family is one sample, as-is).
# prometheus_client (Python) adds _total to counters; metrics-exporter-prometheus (Rust's metrics crate) writes counters
# under their own names; both write a histogram as its _bucket, _count and _sum series.
NAMING_SUFFIXES: dict[str, dict[str, tuple[str, ...]]] = {
    "prometheus_client": {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum")},
    "metrics-rs": {"histogram": ("_bucket", "_count", "_sum")},
}
# The Prometheus Operator's default scrape interval, which kube-prometheus-stack's empty scrapeInterval leaves
# (the Prometheus CRD's default for spec.scrapeInterval).
DEFAULT_SCRAPE_INTERVAL = "30s"
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}
_DURATION = re.compile(r"(?:\d+(?:ms|[smhdwy]))+")
_PART = re.compile(r"(\d+)(ms|[smhdwy])")
_UNSAFE = re.compile(r"[^a-zA-Z0-9_]")
_ANNOTATION = re.compile(r"__meta_kubernetes_pod_annotation_(\w+)")
_GO_GROUP = re.compile(r"\$\{(\w+)\}|\$(\w+)")
# Prometheus Operator's camelCase relabel keys -> Prometheus's own.
_KEYS = {"sourceLabels": "source_labels", "targetLabel": "target_label"}


@dataclass(frozen=True)
class Pod:
    """A pod as service discovery sees it, and the exporters it runs."""

    urn: str  # the workload or Helm release that makes it
    what: str  # for messages: "Deployment gateway/ai-gateway"
    name: str
    namespace: str
    labels: dict[str, str]
    annotations: dict[str, str]
    exporters: tuple[str, ...]  # keys of exporters.json, or "vllm:<version>"
    ports: dict[str, int] = field(default_factory=dict)  # named container ports
    declared: frozenset[int] = frozenset()  # every containerPort of its containers, named or not


@dataclass(frozen=True)
class Series:
    """The series one target stores for one sample name. A label's value is None where the exporter sets it."""

    target: Pod
    job: str
    labels: dict[str, str | None]
    honor_labels: bool
    interval: str | None = None  # the job's or endpoint's own scrape interval; None: the Prometheus's global one


@dataclass(frozen=True)
class Exported:
    """Every sample name a region's Prometheus stores, with the series that carry it."""

    series: dict[str, list[Series]] = field(default_factory=dict)
    unscraped: dict[str, str] = field(default_factory=dict)  # a sample name -> why no target carries it
    fixes: dict[str, str] = field(default_factory=dict)  # a sample name -> how to have it scraped
    misses: dict[str, str] = field(default_factory=dict)  # a pod's URN -> why a monitor selecting it scrapes nothing
    # The targets of scraped pods whose exporters the checks do not know (an in-house or third-party image): they may
    # write any name, with their target labels and any others.
    opaque: list[Series] = field(default_factory=list)


@functools.cache
def catalogue() -> dict[str, Any]:
    """exporters.json: per exporter, its source, its families (type, label keys) and how samples are named."""
    exporters: dict[str, Any] = json.loads(package_data.path(package_data.EXPORTERS).read_text(encoding="utf-8"))
    return exporters["exporters"]  # type: ignore[no-any-return]  # the file's shape, held by its test


def samples(exporter: str) -> dict[str, frozenset[str]]:
    """Every sample name ``exporter`` writes -> its label keys (the exporter-wide ones included).

    Raises:
        MetricsSchemaMissing: a vLLM release without a committed scrape.
    """
    if exporter.startswith(VLLM + ":"):
        families = load_metrics(exporter.split(":", 1)[1])
        return {s: frozenset(f["labels"]) for f in families.values() for s in f["samples"]}
    entry = catalogue()[exporter]
    common = frozenset(entry["labels"])
    out: dict[str, frozenset[str]] = {}
    for name, family in entry["families"].items():
        labels = common | frozenset(family["labels"])
        if entry.get("naming") in NAMING_SUFFIXES:  # counters may get _total; histograms their three series
            suffixes = NAMING_SUFFIXES[entry["naming"]].get(family["type"], ("",))
            out |= {name + s: labels | ({"le"} if s == "_bucket" else set()) for s in suffixes}
        else:
            out[name] = labels
    return out


def exported(graph: Graph, region: str) -> Exported:
    """What the region's Prometheus stores; empty when no Prometheus runs there."""
    releases = graph.releases(region, PROMETHEUS_CHART)
    if not releases:
        return Exported()
    pods = list(_pods(graph, region))
    out = Exported()
    jobs = [
        (str(job.get("job_name", "")), job)
        for release in releases
        for job in lookup(release.inputs.get("values") or {}, "prometheus.prometheusSpec.additionalScrapeConfigs") or []
    ]
    services = _services(graph, region)
    scraped: set[str] = set()
    misses = out.misses
    refused: dict[str, tuple[str, str]] = {}  # a pod's URN -> why a job's rule dropped it (the value refused), the fix
    for pod in pods:
        for job_name, job in jobs:
            for meta in sd_targets(job, pod, services):
                rules = [_snake(r) for r in job.get("relabel_configs") or []]
                labels = _relabel(meta, rules)
                if labels is None:
                    why, fix = _dropped_by(pod, meta, rules)
                    refused.setdefault(pod.urn, (f"no scrape job keeps that pod: job {job_name} drops it: {why}", fix))
                    continue
                scraped.add(pod.urn)
                honor, relabel = bool(job.get("honor_labels")), job.get("metric_relabel_configs")
                _store(out, pod, job_name, labels, honor, relabel, interval=job.get("scrape_interval"))
        for found in _monitors(graph, region, pod, releases, services):
            if isinstance(found, str):
                misses.setdefault(pod.urn, found)
                continue
            job_name, endpoint, labels = found
            scraped.add(pod.urn)
            honor = bool(endpoint.get("honorLabels"))
            relabel = [_snake(r) for r in endpoint.get("metricRelabelings") or []]
            _store(out, pod, job_name, labels, honor, relabel, interval=endpoint.get("interval"))
    for release in releases:
        if lookup(release.inputs.get("values") or {}, "kubeStateMetrics.enabled") is not False:
            _store(out, _ksm(release.urn, release.inputs.get("values") or {}), KSM, {"job": KSM}, True, None)
    for pod in pods:
        if pod.urn in scraped:
            continue
        for exporter in pod.exporters:
            for sample in _safe_samples(exporter):
                miss = misses.get(pod.urn)
                dropped = refused.get(pod.urn)
                why = miss or (dropped[0] if dropped else "no scrape job keeps that pod")
                out.unscraped.setdefault(sample, f"{pod.what} exports it, but {why}")
                if miss:
                    out.fixes.setdefault(sample, _miss_fix(miss))
                elif dropped:
                    out.fixes.setdefault(sample, dropped[1])
    return out


def pod_scrapes(graph: Graph, region: str) -> Iterator[tuple[Pod, str, str]]:
    """(pod, job, address) of every target the Prometheus's own scrape jobs (``additionalScrapeConfigs``) keep, with
    the address their relabelling leaves (``__address__``: where Prometheus connects)."""
    for pod, job, labels in pod_targets(graph, region):
        if labels.get("__address__"):
            yield pod, job, labels["__address__"]


def pod_targets(graph: Graph, region: str) -> Iterator[tuple[Pod, str, dict[str, str]]]:
    """(pod, job, labels) of every target the Prometheus's own scrape jobs (``additionalScrapeConfigs``) keep, with
    the labels their relabelling leaves (``__address__``, ``__metrics_path__``, ...)."""
    jobs = [
        job
        for release in graph.releases(region, PROMETHEUS_CHART)
        for job in lookup(release.inputs.get("values") or {}, "prometheus.prometheusSpec.additionalScrapeConfigs") or []
    ]
    services = _services(graph, region) if jobs else []
    for pod in _pods(graph, region) if jobs else ():
        for job in jobs:
            rules = [_snake(r) for r in job.get("relabel_configs") or []]
            for meta in sd_targets(job, pod, services):
                labels = _relabel_all(meta, rules)[0]
                if labels is not None:
                    yield pod, str(job.get("job_name", "")), labels


def known(graph: Graph) -> dict[str, str]:
    """Every sample name any exporter tokenplane knows writes -> that exporter (for 'not installed here')."""
    out: dict[str, str] = {}
    for exporter in catalogue():
        out |= dict.fromkeys(samples(exporter), exporter)
    for pod_version in {v for r in graph.regions() for p in _pods(graph, r) for v in p.exporters}:
        if pod_version.startswith(VLLM + ":"):
            out |= dict.fromkeys(_safe_samples(pod_version), "vLLM")
    return out


def _safe_samples(exporter: str) -> dict[str, frozenset[str]]:
    try:
        return samples(exporter)
    except MetricsSchemaMissing:
        return {}  # the vllm-argv rule reports a release without schemas


def _store(
    out: Exported,
    pod: Pod,
    job: str,
    target: dict[str, str],
    honor: bool,
    metric_relabel: list[Any] | None,
    *,
    interval: str | None = None,
) -> None:
    if not pod.exporters:
        out.opaque.append(Series(pod, job, dict[str, str | None](target), honor, interval))
    # Prometheus writes these itself for every target, with the target's labels only.
    for sample in SCRAPE_SERIES:
        out.series.setdefault(sample, []).append(Series(pod, job, dict[str, str | None](target), honor, interval))
    for exporter in pod.exporters:
        for sample, own in _safe_samples(exporter).items():
            allowed = _ksm_node_labels(pod) if exporter == KSM and sample == "kube_node_labels" else []
            labels: dict[str, str | None] = dict(target)
            for key in own | frozenset(allowed):
                if key in target and not honor:
                    labels["exported_" + key] = None  # Prometheus keeps the target's and renames the exporter's
                else:
                    labels[key] = None
            if metric_relabel:
                kept = _relabel({"__name__": sample, **{k: v or "" for k, v in labels.items()}}, metric_relabel)
                if kept is None:
                    continue
                labels = {k: labels.get(k) for k in kept if k != "__name__"}
            out.series.setdefault(sample, []).append(Series(pod, job, labels, honor, interval))


def _pods(graph: Graph, region: str) -> Iterator[Pod]:
    exporters = catalogue()
    for workload in graph.workloads(region):
        template = workload.manifest.get("spec", {}).get("template", {})
        metadata = template.get("metadata") or {}
        runs: list[str] = []
        for container in workload.pod_spec().get("containers") or []:
            command = [str(c) for c in container.get("command") or []]
            if command == ["vllm", "serve"]:
                version = vllm_version(workload, container)
                runs += [f"{VLLM}:{version}"] if version else []
            elif command[:2] == ["python", "-m"] and len(command) > 2 and command[2] in exporters:
                runs.append(command[2])
            else:
                runs += _image_exporters(container)
        yield Pod(
            workload.urn,
            f"{workload.kind} {workload.namespace}/{workload.name}",
            workload.name + POD_SUFFIX.get(workload.kind, DEFAULT_POD_SUFFIX),
            workload.namespace,
            {str(k): str(v) for k, v in (metadata.get("labels") or {}).items()},
            {str(k): str(v) for k, v in (metadata.get("annotations") or {}).items()},
            tuple(runs),
            {
                str(p["name"]): int(p["containerPort"])
                for c in workload.pod_spec().get("containers") or []
                for p in c.get("ports") or []
                if p.get("name") and isinstance(p.get("containerPort"), int | float)
            },
            frozenset(
                int(p["containerPort"])
                for c in [
                    *(workload.pod_spec().get("initContainers") or []),
                    *(workload.pod_spec().get("containers") or []),
                ]
                for p in c.get("ports") or []
                if isinstance(p.get("containerPort"), int | float)
            ),
        )
    for release in graph.releases(region, DCGM_CHART):
        values = release.inputs.get("values") or {}
        name = str(release.inputs.get("name") or DCGM_CHART)
        yield Pod(
            release.urn,
            f"Helm release {name}",
            name + DEFAULT_POD_SUFFIX,
            str(release.inputs.get("namespace") or "default"),
            {"app.kubernetes.io/name": DCGM_CHART, "app.kubernetes.io/instance": name},
            {str(k): str(v) for k, v in (values.get("podAnnotations") or {}).items()},
            (DCGM_CHART,),
            {"metrics": DCGM_PORT},
            frozenset({DCGM_PORT}),
        )


def _image_exporters(container: dict[str, Any]) -> list[str]:
    """The exporters.json entries ``container`` runs by its image's repository."""
    image = repository(str(container.get("image") or ""))
    argv = [str(a) for a in (container.get("command") or []) + (container.get("args") or [])]
    return [
        name
        for name, entry in catalogue().items()
        if image in entry.get("images", ())
        and not any(a.split("=", 1)[0] in entry.get("not_with_args", ()) for a in argv)
    ]


def _ksm(urn: str, values: dict[str, Any]) -> Pod:
    allow = lookup(values, "kube-state-metrics.metricLabelsAllowlist") or []
    return Pod(
        urn, "kube-prometheus-stack's kube-state-metrics", KSM, "monitoring", {}, {"allow": ",".join(allow)}, (KSM,)
    )


def _ksm_node_labels(pod: Pod) -> list[str]:
    """``label_<name>`` for each node label ``--metric-labels-allowlist`` lets through (``nodes=[a,b]``)."""
    out: list[str] = []
    for entry in re.findall(r"nodes=\[([^\]]*)\]", pod.annotations.get("allow", "")):
        out += ["label_" + _UNSAFE.sub("_", n.strip()) for n in entry.split(",") if n.strip()]
    return out


def _meta(pod: Pod, job_name: str, job: dict[str, Any], port: tuple[str, int] | None = None) -> dict[str, str]:
    labels = {
        "__address__": f"{POD_IP}:{port[1] if port else 80}",
        "__metrics_path__": str(job.get("metrics_path") or "/metrics"),
        "__scheme__": str(job.get("scheme") or "http"),
        "job": job_name,
        "__meta_kubernetes_namespace": pod.namespace,
        "__meta_kubernetes_pod_name": pod.name,
        "__meta_kubernetes_pod_ip": POD_IP,
    }
    if port is not None:
        labels["__meta_kubernetes_pod_container_port_name"] = port[0]
        labels["__meta_kubernetes_pod_container_port_number"] = str(port[1])
        labels["__meta_kubernetes_pod_container_port_protocol"] = "TCP"
    labels |= _object_meta("pod", pod.labels, pod.annotations)
    return labels


def _object_meta(role: str, labels: dict[str, str], annotations: dict[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for kind, values in (("label", labels), ("annotation", annotations)):
        for key, value in values.items():
            out[f"__meta_kubernetes_{role}_{kind}_{_UNSAFE.sub('_', key)}"] = value
            out[f"__meta_kubernetes_{role}_{kind}present_{_UNSAFE.sub('_', key)}"] = "true"
    return out


@dataclass(frozen=True)
class Service:
    """A Service as service discovery and the Prometheus Operator see it."""

    namespace: str
    name: str
    labels: dict[str, str]
    annotations: dict[str, str]
    selector: dict[str, str]
    ports: list[dict[str, Any]]  # spec.ports: name, port, targetPort

    def selects(self, pod: Pod) -> bool:
        return (
            bool(self.selector)
            and pod.namespace == self.namespace
            and all(pod.labels.get(k) == v for k, v in self.selector.items())
        )

    def target_port(self, entry: dict[str, Any], pod: Pod) -> int | None:
        """The pod's port a Service port sends to: a number, or the container port its name names (None: none)."""
        target = entry.get("targetPort", entry.get("port"))
        if isinstance(target, int | float) or (isinstance(target, str) and target.isdigit()):
            return int(target)
        return pod.ports.get(str(target))


def _services(graph: Graph, region: str) -> list[Service]:
    out = []
    for obj in graph.kube(region, "Service"):
        metadata = obj.manifest.get("metadata") or {}
        spec = obj.manifest.get("spec") or {}
        out.append(
            Service(
                obj.namespace,
                obj.name,
                {str(k): str(v) for k, v in (metadata.get("labels") or {}).items()},
                {str(k): str(v) for k, v in (metadata.get("annotations") or {}).items()},
                {str(k): str(v) for k, v in (spec.get("selector") or {}).items()},
                [dict(p) for p in spec.get("ports") or []],
            )
        )
    return out


def sd_targets(job: dict[str, Any], pod: Pod, services: list[Service]) -> Iterator[dict[str, str]]:
    """The discovered labels of every target ``job``'s ``kubernetes_sd_configs`` make for ``pod`` (before its
    relabelling), per Prometheus's roles: ``pod`` (one per container port, or one without a port), ``endpoints``
    and ``endpointslice`` (one per port of each Service selecting the pod), ``service`` (one per Service port,
    addressed by the Service's name: a scrape reaches one of its pods, so it stands for each)."""
    job_name = str(job.get("job_name", ""))
    for sd in job.get("kubernetes_sd_configs") or []:
        names = lookup(sd, "namespaces.names")
        if names and pod.namespace not in names:
            continue
        role = sd.get("role")
        if role == "pod":
            ports: list[tuple[str, int] | None] = [*pod.ports.items()] or [None]
            for port in ports:
                yield _meta(pod, job_name, job, port)
        elif role in ("endpoints", "endpointslice", "service"):
            for service in services:
                if not service.selects(pod):
                    continue
                for entry in service.ports:
                    target = service.target_port(entry, pod)
                    if role != "service" and target is None:
                        continue  # the endpoints controller lists no address for a port the pod does not name
                    yield _service_meta(job_name, job, pod, service, entry, target, str(role))


def _service_meta(
    job_name: str, job: dict[str, Any], pod: Pod, service: Service, entry: dict[str, Any], target: int | None, role: str
) -> dict[str, str]:
    port_name = str(entry.get("name") or "")
    labels = _object_meta("service", service.labels, service.annotations) | {
        "__meta_kubernetes_namespace": service.namespace,
        "__meta_kubernetes_service_name": service.name,
    }
    if role == "service":
        labels |= {
            "__address__": f"{service.name}.{service.namespace}.svc:{entry.get('port')}",
            "__meta_kubernetes_service_port_name": port_name,
            "__meta_kubernetes_service_port_number": str(entry.get("port")),
            "__meta_kubernetes_service_port_protocol": str(entry.get("protocol") or "TCP"),
        }
    else:
        named = next((n for n, p in pod.ports.items() if p == target), None)
        labels |= _meta(pod, job_name, job, (named, target) if named and target else None)
        labels |= {
            "__address__": f"{POD_IP}:{target}",
            "__meta_kubernetes_endpoints_name": service.name,
            "__meta_kubernetes_endpoint_port_name": port_name,
            "__meta_kubernetes_endpoint_port_protocol": str(entry.get("protocol") or "TCP"),
            "__meta_kubernetes_endpoint_ready": "true",
        }
        if role == "endpointslice":
            labels["__meta_kubernetes_endpointslice_port_name"] = port_name
    labels |= {
        "__metrics_path__": str(job.get("metrics_path") or "/metrics"),
        "__scheme__": str(job.get("scheme") or "http"),
        "job": job_name,
    }
    return labels


def _monitors(
    graph: Graph,
    region: str,
    pod: Pod,
    releases: list[Any],
    services: list[Service],
    monitors: list[KubeObject] | None = None,
) -> Iterator[tuple[str, dict[str, Any], dict[str, str]] | str]:
    """(job, endpoint, target labels) for each PodMonitor or ServiceMonitor endpoint that scrapes ``pod``, or a
    sentence saying why one that selects it scrapes nothing.

    Prometheus reads only the monitors its own selectors pick (kube-prometheus-stack: those labelled
    ``release: <release>`` unless ``*SelectorNilUsesHelmValues`` is false or a selector is given). A ServiceMonitor
    selects Services, whose endpoints are their selected pods on the Service port its endpoint names; a PodMonitor
    names the pod's container port. The Operator's own relabelling gives every target namespace, pod, service,
    endpoint and job (``<namespace>/<monitor>`` for a PodMonitor, the Service's name, or its ``jobLabel``, for a
    ServiceMonitor), then ``podTargetLabels``/``targetLabels`` and the endpoint's relabelings.
    """
    for monitor in graph.kube(region, "PodMonitor", "ServiceMonitor") if monitors is None else monitors:
        spec = monitor.manifest.get("spec") or {}
        what = f"{monitor.kind} {monitor.namespace}/{monitor.name}"
        namespaces = lookup(spec, "namespaceSelector.matchNames") or [monitor.namespace]
        if not lookup(spec, "namespaceSelector.any") and pod.namespace not in namespaces:
            meant = _meant(monitor, pod, services)
            if meant:
                yield f"{what}'s selector matches {meant}, but {_reads_only(spec, monitor.namespace)}"
            continue
        job = f"{monitor.namespace}/{monitor.name}"
        service: Service | None = None
        if monitor.kind == "ServiceMonitor":
            chosen = [s for s in services if s.selects(pod) and _selects(spec.get("selector") or {}, s.labels)]
            if not chosen:
                continue
            service = chosen[0]
            job = service.labels.get(str(spec.get("jobLabel")), service.name)
        elif not _selects(spec.get("selector") or {}, pod.labels):
            continue
        refusal = unread(monitor, releases)
        if refusal:
            yield f"{what} selects it, but {refusal}"
            continue
        refusal = timeout_refusal(monitor, releases)
        if refusal:
            yield f"{what} selects it, but {refusal}"
            continue
        for endpoint in spec.get("endpoints") or spec.get("podMetricsEndpoints") or []:
            port_name = endpoint.get("port")
            base = {"namespace": pod.namespace, "pod": pod.name, "job": job}
            port: tuple[str, int] | None = None
            if service is not None:
                entry = next((p for p in service.ports if port_name and p.get("name") == port_name), None)
                if port_name and entry is None:
                    names = ", ".join(repr(p.get("name")) for p in service.ports) or "none"
                    yield f"{what} scrapes port {port_name!r} of Service {service.namespace}/{service.name}, which has no port of that name (its ports: {names})"
                    continue
                number = service.target_port(entry, pod) if entry is not None else None
                if entry is not None and number is None:
                    yield f"{what}'s Service {service.namespace}/{service.name} sends port {port_name!r} to {entry.get('targetPort')!r}, which the pod does not name (its ports: {pod.ports})"
                    continue
                base["service"] = service.name
                port = (str(port_name), number) if port_name and number else None
                for key in spec.get("targetLabels") or []:
                    if key in service.labels:
                        base[_UNSAFE.sub("_", key)] = service.labels[key]
            elif port_name:
                if port_name not in pod.ports:
                    yield f"{what} scrapes container port {port_name!r}, which the pod does not name (its ports: {pod.ports})"
                    continue
                port = (str(port_name), pod.ports[str(port_name)])
            for key in spec.get("podTargetLabels") or []:
                if key in pod.labels:
                    base[_UNSAFE.sub("_", key)] = pod.labels[key]
            meta = _meta(pod, job, {}, port)
            base["instance"] = meta["__address__"]
            if port_name:
                base["endpoint"] = str(port_name)
            labels = _relabel({**meta, **base}, [_snake(r) for r in endpoint.get("relabelings") or []])
            if labels is not None:
                yield job, endpoint, labels


def idle_monitors(graph: Graph, region: str) -> Iterator[tuple[KubeObject, str, str]]:
    """(monitor, why, fix) for each PodMonitor or ServiceMonitor that gives the region's Prometheus no target.

    One whose selectors pick a pod but scrape nothing says why (``_monitors``'s sentences: among them, the pod
    it is meant for lies in a namespace it does not read). A ServiceMonitor that matches no Service at all is
    reported only where that is certain: in namespaces where no Helm chart could have made one the graph cannot
    list.
    """
    releases = graph.releases(region, PROMETHEUS_CHART)
    if not releases:
        return  # no Prometheus of the program's: what reads these monitors is unknown
    pods = list(_pods(graph, region))
    services = _services(graph, region)
    charted = {str(r.inputs.get("namespace") or "default") for r in graph.of_type(HELM_RELEASE, region)}
    for monitor in graph.kube(region, "PodMonitor", "ServiceMonitor"):
        spec = monitor.manifest.get("spec") or {}
        refusal = timeout_refusal(monitor, releases)
        if refusal:  # rejected whatever it selects: pods a chart makes too
            yield monitor, refusal, _miss_fix("scrapeTimeout")
            continue
        found = [f for pod in pods for f in _monitors(graph, region, pod, releases, services, [monitor])]
        if any(not isinstance(f, str) for f in found):
            continue
        misses = [f for f in found if isinstance(f, str)]
        namespaces = lookup(spec, "namespaceSelector.matchNames") or [monitor.namespace]
        elsewhere = sorted(
            {p.namespace for p in pods if p.namespace not in namespaces and _meant(monitor, p, services)}
        )
        if elsewhere and not lookup(spec, "namespaceSelector.any"):  # what it is meant for is in a namespace it skips
            wanted = ", ".join([*namespaces, *elsewhere])
            fix = (
                f"give {monitor.kind} {monitor.namespace}/{monitor.name} namespaceSelector: {{matchNames: [{wanted}]}}"
            )
            yield monitor, next((m for m in misses if "namespaceSelector" in m), misses[0]), fix
            continue
        if misses:
            yield monitor, misses[0], _miss_fix(misses[0])
            continue
        selector = spec.get("selector") or {}
        if not selector.get("matchLabels") or selector.get("matchExpressions") or lookup(spec, "namespaceSelector.any"):
            continue  # an empty or expression selector: not modelled
        if monitor.kind != "ServiceMonitor" or any(n in charted for n in namespaces):
            continue  # a chart (or a Job, an operator) may make the pods or the Service, which the graph cannot list
        if any(s.namespace in namespaces and _selects(selector, s.labels) for s in services):
            continue  # a Service whose pods the graph does not see: service-selects' concern
        yield (
            monitor,
            f"its selector {selector['matchLabels']} matches no Service in {', '.join(namespaces)}, the "
            "namespaces it reads",
            "label the Service it is meant to scrape as its selector says, or fix the selector (or its namespaceSelector)",
        )


def _miss_fix(why: str) -> str:
    if "scrapeTimeout" in why:
        return (
            "set the endpoint's scrapeTimeout to at most its interval (or raise interval to at least the timeout a "
            "slow /metrics needs)"
        )
    return "make the monitor's selectors and port match what Prometheus reads"


def _meant(monitor: KubeObject, pod: Pod, services: list[Service]) -> str:
    """The Service (ServiceMonitor) or pod (PodMonitor) in ``pod``'s namespace the monitor's selector matches."""
    selector = (monitor.manifest.get("spec") or {}).get("selector") or {}
    if monitor.kind == "PodMonitor":
        return f"pod {pod.what}" if _selects(selector, pod.labels) else ""
    chosen = [s for s in services if s.selects(pod) and _selects(selector, s.labels)]
    return f"Service {chosen[0].namespace}/{chosen[0].name}" if chosen else ""


def _reads_only(spec: dict[str, Any], namespace: str) -> str:
    # prometheus-operator: "namespaceSelector: Selector to select which namespaces the Kubernetes Endpoints
    # objects are discovered from"; without one, only the monitor's own namespace.
    names = lookup(spec, "namespaceSelector.matchNames")
    if names:
        return f"its namespaceSelector reads only {', '.join(names)}"
    return f"it has no namespaceSelector, so it discovers targets only in its own namespace {namespace}"


# The prometheus-operator kinds a Prometheus picks by label, and the prometheusSpec key of its selector for each.
SELECTOR_KEYS = {"ServiceMonitor": "serviceMonitor", "PodMonitor": "podMonitor", "PrometheusRule": "rule"}


def unread(monitor: KubeObject, releases: list[Any]) -> str | None:
    """Why no Prometheus of ``releases`` reads ``monitor`` (a ServiceMonitor, PodMonitor or PrometheusRule; None
    when one does)."""
    key = SELECTOR_KEYS[monitor.kind]
    labels = {str(k): str(v) for k, v in (monitor.manifest.get("metadata", {}).get("labels") or {}).items()}
    reasons = []
    for release in releases:
        prometheus = lookup(release.inputs.get("values") or {}, "prometheus.prometheusSpec") or {}
        name = str(release.inputs.get("name") or release.name)
        selector = prometheus.get(f"{key}Selector")
        if not selector and prometheus.get(f"{key}SelectorNilUsesHelmValues", True) is not False:
            selector = {"matchLabels": {"release": name}}  # the chart's default: only its own release's monitors
        if selects(selector or {}, labels):
            return None
        reasons.append(
            f"Prometheus of release {name} reads only {key}s matching {selector} (its labels: {labels or 'none'})"
        )
    return "; ".join(reasons) or None


def seconds(duration: object) -> float | None:
    """A Prometheus duration (``1m30s``, ``500ms``) in seconds; None for anything else (a number, a variable)."""
    text = str(duration).strip() if isinstance(duration, str) else ""
    if not _DURATION.fullmatch(text):
        return None
    return sum(int(n) * _UNIT_SECONDS[unit] for n, unit in _PART.findall(text))


def timeout_refusal(monitor: KubeObject, releases: list[Any]) -> str | None:
    """Why a Prometheus of ``releases`` that reads ``monitor`` skips it for a scrapeTimeout above its interval (None
    when none does).

    prometheus-operator pkg/prometheus/resource_selector.go: for every endpoint of a ServiceMonitor
    (``spec.endpoints``) or PodMonitor (``spec.podMetricsEndpoints``), validateScrapeIntervalAndTimeout compares
    the endpoint's scrapeTimeout with its interval, or with the Prometheus's own spec.scrapeInterval where the
    endpoint sets none (CompareScrapeTimeoutToScrapeInterval: 'scrapeTimeout "30s" greater than scrapeInterval
    "15s"'); the selector then drops the whole monitor (a rejected resource, event InvalidConfiguration) and
    generates no scrape job for it. Prometheus itself refuses such a config ("scrape timeout greater than scrape
    interval", config.go), which is why the operator checks first.
    """
    if unread(monitor, releases) is not None:
        return None  # read by none: ``unread`` says so
    key = "endpoints" if monitor.kind == "ServiceMonitor" else "podMetricsEndpoints"
    for release in releases:
        if unread(monitor, [release]) is not None:
            continue
        prometheus = lookup(release.inputs.get("values") or {}, "prometheus.prometheusSpec") or {}
        default = str(prometheus.get("scrapeInterval") or DEFAULT_SCRAPE_INTERVAL)
        for i, endpoint in enumerate(lookup(monitor.manifest, f"spec.{key}") or []):
            if not isinstance(endpoint, dict) or not endpoint.get("scrapeTimeout"):
                continue
            interval = str(endpoint.get("interval") or default)
            timeout, every = seconds(endpoint.get("scrapeTimeout")), seconds(interval)
            if timeout is None or every is None or timeout <= every:
                continue
            whose = "its interval" if endpoint.get("interval") else "the Prometheus's global scrapeInterval"
            name = str(release.inputs.get("name") or release.name)
            return (
                f"its spec.{key}[{i}].scrapeTimeout {endpoint['scrapeTimeout']!r} is longer than {whose} "
                f"{interval!r}: the Prometheus Operator of release {name} rejects the whole monitor "
                f'(scrapeTimeout "{endpoint["scrapeTimeout"]}" greater than scrapeInterval "{interval}") and '
                "writes no scrape job for it"
            )
    return None


def _selects(selector: dict[str, Any], labels: dict[str, Any]) -> bool:
    # An empty selector is left unjudged: read as selecting nothing, so that no scrape is claimed for it.
    return label_selectors.matches(selector, labels, empty=False)


def _snake(rule: dict[str, Any]) -> dict[str, Any]:
    return {_KEYS.get(k, k): v for k, v in rule.items()}


def _go_template(replacement: str) -> str:
    """Go's ``$1``/``${name}`` in a replacement, as Python's ``re`` expands groups."""
    return _GO_GROUP.sub(lambda m: f"\\g<{m.group(1) or m.group(2)}>", replacement.replace("\\", "\\\\"))


def _relabel(labels: dict[str, str], rules: list[dict[str, Any]]) -> dict[str, str] | None:
    """Prometheus's relabelling: the target's labels (``__*`` dropped, ``instance`` defaulted), or None if dropped."""
    return _relabel_steps(labels, rules)[0]


def _dropped_by(pod: Pod, labels: dict[str, str], rules: list[dict[str, Any]]) -> tuple[str, str]:
    """The keep or drop rule that drops a target with the value it refused, and the fix (for messages)."""
    _, rule, joined = _relabel_steps(labels, rules)
    if rule is None:
        return "its relabel_configs drop it", "make the job's relabel_configs keep the pod"
    sources = ";".join(str(s) for s in rule.get("source_labels") or [])
    regex = str(rule.get("regex", "(.*)"))
    verb = "keeps only" if rule.get("action") == "keep" else "drops"
    refuses = f"the {rule.get('action')} rule {verb} values matching the regex {regex!r}"
    annotation = _ANNOTATION.fullmatch(sources)
    named = [k for k in pod.annotations if annotation and _UNSAFE.sub("_", k) == annotation.group(1)]
    if annotation and not named:
        return (
            f"its pod template has no annotation Prometheus reads as {sources}, and {refuses}",
            f"annotate the pod template (the annotation Prometheus reads as {sources}) with a value {regex!r} matches",
        )
    what = f"annotation {named[0]}" if named else sources  # the annotation's own name, not its label's
    why = f"its {what} is {joined!r}, and {refuses}, which Prometheus anchors at both ends and matches case-sensitively"
    fix = f"set the pod's {what} to a value the regex {regex!r} matches exactly"
    if rule.get("action") == "keep" and re.fullmatch(r"[\w.-]+", regex):
        fix = f"set the pod's {what} to {regex!r} exactly (the keep regex is case-sensitive)"
    return why, fix


def _relabel_steps(
    labels: dict[str, str], rules: list[dict[str, Any]]
) -> tuple[dict[str, str] | None, dict[str, Any] | None, str]:
    """``_relabel``'s result, and on a drop the keep/drop rule that dropped the target with the value it read."""
    kept, rule, joined = _relabel_all(labels, rules)
    if kept is None:
        return None, rule, joined
    kept.setdefault("instance", kept.get("__address__", ""))
    return {k: v for k, v in kept.items() if not k.startswith("__")}, None, ""


def _relabel_all(
    labels: dict[str, str], rules: list[dict[str, Any]]
) -> tuple[dict[str, str] | None, dict[str, Any] | None, str]:
    """Every label after relabelling, ``__address__`` and the other ``__*`` ones included (None: dropped, with the
    keep/drop rule and the value it read)."""
    labels = dict(labels)
    for rule in rules:
        action = str(rule.get("action") or "replace").lower()
        regex = re.compile(str(rule.get("regex", "(.*)")))
        joined = str(rule.get("separator", ";")).join(labels.get(s, "") for s in rule.get("source_labels") or [])
        if action == "replace":
            found = regex.fullmatch(joined)
            if found is None:
                continue
            target = found.expand(_go_template(str(rule.get("target_label", ""))))
            value = found.expand(_go_template(str(rule.get("replacement", "$1"))))
            if value:
                labels[target] = value
            else:
                labels.pop(target, None)  # Prometheus deletes a label replaced by the empty string
        elif action in ("keep", "drop"):
            if (regex.fullmatch(joined) is not None) != (action == "keep"):
                return None, rule, joined
        elif action in ("labeldrop", "labelkeep"):
            labels = {k: v for k, v in labels.items() if (regex.fullmatch(k) is None) == (action == "labeldrop")}
        elif action == "labelmap":
            replacement = _go_template(str(rule.get("replacement", "$1")))
            for key, value in list(labels.items()):
                if (found := regex.fullmatch(key)) is not None:
                    labels[found.expand(replacement)] = value
        elif action in ("lowercase", "uppercase"):
            labels[str(rule.get("target_label"))] = joined.lower() if action == "lowercase" else joined.upper()
    return labels, None, ""
