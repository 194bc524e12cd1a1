"""Held-out deployability set 48: 18 defects and 8 correct variants of examples/single-region, written blind.

Run from the repository root: ``python -m benchmarks.heldout_deployability_48.run``. ``cases.yaml`` says what each case
changes and what a real ``pulumi up`` (or the running platform) does with it; ``JUDGEMENT`` holds any per-case verdicts
recorded after the offline checks were run against the set. The blind run was on main at a007003 (the set merged
onto f64200b: set 47's fixes in); ``JUDGEMENT`` is the reading of its messages. Its six misses were not fixed in the
session that wrote it (the time left went to the release's full CI run).
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

JUDGEMENT: dict[str, tuple[bool, str]] = {
    "batch_workers_in_gateway_namespace": (
        True,
        "flow-allowed: batch-workers -> model-gateway:8080 is blocked by the model gateway's ingress policy",
    ),
    "batch_workers_without_system_cpu_for_their_maximum": (
        True,
        "node-capacity: at their maxima the system pods request 41.4 vCPUs against 34.5 (batch-workers 32 x 0.5)",
    ),
    "peak_rps_raised_without_system_cpu": (
        True,
        "node-capacity: at their maxima the system pods request 37.4 vCPUs against 34.5 (ai-gateway 9 x 2)",
    ),
    "finops_consumer_outside_ledger_namespace": (
        True,
        "references-exist: secret clickhouse-credentials does not exist in llm-serving: its pods never start",
    ),
    "finops_ledger_clients_name_consumer_metering_consumer": (
        True,
        "flow-allowed: finops-consumer -> clickhouse:8123 is blocked by the ledger's ingress policy",
    ),
    "finops_ledger_backups_every_zero_hours": (
        True,
        "api-validation: schedule '0 */0 * * *': step of range should be a positive number",
    ),
    "weights_published_to_new_bucket_pool_reads_registry": (
        True,
        "weights-published: nothing publishes the weights to the registry prefix the pool's init container reads",
    ),
    "prompt_docs_cluster_ip_with_load_balancer_source_ranges": (
        True,
        "api-validation: loadBalancerSourceRanges on a ClusterIP Service (Forbidden)",
    ),
    "prompt_docs_projected_configmaps_same_item_path": (
        True,
        "api-validation: two projected files at 'index.html': conflicting duplicate paths",
    ),
    "prompt_docs_tmp_volume_declared_twice": (
        True,
        "api-validation: volume 'tmp' declared twice (Duplicate value)",
    ),
    "pool_placement_min_replicas_zero": (
        True,
        "scale-from-zero: minReplicaCount 0 while every trigger reads series only the pool's own pods export",
    ),
    "serving_deps_otel_endpoint_on_otlp_http_port": (
        True,
        "flow-allowed: the gateways -> otel-collector:4318 is blocked: the collector's policy admits 4317",
    ),
}

if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 48, JUDGEMENT))
