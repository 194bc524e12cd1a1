"""A blackbox exporter loads its configuration file, and the monitors that scrape it make it probe something.

``blackbox-config``: the exporter (prometheus/blackbox_exporter, recognised by its image ``prom/blackbox-exporter`` or
``quay.io/prometheus/blackbox-exporter``) reads ``--config.file`` (the image's CMD gives
``--config.file=/etc/blackbox_exporter/config.yml``; a flag-less argv leaves kingpin's default ``blackbox.yml``, from
the working directory) at start with yaml.v3 and ``KnownFields(true)``, and exits 1 on any error ("Error loading
config"): https://github.com/prometheus/blackbox_exporter/blob/v0.25.0/config/config.go (``ReloadConfig``, ``Config``,
``Module``) and ``main.go``. So a key the structs do not define (top level: ``modules``; a module: ``prober``,
``timeout``, ``http``, ``tcp``, ``icmp``, ``dns``, ``grpc``; the fields of ``tcp``, ``icmp``, ``dns``, ``grpc``) is
fatal, and ``Module.Timeout`` is a ``time.Duration``, which yaml.v3 fills only from a string ``time.ParseDuration``
accepts: an integer or float (``timeout: 5``) is refused ("cannot unmarshal !!int ``5`` into time.Duration":
https://github.com/go-yaml/yaml/blob/v3/decode.go), as is a unit Go does not know (``1d``). The pod crash-loops and
its Deployment's await times out. A module whose ``prober`` is not one of ``http``, ``tcp``, ``icmp``, ``dns``,
``grpc`` (``prober/handler.go``'s ``Probers``) loads, but every probe with it answers 400 "Unknown prober".

``blackbox-probe-params``: a ServiceMonitor or PodMonitor endpoint that scrapes a blackbox exporter's pod with
``params.module``/``params.target``: the exporter probes only on ``/probe`` (``main.go``); the Operator's endpoint
``path`` defaults to ``/metrics`` (https://prometheus-operator.dev/docs/api-reference/api/#monitoring.coreos.com/v1.Endpoint),
the exporter's own metrics, where the params are ignored, so nothing is probed. On ``/probe`` the handler reads
``params.Get("module")`` and ``params.Get("target")`` (``prober/handler.go``): the first value of each only, so a
second target (or module) in one endpoint is never probed; a module the loaded configuration does not define
answers 400 ``Unknown module``, the target is down and no ``probe_success`` exists.

Cannot see: keys inside an ``http`` module (its inline ``http_client_config`` comes from prometheus/common) or nested
TLS and validator blocks; a configuration the program does not mount (the image's own, a file from elsewhere), an
argv or file unknown at render time; Probe objects and the platform's own scrape jobs; monitors with
``matchExpressions`` selectors.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import yaml
from pulumi.runtime.rpc import UNKNOWN  # the engine's unknown-value sentinel

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject, lookup
from tokenplane.proof.deployability.known_images import repository
from tokenplane.proof.deployability.mounted_files import mounted_files

CONFIG_RULE = "blackbox-config"
PARAMS_RULE = "blackbox-probe-params"
IMAGES = frozenset({"prom/blackbox-exporter", "prometheus/blackbox-exporter", "quay.io/prometheus/blackbox-exporter"})
IMAGE_CONFIG = "/etc/blackbox_exporter/config.yml"  # the Dockerfile's CMD
FLAG_DEFAULT = "blackbox.yml"  # kingpin's default, relative to the working directory
PROBERS = ("http", "tcp", "icmp", "dns", "grpc")
MODULE_KEYS = frozenset({"prober", "timeout", *PROBERS})
# The yaml tags of each prober's struct in config.go (v0.25.0); http is not judged (inline HTTPClientConfig).
PROBER_KEYS = {
    "tcp": frozenset(
        {"preferred_ip_protocol", "ip_protocol_fallback", "source_ip_address", "query_response", "tls", "tls_config"}
    ),
    "icmp": frozenset(
        {"preferred_ip_protocol", "ip_protocol_fallback", "source_ip_address", "payload_size", "dont_fragment", "ttl"}
    ),
    "dns": frozenset(
        {
            "preferred_ip_protocol",
            "ip_protocol_fallback",
            "dns_over_tls",
            "tls_config",
            "source_ip_address",
            "transport_protocol",
            "query_class",
            "query_name",
            "query_type",
            "recursion_desired",
            "valid_rcodes",
            "validate_answer_rrs",
            "validate_authority_rrs",
            "validate_additional_rrs",
        }
    ),
    "grpc": frozenset({"service", "tls", "tls_config", "ip_protocol_fallback", "preferred_ip_protocol"}),
}
# time.ParseDuration: "0", or a sequence of decimal numbers each with a unit.
_GO_DURATION = re.compile(r"[-+]?(?:0|(?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+)")


@dataclass(frozen=True)
class Exporter:
    """A blackbox exporter container, its pod's labels and the configuration it loads (None: not known)."""

    workload: KubeObject
    container: dict[str, Any]
    labels: dict[str, str]
    path: str | None
    config: Any  # the parsed YAML, or None where unknown or not YAML

    @property
    def what(self) -> str:
        w = self.workload
        return f"blackbox exporter {self.container.get('name')} of {w.kind} {w.namespace}/{w.name}"


