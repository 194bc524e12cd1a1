"""Held-out deployability set 38: 18 defects and 8 correct variants of examples/single-region, written blind.

Run from the repository root:

    .venv/bin/python -m benchmarks.heldout_deployability_38.run

``cases.yaml`` says, per case, what changed and what a real ``pulumi up`` (or the running platform) does.
The blind run was on main at 694ecfc (set 37's fixes and the port of 21 validations in). ``JUDGEMENT`` is the
reading of the blind run's messages: the author did not run the project's checks against the set.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

JUDGEMENT: dict[str, tuple[bool, str]] = {
    "catalog_alb_name_over_32_chars": (
        False,
        "wrong reason: only ip-target-readiness (the catalog's ALB ip targets in a namespace without the readiness gate label), which the correct catalog programs carry too",
    ),
    "catalog_alb_dualstack_in_ipv4_vpc": (
        False,
        "wrong reason: only ip-target-readiness (the catalog's ALB ip targets in a namespace without the readiness gate label), which the correct catalog programs carry too",
    ),
    "catalog_alb_backend_protocol_https_to_plain_http": (
        False,
        "wrong reason: only ip-target-readiness (the catalog's ALB ip targets in a namespace without the readiness gate label), which the correct catalog programs carry too",
    ),
    "catalog_status_proxy_variable_without_resolver": (
        False,
        "wrong reason: only ip-target-readiness (the catalog's ALB ip targets in a namespace without the readiness gate label), which the correct catalog programs carry too",
    ),
    "catalog_status_proxy_resolver_vpc_dns": (
        False,
        "wrong reason: only ip-target-readiness (the catalog's ALB ip targets in a namespace without the readiness gate label), which the correct catalog programs carry too",
    ),
    "catalog_status_proxy_svc_short_name": (
        False,
        "wrong reason: only ip-target-readiness (the catalog's ALB ip targets in a namespace without the readiness gate label), which the correct catalog programs carry too",
    ),
    "catalog_scaledobject_cpu_average_value_as_percent": (
        False,
        "wrong reason: only ip-target-readiness (the catalog's ALB ip targets in a namespace without the readiness gate label), which the correct catalog programs carry too",
    ),
    "catalog_scaledobject_cpu_only_min_replicas_zero": (
        True,
        "api-validation: KEDA's webhook refuses cpu-only triggers with minReplicaCount 0",
    ),
    "heartbeat_put_metric_data_on_namespace_arn": (
        True,
        'iam-resource-type: cloudwatch:PutMetricData supports no resource type, so only "*" authorises it',
    ),
}

if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 38, JUDGEMENT))
