"""The real vLLM engine starts and serves as the non-root user, with the home and caches, that VllmPool's pods give it.

checkov and the pack both ask for a non-root vLLM; only the engine can say whether it runs that way.
The CPU build serves a tiny random Llama (2 layers, hidden 128, head_dim 64: CPU attention refuses
smaller heads) as ``VLLM_UID``, a UID without a passwd entry, as in the pod, with exactly the pod's
environment, and must write nothing outside its scratch directory: on the cluster the root filesystem
is read-only. It needs an interpreter with vLLM: this one, or ``TOKENPLANE_VLLM_PYTHON``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tokenplane.components.vllm_pool import VLLM_UID, scratch_env
from tokenplane.runtime_env import Var

pytestmark = [pytest.mark.engine, pytest.mark.slow]

START_TIMEOUT_S = 480  # the CPU engine's import, load and warm-up on a loaded 2-core machine (measured: ~4 min)
REQUEST_TIMEOUT_S = 120
LOG_TAIL_CHARS = 4000

MAKE_MODEL = textwrap.dedent(
    """
    import sys
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
    import torch

    out = sys.argv[1]
    words = "the quick brown fox jumps over a lazy dog hello world engine cache user pod".split()
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=512, special_tokens=["<unk>", "<s>", "</s>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator([" ".join(words)] * 50, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>")
    fast.chat_template = (
        "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\\n{% endfor %}"
        "{% if add_generation_prompt %}assistant: {% endif %}"
    )
    fast.save_pretrained(out)
    config = LlamaConfig(vocab_size=len(fast), hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=2, head_dim=64,
                         max_position_embeddings=1024, bos_token_id=1, eos_token_id=2)
    torch.manual_seed(0)
    LlamaForCausalLM(config).to(torch.bfloat16).save_pretrained(out)
    """
)


def _vllm_python() -> str:
    configured = os.environ.get("TOKENPLANE_VLLM_PYTHON")
    if configured:
        return configured
    probe = subprocess.run([sys.executable, "-c", "import vllm"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip("vLLM is not importable here; set TOKENPLANE_VLLM_PYTHON to an interpreter that has it")
    return sys.executable


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _shared_dir(prefix: str) -> Path:
    """A directory the engine's user can traverse (pytest's own temp root is private to its user)."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    path.chmod(0o755)
    return path


@pytest.fixture(scope="module")
def tiny_model() -> Iterator[Path]:
    out = _shared_dir("tokenplane-tiny-llama-")
    made = subprocess.run(
        [_vllm_python(), "-c", MAKE_MODEL, str(out)], capture_output=True, text=True, timeout=300, check=False
    )
    if made.returncode != 0:
        shutil.rmtree(out, ignore_errors=True)
        pytest.fail(f"could not make the tiny model:\n{made.stderr[-LOG_TAIL_CHARS:]}")
    # As the pod's fetch-weights leaves them (FETCH_SCRIPT's chmod): readable by the engine's user.
    subprocess.run(["chmod", "-R", "a+rX", str(out)], check=True)
    yield out
    shutil.rmtree(out, ignore_errors=True)


@pytest.fixture
def scratch() -> Iterator[Path]:
    """The pod's emptyDir: writable by the engine's user (fsGroup), under a directory it may not write."""
    parent = _shared_dir("tokenplane-vllm-pod-")
    home = parent / "scratch"
    home.mkdir()
    if os.geteuid() == 0:
        os.chown(home, VLLM_UID, VLLM_UID)
    yield home
    shutil.rmtree(parent, ignore_errors=True)


def _engine_command(python: str, model: Path, port: int) -> list[str]:
    serve = [
        python,
        "-m",
        "vllm.entrypoints.openai.api_server",
        *("--model", str(model), "--port", str(port), "--host", "127.0.0.1"),
        *("--max-model-len", "1024", "--dtype", "bfloat16", "--enforce-eager"),
    ]
    if os.geteuid() != 0:
        return serve  # already not root: run as ourselves
    # As in the pod: a UID and GID the image does not define, no supplementary groups, no way back up.
    drop = ["setpriv", f"--reuid={VLLM_UID}", f"--regid={VLLM_UID}", "--clear-groups", "--no-new-privs"]
    return drop + serve