def _known(value: Any) -> bool:
    return isinstance(value, str) and UNKNOWN not in value


def _config_path(container: dict[str, Any]) -> str | None:
    """The file ``--config.file`` names, or None where the argv is not the exporter's or not known."""
    command = container.get("command")
    if command and not (
        isinstance(command, list) and _known(command[0]) and posixpath.basename(command[0]) == "blackbox_exporter"
    ):
        return None
    args = list(command[1:]) if command else list(container.get("args") or [])
    if not command and not container.get("args"):
        return IMAGE_CONFIG
    if not all(_known(a) for a in args):
        return None
    path = FLAG_DEFAULT
    for i, arg in enumerate(args):
        if arg.startswith("--config.file="):
            path = arg.split("=", 1)[1]
        elif arg == "--config.file" and i + 1 < len(args):
            path = args[i + 1]
    workdir = container.get("workingDir") or "/"
    return path if path.startswith("/") else posixpath.join(str(workdir), path) if _known(workdir) else None


def _routed(container: dict[str, Any]) -> bool:
    argv = [*(container.get("command") or []), *(container.get("args") or [])]
    return any(not _known(a) or str(a).startswith(("--web.route-prefix", "--web.external-url")) for a in argv)


def exporters(graph: Graph, region: str | None) -> Iterator[Exporter]:
    for workload in graph.workloads(region):
        pod = workload.pod_spec()
        labels = lookup(workload.manifest, "spec.template.metadata.labels") or {}
        for container in pod.get("containers") or []:
            if repository(str(container.get("image") or "")) not in IMAGES:
                continue
            path = _config_path(container)
            text = mounted_files(graph, workload, pod, container).get(path) if path else None
            config: Any = None
            if text is not None:
                try:
                    config = yaml.safe_load(text)
                except yaml.YAMLError:
                    config = None
            yield Exporter(workload, container, {str(k): str(v) for k, v in labels.items()}, path, config)


