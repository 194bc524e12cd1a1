"""The API server's own validators, ported rule by rule: each defect planted beside its correct twin.

Every case adds one object to minimal's rendered graph (a program's own object, or a copy of one minimal ships
with one field changed) and asserts that ``api-validation`` reports it, naming the field, the validator's message
and the fix; the twin differs only in the one field and must stay clean. None of these is a held-out case: each
is written from the validator's source (kubernetes/kubernetes pkg/apis/*/validation).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from tests.proof.deployability.test_set3_invariants import deployment, plus, rule, shipped, system_pod
from tokenplane.proof.deployability import Finding

API = "api-validation"
Manifest = dict[str, Any]


def _found(manifest: Manifest) -> list[Finding]:
    found = rule(plus(manifest), API)
    name = manifest["metadata"]["name"]
    assert all(f.urn.endswith(f"planted-{name}") for f in found), found
    return found


def _pod(**extra: Any) -> Manifest:
    return deployment("rules", system_pod(**extra))


def _container(**fields: Any) -> Manifest:
    return _pod(containers=[{**system_pod()["containers"][0], **fields}])


def _host_network(port: Manifest) -> Manifest:
    return _pod(hostNetwork=True, containers=[{**system_pod()["containers"][0], "ports": [port]}])


def _init(**fields: Any) -> Manifest:
    init = {"name": "warm", "image": "busybox:1.36", "command": ["true"], **fields}
    return _pod(initContainers=[init])


def _obj(kind: str, api: str, spec: Manifest | None = None, **top: Any) -> Manifest:
    meta = {"name": "rules", "namespace": "llm-data"}
    return {"apiVersion": api, "kind": kind, "metadata": meta, **({"spec": spec} if spec is not None else {}), **top}


def _service(**spec: Any) -> Manifest:
    ports = [{"name": "http", "port": 80, "targetPort": 8080}]
    return _obj("Service", "v1", {"selector": {"app.kubernetes.io/name": "rules"}, "ports": ports, **spec})


def _ingress(path: Manifest) -> Manifest:
    backend = {"service": {"name": "rules", "port": {"number": 80}}}
    paths = [{"backend": backend, **path}]
    return _obj("Ingress", "networking.k8s.io/v1", {"rules": [{"host": "chat.example.com", "http": {"paths": paths}}]})


def _policy(rule_: Manifest, **spec: Any) -> Manifest:
    return _obj(
        "NetworkPolicy",
        "networking.k8s.io/v1",
        {"podSelector": {}, "ingress": [rule_], "policyTypes": ["Ingress"], **spec},
    )


def _hpa(metric: Manifest) -> Manifest:
    target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "rules"}
    spec = {"scaleTargetRef": target, "minReplicas": 1, "maxReplicas": 3, "metrics": [metric]}
    return _obj("HorizontalPodAutoscaler", "autoscaling/v2", spec)


def _cpu(target: Manifest) -> Manifest:
    return {"type": "Resource", "resource": {"name": "cpu", "target": target}}


def _job(**spec: Any) -> Manifest:
    template = {"spec": system_pod(restartPolicy="Never")}
    return _obj("Job", "batch/v1", {"template": template, **spec})


def _cronjob(**spec: Any) -> Manifest:
    job = {"spec": {"template": {"spec": system_pod(restartPolicy="OnFailure")}}}
    return _obj("CronJob", "batch/v1", {"schedule": "0 3 * * *", "jobTemplate": job, **spec})


def _pvc(**spec: Any) -> Manifest:
    base = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "10Gi"}}}
    return _obj("PersistentVolumeClaim", "v1", {**base, **spec})


def _limits(item: Manifest) -> Manifest:
    return _obj("LimitRange", "v1", {"limits": [item]})


def _shipped_chat(edit: Callable[[Manifest], None]) -> Manifest:
    """A copy of minimal's own vllm-chat Deployment, renamed, with ``edit`` applied to its pod spec."""
    manifest = copy.deepcopy(shipped("Deployment", "vllm-chat"))
    manifest["metadata"] = {**manifest["metadata"], "name": "chat-copy"}
    edit(manifest["spec"]["template"]["spec"])
    return manifest


GPU_TAINT = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
HTTP_PROBE = {"httpGet": {"path": "/health", "port": 8080}}
ZONE = "topology.kubernetes.io/zone"
SPREAD = {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}


def _expr(operator: str, values: list[str] | None) -> Manifest:
    requirement = {"key": "node.kubernetes.io/instance-type", "operator": operator}
    required = {
        "nodeSelectorTerms": [{"matchExpressions": [{**requirement, **({"values": values} if values else {})}]}]
    }
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}


