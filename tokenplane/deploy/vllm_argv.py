"""Every rendered ``vllm serve`` command line is one the pinned vLLM release's parser accepts."""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.deploy.findings import Finding
from tokenplane.deploy.graph import Graph
from tokenplane.vllm_cli import argv_errors, load_schema

RULE = "vllm-argv"
IMAGE = "vllm/vllm-openai:v"


def check(graph: Graph) -> Iterator[Finding]:
    for workload in graph.workloads():
        for container in workload.pod_spec().get("containers") or []:
            image = str(container.get("image", ""))
            if not image.startswith(IMAGE) or container.get("command") != ["vllm", "serve"]:
                continue
            version = image.removeprefix(IMAGE).split("@", 1)[0]
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
