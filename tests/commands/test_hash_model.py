"""`tokenplane hash-model DIR` states the sha256 that a pool's weight fetch recomputes and compares.

The fetch script is run for real by /bin/sh (with the stand-in `aws` of test_weight_fetch): a
RegistryModel whose sha256 is the helper's passes it, and a changed file fails it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.components.test_weight_fetch import FAKE_AWS
from tokenplane.commands.cli import app
from tokenplane.errors import SpecError
from tokenplane.weights_fetch import FETCH_SCRIPT, artifact_sha256

# The script's own hash command, taken from it so that this test follows any change to it.
HASH_COMMAND = re.search(r"actual=\$\(cd \"\$mine\" && (.+)\)\n", FETCH_SCRIPT)


def _tree(root: Path) -> Path:
    """A model tree whose path order differs from its component order ("a.txt" < "a/b" by bytes)."""
    (root / "a").mkdir(parents=True)
    (root / "a" / "b.bin").write_bytes(os.urandom(3000))
    (root / "a.txt").write_text("tokenizer")
    (root / ".hidden").write_text("find lists dotfiles too")
    (root / "B.json").write_text('{"upper": "before lower in bytes"}')
    (root / "nested" / "deeper").mkdir(parents=True)
    (root / "nested" / "deeper" / "model-00001.safetensors").write_bytes(os.urandom(5000))
    return root


def _script_hash(root: Path) -> str:
    assert HASH_COMMAND is not None, 'FETCH_SCRIPT no longer computes `actual=$(cd "$mine" && ...)`'
    done = subprocess.run(
        ["/bin/sh", "-c", f"cd {root} && {HASH_COMMAND.group(1)}"],
        env={**os.environ, "LC_ALL": "C"},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def test_the_helper_equals_the_fetch_scripts_own_hash_command(tmp_path: Path) -> None:
    root = _tree(tmp_path / "model")
    assert artifact_sha256(root) == _script_hash(root)


def test_a_pool_fetch_accepts_the_stated_hash_and_refuses_a_changed_file(tmp_path: Path) -> None:
    source = _tree(tmp_path / "registry" / "m" / "v1")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "aws").write_text(FAKE_AWS)
    (tmp_path / "bin" / "aws").chmod(0o755)
    (tmp_path / "cache").mkdir()
    env = {
        "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}",
        "MODELS": str(tmp_path / "cache"),
        "SYNC_LOG": str(tmp_path / "sync.log"),
        "HOSTNAME": "pod-a",
        "ARTIFACTS": f"m-v1={artifact_sha256(source)}@s3://{source}",
    }

    def fetch() -> subprocess.CompletedProcess[str]:
        return subprocess.run(["/bin/sh", "-c", FETCH_SCRIPT], env=env, capture_output=True, text=True, check=False)

    done = fetch()
    assert done.returncode == 0 and "fetched and verified" in done.stdout, done.stderr
    (source / "a.txt").write_text("tokenizes")  # the weights change after their hash was stated
    env["MODELS"] = str(tmp_path / "cache-2")
    Path(env["MODELS"]).mkdir()
    done = fetch()
    assert done.returncode == 1 and "does not match the registry's" in done.stderr, done.stderr


def test_links_are_hashed_as_the_files_the_upload_copies(tmp_path: Path) -> None:
    # A Hugging Face snapshot links into its blob store; `aws s3 sync` uploads the files the links name.
    blobs = tmp_path / "blobs"
    blobs.mkdir()
    (blobs / "0a1b").write_bytes(os.urandom(2000))
    linked = tmp_path / "snapshot"
    linked.mkdir()
    (linked / "model.safetensors").symlink_to(blobs / "0a1b")
    copied = tmp_path / "uploaded"
    copied.mkdir()
    (copied / "model.safetensors").write_bytes((blobs / "0a1b").read_bytes())
    assert artifact_sha256(linked) == artifact_sha256(copied) == _script_hash(copied)


def test_the_command_prints_the_hash_alone_and_as_json(tmp_path: Path) -> None:
    root = _tree(tmp_path / "model")
    plain = CliRunner().invoke(app, ["hash-model", str(root)])
    assert plain.exit_code == 0, plain.output
    assert plain.stdout == artifact_sha256(root) + "\n"  # `sha256: $(tokenplane hash-model DIR)` in a script
    as_json = CliRunner().invoke(app, ["hash-model", str(root), "--format", "json"])
    assert json.loads(as_json.stdout) == {"directory": str(root), "sha256": artifact_sha256(root)}


@pytest.mark.parametrize("kind", ["missing", "empty"])
def test_a_directory_without_weights_is_refused_with_the_reason(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "weights"
    if kind == "empty":
        target.mkdir()
    with pytest.raises(SpecError, match="not a directory" if kind == "missing" else "holds no file"):
        artifact_sha256(target)
    result = CliRunner().invoke(app, ["hash-model", str(target)])
    assert result.exit_code == 2 and str(target) in result.output
