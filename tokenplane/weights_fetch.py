"""How a replica gets its weights: the registry sync the pools' init container runs, and ``tokenplane dev`` too.

The script below is the one the cluster runs (``VllmPool``'s ``fetch-weights`` init container, with the AWS CLI
image). ``tokenplane dev --engine vllm`` runs the same script on this machine with a stand-in ``aws`` that copies
from a local folder instead of the registry bucket, so a model folder a user names is checked exactly as a node
checks what it syncs: the same tree hash against the spec's ``sha256``, the same cache markers.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tokenplane.errors import SpecError

MODELS_ENV = "MODELS"  # the cache folder the engine reads: models/<name>-<version>/
ARTIFACTS_ENV = "ARTIFACTS"  # space-separated ``ref=sha256@source`` entries (``artifact_entry``)

# Fetch the artifact from the regional registry bucket unless the node already holds a verified copy,
# then check its sha256: the hash of the `sha256sum` manifest of every file, sorted by path bytes (LC_ALL=C, as
# `tokenplane hash-model` sorts). Replicas on one node share the cache, so one pod at a time downloads an artifact:
# the others wait on a lock directory (mkdir is atomic) and then find the verified copy, instead of each pulling the
# whole model (eight TP1 replicas on a p5 node would otherwise pull it eight times). The holder touches the lock
# while it downloads; a lock untouched for LOCK_STALE_MINUTES belonged to a pod that died, and is taken over.
# The download goes to the holder's own directory ($HOSTNAME is the pod's name) and is renamed into place, so a
# reader never sees a half-written tree, and deleting the cache would pull it from under a running vLLM. A refused
# download is deleted before the pod fails: its restart is a new pod with a new name, so a partial directory left
# behind would never be reused and would fill the node's NVMe one failed start at a time.
LOCK_STALE_MINUTES = 3
FETCH_SCRIPT = r"""set -eu
beat=""; mine=""; lock=""
cleanup() {
  if [ -n "$beat" ]; then kill "$beat" 2>/dev/null || true; fi
  if [ -n "$mine" ]; then rm -rf "$mine"; fi
  if [ -n "$lock" ]; then rm -rf "$lock"; fi
}
trap cleanup EXIT
for entry in $ARTIFACTS; do
  ref=${entry%%=*}; rest=${entry#*=}; sha=${rest%%@*}; src=${rest#*@}
  dest="$MODELS/$ref"
  if [ -f "$dest/.verified-$sha" ]; then echo "$ref: verified copy on NVMe"; continue; fi
  while :; do
    if mkdir "$dest.lock" 2>/dev/null; then lock="$dest.lock"; break; fi
    if [ -f "$dest/.verified-$sha" ]; then break; fi
    # Two waiters may both take over one stale lock and both download: each into its own directory, so that
    # costs a download, never a corrupt tree.
    if [ -n "$(find "$dest.lock" -maxdepth 0 -mmin +__STALE__ 2>/dev/null)" ]; then
      echo "$ref: taking over the lock of a fetch that stopped"; rm -rf "$dest.lock"; continue
    fi
    sleep 2
  done
  if [ -f "$dest/.verified-$sha" ]; then
    if [ -n "$lock" ]; then rm -rf "$lock"; lock=""; fi
    echo "$ref: a sibling on this node fetched it"; continue
  fi
  echo "$HOSTNAME" > "$lock/owner"
  # The heartbeat ends by itself once the lock is gone, and holds none of the script's output open.
  (while [ -d "$lock" ]; do touch "$lock" 2>/dev/null || true; sleep 5; done) </dev/null >/dev/null 2>&1 & beat=$!
  mine="$dest.partial.$HOSTNAME"
  rm -rf "$mine"
  aws s3 sync --only-show-errors "$src" "$mine"
  actual=$(cd "$mine" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
  if [ "$actual" != "$sha" ]; then echo "$ref: sha256 $actual does not match the registry's $sha" >&2; exit 1; fi
  chmod -R a+rX "$mine"  # the engine reads it as another user (VLLM_UID)
  touch "$mine/.verified-$sha"
  if [ -e "$dest" ] && [ ! -f "$dest/.verified-$sha" ]; then mv "$dest" "$dest.stale.$HOSTNAME"; fi
  if mv -T "$mine" "$dest" 2>/dev/null; then echo "$ref: fetched and verified"; else rm -rf "$mine"; echo "$ref: a sibling fetched it first"; fi
  mine=""
  kill "$beat" 2>/dev/null || true; beat=""
  rm -rf "$lock"; lock=""
done
""".replace("__STALE__", str(LOCK_STALE_MINUTES))

# The stand-in for `aws s3 sync --only-show-errors SRC DEST` where SRC is a local folder: hard links where the
# cache shares the folder's filesystem (a model of hundreds of GB is not copied), a copy where it does not.
LOCAL_SYNC = """#!/bin/sh
set -eu
[ "$1 $2" = "s3 sync" ] || { echo "the local registry stand-in only syncs, not: $*" >&2; exit 2; }
src=$4; dest=$5
mkdir -p "$dest"
cp -Rl "$src/." "$dest/" 2>/dev/null || cp -R "$src/." "$dest/"
"""


def artifact_entry(ref: str, sha256: str, source: str) -> str:
    """One ``ARTIFACTS`` entry: the script splits it at the first ``=`` and ``@``."""
    return f"{ref}={sha256}@{source}"


def artifact_sha256(directory: Path) -> str:
    """A model artifact's ``RegistryModel.sha256``: what a pool's weight fetch recomputes and compares.

    The fetch (``FETCH_SCRIPT``) runs, in the downloaded copy,
    ``find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum``: the sha256 of the
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


@dataclass(frozen=True)
class LocalArtifact:
    """A registry model served from a local folder: its ref, the spec's sha256, and the folder."""

    ref: str
    sha256: str
    folder: Path


class WeightsRefused(Exception):
    """The fetch script refused a local folder, as a node would refuse the registry's copy."""


def fetch_local(artifacts: list[LocalArtifact], models_dir: Path, *, host: str = "dev") -> str:
    """Run ``FETCH_SCRIPT`` over local folders into ``models_dir``; returns the script's output.

    Raises:
        WeightsRefused: a folder's tree hash is not the spec's sha256 (the script's message, with the fix).
    """
    models_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tokenplane-sync-") as shim:
        aws = Path(shim) / "aws"
        aws.write_text(LOCAL_SYNC)
        aws.chmod(0o755)
        env = {
            "PATH": f"{shim}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            MODELS_ENV: str(models_dir),
            ARTIFACTS_ENV: " ".join(artifact_entry(a.ref, a.sha256, str(a.folder)) for a in artifacts),
            "HOSTNAME": host,
        }
        done = subprocess.run(["/bin/sh", "-c", FETCH_SCRIPT], env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise WeightsRefused(done.stderr.strip() or done.stdout.strip())
    return done.stdout