def check_config(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        for exporter in exporters(graph, region):
            yield from _config_findings(exporter)


def check_params(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        yield from _monitor_findings(graph, region, list(exporters(graph, region)))


def _config_findings(exporter: Exporter) -> Iterator[Finding]:
    config = exporter.config
    if not isinstance(config, dict):
        return
    where = f"{exporter.what} (its --config.file {exporter.path}, from the program's mounted ConfigMap or Secret)"
    fatal: list[str] = [f"unknown top-level key {k!r} (only 'modules')" for k in config if k != "modules"]
    modules = config.get("modules")
    unknown_probers: list[str] = []
    for name, module in (modules or {}).items() if isinstance(modules, dict) else ():
        if not isinstance(module, dict):
            continue
        fatal += [
            f"module {name!r} has unknown key {k!r} (a module has {', '.join(sorted(MODULE_KEYS))})"
            for k in module
            if k not in MODULE_KEYS
        ]
        timeout = module.get("timeout")
        if isinstance(timeout, int | float) and not isinstance(timeout, bool) and timeout != 0:
            # (yaml.v3 releases differ on a bare 0, which some accept: not judged)
            fatal.append(
                f"module {name!r} has timeout: {timeout} (a number: time.Duration is decoded only from a string "
                "with a unit, so yaml.v3 says cannot unmarshal into time.Duration)"
            )
        elif isinstance(timeout, str) and not _GO_DURATION.fullmatch(timeout):
            fatal.append(f"module {name!r} has timeout: {timeout!r}, which time.ParseDuration refuses")
        for kind, keys in PROBER_KEYS.items():
            block = module.get(kind)
            if isinstance(block, dict):
                fatal += [f"module {name!r}'s {kind} has unknown key {k!r}" for k in block if k not in keys]
        prober = module.get("prober")
        if isinstance(prober, str) and prober not in PROBERS:
            unknown_probers.append(f"{name!r} (prober {prober!r})")
    if fatal:
        yield Finding(
            CONFIG_RULE,
            exporter.workload.urn,
            f"{where}: the exporter decodes it with yaml.v3 and KnownFields at start and exits 1, as {fatal[0]}"
            + (f" (and {len(fatal) - 1} more)" if len(fatal) > 1 else "")
            + ": 'Error loading config', so the pod crash-loops and the workload is never ready",
            "write durations as Go duration strings with a unit (timeout: 5s) and use only the keys of "
            "blackbox_exporter's config.go for the pinned version (check with --config.check)",
        )
    elif unknown_probers:
        yield Finding(
            CONFIG_RULE,
            exporter.workload.urn,
            f"{where}: module {', '.join(unknown_probers)} names a prober the exporter does not have (it has "
            f"{', '.join(PROBERS)}): every probe with it answers 400 'Unknown prober' and probe_success is never 1",
            f"set the module's prober to one of {', '.join(PROBERS)}",
        )


def _str_map(value: Any) -> dict[str, Any]:
    return {str(k): v for k, v in value.items()} if isinstance(value, dict) else {}


def _scraped(graph: Graph, region: str, monitor: KubeObject, found: list[Exporter]) -> list[Exporter]:
    """The blackbox exporters ``monitor``'s selectors pick (matchLabels only)."""
    spec = _str_map(monitor.manifest.get("spec"))
    selector = _str_map(spec.get("selector"))
    wanted = _str_map(selector.get("matchLabels"))
    if not wanted or selector.get("matchExpressions"):
        return []
    any_namespace = bool(lookup(spec, "namespaceSelector.any"))
    namespaces = lookup(spec, "namespaceSelector.matchNames") or [monitor.namespace]

    def read(namespace: str) -> bool:
        return any_namespace or namespace in namespaces

    def matches(labels: dict[str, Any]) -> bool:
        return all(labels.get(k) == v for k, v in wanted.items())

    if monitor.kind == "PodMonitor":
        return [e for e in found if read(e.workload.namespace) and matches(e.labels)]
    out: list[Exporter] = []
    for service in graph.kube(region, "Service"):
        labels = _str_map(lookup(service.manifest, "metadata.labels"))
        chooses = _str_map(lookup(service.manifest, "spec.selector"))
        if not read(service.namespace) or not matches(labels) or not chooses:
            continue
        out += [
            e
            for e in found
            if e.workload.namespace == service.namespace
            and all(e.labels.get(k) == str(v) for k, v in chooses.items())
            and e not in out
        ]
    return out


def _monitor_findings(graph: Graph, region: str, found: list[Exporter]) -> Iterator[Finding]:
    if not found:
        return
    for monitor in graph.kube(region, "ServiceMonitor", "PodMonitor"):
        scraped = _scraped(graph, region, monitor, found)
        if not scraped:
            continue
        spec = _str_map(monitor.manifest.get("spec"))
        what = f"{monitor.kind} {monitor.namespace}/{monitor.name}"
        endpoints = spec.get("endpoints") or spec.get("podMetricsEndpoints") or []
        for index, endpoint in enumerate(endpoints if isinstance(endpoints, list) else []):
            if not isinstance(endpoint, dict):
                continue
            params = _str_map(endpoint.get("params"))
            module, target = params.get("module"), params.get("target")
            if not module and not target:
                continue
            at = f"{what}'s endpoint {index} (scraping {scraped[0].what})"
            path = endpoint.get("path", "/metrics")
            prefixed = any(_routed(e.container) for e in scraped)  # --web.route-prefix moves /probe: not judged
            if _known(path) and path != "/probe" and not prefixed:
                yield Finding(
                    PARAMS_RULE,
                    monitor.urn,
                    f"{at} passes params module/target but its path is {path!r}"
                    + (" (the Operator's default)" if "path" not in endpoint else "")
                    + ": the exporter runs a probe only on /probe; there it serves "
                    + ("its own metrics, which ignore the params" if path == "/metrics" else "no probe (or a 404)")
                    + ", so no probe runs and no probe_success series exists",
                    "set the endpoint's path: /probe",
                )
                continue
            for name, values in (("target", target), ("module", module)):
                if isinstance(values, list) and len(values) > 1:
                    yield Finding(
                        PARAMS_RULE,
                        monitor.urn,
                        f"{at} passes {len(values)} {name} values {values}: Prometheus sends them as repeated "
                        f"{name}= parameters of one scrape and the exporter reads params.Get({name!r}), the first "
                        f"only, so {values[1:]} are never probed and nothing says so",
                        f"give each {name} its own endpoint (or use a Probe object, or a scrape job relabelling "
                        "__param_target per target)",
                    )
            names = module if isinstance(module, list) else [module]
            first = names[0] if names else None
            if not _known(first):
                continue
            for exporter in scraped:
                modules = exporter.config.get("modules") if isinstance(exporter.config, dict) else None
                if isinstance(modules, dict) and first not in modules:
                    defined = ", ".join(str(m) for m in modules) or "none"
                    yield Finding(
                        PARAMS_RULE,
                        monitor.urn,
                        f"{at} asks for module {first!r}, which {exporter.what}'s configuration ({exporter.path}) "
                        f"does not define (its modules: {defined}): every probe answers 400 Unknown module "
                        f"{first!r}, the target is down and no probe_success series exists",
                        f"set params.module to a module of the configuration ({defined}) or define {first!r} there",
                    )
                    break
