"""Telemetry that deploys but loses its data: traces without IAM, metrics without a disk, Grafana's public password.

- An OpenTelemetry collector with an ``awsxray`` exporter signs PutTraceSegments
  with its pod's credentials. Without a role (IRSA or Pod Identity) that may
  write to X-Ray, every export is refused and traces vanish; the pod stays Ready.
- kube-prometheus-stack keeps Prometheus's TSDB on an emptyDir unless
  ``prometheusSpec.storageSpec`` claims a volume: every restart or reschedule
  loses the retention the dashboards and the autoscaler history read.
- Its Grafana's admin password is ``prom-operator`` unless the values set one
  or name a Secret (which must then exist, or Grafana never starts).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import yaml

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject, lookup
from tokenplane.proof.deployability.iam_policy import pod_roles
from tokenplane.proof.render import RenderedResource

XRAY = "xray-iam"
STATE = "monitoring-state"
PROMETHEUS_CHART = "kube-prometheus-stack"
CHART_PASSWORD = "prom-operator"  # the chart's default grafana.adminPassword, printed in its README
XRAY_ACTION = "xray:PutTraceSegments"
XRAY_MANAGED = ("AWSXRayDaemonWriteAccess", "AWSXrayWriteOnlyAccess", "AWSXrayFullAccess")


def check_xray(graph: Graph) -> Iterator[Finding]:
    for config in graph.kube(None, "ConfigMap"):
        if not any(_exports_to_xray(value) for value in (config.manifest.get("data") or {}).values()):
            continue
        for workload in graph.workloads(config.resource.region):
            if workload.namespace != config.namespace or not _mounts(workload, config.name):
                continue
            account = str(workload.pod_spec().get("serviceAccountName") or "default")
            roles = pod_roles(graph, workload, account)
            if not roles:
                yield Finding(
                    XRAY,
                    workload.urn,
                    f"{workload.kind} {workload.namespace}/{workload.name} exports traces to X-Ray (ConfigMap "
                    f"{config.name}) but its service account {account} has no IAM role: every PutTraceSegments "
                    "is refused and the traces are lost",
                    f"give {workload.namespace}/{account} an IRSA role (or a Pod Identity association) with "
                    "AWSXRayDaemonWriteAccess",
                )
            elif not any(_grants_xray(graph, role) for role in roles):
                yield Finding(
                    XRAY,
                    workload.urn,
                    f"{workload.kind} {workload.namespace}/{workload.name} exports traces to X-Ray but the role of "
                    f"{account} ({', '.join(r.name for r in roles)}) may not call {XRAY_ACTION}",
                    "attach AWSXRayDaemonWriteAccess to that role",
                )


def check_state(graph: Graph) -> Iterator[Finding]:
    for release in graph.releases(None, PROMETHEUS_CHART):
        values = release.inputs.get("values") or {}
        namespace = str(release.inputs.get("namespace") or "default")
        claim = lookup(values, "prometheus.prometheusSpec.storageSpec.volumeClaimTemplate.spec") or {}
        storage_class = claim.get("storageClassName")
        classes = {c.name for c in graph.kube(release.region, "StorageClass")}
        if not claim:
            yield Finding(
                STATE,
                release.urn,
                "Prometheus keeps its TSDB on an emptyDir (no prometheusSpec.storageSpec): a restart or a "
                "reschedule loses every stored series",
                "claim a volume: prometheus.prometheusSpec.storageSpec.volumeClaimTemplate on an EBS (gp3) class",
            )
        elif storage_class not in classes:
            yield Finding(
                STATE,
                release.urn,
                f"Prometheus claims its volume from StorageClass {storage_class!r}, which is not in the cluster "
                f"(it has {', '.join(sorted(classes)) or 'none'}): the claim stays Pending and Prometheus never starts",
                "use one of the cluster's StorageClasses, or create that class",
            )
        admin = lookup(values, "grafana.admin") or {}
        secret = admin.get("existingSecret")
        password = lookup(values, "grafana.adminPassword")
        if secret:
            if not any(s.name == secret for s in graph.kube(release.region, "Secret") if s.namespace == namespace):
                yield Finding(
                    STATE,
                    release.urn,
                    f"Grafana reads its admin login from Secret {namespace}/{secret}, which nothing creates: "
                    "its pod never starts",
                    f"create Secret {namespace}/{secret} (keys {admin.get('userKey')}, {admin.get('passwordKey')})",
                )
        elif password in (None, CHART_PASSWORD):
            yield Finding(
                STATE,
                release.urn,
                f"Grafana keeps the chart's default admin password ({CHART_PASSWORD!r}), which anyone can look up",
                "generate one (pulumi_random) into a Secret and set grafana.admin.existingSecret",
            )


def _exports_to_xray(value: Any) -> bool:
    try:
        config = yaml.safe_load(str(value))
    except yaml.YAMLError:
        return False
    if not isinstance(config, dict):
        return False
    pipelines = lookup(config, "service.pipelines") or {}
    used = {e for p in pipelines.values() if isinstance(p, dict) for e in p.get("exporters") or []}
    return any(str(e).split("/")[0] == "awsxray" for e in used)


def _mounts(workload: KubeObject, config_map: str) -> bool:
    volumes = workload.pod_spec().get("volumes") or []
    return any((v.get("configMap") or {}).get("name") == config_map for v in volumes)


def _grants_xray(graph: Graph, role: RenderedResource) -> bool:
    for resource in graph.resources:
        if role.urn not in resource.property_dependencies.get("role", []):
            continue
        if resource.type == "aws:iam/rolePolicyAttachment:RolePolicyAttachment":
            if str(resource.inputs.get("policyArn", "")).rsplit("/", 1)[-1] in XRAY_MANAGED:
                return True
        elif resource.type == "aws:iam/rolePolicy:RolePolicy" and _allows(resource.inputs.get("policy"), XRAY_ACTION):
            return True
    return False


def _allows(policy: Any, action: str) -> bool:
    try:
        document = json.loads(str(policy))
    except json.JSONDecodeError:
        return False
    for statement in document.get("Statement") or []:
        actions = statement.get("Action") or []
        actions = [actions] if isinstance(actions, str) else actions
        if statement.get("Effect") == "Allow" and any(a in (action, "xray:*", "*") for a in actions):
            return True
    return False
