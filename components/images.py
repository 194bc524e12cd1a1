"""Images: the serving image, built once and pushed to the stack's ECR repository in every region."""

from __future__ import annotations

from pathlib import Path

from components.regional_image import RegionalImage, RegionalImageArgs

REPOSITORY = "tokenplane-serving"
CONTEXT = Path(__file__).resolve().parent.parent  # the repository root: the image installs this project
DOCKERFILE = CONTEXT / "serving" / "images" / "Dockerfile"

ImagesArgs = RegionalImageArgs


class Images(RegionalImage):
    """The gateway/worker image, pushed to a repository in every region, referenced by its one digest."""

    MODULE = "images"
    REPOSITORY = REPOSITORY
    CONTEXT = CONTEXT
    DOCKERFILE = DOCKERFILE
    TAG = "serving"
    MUTABLE = True  # the "serving" tag moves with each build; regions pin the digest, which cannot
    BUILD = "serving"
