"""Annotation names the components write and the deployability checks read: one definition for both sides;
and the weights' hash that a spec states and a pool's fetch checks."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from tokenplane.errors import SpecError

# On a workload: Secrets/ConfigMaps its pods read that the stack must not create ("secret/NAME,configmap/NAME").
PREREQUISITES_ANNOTATION = "tokenplane.io/prerequisites"
# On a weights publish Job: the s3:// prefix it fills, which pools' init containers then verify.
PUBLISHES_ANNOTATION = "tokenplane.io/publishes"
# The pool a vLLM Deployment serves, so its start-up time can be derived from the spec.
POOL_LABEL = "tokenplane.io/pool"
# On a vLLM pod template: the release its image holds. The pools run a regional mirror by digest, whose
# reference no longer names the version, and the argv check needs it to pick the option schema.
VLLM_VERSION_ANNOTATION = "tokenplane.io/vllm-version"
# On a pool's Deployment: tokenplane.model.startup's estimate of its first replica's time to Ready, in seconds. The
# await-timeout check reads it where there is no spec to estimate from (a program of one's own).
TIME_TO_READY_ANNOTATION = "tokenplane.io/time-to-ready-seconds"

# Set while `tokenplane check --program` / `plan` render a program under mocks: a program may then use stand-ins
# for values only a real `pulumi up` needs (stacks/__main__.py's env:// secrets), as it would under preview.
OFFLINE_RENDER_ENV = "TOKENPLANE_OFFLINE_RENDER"


def artifact_sha256(directory: Path) -> str:
    """A model artifact's ``RegistryModel.sha256``: what a pool's weight fetch recomputes and compares.

    The fetch (``components.vllm_pool.FETCH_SCRIPT``) runs, in the downloaded copy,
    ``find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum``: the sha256 of the
    ``sha256sum`` manifest of every file, sorted by path byte by byte. This computes the same
    for a local tree before it is uploaded. Symbolic links are followed, as ``aws s3 sync``
    follows them when it uploads (a Hugging Face snapshot links into its blob store), so the
    hash is that of the files the registry will hold.

    Raises:
        SpecError: ``directory`` is not a directory, holds no file, or holds a file whose name
            ``sha256sum`` would escape (a newline or a backslash), which the manifest cannot match.
    """
    if not directory.is_dir():
        raise SpecError(f"{directory}: not a directory; give the directory of the model's weights (config.json...)")
    entries: list[tuple[bytes, Path]] = []
    for path in directory.rglob("*"):
        if not path.is_file():  # follows links, as the upload does; directories have no manifest line
            continue
        name = "./" + path.relative_to(directory).as_posix()
        if "\n" in name or "\\" in name:
            raise SpecError(f"{path}: a file name with a newline or a backslash; rename it before uploading")
        entries.append((os.fsencode(name), path))
    if not entries:
        raise SpecError(f"{directory}: holds no file; give the directory of the model's weights")
    manifest = hashlib.sha256()
    for encoded, path in sorted(entries):
        manifest.update(_file_sha256(path).encode() + b"  " + encoded + b"\n")
    return manifest.hexdigest()


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
