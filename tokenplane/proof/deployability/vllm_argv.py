"""Every rendered ``vllm serve`` command line is one the pinned vLLM release's parser accepts."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.contract import VLLM_VERSION_ANNOTATION
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject
from tokenplane.vllm_cli import argv_errors, load_schema

RULE = "vllm-argv"
IMAGE = "vllm/vllm-openai:v"


def check(graph: Graph) -> Iterator[Finding]:
    for workload in graph.workloads():
        for container in workload.pod_spec().get("containers") or []:
            if container.get("command") != ["vllm", "serve"]:
                continue
            # Neither a tag nor an annotation is a finding: the check must not quietly skip it.
            image = str(container.get("image", ""))
            version = vllm_version(workload, container)
            if not version:
                yield Finding(
                    RULE,
                    workload.urn,
                    f"container {container.get('name')} runs vllm serve from {image or 'an unknown image'}, whose "
                    "vLLM version cannot be told, so its flags cannot be checked",
                    f"set the pod template's {VLLM_VERSION_ANNOTATION} annotation (components/vllm_pool.py does)",
                )
                continue
            try:
                schema = load_schema(version)
            except FileNotFoundError as e:
                yield Finding(RULE, workload.urn, f"no option schema for vLLM {version}", str(e))
                continue
            for error in argv_errors([str(a) for a in container.get("args") or []], schema):
                yield Finding(
                    RULE,
                    workload.urn,
                    f"container {container.get('name')}: {error}; vLLM exits at start and the pod crash-loops",
                    "fix the flag in tokenplane/vllm_args.py (the one place vLLM flags are derived)",
                )


def vllm_version(workload: KubeObject, container: dict[str, Any]) -> str:
    """The vLLM release a ``vllm serve`` container runs, "" when it cannot be told.

    From the image's tag where it has one (vllm/vllm-openai:v0.19.0), else from the pod's annotation (a
    regional mirror by digest).
    """
    image = str(container.get("image", ""))
    if image.startswith(IMAGE):
        return image.removeprefix(IMAGE).split("@", 1)[0]
    annotations = workload.manifest.get("spec", {}).get("template", {}).get("metadata", {}).get("annotations")
    return str((annotations or {}).get(VLLM_VERSION_ANNOTATION) or "")
