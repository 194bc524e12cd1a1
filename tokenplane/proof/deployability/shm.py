"""A vLLM server that splits a model over GPUs has the shared memory its workers talk through.

With tensor or pipeline parallelism above 1, vLLM runs one worker process per GPU; PyTorch and NCCL exchange data
between them through ``/dev/shm``. vLLM's docs (Deploying with Docker): "You can either use the ipc=host flag or
--shm-size flag to allow the container to access the host's shared memory. vLLM uses PyTorch, which uses shared
memory to share data between processes under the hood, particularly for tensor parallel inference." Kubernetes has
neither flag: a container's ``/dev/shm`` is containerd's 64 MiB tmpfs unless an ``emptyDir`` with ``medium:
Memory`` is mounted there (or the pod shares the host's IPC namespace, ``hostIPC``). With 64 MiB the workers fail
at start ("NCCL WARN Error while creating shared memory segment /dev/shm/nccl-..." / "No space left on device")
and the pod crash-loops.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.k8s_syntax import quantity
from tokenplane.proof.deployability.known_images import serves_vllm
from tokenplane.proof.deployability.reachability import pod_template

RULE = "shm-size"
RUNTIME_SHM_BYTES = 64 * 2**20  # containerd's (and Docker's) default /dev/shm
PARALLEL_FLAGS = {
    "--tensor-parallel-size": "tensor",
    "-tp": "tensor",
    "--pipeline-parallel-size": "pipeline",
    "-pp": "pipeline",
}


def parallelism(container: dict[str, Any]) -> dict[str, int]:
    """The tensor and pipeline parallel sizes a ``vllm serve`` command line asks for (1 where absent)."""
    argv = [str(a) for a in [*(container.get("command") or []), *(container.get("args") or [])]]
    words = [w for a in argv for w in (a.split() if " " in a else [a])]  # a `sh -c "vllm serve ..."` line too
    sizes = {"tensor": 1, "pipeline": 1}
    for i, word in enumerate(words):
        flag, _, value = word.partition("=")
        if flag not in PARALLEL_FLAGS:
            continue
        text = value or (words[i + 1] if i + 1 < len(words) else "")
        if re.fullmatch(r"\d+", text):
            sizes[PARALLEL_FLAGS[flag]] = int(text)
    return sizes


def _mounted(container: dict[str, Any]) -> dict[str, Any] | None:
    mounts = container.get("volumeMounts") or []
    return next((m for m in mounts if str(m.get("mountPath")).rstrip("/") == "/dev/shm"), None)


def shm_bytes(pod: dict[str, Any], container: dict[str, Any]) -> float | None:
    """The size of the container's /dev/shm: None for the host's (hostIPC) or an unbounded memory emptyDir."""
    if pod.get("hostIPC") is True:
        return None
    mount = _mounted(container)
    if mount is None:
        return RUNTIME_SHM_BYTES
    volume = next((v for v in pod.get("volumes") or [] if v.get("name") == mount.get("name")), None)
    empty_dir = (volume or {}).get("emptyDir")
    if not isinstance(empty_dir, dict) or empty_dir.get("medium") != "Memory":
        return None  # another kind of volume: not judged
    limit = empty_dir.get("sizeLimit")
    return quantity(limit) if limit is not None else None


def check(graph: Graph) -> Iterator[Finding]:
    for workload in graph.pod_bearers():
        pod = pod_template(workload).get("spec") or {}
        for container in pod.get("containers") or []:
            if not serves_vllm(container):
                continue
            sizes = parallelism(container)
            if sizes["tensor"] * sizes["pipeline"] <= 1:
                continue
            size = shm_bytes(pod, container)
            if size is None or size > RUNTIME_SHM_BYTES:
                continue
            source = (
                "the container runtime's default: no memory emptyDir is mounted there"
                if size == RUNTIME_SHM_BYTES and not _mounted(container)
                else "the sizeLimit of the memory emptyDir mounted there"
            )
            how = f"tensor parallel {sizes['tensor']} x pipeline parallel {sizes['pipeline']}"
            yield Finding(
                RULE,
                workload.urn,
                f"container {container.get('name')} of {workload.kind} {workload.namespace}/{workload.name} runs vLLM "
                f"with {how}, whose GPU workers talk through /dev/shm, but its /dev/shm is {size / 2**20:.0f} MiB "
                f'({source}): NCCL fails at start ("Error '
                'while creating shared memory segment") and the pod crash-loops',
                "mount an emptyDir with medium: Memory at /dev/shm (components/vllm_pool.py sizes it at half the "
                "pod's memory, at most 64Gi)",
            )