def _skip_unless_the_user_can_run(python: str) -> None:
    """Skip where the test host keeps this interpreter out of the pod user's reach (a venv under /root, say).

    vLLM re-executes ``sys.executable`` for its engine core, so the non-root user must be able to run the
    interpreter itself; in the pod the image's Python is system-wide. A host whose Python lies in root's home
    cannot show this, which is the host's limit, not the pod's.
    """
    if os.geteuid() != 0:
        return
    drop = ["setpriv", f"--reuid={VLLM_UID}", f"--regid={VLLM_UID}", "--clear-groups", "--no-new-privs"]
    reexec = "import subprocess, sys; subprocess.run([sys.executable, '-c', ''], check=True)"
    probe = subprocess.run([*drop, python, "-c", reexec], capture_output=True, text=True, check=False, cwd="/")
    if probe.returncode != 0 and "Permission denied" in probe.stderr:
        pytest.skip(f"UID {VLLM_UID} cannot execute {python} on this host: {probe.stderr.strip().splitlines()[-1]}")


def _pod_environment(home: Path) -> dict[str, str]:
    """The vllm container's env as VllmPool renders it (scratch under ``home``), plus the CPU build's knobs."""
    env = {var.value: value for var, value in scratch_env(str(home)).items()}
    env.update({Var.HF_HUB_OFFLINE.value: "1", Var.VLLM_NO_USAGE_STATS.value: "1"})
    # The pod mounts an emptyDir at /tmp; here temp files go under the scratch directory instead.
    env.update({"TMPDIR": str(home / "tmp"), "PATH": os.environ.get("PATH", "/usr/bin:/bin")})
    env.update({"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_TARGET_DEVICE": "cpu"})
    return env


def _wait_healthy(url: str, engine: subprocess.Popen[str], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if engine.poll() is not None:
            pytest.fail(f"vLLM exited {engine.returncode} as a non-root user:\n{log.read_text()[-LOG_TAIL_CHARS:]}")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=5) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(2)
    pytest.fail(f"vLLM not healthy within {START_TIMEOUT_S} s:\n{log.read_text()[-LOG_TAIL_CHARS:]}")


# Where a user who owns nothing else can write: the world-writable directories. On the cluster the rest of
# the root filesystem is read-only, /tmp is an emptyDir (here the engine's TMPDIR is under its scratch
# instead) and /dev/shm is the dshm volume, so it is not checked.
WORLD_WRITABLE = ("/tmp", "/var/tmp", "/run/lock")


def _written_outside(allowed: Path) -> list[str]:
    """Files the engine's user left outside ``allowed``: writes a read-only root filesystem would refuse."""
    found = subprocess.run(
        [
            "find",
            *(d for d in WORLD_WRITABLE if Path(d).is_dir()),
            "-uid",
            str(VLLM_UID),
            "-not",
            "-path",
            f"{allowed}*",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    return [line for line in found.stdout.splitlines() if line]


def test_vllm_serves_as_the_pods_non_root_user_writing_only_its_scratch(tiny_model: Path, scratch: Path) -> None:
    python = _vllm_python()
    _skip_unless_the_user_can_run(python)
    port = _free_port()
    (scratch / "tmp").mkdir()
    if os.geteuid() == 0:
        os.chown(scratch / "tmp", VLLM_UID, VLLM_UID)
    log = scratch.parent / "engine.log"
    with log.open("w") as sink:
        engine = subprocess.Popen(
            _engine_command(python, tiny_model, port),
            env=_pod_environment(scratch),
            cwd=scratch,
            stdout=sink,
            stderr=subprocess.STDOUT,
            text=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, engine, log)
        body = json.dumps(
            {"model": str(tiny_model), "messages": [{"role": "user", "content": "hello"}], "max_tokens": 8}
        ).encode()
        request = urllib.request.Request(
            f"{url}/v1/chat/completions", data=body, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S) as response:
            answer = json.load(response)
        assert answer["usage"]["completion_tokens"] > 0, answer
        assert answer["choices"][0]["message"]["content"] is not None, answer
    finally:
        engine.terminate()
        try:
            engine.wait(timeout=30)
        except subprocess.TimeoutExpired:
            engine.kill()
            engine.wait(timeout=30)
    if os.geteuid() == 0:
        # Run as root, the test can see what the engine's user wrote anywhere it could.
        assert _written_outside(scratch) == [], "the engine wrote outside its scratch directory"