def _secret_volume(**source: Any) -> list[Manifest]:
    return [{"name": "creds", "secret": {"secretName": "creds", **source}}]


# (id, planted, correct twin, words the finding must have: the field, the validator's message, the fix)
CASES: list[tuple[str, Callable[[], Manifest], Callable[[], Manifest], tuple[str, ...]]] = [
    # --- scheduling_validation ---
    (
        "toleration Exists with a value",
        lambda: _pod(tolerations=[{**GPU_TAINT, "value": "true"}]),
        lambda: _pod(tolerations=[GPU_TAINT]),
        ("tolerations[0]", "value must be empty when `operator` is 'Exists'", "drop the value"),
    ),
    (
        "toleration with no key and operator Equal",
        lambda: _pod(tolerations=[{"operator": "Equal", "value": "x", "effect": "NoSchedule"}]),
        lambda: _pod(tolerations=[{"operator": "Exists"}]),
        ("no key", "operator must be Exists when `key` is empty", "set operator Exists"),
    ),
    (
        "tolerationSeconds without NoExecute",
        lambda: _pod(tolerations=[{**GPU_TAINT, "tolerationSeconds": 300}]),
        lambda: _pod(tolerations=[{**GPU_TAINT, "effect": "NoExecute", "tolerationSeconds": 300}]),
        ("tolerationSeconds", "effect must be 'NoExecute' when `tolerationSeconds` is set", "set effect NoExecute"),
    ),
    (
        "toleration effect in the wrong case",
        lambda: _shipped_chat(lambda pod: pod.update(tolerations=[{**GPU_TAINT, "effect": "noSchedule"}])),
        lambda: _shipped_chat(lambda pod: pod.update(tolerations=[GPU_TAINT])),
        ("effect 'noSchedule'", "validateTaintEffect", "case matters"),
    ),
    (
        "toleration operator unknown",
        lambda: _pod(tolerations=[{**GPU_TAINT, "operator": "Exist"}]),
        lambda: _pod(tolerations=[GPU_TAINT]),
        ("operator 'Exist'", 'supported values: "Equal", "Exists"', "use operator Equal"),
    ),
    (
        "node affinity In without values",
        lambda: _pod(affinity=_expr("In", None)),
        lambda: _pod(affinity=_expr("In", ["g6e.xlarge"])),
        ("matchExpressions[0]", "must be specified when `operator` is 'In' or 'NotIn'", "list the values"),
    ),
    (
        "node affinity Exists with values",
        lambda: _pod(affinity=_expr("Exists", ["g6e.xlarge"])),
        lambda: _pod(affinity=_expr("Exists", None)),
        ("matchExpressions[0]", "may not be specified when `operator` is 'Exists'", "drop values"),
    ),
    (
        "node affinity Gt with two values",
        lambda: _pod(affinity=_expr("Gt", ["1", "2"])),
        lambda: _pod(affinity=_expr("Gt", ["1"])),
        ("Gt with 2 values", "must be specified single value", "exactly one"),
    ),
    (
        "required node affinity with no terms",
        lambda: _pod(
            affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}}
        ),
        lambda: _pod(affinity=_expr("Exists", None)),
        ("nodeSelectorTerms", "must have at least one node selector term", "add a term"),
    ),
    (
        "pod anti-affinity without topologyKey",
        lambda: _pod(
            affinity={
                "podAntiAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 100, "podAffinityTerm": {"labelSelector": {"matchLabels": {"a": "b"}}}}
                    ]
                }
            }
        ),
        lambda: _pod(
            affinity={
                "podAntiAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 100,
                            "podAffinityTerm": {"labelSelector": {"matchLabels": {"a": "b"}}, "topologyKey": ZONE},
                        }
                    ]
                }
            }
        ),
        ("podAffinityTerm without a topologyKey", "can not be empty", "set topologyKey"),
    ),
    (
        "spread maxSkew 0",
        lambda: _pod(topologySpreadConstraints=[{**SPREAD, "maxSkew": 0}]),
        lambda: _pod(topologySpreadConstraints=[SPREAD]),
        ("topologySpreadConstraints[0].maxSkew", "must be greater than zero", "set maxSkew to 1"),
    ),
    (
        "spread whenUnsatisfiable unknown",
        lambda: _pod(topologySpreadConstraints=[{**SPREAD, "whenUnsatisfiable": "DoNotScheduleAnyway"}]),
        lambda: _pod(topologySpreadConstraints=[{**SPREAD, "whenUnsatisfiable": "ScheduleAnyway"}]),
        ("whenUnsatisfiable", 'supported values: "DoNotSchedule", "ScheduleAnyway"', "DoNotSchedule (hard)"),
    ),
    (
        "spread minDomains with ScheduleAnyway",
        lambda: _pod(topologySpreadConstraints=[{**SPREAD, "whenUnsatisfiable": "ScheduleAnyway", "minDomains": 3}]),
        lambda: _pod(topologySpreadConstraints=[{**SPREAD, "minDomains": 3}]),
        ("minDomains 3", "can only use minDomains if whenUnsatisfiable=DoNotSchedule", "only with whenUnsatisfiable"),
    ),
    (
        "two spread constraints on one key and action",
        lambda: _pod(topologySpreadConstraints=[SPREAD, {**SPREAD, "maxSkew": 2}]),
        lambda: _pod(topologySpreadConstraints=[SPREAD, {**SPREAD, "topologyKey": "kubernetes.io/hostname"}]),
        ("{topology.kubernetes.io/zone, DoNotSchedule}", "Duplicate value", "merge them"),
    ),
    (
        "dnsPolicy None without dnsConfig",
        lambda: _pod(dnsPolicy="None"),
        lambda: _pod(dnsPolicy="None", dnsConfig={"nameservers": ["10.100.0.10"]}),
        ("dnsPolicy None without a dnsConfig", "must provide `dnsConfig` when `dnsPolicy` is None", "nameservers"),
    ),
    (
        "dnsPolicy unknown",
        lambda: _pod(dnsPolicy="ClusterFirstWithHostNetwork"),
        lambda: _pod(dnsPolicy="ClusterFirstWithHostNet", hostNetwork=True),
        ("dnsPolicy 'ClusterFirstWithHostNetwork'", "validateDNSPolicy: Unsupported value", "use ClusterFirst"),
    ),
    (
        "hostNetwork with a hostPort other than the containerPort",
        lambda: _host_network({"containerPort": 9100, "hostPort": 19100}),
        lambda: _host_network({"containerPort": 9100}),  # hostPort defaults to the containerPort
        ("hostPort 19100", "must match `hostPort` when `hostNetwork` is true", "containerPort = hostPort"),
    ),
    (
        "activeDeadlineSeconds 0",
        lambda: _job(template={"spec": system_pod(restartPolicy="Never", activeDeadlineSeconds=0)}),
        lambda: _job(template={"spec": system_pod(restartPolicy="Never", activeDeadlineSeconds=600)}),
        ("activeDeadlineSeconds 0", "must be between 1 and 2147483647", "set activeDeadlineSeconds to 1"),
    ),
    (
        "dnsConfig with four nameservers",
        lambda: _pod(dnsConfig={"nameservers": ["10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5"]}),
        lambda: _pod(dnsConfig={"nameservers": ["10.0.0.2", "10.0.0.3", "10.0.0.4"]}),
        ("4 spec.template.spec.dnsConfig.nameservers", "must not have more than 3 nameservers", "at most 3"),
    ),
    # --- container_validation ---
    (
        "probe with two handlers",
        lambda: _container(readinessProbe={**HTTP_PROBE, "tcpSocket": {"port": 8080}}),
        lambda: _container(readinessProbe=HTTP_PROBE),
        ("readinessProbe with httpGet and tcpSocket", "may not specify more than 1 handler type", "keep one of"),
    ),
    (
        "probe with no handler",
        lambda: _container(livenessProbe={"periodSeconds": 10}),
        lambda: _container(livenessProbe={**HTTP_PROBE, "periodSeconds": 10}),
        ("livenessProbe with no handler", "must specify a handler type", "give"),
    ),
    (
        "httpGet port quoted",
        lambda: _container(readinessProbe={"httpGet": {"path": "/health", "port": "8080"}}),
        lambda: _container(readinessProbe={"httpGet": {"path": "/health", "port": "http"}}),
        ("readinessProbe.httpGet.port '8080'", "must contain at least one letter", "unquoted"),
    ),
    (
        "httpGet scheme in lower case",
        lambda: _container(livenessProbe={"httpGet": {"path": "/", "port": 8080, "scheme": "https"}}),
        lambda: _container(livenessProbe={"httpGet": {"path": "/", "port": 8080, "scheme": "HTTPS"}}),
        ("httpGet.scheme 'https'", 'supported values: "HTTP", "HTTPS"', "in capitals"),
    ),
    (
        "preStop with exec and sleep",
        lambda: _container(lifecycle={"preStop": {"exec": {"command": ["sleep", "5"]}, "sleep": {"seconds": 5}}}),
        lambda: _container(lifecycle={"preStop": {"sleep": {"seconds": 5}}}),
        ("lifecycle.preStop with exec and sleep", "may not specify more than 1 handler type", "keep one of"),
    ),
    (
        "probe on a plain init container",
        lambda: _init(readinessProbe={"exec": {"command": ["true"]}}),
        lambda: _init(readinessProbe={"exec": {"command": ["true"]}}, restartPolicy="Always"),
        (
            "readinessProbe on an init container",
            "may not be set for init containers without restartPolicy=Always",
            "sidecar",
        ),
    ),
    (
        "init container restartPolicy unknown",
        lambda: _init(restartPolicy="always"),
        lambda: _init(restartPolicy="Always"),
        ("restartPolicy 'always'", 'supported values: "Always"', "sidecar"),
    ),
    (
        "negative runAsUser",
        lambda: _pod(securityContext={"runAsUser": -1}),
        lambda: _pod(securityContext={"runAsUser": 65532}),
        ("securityContext.runAsUser -1", "must be between 0 and 2147483647", "non-negative id"),
    ),
    (
        "seccomp Localhost without a profile",
        lambda: _container(securityContext={"seccompProfile": {"type": "Localhost"}}),
        lambda: _container(securityContext={"seccompProfile": {"type": "Localhost", "localhostProfile": "vllm.json"}}),
        ("seccompProfile of type Localhost", "must be set when seccomp type is Localhost", "localhostProfile"),
    ),
    (
        "seccomp RuntimeDefault with a profile",
        lambda: _pod(securityContext={"seccompProfile": {"type": "RuntimeDefault", "localhostProfile": "x.json"}}),
        lambda: _pod(securityContext={"seccompProfile": {"type": "RuntimeDefault"}}),
        (
            "seccompProfile of type RuntimeDefault",
            "can only be set when seccomp type is Localhost",
            "drop localhostProfile",
        ),
    ),
    (
        "privileged without escalation",
        lambda: _container(securityContext={"privileged": True, "allowPrivilegeEscalation": False}),
        lambda: _container(securityContext={"privileged": True}),
        ("allowPrivilegeEscalation false", "cannot set `allowPrivilegeEscalation` to false and privileged", "drop"),
    ),
    (
        "imagePullPolicy unknown",
        lambda: _container(imagePullPolicy="IfNotExists"),
        lambda: _container(imagePullPolicy="IfNotPresent"),
        ("imagePullPolicy 'IfNotExists'", 'supported values: "Always", "IfNotPresent", "Never"', "case matters"),
    ),
    (
        "a container resource without a domain",
        lambda: _container(resources={"limits": {"cpu": "1", "memory": "1Gi", "gpu": 1}}),
        lambda: _container(resources={"limits": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": 1}}),
        ("resources.limits[gpu]", "must be a standard resource for containers", "nvidia.com/gpu"),
    ),
    # --- volume_validation ---
    (
        "defaultMode written as decimal 644",
        lambda: _pod(volumes=_secret_volume(defaultMode=644)),
        lambda: _pod(volumes=_secret_volume(defaultMode=0o644)),
        ("secret.defaultMode 644", "must be a number between 0 and 0777 (octal)", "0o644"),
    ),
    (
        "a volume with two sources",
        lambda: _pod(volumes=[{"name": "cache", "emptyDir": {}, "hostPath": {"path": "/mnt/cache"}}]),
        lambda: _pod(volumes=[{"name": "cache", "emptyDir": {}}, {"name": "host", "hostPath": {"path": "/mnt"}}]),
        ("volumes[cache] with emptyDir and hostPath", "may not specify more than 1 volume type", "one source"),
    ),
    (
        "an item path with '..'",
        lambda: _pod(volumes=_secret_volume(items=[{"key": "token", "path": "../token"}])),
        lambda: _pod(volumes=_secret_volume(items=[{"key": "token", "path": "auth/token"}])),
        ("items path '../token'", "must not contain '..'", "relative to the mount"),
    ),
    (
        "an absolute item path",
        lambda: _pod(
            volumes=[{"name": "cfg", "configMap": {"name": "cfg", "items": [{"key": "a", "path": "/etc/a"}]}}]
        ),
        lambda: _pod(volumes=[{"name": "cfg", "configMap": {"name": "cfg", "items": [{"key": "a", "path": "a"}]}}]),
        ("items path '/etc/a'", "must be a relative path", "mountPath"),
    ),
    (
        "a negative emptyDir sizeLimit",
        lambda: _pod(volumes=[{"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "-1Gi"}}]),
        lambda: _pod(volumes=[{"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}}]),
        ("emptyDir.sizeLimit '-1Gi'", "SizeLimit field must be a valid resource quantity", "non-negative"),
    ),
    # --- service_validation ---
    (
        "externalTrafficPolicy on a ClusterIP Service",
        lambda: _service(externalTrafficPolicy="Local"),
        lambda: _service(type="LoadBalancer", externalTrafficPolicy="Local"),
        ("externalTrafficPolicy Local", "may only be set for externally-accessible services", "drop"),
    ),
    (
        "loadBalancerSourceRanges on a NodePort Service",
        lambda: _service(type="NodePort", loadBalancerSourceRanges=["203.0.113.0/24"]),
        lambda: _service(type="LoadBalancer", loadBalancerSourceRanges=["203.0.113.0/24"]),
        ("loadBalancerSourceRanges", "may only be used when `type` is 'LoadBalancer'", "make it a LoadBalancer"),
    ),
    (
        "a source range without a prefix",
        lambda: _service(type="LoadBalancer", loadBalancerSourceRanges=["203.0.113.7"]),
        lambda: _service(type="LoadBalancer", loadBalancerSourceRanges=["203.0.113.7/32"]),
        ("loadBalancerSourceRanges entry '203.0.113.7'", "must be a valid CIDR", "/32"),
    ),
    (
        "headless LoadBalancer",
        lambda: _service(type="LoadBalancer", clusterIP="None"),
        lambda: _service(clusterIP="None"),
        ("clusterIP None", "may not be set to 'None' for LoadBalancer services", "drop clusterIP"),
    ),
    (
        "ExternalName without externalName",
        lambda: _service(type="ExternalName"),
        lambda: _service(type="ExternalName", externalName="db.example.internal."),
        ("spec.externalName None", "Required value", "set spec.externalName"),
    ),
    (
        "sessionAffinityConfig without ClientIP",
        lambda: _service(sessionAffinityConfig={"clientIP": {"timeoutSeconds": 600}}),
        lambda: _service(sessionAffinity="ClientIP", sessionAffinityConfig={"clientIP": {"timeoutSeconds": 600}}),
        ("sessionAffinityConfig", "must not be set when session affinity is None", "ClientIP"),
    ),
    (
        "Service targetPort out of range",
        lambda: _service(ports=[{"name": "http", "port": 80, "targetPort": 80800}]),
        lambda: _service(ports=[{"name": "http", "port": 80, "targetPort": 8080}]),
        ("targetPort 80800", "must be between 1 and 65535", "1-65535"),
    ),
    (
        "healthCheckNodePort with externalTrafficPolicy Cluster",
        lambda: _service(type="LoadBalancer", healthCheckNodePort=30100),
        lambda: _service(type="LoadBalancer", externalTrafficPolicy="Local", healthCheckNodePort=30100),
        (
            "healthCheckNodePort 30100",
            "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy`",
            "Local",
        ),
    ),
    # --- networking_validation ---
    (
        "Ingress path without pathType",
        lambda: _ingress({"path": "/v1"}),
        lambda: _ingress({"path": "/v1", "pathType": "Prefix"}),
        ("paths[0] '/v1'", "pathType must be specified", "set pathType Prefix"),
    ),
    (
        "Ingress Prefix path not absolute",
        lambda: _ingress({"path": "v1", "pathType": "Prefix"}),
        lambda: _ingress({"path": "/v1", "pathType": "Prefix"}),
        ("paths[0] 'v1'", "must be an absolute path", "starting '/'"),
    ),
    (
        "Ingress service port name and number",
        lambda: _ingress(
            {
                "path": "/",
                "pathType": "Prefix",
                "backend": {"service": {"name": "rules", "port": {"name": "http", "number": 80}}},
            }
        ),
        lambda: _ingress(
            {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "rules", "port": {"name": "http"}}}}
        ),
        ("backend", "cannot set both port name & port number", "keep one of port.name"),
    ),
    (
        "Ingress path without a backend",
        lambda: _ingress({"path": "/", "pathType": "Prefix", "backend": {}}),
        lambda: _ingress({"path": "/", "pathType": "Prefix"}),
        ("backend", "resource or service backend is required", "backend.service"),
    ),
    (
        "NetworkPolicy endPort below port",
        lambda: _policy({"ports": [{"port": 9000, "endPort": 8000}]}),
        lambda: _policy({"ports": [{"port": 8000, "endPort": 9000}]}),
        ("ports[0]", "must be greater than or equal to `port`", "make endPort at least port"),
    ),
    (
        "NetworkPolicy endPort with a named port",
        lambda: _policy({"ports": [{"port": "http", "endPort": 8090}]}),
        lambda: _policy({"ports": [{"port": 8080, "endPort": 8090}]}),
        ("ports[0]", "may not be specified when `port` is non-numeric", "numeric port"),
    ),
    (
        "NetworkPolicy except outside its cidr",
        lambda: _policy({"from": [{"ipBlock": {"cidr": "10.0.0.0/16", "except": ["10.1.0.0/24"]}}]}),
        lambda: _policy({"from": [{"ipBlock": {"cidr": "10.0.0.0/16", "except": ["10.0.5.0/24"]}}]}),
        ("ipBlock.except '10.1.0.0/24'", "must be a strict subset of `cidr`", "each except inside cidr"),
    ),
    (
        "NetworkPolicy cidr without a prefix",
        lambda: _policy({"from": [{"ipBlock": {"cidr": "10.0.0.5"}}]}),
        lambda: _policy({"from": [{"ipBlock": {"cidr": "10.0.0.5/32"}}]}),
        ("ipBlock.cidr '10.0.0.5'", "must be a valid CIDR value", "/32"),
    ),
    (
        "NetworkPolicy ipBlock beside a selector",
        lambda: _policy({"from": [{"ipBlock": {"cidr": "10.0.0.0/16"}, "namespaceSelector": {}}]}),
        lambda: _policy({"from": [{"ipBlock": {"cidr": "10.0.0.0/16"}}, {"namespaceSelector": {}}]}),
        ("from[0]", "may not specify both ipBlock and another peer", "split it"),
    ),
    (
        "NetworkPolicy policyTypes in lower case",
        lambda: _policy({"ports": [{"port": 8080}]}, policyTypes=["ingress"]),
        lambda: _policy({"ports": [{"port": 8080}]}, policyTypes=["Ingress"]),
        ("policyTypes", 'supported values: "Ingress", "Egress"', "case matters"),
    ),
    # --- workload_validation ---
    (
        "PDB minAvailable a quoted number",
        lambda: _obj(
            "PodDisruptionBudget", "policy/v1", {"minAvailable": "1", "selector": {"matchLabels": {"a": "b"}}}
        ),
        lambda: _obj("PodDisruptionBudget", "policy/v1", {"minAvailable": 1, "selector": {"matchLabels": {"a": "b"}}}),
        (
            "spec.minAvailable '1'",
            "a valid percent string must be a numeric string followed by an ending '%'",
            "unquoted",
        ),
    ),
    (
        "PDB maxUnavailable over 100%",
        lambda: _obj(
            "PodDisruptionBudget", "policy/v1", {"maxUnavailable": "150%", "selector": {"matchLabels": {"a": "b"}}}
        ),
        lambda: _obj(
            "PodDisruptionBudget", "policy/v1", {"maxUnavailable": "50%", "selector": {"matchLabels": {"a": "b"}}}
        ),
        ("spec.maxUnavailable '150%'", "must not be greater than 100%", "100% or less"),
    ),
    (
        "rolling update maxSurge a quoted number",
        lambda: _pod() | {"spec": {**_pod()["spec"], "strategy": {"rollingUpdate": {"maxSurge": "1"}}}},
        lambda: _pod() | {"spec": {**_pod()["spec"], "strategy": {"rollingUpdate": {"maxSurge": 1}}}},
        ("rollingUpdate.maxSurge '1'", "a valid percent string", "write maxSurge as an integer"),
    ),
    (
        "Deployment revisionHistoryLimit negative",
        lambda: _pod() | {"spec": {**_pod()["spec"], "revisionHistoryLimit": -1}},
        lambda: _pod() | {"spec": {**_pod()["spec"], "revisionHistoryLimit": 0}},
        ("spec.revisionHistoryLimit -1", "ValidateDeploymentSpec: must be greater than or equal to 0", "0 or more"),
    ),
    (
        "StatefulSet podManagementPolicy unknown",
        lambda: _pod() | {"kind": "StatefulSet", "spec": {**_pod()["spec"], "podManagementPolicy": "Ordered"}},
        lambda: _pod() | {"kind": "StatefulSet", "spec": {**_pod()["spec"], "podManagementPolicy": "Parallel"}},
        ("podManagementPolicy 'Ordered'", "must be 'OrderedReady' or 'Parallel'", "use OrderedReady"),
    ),
    (
        "Job backoffLimit negative",
        lambda: _job(backoffLimit=-1),
        lambda: _job(backoffLimit=0),
        ("spec.backoffLimit -1", "must be greater than or equal to 0", "set backoffLimit to 0"),
    ),
    (
        "Indexed Job without completions",
        lambda: _job(completionMode="Indexed", parallelism=4),
        lambda: _job(completionMode="Indexed", parallelism=4, completions=8),
        ("completionMode Indexed without completions", "when completion mode is Indexed", "set completions"),
    ),
    (
        "CronJob concurrencyPolicy unknown",
        lambda: _cronjob(concurrencyPolicy="Forbidden"),
        lambda: _cronjob(concurrencyPolicy="Forbid"),
        ("concurrencyPolicy 'Forbidden'", 'supported values: "Allow", "Forbid", "Replace"', "case matters"),
    ),
    (
        "CronJob history limit negative",
        lambda: _cronjob(failedJobsHistoryLimit=-1),
        lambda: _cronjob(failedJobsHistoryLimit=0),
        ("failedJobsHistoryLimit -1", "must be greater than or equal to 0", "0 or more"),
    ),
    (
        "HPA metric type and source disagree",
        lambda: _hpa(
            {"type": "Pods", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}}
        ),
        lambda: _hpa(_cpu({"type": "Utilization", "averageUtilization": 70})),
        (
            "metrics[0].type Pods with resource",
            "must populate information for the given metric source",
            "matching its type",
        ),
    ),
    (
        "HPA Resource metric with only a value",
        lambda: _hpa(_cpu({"type": "Value", "value": "500m"})),
        lambda: _hpa(_cpu({"type": "AverageValue", "averageValue": "500m"})),
        ("resource.target", "must set either a target raw value or a target utilization", "averageUtilization"),
    ),
    (
        "HPA target type unknown",
        lambda: _hpa(_cpu({"type": "Percent", "averageUtilization": 70})),
        lambda: _hpa(_cpu({"type": "Utilization", "averageUtilization": 70})),
        ("target.type 'Percent'", "must be either Utilization, Value, or AverageValue", "Utilization"),
    ),
    (
        "HPA Pods metric without averageValue",
        lambda: _hpa(
            {"type": "Pods", "pods": {"metric": {"name": "queue_depth"}, "target": {"type": "Value", "value": "10"}}}
        ),
        lambda: _hpa(
            {
                "type": "Pods",
                "pods": {"metric": {"name": "queue_depth"}, "target": {"type": "AverageValue", "averageValue": "10"}},
            }
        ),
        ("pods.target with value", "must specify a positive target averageValue", "AverageValue"),
    ),
    (
        "PriorityClass named system-",
        lambda: _obj("PriorityClass", "scheduling.k8s.io/v1", value=1000) | {"metadata": {"name": "system-inference"}},
        lambda: (
            _obj("PriorityClass", "scheduling.k8s.io/v1", value=1000) | {"metadata": {"name": "inference-critical"}}
        ),
        ("'system-inference'", "prefix are reserved for system use only", "without the system- prefix"),
    ),
    (
        "PriorityClass above the user maximum",
        lambda: _obj("PriorityClass", "scheduling.k8s.io/v1", value=2_000_000_000) | {"metadata": {"name": "rules"}},
        lambda: _obj("PriorityClass", "scheduling.k8s.io/v1", value=1_000_000) | {"metadata": {"name": "rules"}},
        ("value 2000000000", "maximum allowed value of a user defined priority is 1000000000", "at most"),
    ),
    # --- quota_validation ---
    (
        "LimitRange default above max",
        lambda: _limits({"type": "Container", "max": {"memory": "4Gi"}, "default": {"memory": "8Gi"}}),
        lambda: _limits({"type": "Container", "max": {"memory": "8Gi"}, "default": {"memory": "4Gi"}}),
        ("default[memory] 8Gi above max[memory] 4Gi", "default value 8Gi is greater than max value 4Gi", "min <= "),
    ),
    (
        "LimitRange min above the defaulted request",
        # defaultRequest is absent, so it defaults to the default limit (500m), which is below min
        lambda: _limits({"type": "Container", "min": {"cpu": "1"}, "default": {"cpu": "500m"}}),
        lambda: _limits({"type": "Container", "min": {"cpu": "250m"}, "default": {"cpu": "500m"}}),
        (
            "min[cpu] 1 above defaultRequest[cpu] 500m",
            "min value 1 is greater than default request value 500m",
            "absent",
        ),
    ),
    (
        "LimitRange Pod item with a default",
        lambda: _limits({"type": "Pod", "max": {"cpu": "8"}, "default": {"cpu": "1"}}),
        lambda: _limits({"type": "Pod", "max": {"cpu": "8"}}),
        ("of type Pod with a default", "may not be specified when `type` is 'Pod'", "Container item"),
    ),
    (
        "ResourceQuota with a negative value",
        lambda: _obj("ResourceQuota", "v1", {"hard": {"requests.nvidia.com/gpu": "-1"}}),
        lambda: _obj("ResourceQuota", "v1", {"hard": {"requests.nvidia.com/gpu": "8"}}),
        ("spec.hard[requests.nvidia.com/gpu] '-1'", "must be greater than or equal to 0", "non-negative"),
    ),
    # --- storage_validation and ConfigMaps ---
    (
        "PVC without accessModes",
        lambda: _pvc(accessModes=[]),
        _pvc,
        ("spec.accessModes", "at least 1 access mode is required", "ReadWriteOnce"),
    ),
    (
        "PVC without a storage request",
        lambda: _pvc(resources={"limits": {"storage": "10Gi"}}),
        lambda: _pvc(resources={"requests": {"storage": "10Gi"}}),
        ("spec.resources.requests.storage", "spec.resources[storage]: Required value", "request the volume's size"),
    ),
    (
        "PVC ReadWriteOncePod beside another mode",
        lambda: _pvc(accessModes=["ReadWriteOncePod", "ReadWriteOnce"]),
        lambda: _pvc(accessModes=["ReadWriteOncePod"]),
        ("spec.accessModes", "may not use ReadWriteOncePod with other access modes", "alone"),
    ),
    (
        "StorageClass volumeBindingMode unknown",
        lambda: {
            **_obj("StorageClass", "storage.k8s.io/v1"),
            "provisioner": "ebs.csi.aws.com",
            "volumeBindingMode": "WaitForConsumer",
        },
        lambda: {
            **_obj("StorageClass", "storage.k8s.io/v1"),
            "provisioner": "ebs.csi.aws.com",
            "volumeBindingMode": "WaitForFirstConsumer",
        },
        (
            "volumeBindingMode 'WaitForConsumer'",
            'supported values: "Immediate", "WaitForFirstConsumer"',
            "case matters",
        ),
    ),
    (
        "ConfigMap key in data and binaryData",
        lambda: _obj("ConfigMap", "v1", data={"model.json": "{}"}, binaryData={"model.json": "e30="}),
        lambda: _obj("ConfigMap", "v1", data={"model.json": "{}"}, binaryData={"model.bin": "e30="}),
        ("'model.json' in both data and binaryData", "duplicate of key present in binaryData", "keep each key in one"),
    ),
]


@pytest.mark.parametrize(
    ("planted", "twin", "words"), [c[1:] for c in CASES], ids=[c[0].replace(" ", "-") for c in CASES]
)
def test_the_api_server_rejects_the_planted_value_and_accepts_its_twin(
    planted: Callable[[], Manifest], twin: Callable[[], Manifest], words: tuple[str, ...]
) -> None:
    found = _found(planted())
    assert found, "not reported"
    text = [f"{f.message} Fix: {f.fix}" for f in found]
    assert any(all(w in t for w in words) for t in text), (words, text)
    assert all("the API server rejects it" in f.message for f in found), found
    assert not _found(twin()), "the correct twin is flagged"


@pytest.mark.parametrize(
    ("annotations", "refused"),
    [
        ({"example.com/owner": "platform"}, None),
        ({"example.com/owner team": "platform"}, "ValidateAnnotations"),
        ({"example.com/blob": "x" * (256 * 1024)}, "Too long"),
    ],
)
def test_annotation_keys_and_total_size_are_held_to_validate_annotations(
    annotations: dict[str, str], refused: str | None
) -> None:
    # check_annotations once read the name __future__'s import binds, not its argument, and so checked nothing.
    manifest = _obj("ConfigMap", "v1", data={"k": "v"})
    manifest["metadata"]["annotations"] = annotations
    found = [f.message for f in _found(manifest)]
    assert (refused is None and not found) or any(refused in m for m in found), found
