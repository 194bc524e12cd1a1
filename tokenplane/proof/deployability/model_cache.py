"""A model server's Hub download fits the emptyDir (or the ephemeral storage) it downloads into.

``model-cache-fits``: Text Embeddings Inference and Text Generation Inference, given a Hub model id
(``--model-id`` or ``MODEL_ID``, read by ``known_images.hub_model_server``), download the model's weights into
their Hub cache at start, before the port opens. The cache is ``--huggingface-hub-cache``, else ``HUGGINGFACE_HUB_CACHE`` (``HF_HUB_CACHE``), which
both images set to ``/data`` (their Dockerfiles: ``ENV HUGGINGFACE_HUB_CACHE=/data``; TEI's router reads it as
``--huggingface-hub-cache``). When that directory lies on an emptyDir whose ``sizeLimit`` is below the weights, the
kubelet's eviction manager evicts the pod once the volume's usage exceeds the limit ("Usage of EmptyDir volume ...
exceeds the limit", https://kubernetes.io/docs/concepts/storage/volumes/#emptydir; kubernetes/kubernetes#45686 and
#63126), mid-download, and every replacement repeats it: the Deployment never becomes available. A
memory-backed emptyDir is bounded the same way. A cache on no volume is in the container's writable layer, bounded
by its ``ephemeral-storage`` limit: exceeding it evicts the pod too
(https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/#local-ephemeral-storage).

The weights' size is read from ``HUB_WEIGHT_BYTES``, the models a platform commonly serves for embeddings and
reranking, each the size huggingface.co/<id>/tree/main lists for its ``model.safetensors`` (``pytorch_model.bin``
is the same fp32 tensors, listed at the same size), rounded down. A model not in the table is not judged: its
size is not guessed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject
from tokenplane.proof.deployability.k8s_syntax import quantity
from tokenplane.proof.deployability.known_images import hub_model_server
from tokenplane.proof.deployability.store_data import volume_at

RULE = "model-cache-fits"
# Where TEI and TGI cache Hub downloads unless HUGGINGFACE_HUB_CACHE says otherwise (their images' ENV).
HUB_CACHE_DEFAULT = "/data"
HUB_CACHE_ENV = ("HUGGINGFACE_HUB_CACHE", "HF_HUB_CACHE")

# Hub model id -> bytes of its weights file, from huggingface.co/<id>/tree/main ("model.safetensors"), rounded
# down to the listed precision so that a size is never overstated.
HUB_WEIGHT_BYTES: dict[str, int] = {
    "BAAI/bge-large-en-v1.5": 1_340_000_000,  # model.safetensors 1.34 GB (pytorch_model.bin 1.34 GB)
    "BAAI/bge-base-en-v1.5": 438_000_000,  # model.safetensors 438 MB
    "BAAI/bge-reranker-large": 2_240_000_000,  # model.safetensors 2.24 GB
    "BAAI/bge-reranker-base": 1_110_000_000,  # model.safetensors 1.11 GB
    "sentence-transformers/all-MiniLM-L6-v2": 90_900_000,  # model.safetensors 90.9 MB
}


def _cache_dir(container: dict[str, Any]) -> str | None:
    """The Hub cache directory of a TEI/TGI container (``--huggingface-hub-cache``, else the env, else the image's
    default); None where it is set to a value the program cannot read."""
    argv = [str(a) for a in container.get("args") or []]
    for i, arg in enumerate(argv):
        if arg.startswith("--huggingface-hub-cache="):
            value = arg.split("=", 1)[1]
            return value if value.startswith("/") else None
        if arg == "--huggingface-hub-cache":
            value = argv[i + 1] if i + 1 < len(argv) else ""
            return value if value.startswith("/") else None
    env = {str(e.get("name")): e for e in container.get("env") or [] if isinstance(e, dict)}
    for name in HUB_CACHE_ENV:
        if name in env:
            literal = env[name].get("value")
            return literal if isinstance(literal, str) and literal.startswith("/") else None
    return HUB_CACHE_DEFAULT


def _bound(container: dict[str, Any], volumes: dict[str, Any], directory: str) -> tuple[float, str, str] | None:
    """(bytes, what bounds the directory, the fix's subject) where the directory's storage has a known bound."""
    held = volume_at(container, directory)
    if held is None:
        limit = ((container.get("resources") or {}).get("limits") or {}).get("ephemeral-storage")
        if limit is None:
            return None
        return (
            quantity(limit),
            f"is on no volume, in the container's writable layer, whose ephemeral-storage limit is {limit}",
            "resources.limits.ephemeral-storage",
        )
    name, path = held
    empty_dir = (volumes.get(name) or {}).get("emptyDir")
    if not isinstance(empty_dir, dict) or empty_dir.get("sizeLimit") is None:
        return None
    size = empty_dir["sizeLimit"]
    medium = " (medium: Memory)" if empty_dir.get("medium") == "Memory" else ""
    return (
        quantity(size),
        f"is on emptyDir {name}{medium} (mounted at {path}) with sizeLimit {size}",
        f"emptyDir {name}'s sizeLimit",
    )


def check(graph: Graph) -> Iterator[Finding]:
    for workload in graph.pod_bearers():
        spec = workload.pod_template().get("spec") or {}
        volumes = {str(v.get("name")): v for v in spec.get("volumes") or [] if isinstance(v, dict)}
        for container in spec.get("containers") or []:
            yield from _container(workload, container, volumes)


def _container(workload: KubeObject, container: dict[str, Any], volumes: dict[str, Any]) -> Iterator[Finding]:
    server, model = hub_model_server(container)
    weights = HUB_WEIGHT_BYTES.get(model or "")
    directory = _cache_dir(container)
    if server is None or weights is None or directory is None:
        return
    bound = _bound(container, volumes, directory)
    if bound is None or bound[0] >= weights:
        return
    _, where, subject = bound
    yield Finding(
        RULE,
        workload.urn,
        f"container {container.get('name')} of {workload.kind} {workload.namespace}/{workload.name} runs {server}, "
        f"which downloads {model} ({weights / 1e9:.2f} GB of weights, huggingface.co/{model}) into its Hub cache "
        f"{directory} at start; {directory} {where}: the kubelet evicts the pod once the "
        "download passes the limit, every replacement repeats it, and it never becomes Ready",
        f"raise {subject} above the model with room for its tokenizer and config (at least "
        f"{weights * 1.2 / 2**30:.1f}Gi), or put the cache on a PersistentVolumeClaim",
    )
