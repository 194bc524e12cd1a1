"""Helpers the policies share: reading props the way both CrossGuard and the offline runner deliver them.

Props arrive camelCase, numbers as floats, and, in a preview, possibly unknown.
Every helper here tolerates all three.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from pulumi_policy import PolicyResource, StackValidationArgs

from tokenplane.spec import PlatformSpec

# Where each kind keeps its pod template's spec. Every kind that runs a pod is here, so that
# a bare Pod or a CronJob gets the same checks as a Deployment.
POD_SPEC_PATHS: dict[str, tuple[str, ...]] = {
    "Pod": ("spec",),
    "Deployment": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "ReplicationController": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "PodTemplate": ("template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}
WORKLOAD_KINDS = tuple(POD_SPEC_PATHS)
GATEWAY_CONFIG_MAPS = ("ai-gateway-config", "model-gateway-config")
REGION_COMPONENT = "tokenplane:region:Region"


def get(props: Mapping[str, Any] | None, *path: str | int, default: Any = None) -> Any:
    """``props[a][b][c]`` or ``default`` when any step is missing."""
    value: Any = props
    for step in path:
        if isinstance(step, int):
            if not isinstance(value, list) or step >= len(value):
                return default
        elif not isinstance(value, Mapping) or step not in value:
            return default
        value = value[step]
    return default if value is None else value


def kind(resource_type: str) -> str:
    """``kubernetes:apps/v1:Deployment`` -> ``Deployment``; other types -> ``""``."""
    return resource_type.rsplit(":", 1)[-1] if resource_type.startswith("kubernetes:") else ""


def object_name(props: Mapping[str, Any]) -> str:
    namespace = get(props, "metadata", "namespace", default="")
    name = get(props, "metadata", "name", default="?")
    return f"{namespace}/{name}" if namespace else str(name)


def pod_spec(props: Mapping[str, Any], resource_type: str | None = None) -> Mapping[str, Any]:
    """The pod spec of any workload kind; ``{}`` for anything else.

    The kind comes from the resource type when given, else from the object's own ``kind``.
    """
    workload = kind(resource_type) if resource_type else str(get(props, "kind", default=""))
    path = POD_SPEC_PATHS.get(workload, ("spec", "template", "spec"))
    spec = get(props, *path, default={})
    return spec if isinstance(spec, Mapping) else {}


def all_containers(props: Mapping[str, Any], resource_type: str | None = None) -> Iterator[Mapping[str, Any]]:
    """Every container of a pod: init, app and ephemeral (a debug container runs in the pod too)."""
    spec = pod_spec(props, resource_type)
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for container in get(spec, key, default=[]):
            if isinstance(container, Mapping):
                yield container


def spec_from_stack(args: StackValidationArgs) -> PlatformSpec | None:
    """The platform spec, as the gateways' ConfigMap carries it; None when the stack has no gateway."""
    for resource in args.resources:
        if (
            kind(resource.resource_type) == "ConfigMap"
            and get(resource.props, "metadata", "name") in GATEWAY_CONFIG_MAPS
        ):
            raw = get(resource.props, "data", "platform.json")
            if isinstance(raw, str):
                return PlatformSpec.model_validate(json.loads(raw))
    return None


def region_of(resource: PolicyResource, spec: PlatformSpec) -> str | None:
    """The spec region a resource belongs to: its nearest Region component, named ``<platform>-<region>``."""
    node: PolicyResource | None = resource
    names = {f"{spec.platform.name}-{r.name}": r.name for r in spec.regions}
    while node is not None:
        if node.resource_type == REGION_COMPONENT:
            return names.get(node.name)
        node = node.parent
    return None


def cluster_of(resource: PolicyResource) -> str:
    """Resources applied through one Kubernetes provider share a cluster."""
    return resource.provider.urn if resource.provider is not None else ""


def as_int(value: Any, default: int = 0) -> int:
    try:
        return int(float(value))
    except (TypeError, ValueError):
        return default
