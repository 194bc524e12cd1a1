"""A claim reaches a container the way its volumeMode allows: a Block claim through volumeDevices, a Filesystem
claim through volumeMounts.

A raw block volume has no filesystem to mount: "you specify the device path in the container instead of a mount
path" (https://kubernetes.io/docs/concepts/storage/persistent-volumes/#raw-block-volume-support). The kubelet checks
each claim against how the pod's containers name it (kubernetes/kubernetes
``pkg/kubelet/volumemanager/populator/desired_state_of_world_populator.go``: ``"volume %s has volumeMode %s, but is
specified in volumeMounts"``, and the same for volumeDevices; ``test/e2e/storage/testsuites/volumemode.go`` waits for
that FailedMount event) and never starts the pod: it stays ContainerCreating and the workload's await times out
(kubernetes/kubernetes#79794, #62238).

Followed: a pod volume's ``persistentVolumeClaim.claimName`` to the program's PersistentVolumeClaim of that name in
the pod's namespace, a StatefulSet's ``volumeClaimTemplates`` by name, and a generic ephemeral volume's own
``volumeClaimTemplate``. A claim's volumeMode defaults to Filesystem.

Cannot see: claims the program does not create (their mode is not known).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject

RULE = "volume-mode-used"
BLOCK, FILESYSTEM = "Block", "Filesystem"
# How a container may use a claim of each mode: the field it must name it in, and the one it must not.
USED_IN = {BLOCK: ("volumeDevices", "volumeMounts"), FILESYSTEM: ("volumeMounts", "volumeDevices")}


def _mode(claim_spec: Any) -> str:
    mode = claim_spec.get("volumeMode") if isinstance(claim_spec, dict) else None
    return str(mode or FILESYSTEM)


def claim_modes(graph: Graph, workload: KubeObject) -> dict[str, tuple[str, str]]:
    """Pod volume name -> (the claim's mode, where the claim is declared) for every volume whose claim is known."""
    claims = {
        o.name: o
        for o in graph.kube(workload.resource.region, "PersistentVolumeClaim")
        if o.namespace == workload.namespace
    }
    out: dict[str, tuple[str, str]] = {}
    for volume in workload.pod_spec().get("volumes") or []:
        name = str(volume.get("name"))
        claim_name = (volume.get("persistentVolumeClaim") or {}).get("claimName")
        ephemeral = (volume.get("ephemeral") or {}).get("volumeClaimTemplate")
        if isinstance(claim_name, str) and claim_name in claims:
            claim = claims[claim_name]
            out[name] = (_mode(claim.manifest.get("spec")), f"PersistentVolumeClaim {claim.namespace}/{claim_name}")
        elif isinstance(ephemeral, dict):
            out[name] = (_mode(ephemeral.get("spec")), f"volume {name}'s ephemeral volumeClaimTemplate")
    if workload.kind == "StatefulSet":  # the controller gives each template's claim to the pod volume of its name
        for template in (workload.manifest.get("spec") or {}).get("volumeClaimTemplates") or []:
            name = str((template.get("metadata") or {}).get("name"))
            out[name] = (_mode(template.get("spec")), f"volumeClaimTemplates {name}")
    return out


def check(graph: Graph) -> Iterator[Finding]:
    for workload in graph.pod_bearers():
        modes = claim_modes(graph, workload)
        if not modes:
            continue
        pod = workload.pod_spec()
        for container in [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]:
            for name, (mode, declared) in modes.items():
                if mode not in USED_IN:
                    continue  # no such mode: the API server refuses the claim itself
                wanted, refused = USED_IN[mode]
                if any(use.get("name") == name for use in container.get(refused) or []):
                    yield _finding(workload, str(container.get("name")), name, mode, declared, wanted, refused)


def _finding(
    workload: KubeObject, container: str, volume: str, mode: str, declared: str, wanted: str, refused: str
) -> Finding:
    path = "devicePath" if wanted == "volumeDevices" else "mountPath"
    return Finding(
        RULE,
        workload.urn,
        f"{workload.kind} {workload.namespace}/{workload.name} container {container} names volume {volume} in "
        f"{refused}, but its claim ({declared}) has volumeMode {mode}, which reaches a container only through "
        f"{wanted}: the kubelet refuses it (FailedMount: 'volume {volume} has volumeMode {mode}, but is specified in "
        f"{refused}'), the pod stays ContainerCreating and the rollout "
        "never completes",
        f"list {volume} under the container's {wanted} with a {path}, or give the claim volumeMode "
        f"{FILESYSTEM if mode == BLOCK else BLOCK}",
    )
