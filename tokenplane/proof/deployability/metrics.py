"""An autoscaler trigger reads a metric only something in the cluster exports.

A KEDA Prometheus trigger on a metric nobody exports returns no data; KEDA
then holds the pool at its floor (or errors), while the stack looks healthy.
GPU metrics (``DCGM_FI_*``) come only from NVIDIA's DCGM exporter.
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, lookup

RULE = "metrics-exported"
DCGM_CHART = "dcgm-exporter"


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        exporters = graph.releases(region, DCGM_CHART)
        for scaled in graph.kube(region, "ScaledObject"):
            for trigger in lookup(scaled.manifest, "spec.triggers") or []:
                query = str(lookup(trigger, "metadata.query") or "")
                if "DCGM_" in query and not exporters:
                    yield Finding(
                        RULE,
                        scaled.urn,
                        f"trigger {trigger.get('name')} queries a DCGM metric, but no {DCGM_CHART} runs in {region}: "
                        "the query returns nothing and the pool never scales on it",
                        f"install the {DCGM_CHART} chart on the GPU nodes",
                    )
