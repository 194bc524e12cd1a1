"""The pools' weight fetch script, run for real by /bin/sh with a stand-in ``aws`` that copies a local tree.

Replicas on one node share the NVMe cache, so two fetches of one artifact can
run at once; each must download into its own directory and none may delete
what another downloaded.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from tokenplane.weights_fetch import FETCH_SCRIPT, LOCK_STALE_MINUTES, artifact_sha256

# `aws s3 sync --only-show-errors SRC DEST`: record DEST, then copy SRC (a local path after s3://) into it.
FAKE_AWS = """#!/bin/sh
set -eu
src=${4#s3://}; dest=$5
echo "$dest" >> "$SYNC_LOG"
mkdir -p "$dest"
cp -R "$src/." "$dest/"
"""


def _setup(tmp_path: Path) -> tuple[dict[str, str], Path]:
    source = tmp_path / "registry" / "models" / "m" / "v1"
    source.mkdir(parents=True)
    (source / "config.json").write_text('{"a": 1}')
    (source / "model.safetensors").write_bytes(os.urandom(4096))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "aws").write_text(FAKE_AWS)
    (bin_dir / "aws").chmod(0o755)
    cache = tmp_path / "cache"
    cache.mkdir()
    env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "MODELS": str(cache),
        "ARTIFACTS": f"m-v1={artifact_sha256(source)}@s3://{source}",
        "SYNC_LOG": str(tmp_path / "sync.log"),
    }
    return env, cache


def _fetch(env: dict[str, str], pod: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["/bin/sh", "-c", FETCH_SCRIPT], env={**env, "HOSTNAME": pod}, capture_output=True, text=True, check=False
    )


def test_fetch_verifies_the_tree_and_leaves_a_marked_copy(tmp_path: Path) -> None:
    env, cache = _setup(tmp_path)
    done = _fetch(env, "pod-a")
    assert done.returncode == 0, done.stderr
    assert "fetched and verified" in done.stdout
    assert sorted(p.name for p in (cache / "m-v1").iterdir())[0].startswith(".verified-")
    assert [p.name for p in cache.iterdir()] == ["m-v1"]  # no partial directory left behind


def test_two_replicas_starting_together_on_one_node_download_the_model_once(tmp_path: Path) -> None:
    env, cache = _setup(tmp_path)
    a = subprocess.Popen(
        ["/bin/sh", "-c", FETCH_SCRIPT], env={**env, "HOSTNAME": "pod-a"}, stdout=subprocess.PIPE, text=True
    )
    b = subprocess.Popen(
        ["/bin/sh", "-c", FETCH_SCRIPT], env={**env, "HOSTNAME": "pod-b"}, stdout=subprocess.PIPE, text=True
    )
    outputs = [a.communicate(timeout=60)[0], b.communicate(timeout=60)[0]]
    assert (a.returncode, b.returncode) == (0, 0)
    destinations = (tmp_path / "sync.log").read_text().split()
    assert len(destinations) == 1, f"both replicas pulled the model: {destinations}"
    assert sum("fetched and verified" in o for o in outputs) == 1, outputs
    assert [p.name for p in cache.iterdir()] == ["m-v1"]  # no lock, no partial directory left


def test_a_lock_left_by_a_fetch_that_died_is_taken_over(tmp_path: Path) -> None:
    env, cache = _setup(tmp_path)
    lock = cache / "m-v1.lock"
    lock.mkdir()
    (lock / "owner").write_text("pod-gone\n")
    old = time.time() - (LOCK_STALE_MINUTES + 1) * 60
    os.utime(lock, (old, old))
    done = _fetch(env, "pod-a")
    assert done.returncode == 0, done.stderr
    assert "taking over the lock of a fetch that stopped" in done.stdout
    assert [p.name for p in cache.iterdir()] == ["m-v1"]


def test_a_second_replica_reuses_the_verified_copy(tmp_path: Path) -> None:
    env, _ = _setup(tmp_path)
    assert _fetch(env, "pod-a").returncode == 0
    second = _fetch(env, "pod-b")
    assert second.returncode == 0 and "verified copy on NVMe" in second.stdout
    assert len((tmp_path / "sync.log").read_text().split()) == 1


def test_a_tree_that_does_not_match_the_spec_fails_the_fetch(tmp_path: Path) -> None:
    env, cache = _setup(tmp_path)
    ref, rest = env["ARTIFACTS"].split("=", 1)
    env["ARTIFACTS"] = f"{ref}={'0' * 64}@{rest.split('@', 1)[1]}"
    done = _fetch(env, "pod-a")
    assert done.returncode == 1 and "does not match the registry's" in done.stderr, done.stderr
    assert not (cache / "m-v1").exists()


def test_fetched_weights_are_readable_by_the_engines_own_user(tmp_path: Path) -> None:
    # The fetcher runs as root and the engine as VLLM_UID: a file the registry tree holds as 0600 (safetensors
    # writes them so) must still be readable once on the node, or the engine cannot load it.
    env, cache = _setup(tmp_path)
    weights = Path(env["ARTIFACTS"].split("@s3://", 1)[1]) / "model.safetensors"
    weights.chmod(0o600)
    done = _fetch(env, "pod-a")
    assert done.returncode == 0, done.stderr
    fetched = cache / "m-v1" / "model.safetensors"
    assert fetched.stat().st_mode & 0o004, oct(fetched.stat().st_mode)
    # Without the script's chmod the copy keeps the source's mode: the check above is the one that fires.
    without = FETCH_SCRIPT.replace('chmod -R a+rX "$mine"', ":")
    assert without != FETCH_SCRIPT
    env["MODELS"] = str(tmp_path / "cache-without")
    Path(env["MODELS"]).mkdir()
    done = subprocess.run(
        ["/bin/sh", "-c", without], env={**env, "HOSTNAME": "pod-b"}, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert not (Path(env["MODELS"]) / "m-v1" / "model.safetensors").stat().st_mode & 0o004


def test_a_refused_download_leaves_no_partial_directory_on_the_node(tmp_path: Path) -> None:
    env, cache = _setup(tmp_path)
    ref, rest = env["ARTIFACTS"].split("=", 1)
    env["ARTIFACTS"] = f"{ref}={'0' * 64}@{rest.split('@', 1)[1]}"  # not the tree's hash
    done = _fetch(env, "pod-a")
    assert done.returncode == 1 and "does not match the registry's" in done.stderr
    assert list(cache.iterdir()) == [], "a failed start left its download behind; the next pod has another name"
