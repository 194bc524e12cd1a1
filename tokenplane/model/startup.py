"""How long a new vLLM replica takes to become Ready, from nothing: the number await timeouts must cover.

``pulumi up`` waits for a Deployment to be Ready (ten minutes by default) before
it calls the update done. A first replica waits for a GPU node to boot and
join, the vLLM image to be pulled, the weights to be synced from S3 to NVMe,
and the engine's own cold start (the spec's ``cold_start_seconds``). The
figures below are deliberately pessimistic: a timeout that is too long costs
a slower failure; one that is too short fails a healthy rollout.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from tokenplane.model import capacity
from tokenplane.spec import ModelLookup, Pool
from tokenplane.vllm_args import artifacts

# EC2 launch, the EKS NVIDIA AMI's boot and driver load, kubelet join and the device plugin's registration:
# 3-6 minutes on p4d/p5 in EKS's own guidance for GPU node groups; the slow end.
GPU_NODE_BOOT_SECONDS = 360
# The vllm/vllm-openai image, CUDA and PyTorch included. The earlier 10 GB (read for v0.19) was stale: the image
# grew with each release. Pulled (compressed, Docker Hub's figure): 12.64 GB ("current vLLM docker image size is
# 12.64GB", discuss.vllm.ai, cited in vllm-project/vllm issue #27154 of 2025-10-18, "around 12 GB" for :latest).
# Unpacked on the node: 28.6 GB (vllm-project/vllm PR #22377, update of 2025-12-10: "Size of official
# out-of-the-box vllm-openai:latest docker image: 28.6 GB"). Both read 2026-12-04; newer releases are not smaller.
VLLM_IMAGE_COMPRESSED_BYTES = 12.64e9
VLLM_IMAGE_UNPACKED_BYTES = 28.6e9
VLLM_IMAGE_BYTES = VLLM_IMAGE_COMPRESSED_BYTES  # what a pull downloads; the rate below counts pull and unpack
IMAGE_PULL_BYTES_PER_SECOND = 80e6  # containerd pull + unpack from Docker Hub through a NAT gateway
S3_SYNC_BYTES_PER_SECOND = 400e6  # `aws s3 sync` with its default 10 concurrent requests, one node
PULUMI_DEFAULT_AWAIT_SECONDS = 600  # pulumi-kubernetes: a Deployment's create/update await defaults to 10 minutes
TIMEOUT_MARGIN = 1.5  # the await timeout the components set: the estimate with half again as margin


@dataclass(frozen=True)
class TimeToReady:
    node_boot: float
    image_pull: float
    weight_fetch: float
    cold_start: float

    @property
    def total(self) -> float:
        return self.node_boot + self.image_pull + self.weight_fetch + self.cold_start

    def __str__(self) -> str:
        return (
            f"{self.total:.0f} s (node boot {self.node_boot:.0f} + image pull {self.image_pull:.0f} "
            f"+ weight fetch {self.weight_fetch:.0f} + cold start {self.cold_start:.0f})"
        )


def time_to_ready(spec: ModelLookup, pool: Pool) -> TimeToReady:
    """The expected time from ``pulumi up`` creating the pool's Deployment to its first Ready replica."""
    weights = 0.0
    for model in artifacts(spec, pool):
        weights += capacity.model_weight_bytes(model.resolved_architecture(), model.quantization)
    return TimeToReady(
        node_boot=GPU_NODE_BOOT_SECONDS,
        image_pull=VLLM_IMAGE_BYTES / IMAGE_PULL_BYTES_PER_SECOND,
        weight_fetch=weights / S3_SYNC_BYTES_PER_SECOND,
        cold_start=pool.autoscaling.cold_start_seconds,
    )


def await_timeout_minutes(spec: ModelLookup, pool: Pool) -> int:
    """The create/update timeout the pool's Deployment gets: the estimate with margin, in whole minutes."""
    return math.ceil(time_to_ready(spec, pool).total * TIMEOUT_MARGIN / 60)


def parse_duration(text: str) -> float | None:
    """Seconds in a Go duration as Pulumi's customTimeouts take it ("40m", "1h30m", "90s"); None if unreadable."""
    parts = re.findall(r"(\d+(?:\.\d+)?)(h|m|s)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    return sum(float(n) * {"h": 3600, "m": 60, "s": 1}[u] for n, u in parts)
