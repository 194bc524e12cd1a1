"""Images: the serving image, built once and pushed to the stack's ECR repository in every region."""

from __future__ import annotations

from pathlib import Path

from tokenplane import package_data
from tokenplane.components.regional_image import RegionalImage, RegionalImageArgs

REPOSITORY = "tokenplane-serving"

ImagesArgs = RegionalImageArgs


class Images(RegionalImage):
    """The gateway/worker image, pushed to a repository in every region, referenced by its one digest."""

    MODULE = "images"
    REPOSITORY = REPOSITORY
    DOCKERFILE = package_data.SERVING_DOCKERFILE
    TAG = "serving"
    MUTABLE = True  # the "serving" tag moves with each build; regions pin the digest, which cannot
    BUILD = "serving"

    @classmethod
    def context(cls) -> Path:
        """The image installs this project: it is built from the directory that holds its packages."""
        return package_data.source_root()
