"""VllmMirror: the pinned vLLM image, copied into an ECR repository in every region the pools run in.

A GPU node that pulls ``vllm/vllm-openai`` from Docker Hub does it through the region's NAT gateways
(about 13 GB per node, billed per GB), under Docker Hub's anonymous pull limit, and not at all while
Docker Hub is down; a cold start that waits on that misses its SLO. So the stack builds
``serving/images/vllm.Dockerfile`` (a ``FROM`` of ``pins.VLLM_IMAGE``, checked equal by the tests) once
and pushes it to its own repository in each region, and the pools reference their region's copy by
digest: the bytes that were pushed are the bytes every node runs.

Not an ECR pull-through cache rule: for Docker Hub it needs Docker Hub credentials in Secrets Manager,
and it caches whatever a tag points to on first pull, not a digest this stack pushed.
"""

from __future__ import annotations

from pathlib import Path

from tokenplane import package_data
from tokenplane.components.pins import VLLM_IMAGE
from tokenplane.components.regional_image import RegionalImage, RegionalImageArgs

REPOSITORY = "vllm-openai"  # the last path segment stays vllm-openai: the policy pack finds vLLM containers by it
TAG = VLLM_IMAGE.rsplit(":", 1)[1]

VllmMirrorArgs = RegionalImageArgs


class VllmMirror(RegionalImage):
    """The pinned vLLM image in each region's ECR, referenced by the digest of the one build pushed to all."""

    MODULE = "vllm_mirror"
    REPOSITORY = REPOSITORY
    DOCKERFILE = package_data.VLLM_DOCKERFILE
    TAG = TAG
    MUTABLE = False  # the tag is the pinned release; a push of other bytes is refused
    BUILD = "vllm"

    @classmethod
    def context(cls) -> Path:
        """The Dockerfile is one FROM line: the context is only the folder it lies in."""
        return package_data.path(cls.DOCKERFILE).parent
