"""Every component a collector's service names is defined in its configuration's section of that kind.

The OpenTelemetry Collector validates its configuration before it starts anything (``otelcol/config.go``
``Config.Validate``, https://github.com/open-telemetry/opentelemetry-collector/blob/main/otelcol/config.go): each id
in ``service.extensions`` must be a key of ``extensions`` ("service::extensions: references extension %q which is
not configured"), and in each ``service.pipelines.<id>`` each receiver must be a key of ``receivers`` or
``connectors``, each processor a key of ``processors``, each exporter a key of ``exporters`` or ``connectors``
("service::pipelines::traces: references processor \\"batch\\" which is not configured";
https://opentelemetry.io/docs/collector/configuration/#service). A component id is ``type[/name]``, matched whole
(``batch/fast`` is not ``batch``). The collector exits with that error, so a workload's pods restart in
CrashLoopBackOff, never become Ready, and Pulumi's await on the Deployment fails.

Judged where the whole configuration is known (``otel_collector_config.collectors``: the ``--config`` files come
from ConfigMaps or Secrets the program mounts, or are inline ``yaml:``). Cannot see: configurations from ``env:``,
``http(s):`` or ``--set``, files from the image or from objects outside the program, a component defined under a
``${...}`` key.
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.otel_collector_config import collectors, pipelines, section

RULE = "otel-components-defined"
# What each list may name: (the list, the kind in the collector's error, the sections that may define it).
_LISTS = (
    ("receivers", "receiver", ("receivers", "connectors")),
    ("processors", "processor", ("processors",)),
    ("exporters", "exporter", ("exporters", "connectors")),
)


def check(graph: Graph) -> Iterator[Finding]:
    for collector in collectors(graph):
        config = collector.config
        for ext in section(config, "service").get("extensions") or []:
            if isinstance(ext, str) and ext not in section(config, "extensions"):
                yield _finding(
                    collector.workload.urn, collector.where, "service::extensions", "extension", ext, "extensions"
                )
        for name, pipeline in pipelines(config).items():
            for field, kind, sections in _LISTS:
                for ref in pipeline.get(field) or []:
                    if not isinstance(ref, str) or "${" in ref:
                        continue
                    if any(ref in section(config, s) for s in sections):
                        continue
                    yield _finding(
                        collector.workload.urn, collector.where, f"service::pipelines::{name}", kind, ref, sections[0]
                    )


def _finding(urn: str, where: str, path: str, kind: str, ref: str, home: str) -> Finding:
    return Finding(
        RULE,
        urn,
        f"{where}: {path} lists {kind} {ref!r}, which its configuration's {home} section does not define: the "
        f'collector refuses the configuration at start ("{path}: references {kind} \\"{ref}\\" which is not '
        'configured") and exits, so the pods restart in CrashLoopBackOff and never become Ready',
        f"define {ref} under {home} (an id is type[/name] and must match whole), or remove it from {path}",
    )
