"""Deployability checks: what AWS and Kubernetes controllers would do with the rendered graph.

The mock render proves structure (URNs, schemas, references). It cannot see
controllers, quotas or AWS's own validation; each module here models one of
them and reports, per resource, the rule it breaks and the fix. ``tokenplane
plan`` and ``tokenplane check`` run them all and exit 1 on any finding.

It reads the rendered graph (``tokenplane.proof.render``'s records, as plain data) and may import the
core's vocabulary (spec, catalog, the AWS zone catalog, startup times, the vLLM CLI schema); never
pulumi, ``components`` or ``serving``: a check models what a controller would do, it does not run one.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Iterable
from pathlib import Path

from tokenplane.proof.deployability import (
    access,
    access_entries,
    access_modes,
    addon_iam,
    alarm_metrics,
    alarm_units,
    alias_targets,
    annotation_placement,
    annotation_readers,
    api_validation,
    aurora_instances,
    aws_cli,
    aws_replay,
    aws_schemas,
    aws_values,
    backup_selection,
    backup_windows,
    bare_pods,
    caa_records,
    claims_retained,
    client_hosts,
    client_tls,
    cluster_names,
    condition_keys,
    controller_values,
    controllers,
    dashboards_loaded,
    data_dir_empty,
    database_recovery,
    dead_letters,
    device_plugin,
    dns,
    dns_policy,
    drains,
    ecr,
    egress,
    endpoint_policies,
    endpoints,
    env_config_rollout,
    env_references,
    event_sources,
    events_emitted,
    exec_argv,
    first_run,
    flows,
    function_vpc_permissions,
    generated_names,
    host_ports,
    hostnames,
    iam_arn_paths,
    iam_arns,
    iam_exclusive,
    iam_names,
    iam_s3,
    image_commands,
    image_mounts,
    image_tags,
    images,
    images_kept,
    ingress_claimed,
    interface_endpoints,
    irsa,
    kafka_topics,
    keda_identity,
    keda_queries,
    keys,
    kms_grants,
    kube_providers,
    lambda_concurrency,
    lambda_handlers,
    lambda_network,
    launch_keys,
    lb_attributes,
    lb_permissions,
    lb_subnets,
    literal_names,
    load_balancers,
    memory_floor,
    metrics,
    model_cache,
    msk_iam,
    names,
    namespace_admission,
    namespaces,
    network,
    network_policy,
    node_capacity,
    node_daemonsets,
    node_disk,
    node_group_size,
    node_group_version,
    node_labels,
    node_user_data,
    nodes_join,
    offerings,
    ordering,
    platform_contract,
    pod_affinity,
    pod_fits,
    pod_security,
    probes,
    provisioners,
    pull_through_cache,
    query_ranges,
    quorum_startable,
    rbac_grants,
    rds_parameters,
    rds_values,
    read_only_root,
    record_names,
    references,
    replaceable_names,
    replica_owner,
    requested_region,
    rollouts,
    root_device,
    rule_expressions,
    run_as,
    runtime_contract,
    s3_acls,
    s3_replication,
    scale_from_zero,
    scalers,
    scrape_ports,
    security_group_rules,
    selectors,
    service_access,
    service_accounts,
    service_addresses,
    service_cidr,
    service_log_groups,
    service_roles,
    shm,
    short_names,
    singletons,
    sns_filters,
    source_vpc,
    spread_selectors,
    state_machine_definition,
    state_machine_logs,
    static_volumes,
    storage,
    storage_classes,
    store_data,
    store_ports,
    subnets,
    targets,
    telemetry,
    termination,
    timeouts,
    tls,
    tmpfs,
    topology,
    traffic_policy,
    ttl_expires,
    unique_keys,
    utilization_requests,
    versions,
    vllm_argv,
    volume_modes,
    volume_writable,
    weights,
    weights_kept,
    zonal_binding,
    zone_answers,
)
from tokenplane.proof.deployability.assumptions import Assumptions
from tokenplane.proof.deployability.findings import Finding, GraphDataMissing, Prerequisite
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.prerequisites import prerequisites
from tokenplane.proof.render import RenderResult
from tokenplane.spec import PlatformSpec

Check = Callable[[Graph], Iterable[Finding]]
# Rule name -> check, in the order a platform engineer would review: cluster, workloads, AWS names and network.
CHECKS: dict[str, Check] = {
    device_plugin.RULE: device_plugin.check,
    load_balancers.RULE: load_balancers.check,
    controllers.RULE: controllers.check,
    ingress_claimed.RULE: ingress_claimed.check,
    lb_subnets.RULE: lb_subnets.check,
    lb_permissions.RULE: lb_permissions.check,
    controller_values.RULE: controller_values.check,
    lb_attributes.RULE: lb_attributes.check,
    tls.RULE: tls.check,
    storage.RULE: storage.check,
    addon_iam.RULE: addon_iam.check,
    storage_classes.RULE: storage_classes.check,
    store_data.RULE: store_data.check,
    data_dir_empty.RULE: data_dir_empty.check,
    volume_modes.RULE: volume_modes.check,
    access_modes.RULE: access_modes.check,
    timeouts.RULE: timeouts.check,
    weights.RULE: weights.check,
    weights_kept.RULE: weights_kept.check,
    service_access.RULE: service_access.check,
    lambda_network.RULE: lambda_network.check,
    function_vpc_permissions.RULE: function_vpc_permissions.check,
    service_log_groups.RULE: service_log_groups.check,
    node_group_size.RULE: node_group_size.check,
    singletons.RULE: singletons.check,
    unique_keys.RULE: unique_keys.check,
    images.RULE: images.check,
    image_tags.RULE: image_tags.check,
    references.RULE: references.check,
    endpoints.SELECTS: endpoints.check_selects,
    endpoints.TARGET_PORT: endpoints.check_target_ports,
    endpoints.PROBE_PORT: endpoints.check_probes,
    probes.PATH: probes.check_paths,
    probes.PATIENCE: probes.check_patience,
    probes.SCHEME: probes.check_schemes,
    shm.RULE: shm.check,
    run_as.RULE: run_as.check,
    read_only_root.RULE: read_only_root.check,
    image_commands.RULE: image_commands.check,
    image_mounts.RULE: image_mounts.check,
    runtime_contract.RULE: runtime_contract.check,
    env_references.RULE: env_references.check,
    volume_writable.RULE: volume_writable.check,
    keys.RULE: keys.check,
    annotation_placement.RULE: annotation_placement.check,
    selectors.RULE: selectors.check,
    cluster_names.RULE: cluster_names.check,
    cluster_names.HEADLESS: cluster_names.check_headless,
    targets.RULE: targets.check,
    scalers.RULE: scalers.check,
    scalers.SCALE_UP: scalers.check_scale_up,
    termination.RULE: termination.check,
    tmpfs.RULE: tmpfs.check,
    replica_owner.RULE: replica_owner.check,
    scale_from_zero.RULE: scale_from_zero.check,
    backup_selection.RULE: backup_selection.check,
    backup_selection.RETENTION: backup_selection.check_retention,
    utilization_requests.RULE: utilization_requests.check,
    utilization_requests.CONTAINER: utilization_requests.check_container,
    keda_queries.RULE: keda_queries.check,
    query_ranges.RULE: query_ranges.check,
    rule_expressions.RULE: rule_expressions.check,
    caa_records.RULE: caa_records.check,
    api_validation.RULE: api_validation.check,
    kafka_topics.RULE: kafka_topics.check,
    service_accounts.RULE: service_accounts.check,
    rbac_grants.RULE: rbac_grants.check,
    rbac_grants.ROLE: rbac_grants.check_roles,
    namespaces.RULE: namespaces.check,
    names.RULE: names.check,
    offerings.RULE: offerings.check,
    network.RULE: network.check,
    subnets.RULE: subnets.check,
    aws_values.RULE: aws_values.check,
    rds_values.RULE: rds_values.check,
    aurora_instances.RULE: aurora_instances.check,
    rds_parameters.RULE: rds_parameters.check,
    backup_windows.RULE: backup_windows.check,
    database_recovery.RULE: database_recovery.check,
    replaceable_names.RULE: replaceable_names.check,
    security_group_rules.RULE: security_group_rules.check,
    event_sources.RULE: event_sources.check,
    lambda_concurrency.RULE: lambda_concurrency.check,
    lambda_handlers.RULE: lambda_handlers.check,
    events_emitted.RULE: events_emitted.check,
    service_roles.RULE: service_roles.check,
    state_machine_logs.RULE: state_machine_logs.check,
    state_machine_definition.RULE: state_machine_definition.check,
    ttl_expires.RULE: ttl_expires.check,
    source_vpc.RULE: source_vpc.check,
    aws_cli.RULE: aws_cli.check,
    aws_replay.RULE: aws_replay.check,
    aws_schemas.RULE: aws_schemas.check,
    generated_names.RULE: generated_names.check,
    literal_names.RULE: literal_names.check,
    dead_letters.RULE: dead_letters.check,
    nodes_join.RULE: nodes_join.check,
    interface_endpoints.RULE: interface_endpoints.check,
    network_policy.RULE: network_policy.check,
    network_policy.POD_GROUPS: network_policy.check_pod_groups,
    flows.FLOW: flows.check,
    flows.EXPOSED: flows.check_exposed,
    service_addresses.RULE: service_addresses.check,
    short_names.RULE: short_names.check,
    dns_policy.RULE: dns_policy.check,
    traffic_policy.RULE: traffic_policy.check,
    egress.RULE: egress.check,
    store_ports.RULE: store_ports.check,
    ecr.RULE: ecr.check,
    images_kept.RULE: images_kept.check,
    vllm_argv.RULE: vllm_argv.check,
    metrics.RULE: metrics.check,
    scrape_ports.RULE: scrape_ports.check,
    alarm_metrics.RULE: alarm_metrics.check,
    alarm_units.RULE: alarm_units.check,
    dashboards_loaded.RULE: dashboards_loaded.check,
    telemetry.XRAY: telemetry.check_xray,
    telemetry.STATE: telemetry.check_state,
    ordering.CRD_ORDER: ordering.check_crd_order,
    ordering.CLUSTER_READY: ordering.check_cluster_ready,
    kube_providers.RULE: kube_providers.check,
    pod_fits.RULE: pod_fits.check,
    pod_affinity.RULE: pod_affinity.check,
    host_ports.RULE: host_ports.check,
    pod_security.RULE: pod_security.check,
    exec_argv.RULE: exec_argv.check,
    namespace_admission.RULE: namespace_admission.check,
    node_capacity.RULE: node_capacity.check,
    node_disk.RULE: node_disk.check,
    root_device.RULE: root_device.check,
    node_user_data.RULE: node_user_data.check,
    node_labels.RULE: node_labels.check,
    node_group_version.RULE: node_group_version.check,
    node_daemonsets.RULE: node_daemonsets.check,
    topology.RULE: topology.check,
    dns.RULE: dns.check,
    record_names.RULE: record_names.check,
    alias_targets.RULE: alias_targets.check,
    hostnames.RULE: hostnames.check,
    zone_answers.RULE: zone_answers.check,
    client_hosts.RULE: client_hosts.check,
    client_tls.RULE: client_tls.check,
    access.RULE: access.check,
    access_entries.RULE: access_entries.check,
    access_entries.AUTHORIZES: access_entries.authorizes,
    keda_identity.RULE: keda_identity.check,
    irsa.RULE: irsa.check,
    iam_s3.RULE: iam_s3.check,
    kms_grants.RULE: kms_grants.check,
    launch_keys.RULE: launch_keys.check,
    s3_replication.RULE: s3_replication.check,
    s3_replication.ROLE_RULE: s3_replication.check_role,
    s3_acls.RULE: s3_acls.check,
    s3_acls.LOG_DELIVERY: s3_acls.check_log_delivery,
    endpoint_policies.RULE: endpoint_policies.check,
    msk_iam.RULE: msk_iam.check,
    pull_through_cache.RULE: pull_through_cache.check,
    iam_arns.RULE: iam_arns.check,
    iam_arn_paths.RULE: iam_arn_paths.check,
    iam_names.RULE: iam_names.check,
    iam_exclusive.RULE: iam_exclusive.check,
    condition_keys.RULE: condition_keys.check,
    annotation_readers.RULE: annotation_readers.check,
    requested_region.RULE: requested_region.check,
    sns_filters.RULE: sns_filters.check,
    first_run.RULE: first_run.check,
    versions.RULE: versions.check,
    rollouts.RULE: rollouts.check,
    drains.RULE: drains.check,
    drains.ONE_BUDGET: drains.check_one_budget,
    bare_pods.RULE: bare_pods.check,
    service_cidr.RULE: service_cidr.check,
    platform_contract.RULE: platform_contract.check,
    memory_floor.RULE: memory_floor.check,
    provisioners.RULE: provisioners.check,
    claims_retained.RULE: claims_retained.check,
    model_cache.RULE: model_cache.check,
    quorum_startable.RULE: quorum_startable.check,
    spread_selectors.RULE: spread_selectors.check,
    zonal_binding.RULE: zonal_binding.check,
    static_volumes.RULE: static_volumes.check,
    env_config_rollout.RULE: env_config_rollout.check,
}


def run(spec: PlatformSpec | None, rendered: RenderResult, assume: Assumptions | None = None) -> list[Finding]:
    """Every finding of every check over one rendered stack.

    ``spec`` is the stack's spec, or None for a program that composes components without one; ``assume``, what
    exists outside the program (an existing cluster, existing namespaces).

    Raises:
        GraphDataMissing: a check needed a value the render does not have.
    """
    graph = Graph(spec, rendered, assume or Assumptions())
    return [finding for rule, check in CHECKS.items() for finding in _guarded(rule, check, graph, rendered)]


CHECK_CRASHED = "check-crashed"


def rule_names() -> list[str]:
    """Every rule a finding may carry, so a waiver may name it: each check's, and a crashed check's."""
    return [*CHECKS, CHECK_CRASHED]


def _guarded(rule: str, check: Check, graph: Graph, rendered: RenderResult) -> list[Finding]:
    """One check's findings; a check that raises becomes a finding, so the report is written and says which.

    A crash is a bug in the check, not in the program, but the program is then unproven: it fails the run like
    any finding. GraphDataMissing stays an exception: it is the render's gap, reported as such by the callers.
    """
    try:
        return list(check(graph))
    except GraphDataMissing:
        raise
    except Exception as e:  # any bug in one check must not hide the other checks' findings
        frame = traceback.extract_tb(e.__traceback__)[-1]
        where = f"{Path(frame.filename).name}:{frame.lineno}"
        return [
            Finding(
                CHECK_CRASHED,
                _stack_urn(rendered),
                f"the {rule!r} check raised {type(e).__name__}: {e} (at {where}), so this program is not proven "
                "by it; the other checks ran",
                "this is a tokenplane bug: report it with the program; until it is fixed, waive "
                f"{CHECK_CRASHED!r} for this stack with a justified exception",
            )
        ]


def _stack_urn(rendered: RenderResult) -> str:
    """The stack's own URN, built from any resource's (the render keeps no record of the Stack itself)."""
    for resource in rendered.resources:
        stack, project = resource.urn.split("::")[0:2]
        name = stack.removeprefix("urn:pulumi:")
        return f"{stack}::{project}::pulumi:pulumi:Stack::{project}-{name}"
    return "urn:pulumi:stack::project::pulumi:pulumi:Stack::project-stack"


def prerequisites_of(spec: PlatformSpec | None, rendered: RenderResult) -> list[Prerequisite]:
    return prerequisites(Graph(spec, rendered))


__all__ = [
    "CHECKS",
    "CHECK_CRASHED",
    "Assumptions",
    "Finding",
    "GraphDataMissing",
    "Prerequisite",
    "prerequisites_of",
    "run",
]
