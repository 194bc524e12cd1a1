"""The third port of Kubernetes create-time validation into api-validation (the audit's entries past the first 24):
each refused object found with the API server's own error text, its correct twin clean, and a field the render
leaves out (a value unknown until apply) never judged."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.proof.deployability.conftest import planted, planted_findings
from tokenplane.proof.deployability import api_validation
from tokenplane.proof.render import RenderedResource

STACK = "dev"
REGION = "local"
NAME = "planted-port3"
TYPES = {
    "Deployment": "kubernetes:apps/v1:Deployment",
    "StatefulSet": "kubernetes:apps/v1:StatefulSet",
    "Job": "kubernetes:batch/v1:Job",
    "Pod": "kubernetes:core/v1:Pod",
    "Service": "kubernetes:core/v1:Service",
    "PersistentVolumeClaim": "kubernetes:core/v1:PersistentVolumeClaim",
    "HorizontalPodAutoscaler": "kubernetes:autoscaling/v2:HorizontalPodAutoscaler",
    "IngressClass": "kubernetes:networking.k8s.io/v1:IngressClass",
    "StorageClass": "kubernetes:storage.k8s.io/v1:StorageClass",
    "PriorityClass": "kubernetes:scheduling.k8s.io/v1:PriorityClass",
}
API_VERSIONS = {
    "Service": "v1",
    "PersistentVolumeClaim": "v1",
    "HorizontalPodAutoscaler": "autoscaling/v2",
    "IngressClass": "networking.k8s.io/v1",
    "StorageClass": "storage.k8s.io/v1",
    "PriorityClass": "scheduling.k8s.io/v1",
}
LABELS = {"app.kubernetes.io/name": NAME}


def _pod(kind: str, pod: dict[str, Any], container: dict[str, Any] | None = None) -> RenderedResource:
    spec = {"containers": [{"name": "app", "image": "busybox:1.36", **(container or {})}], **pod}
    metadata = {"name": NAME, "namespace": "llm-batch"}
    manifest: dict[str, Any]
    if kind == "Pod":
        manifest = {"apiVersion": "v1", "kind": "Pod", "metadata": {**metadata, "labels": LABELS}, "spec": spec}
    elif kind == "Job":
        spec["restartPolicy"] = "Never"
        template = {"metadata": {"labels": LABELS}, "spec": spec}
        manifest = {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata, "spec": {"template": template}}
    else:
        template = {"metadata": {"labels": LABELS}, "spec": spec}
        body: dict[str, Any] = {"template": template, "selector": {"matchLabels": LABELS}}
        if kind == "StatefulSet":
            body["serviceName"] = NAME
        manifest = {"apiVersion": "apps/v1", "kind": kind, "metadata": metadata, "spec": body}
    return planted(STACK, TYPES[kind], NAME, manifest, region=REGION)


def _object(kind: str, body: dict[str, Any]) -> RenderedResource:
    metadata: dict[str, Any] = {"name": NAME}
    if kind in ("Service", "PersistentVolumeClaim", "HorizontalPodAutoscaler"):
        metadata["namespace"] = "llm-batch"
    manifest = {"apiVersion": API_VERSIONS[kind], "kind": kind, "metadata": metadata, **body}
    return planted(STACK, TYPES[kind], NAME, manifest, region=REGION)


def _messages(resource: RenderedResource) -> list[str]:
    return [f.message for f in planted_findings(api_validation.check, resource)]


def _node_fields(requirement: dict[str, Any]) -> dict[str, Any]:
    term = {"matchFields": [requirement]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}


def _claim_template(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": spec}}}]


def _pod_affinity(key: str, namespaces: list[str]) -> dict[str, Any]:
    term = {"labelSelector": {"matchLabels": LABELS}, "topologyKey": key, "namespaces": namespaces}
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def _spread(**fields: Any) -> dict[str, Any]:
    return {
        "maxSkew": 1,
        "topologyKey": "topology.kubernetes.io/zone",
        "whenUnsatisfiable": "ScheduleAnyway",
        "labelSelector": {"matchLabels": LABELS},
        **fields,
    }


def _two_containers(first: list[dict[str, Any]], second: list[dict[str, Any]]) -> RenderedResource:
    resource = _pod("Deployment", {}, {"ports": first})
    pod = resource.inputs["spec"]["template"]["spec"]
    pod["containers"].append({"name": "sidecar", "image": "busybox:1.36", "ports": second})
    return resource


CLAIM = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "10Gi"}}}
MOUNT = {"volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}]}
HPA = {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "server"}, "maxReplicas": 4}
CPU = {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}}
PODS = {
    "type": "Pods",
    "pods": {"metric": {"name": "queue_depth"}, "target": {"type": "AverageValue", "averageValue": "10"}},
}
SERVICE = {"selector": LABELS, "ports": [{"port": 80, "targetPort": 8080}]}


def _service(**fields: Any) -> dict[str, Any]:
    return {"spec": {**copy.deepcopy(SERVICE), **fields}}


def _hpa(**fields: Any) -> dict[str, Any]:
    return {"spec": {**copy.deepcopy(HPA), **fields}}


def _port(**fields: Any) -> dict[str, Any]:
    return _service(ports=[{"port": 80, "targetPort": 8080, **fields}])


# (refused resource, the server's text its finding carries, the correct twin)
CASES: list[tuple[str, RenderedResource, str, RenderedResource]] = [
    (
        "matchFields key",
        _pod("Deployment", {"affinity": _node_fields({"key": "name", "operator": "In", "values": ["ip-10-0-1-5"]})}),
        'matchFields[0].key: Invalid value: "name": not a valid field selector key',
        _pod(
            "Deployment",
            {"affinity": _node_fields({"key": "metadata.name", "operator": "In", "values": ["ip-10-0-1-5"]})},
        ),
    ),
    (
        "matchFields values",
        _pod("Job", {"affinity": _node_fields({"key": "metadata.name", "operator": "In", "values": ["a", "b"]})}),
        "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
        _pod("Job", {"affinity": _node_fields({"key": "metadata.name", "operator": "NotIn", "values": ["a"]})}),
    ),
    (
        "matchFields operator",
        _pod("Pod", {"affinity": _node_fields({"key": "metadata.name", "operator": "Exists"})}),
        'operator: Invalid value: "Exists": not a valid selector operator',
        _pod("Pod", {"affinity": _node_fields({"key": "metadata.name", "operator": "In", "values": ["node-1"]})}),
    ),
    (
        "hostPath path backstep",
        _pod("Deployment", {"volumes": [{"name": "logs", "hostPath": {"path": "/var/log/../lib"}}]}),
        "hostPath.path: Invalid value: \"/var/log/../lib\": must not contain '..'",
        _pod("Deployment", {"volumes": [{"name": "logs", "hostPath": {"path": "/var/log"}}]}),
    ),
    (
        "hostPath path empty",
        _pod("Deployment", {"volumes": [{"name": "logs", "hostPath": {"path": ""}}]}),
        "hostPath.path: Required value",
        _pod("Deployment", {"volumes": [{"name": "logs", "hostPath": {"path": "/var/log"}}]}),
    ),
    (
        "ephemeral template access modes",
        _pod("Deployment", {"volumes": _claim_template({"resources": CLAIM["resources"]})}, MOUNT),
        "ephemeral.volumeClaimTemplate.spec.accessModes: Required value: at least 1 access mode is required",
        _pod("Deployment", {"volumes": _claim_template(CLAIM)}, MOUNT),
    ),
    (
        "ephemeral template storage class",
        _pod("Job", {"volumes": _claim_template({**CLAIM, "storageClassName": "gp3_encrypted"})}, MOUNT),
        "ephemeral.volumeClaimTemplate.spec.storageClassName 'gp3_encrypted', which a lowercase RFC 1123 subdomain",
        _pod("Job", {"volumes": _claim_template({**CLAIM, "storageClassName": "gp3-encrypted"})}, MOUNT),
    ),
    (
        "PVC storageClassName",
        _object("PersistentVolumeClaim", {"spec": {**CLAIM, "storageClassName": "GP3"}}),
        "spec.storageClassName 'GP3'",
        _object("PersistentVolumeClaim", {"spec": {**CLAIM, "storageClassName": "gp3"}}),
    ),
    (
        "PVC dataSource apiGroup",
        _object("PersistentVolumeClaim", {"spec": {**CLAIM, "dataSource": {"kind": "VolumeSnapshot", "name": "s1"}}}),
        "spec.dataSource: Invalid value: \"VolumeSnapshot\": must be 'PersistentVolumeClaim' when referencing the "
        "default apiGroup",
        _object(
            "PersistentVolumeClaim",
            {
                "spec": {
                    **CLAIM,
                    "dataSource": {"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": "s1"},
                }
            },
        ),
    ),
    (
        "PVC dataSource and dataSourceRef",
        _object(
            "PersistentVolumeClaim",
            {
                "spec": {
                    **CLAIM,
                    "dataSource": {"kind": "PersistentVolumeClaim", "name": "a"},
                    "dataSourceRef": {"kind": "PersistentVolumeClaim", "name": "b"},
                }
            },
        ),
        'spec: Invalid value: "dataSource": must match dataSourceRef',
        _object(
            "PersistentVolumeClaim",
            {
                "spec": {
                    **CLAIM,
                    "dataSource": {"kind": "PersistentVolumeClaim", "name": "a"},
                    "dataSourceRef": {"kind": "PersistentVolumeClaim", "name": "a"},
                }
            },
        ),
    ),
    (
        "mountPropagation Bidirectional",
        _pod(
            "Deployment",
            {"volumes": [{"name": "csi", "hostPath": {"path": "/var/lib/kubelet"}}]},
            {"volumeMounts": [{"name": "csi", "mountPath": "/kubelet", "mountPropagation": "Bidirectional"}]},
        ),
        "Forbidden: Bidirectional mount propagation is available only to privileged containers",
        _pod(
            "Deployment",
            {"volumes": [{"name": "csi", "hostPath": {"path": "/var/lib/kubelet"}}]},
            {
                "volumeMounts": [{"name": "csi", "mountPath": "/kubelet", "mountPropagation": "Bidirectional"}],
                "securityContext": {"privileged": True},
            },
        ),
    ),
    (
        "mountPropagation case",
        _pod(
            "Deployment",
            {"volumes": [{"name": "csi", "hostPath": {"path": "/var/lib/kubelet"}}]},
            {"volumeMounts": [{"name": "csi", "mountPath": "/kubelet", "mountPropagation": "hostToContainer"}]},
        ),
        'validateMountPropagation: Unsupported value: "hostToContainer": supported values: "Bidirectional", '
        '"HostToContainer", "None"',
        _pod(
            "Deployment",
            {"volumes": [{"name": "csi", "hostPath": {"path": "/var/lib/kubelet"}}]},
            {"volumeMounts": [{"name": "csi", "mountPath": "/kubelet", "mountPropagation": "HostToContainer"}]},
        ),
    ),
    (
        "HPA scaleTargetRef name",
        _object(
            "HorizontalPodAutoscaler", _hpa(scaleTargetRef={"apiVersion": "apps/v1", "kind": "Deployment", "name": ""})
        ),
        "spec.scaleTargetRef.name: Required value",
        _object("HorizontalPodAutoscaler", _hpa()),
    ),
    (
        "HPA maxReplicas",
        _object("HorizontalPodAutoscaler", _hpa(maxReplicas=0, minReplicas=1)),
        "spec.maxReplicas: Invalid value: 0: must be greater than 0",
        _object("HorizontalPodAutoscaler", _hpa(maxReplicas=1.0, minReplicas=1)),
    ),
    (
        "HPA metric name",
        _object("HorizontalPodAutoscaler", _hpa(metrics=[{**PODS, "pods": {**PODS["pods"], "metric": {"name": ""}}}])),
        "spec.metrics[0].pods.metric.name: Required value: must specify a metric name",
        _object("HorizontalPodAutoscaler", _hpa(metrics=[PODS, CPU])),
    ),
    (
        "HPA resource name",
        _object("HorizontalPodAutoscaler", _hpa(metrics=[{**CPU, "resource": {**CPU["resource"], "name": ""}}])),
        "spec.metrics[0].resource.name: Required value: must specify a resource name",
        _object("HorizontalPodAutoscaler", _hpa(metrics=[CPU])),
    ),
    (
        "IngressClass controller",
        _object("IngressClass", {"spec": {"controller": "nginx"}}),
        'spec.controller: Invalid value: "nginx": must be a domain-prefixed path (such as "acme.io/foo")',
        _object("IngressClass", {"spec": {"controller": "ingress.k8s.aws/alb"}}),
    ),
    (
        "IngressClass parameters scope",
        _object(
            "IngressClass",
            {
                "spec": {
                    "controller": "ingress.k8s.aws/alb",
                    "parameters": {
                        "apiGroup": "elbv2.k8s.aws",
                        "kind": "IngressClassParams",
                        "name": "alb",
                        "scope": "cluster",
                    },
                }
            },
        ),
        'spec.parameters.scope: Unsupported value: "cluster"',
        _object(
            "IngressClass",
            {
                "spec": {
                    "controller": "ingress.k8s.aws/alb",
                    "parameters": {"apiGroup": "elbv2.k8s.aws", "kind": "IngressClassParams", "name": "alb"},
                }
            },
        ),
    ),
    (
        "IngressClass parameters namespace on a cluster scope",
        _object(
            "IngressClass",
            {
                "spec": {
                    "controller": "k8s.io/ingress-nginx",
                    "parameters": {"kind": "ConfigMap", "name": "nginx", "namespace": "ingress"},
                }
            },
        ),
        "spec.parameters.namespace: Forbidden: `parameters.scope` is set to 'Cluster'",
        _object(
            "IngressClass",
            {
                "spec": {
                    "controller": "k8s.io/ingress-nginx",
                    "parameters": {"kind": "ConfigMap", "name": "nginx", "namespace": "ingress", "scope": "Namespace"},
                }
            },
        ),
    ),
    (
        "StorageClass provisioner",
        _object("StorageClass", {"provisioner": "ebs csi"}),
        "has provisioner 'ebs csi'",
        _object("StorageClass", {"provisioner": "ebs.csi.aws.com"}),
    ),
    (
        "sysctl name",
        _pod("Deployment", {"securityContext": {"sysctls": [{"name": "net.core.somaxconn ", "value": "1024"}]}}),
        'validateSysctls: spec.template.spec.securityContext.sysctls[0].name: Invalid value: "net.core.somaxconn "',
        _pod("Deployment", {"securityContext": {"sysctls": [{"name": "net.core.somaxconn", "value": "1024"}]}}),
    ),
    (
        "sysctl on the host network",
        _pod(
            "Deployment",
            {
                "hostNetwork": True,
                "securityContext": {"sysctls": [{"name": "net.ipv4.ip_unprivileged_port_start", "value": "0"}]},
            },
        ),
        "may not be specified when 'hostNetwork' is true",
        _pod(
            "Deployment",
            {"securityContext": {"sysctls": [{"name": "net.ipv4.ip_unprivileged_port_start", "value": "0"}]}},
        ),
    ),
    (
        "sysctl twice",
        _pod(
            "Pod",
            {
                "securityContext": {
                    "sysctls": [{"name": "kernel.shm_rmid_forced", "value": "1"}] * 2,
                }
            },
        ),
        'Duplicate value: "kernel.shm_rmid_forced"',
        _pod("Pod", {"securityContext": {"sysctls": [{"name": "kernel.shm_rmid_forced", "value": "1"}]}}),
    ),
    (
        "hostname",
        _pod("Pod", {"hostname": "db.primary"}),
        "spec.hostname 'db.primary', which a lowercase RFC 1123 label",
        _pod("Pod", {"hostname": "db-primary", "subdomain": "db"}),
    ),
    (
        "priorityClassName",
        _pod("Deployment", {"priorityClassName": "High_Priority"}),
        "ValidatePriorityClassName",
        _pod("Deployment", {"priorityClassName": "high-priority"}),
    ),
    (
        "runtimeClassName",
        _pod("Deployment", {"runtimeClassName": "Nvidia"}),
        "ValidateRuntimeClassName",
        _pod("Deployment", {"runtimeClassName": "nvidia"}),
    ),
    (
        "preemptionPolicy",
        _pod("Job", {"preemptionPolicy": "never"}),
        'ValidatePreemptionPolicy: Unsupported value: "never": supported values: "Never", "PreemptLowerPriority"',
        _pod("Job", {"preemptionPolicy": "Never"}),
    ),
    (
        "hostAliases ip",
        _pod("Deployment", {"hostAliases": [{"ip": "db.internal", "hostnames": ["db"]}]}),
        "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
        _pod("Deployment", {"hostAliases": [{"ip": "10.0.3.7", "hostnames": ["db", "db.internal"]}]}),
    ),
    (
        "hostAliases hostname",
        _pod("Deployment", {"hostAliases": [{"ip": "10.0.3.7", "hostnames": ["DB_Primary"]}]}),
        "hostAliases[0].hostnames[0] 'DB_Primary'",
        _pod("Deployment", {"hostAliases": [{"ip": "10.0.3.7", "hostnames": ["db-primary"]}]}),
    ),
    (
        "shareProcessNamespace with hostPID",
        _pod("Pod", {"hostPID": True, "securityContext": {"shareProcessNamespace": True}}),
        "ShareProcessNamespace and HostPID cannot both be enabled",
        _pod("Pod", {"securityContext": {"shareProcessNamespace": True}}),
    ),
    (
        "Service appProtocol",
        _object("Service", _port(appProtocol="HTTP/2")),
        "spec.ports[0].appProtocol 'HTTP/2'",
        _object("Service", _port(appProtocol="kubernetes.io/h2c")),
    ),
    (
        "Service loadBalancerClass on a ClusterIP",
        _object("Service", _service(loadBalancerClass="service.k8s.aws/nlb")),
        "spec.loadBalancerClass: Forbidden: may only be used when `type` is 'LoadBalancer'",
        _object("Service", _service(type="LoadBalancer", loadBalancerClass="service.k8s.aws/nlb")),
    ),
    (
        "Service ipFamilyPolicy",
        _object("Service", _service(ipFamilyPolicy="DualStack")),
        'Unsupported value: "DualStack": supported values: "PreferDualStack", "RequireDualStack", "SingleStack"',
        _object("Service", _service(ipFamilyPolicy="PreferDualStack", ipFamilies=["IPv4", "IPv6"])),
    ),
    (
        "Service ipFamilies",
        _object("Service", _service(ipFamilies=["ipv4"])),
        'validateIPFamilies: Unsupported value: "ipv4"',
        _object("Service", _service(ipFamilies=["IPv4"])),
    ),
    (
        "Service internalTrafficPolicy",
        _object("Service", _service(internalTrafficPolicy="local")),
        'validateServiceInternalTrafficFieldsValue: Unsupported value: "local"',
        _object("Service", _service(internalTrafficPolicy="Local")),
    ),
    (
        "Service clusterIP",
        _object("Service", _service(clusterIP="none")),
        'spec.clusterIPs[0]: Invalid value: "none": must be a valid IP address',
        _object("Service", _service(clusterIP="None")),
    ),
    (
        "StatefulSet partition",
        _pod("StatefulSet", {}),
        "spec.updateStrategy.rollingUpdate.partition: Invalid value: -1: must be greater than or equal to 0",
        _pod("StatefulSet", {}),
    ),
    (
        "PriorityClass preemptionPolicy",
        _object("PriorityClass", {"value": 1000, "preemptionPolicy": "Preempt"}),
        'ValidatePriorityClass/ValidatePreemptionPolicy: Unsupported value: "Preempt"',
        _object("PriorityClass", {"value": 1000, "preemptionPolicy": "Never"}),
    ),
    (
        "empty containers",
        _pod("Deployment", {}),
        "spec.template.spec.containers: Required value",
        _pod("Deployment", {}),
    ),
]
CASES += [
    (
        "pod affinity topologyKey",
        _pod("Deployment", {"affinity": _pod_affinity("topology.kubernetes.io/zone ", [])}),
        "topologyKey 'topology.kubernetes.io/zone '",
        _pod("Deployment", {"affinity": _pod_affinity("topology.kubernetes.io/zone", ["llm-batch"])}),
    ),
    (
        "pod affinity namespaces",
        _pod("Deployment", {"affinity": _pod_affinity("kubernetes.io/hostname", ["LLM_Batch"])}),
        "namespaces[0] 'LLM_Batch'",
        _pod("Deployment", {"affinity": _pod_affinity("kubernetes.io/hostname", ["llm-batch"])}),
    ),
    (
        "spread nodeTaintsPolicy",
        _pod("Deployment", {"topologySpreadConstraints": [_spread(nodeTaintsPolicy="honor")]}),
        'validateNodeInclusionPolicy: Unsupported value: "honor": supported values: "Honor", "Ignore"',
        _pod("Deployment", {"topologySpreadConstraints": [_spread(nodeTaintsPolicy="Honor")]}),
    ),
    (
        "readinessGates",
        _pod("Pod", {"readinessGates": [{"conditionType": "target health/ready"}]}),
        "readinessGates[0].conditionType 'target health/ready'",
        _pod("Pod", {"readinessGates": [{"conditionType": "target-health.elbv2.k8s.aws/tg-1"}]}),
    ),
    (
        "schedulingGates twice",
        _pod("Pod", {"schedulingGates": [{"name": "example.com/quota"}, {"name": "example.com/quota"}]}),
        'Duplicate value: "example.com/quota"',
        _pod("Pod", {"schedulingGates": [{"name": "example.com/quota"}, {"name": "example.com/gpu"}]}),
    ),
    (
        "duplicate hostPort",
        _two_containers([{"containerPort": 8080, "hostPort": 8080}], [{"containerPort": 9090, "hostPort": 8080.0}]),
        'hostPort: Duplicate value: "TCP//8080"',
        _two_containers(
            [{"containerPort": 8080, "hostPort": 8080}], [{"containerPort": 8080, "hostPort": 8080, "protocol": "UDP"}]
        ),
    ),
    (
        "recursiveReadOnly without readOnly",
        _pod(
            "Deployment",
            {"volumes": [{"name": "scratch", "emptyDir": {}}]},
            {"volumeMounts": [{"name": "scratch", "mountPath": "/s", "recursiveReadOnly": "Enabled"}]},
        ),
        "recursiveReadOnly: Forbidden: may only be specified when readOnly is true",
        _pod(
            "Deployment",
            {"volumes": [{"name": "scratch", "emptyDir": {}}]},
            {
                "volumeMounts": [
                    {"name": "scratch", "mountPath": "/s", "readOnly": True, "recursiveReadOnly": "IfPossible"}
                ]
            },
        ),
    ),
    (
        "resizePolicy resource",
        _pod("Deployment", {}, {"resizePolicy": [{"resourceName": "gpu", "restartPolicy": "NotRequired"}]}),
        'validateResizePolicy: Unsupported value: "gpu": supported values: "cpu", "memory"',
        _pod("Deployment", {}, {"resizePolicy": [{"resourceName": "memory", "restartPolicy": "RestartContainer"}]}),
    ),
    (
        "resizePolicy restartPolicy",
        _pod("Deployment", {}, {"resizePolicy": [{"resourceName": "cpu", "restartPolicy": "Restart"}]}),
        'Unsupported value: "Restart": supported values: "NotRequired", "RestartContainer"',
        _pod("Deployment", {}, {"resizePolicy": [{"resourceName": "cpu", "restartPolicy": "NotRequired"}]}),
    ),
    (
        "nfs path",
        _pod("Deployment", {"volumes": [{"name": "shared", "nfs": {"server": "fs-1.efs.aws", "path": "exports"}}]}),
        'nfs.path: Invalid value: "exports": must be an absolute path',
        _pod("Deployment", {"volumes": [{"name": "shared", "nfs": {"server": "fs-1.efs.aws", "path": "/"}}]}),
    ),
    (
        "csi driver",
        _pod("Deployment", {"volumes": [{"name": "secrets", "csi": {"driver": ""}}]}),
        "csi.driver: Required value",
        _pod("Deployment", {"volumes": [{"name": "secrets", "csi": {"driver": "secrets-store.csi.k8s.io"}}]}),
    ),
]
CASES.append(
    (
        "Service ports empty",
        _object("Service", _service(ports=[])),
        "ValidateService: spec.ports: Required value",
        _object("Service", _service(ports=[], clusterIP="None")),
    )
)
# Cases whose refused object needs one more touch after it is built.
CASES[[c[0] for c in CASES].index("StatefulSet partition")][1].inputs["spec"]["updateStrategy"] = {
    "type": "RollingUpdate",
    "rollingUpdate": {"partition": -1},
}
CASES[[c[0] for c in CASES].index("StatefulSet partition")][3].inputs["spec"]["updateStrategy"] = {
    "type": "RollingUpdate",
    "rollingUpdate": {"partition": 0.0},
}
CASES[[c[0] for c in CASES].index("empty containers")][1].inputs["spec"]["template"]["spec"]["containers"] = []


@pytest.mark.parametrize(("about", "refused", "text"), [(c[0], c[1], c[2]) for c in CASES], ids=[c[0] for c in CASES])
def test_an_object_the_api_server_refuses_is_found_with_its_text(
    about: str, refused: RenderedResource, text: str
) -> None:
    messages = _messages(refused)
    hits = [m for m in messages if text in m]
    assert hits, messages
    assert "the API server rejects it" in hits[0]


@pytest.mark.parametrize(("about", "twin"), [(c[0], c[3]) for c in CASES], ids=[c[0] for c in CASES])
def test_the_correct_twin_is_clean(about: str, twin: RenderedResource) -> None:
    assert _messages(twin) == []


def _without_containers() -> RenderedResource:
    resource = _pod("Deployment", {})
    del resource.inputs["spec"]["template"]["spec"]["containers"]
    return resource


@pytest.mark.parametrize(
    ("about", "resource"),
    [
        # Values the render leaves out (unknown until apply): never judged as absent.
        (
            "claimless dataSource name",
            _object("PersistentVolumeClaim", {"spec": {**CLAIM, "dataSource": {"kind": "PersistentVolumeClaim"}}}),
        ),
        (
            "HPA target name unknown",
            _object("HorizontalPodAutoscaler", _hpa(scaleTargetRef={"apiVersion": "apps/v1", "kind": "Deployment"})),
        ),
        ("IngressClass without controller", _object("IngressClass", {"spec": {}})),
        ("StorageClass provisioner unknown", _object("StorageClass", {"reclaimPolicy": "Delete"})),
        ("hostPath path unknown", _pod("Deployment", {"volumes": [{"name": "logs", "hostPath": {}}]})),
        ("containers unknown", _without_containers()),
        ("Service ports unknown", _object("Service", {"spec": {"selector": LABELS}})),
        ("storageClassName empty", _object("PersistentVolumeClaim", {"spec": {**CLAIM, "storageClassName": ""}})),
        (
            "HPA metric name unknown",
            _object("HorizontalPodAutoscaler", _hpa(metrics=[{**PODS, "pods": {**PODS["pods"], "metric": {}}}])),
        ),
    ],
)
def test_a_value_unknown_until_apply_is_not_judged(about: str, resource: RenderedResource) -> None:
    assert _messages(resource) == []
