"""The pool's rendered probes against the real server's start-up: not ready before the model is loaded.

The liveness probe's path must answer once the server is up (the startup probe holds liveness back until
then, so a slow load is not killed).

The probes are read from the render (the Deployment of the dev spec's ``small`` pool), not typed
here. While the real engine starts, the readiness path is polled as the kubelet would: it must not
answer 200 before the server logs that its engine is initialised (the model loaded, the KV cache
allocated), and must answer 200 afterwards; the startup probe waits on the same path (its budget
is printed beside this CPU's start time, not asserted: no test here depends on wall-clock speed).
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tokenplane.dev.real_engine import EngineStartError, RealEngine, running_engine
from tokenplane.dev.standins import ManagedProcess
from tokenplane.proof.render import render
from tokenplane.spec import PlatformSpec

LOADED = "init engine"  # vLLM's log line once the model is loaded and its KV cache allocated
POLL_SECONDS = 0.25


def pool_container(spec: PlatformSpec, pool: str) -> dict[str, Any]:
    result = render(spec, validate=False)
    for resource in result.by_type("kubernetes:apps/v1:Deployment"):
        containers = resource.inputs["spec"]["template"]["spec"]["containers"]
        for container in containers:
            if container["name"] == "vllm" and resource.inputs["metadata"]["labels"].get("tokenplane.io/pool") == pool:
                return dict(container)
    raise AssertionError(f"the render has no vllm container for pool {pool}")


def status(url: str) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            code: int = response.status
            return code
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return None


def test_the_rendered_readiness_probe_is_not_ready_before_the_model_is_loaded(
    engine_version: str, dev_spec: PlatformSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    container = pool_container(dev_spec, "small")
    readiness = container["readinessProbe"]["httpGet"]
    liveness = container["livenessProbe"]["httpGet"]
    startup = container["startupProbe"]
    seen: list[tuple[float, int | None, bool]] = []  # (seconds, status, model loaded per the log)

    def watch(engine: RealEngine, timeout: float) -> None:
        # The kubelet's view while the server starts: poll the rendered path, and note when the log says loaded.
        start = time.monotonic()
        url = f"{engine.base_url}{readiness['path']}"
        process: ManagedProcess = engine.process
        while time.monotonic() - start < timeout:
            if process.process is None or process.process.poll() is not None:
                raise EngineStartError(process.log_tail(40))
            loaded = LOADED in process.log_path.read_text(errors="replace")
            code = status(url)
            seen.append((time.monotonic() - start, code, loaded))
            if code == 200:
                engine.started_s = time.monotonic() - start
                return
            time.sleep(POLL_SECONDS)
        raise EngineStartError(f"not ready within {timeout:.0f} s")

    monkeypatch.setattr("tokenplane.dev.real_engine.wait_healthy", watch)
    with running_engine(dev_spec, dev_spec.pool("small"), tmp_path) as engine:
        assert status(f"{engine.base_url}{readiness['path']}") == 200
        # The liveness probe restarts the container when it fails: the real server must answer it once up.
        assert status(f"{engine.base_url}{liveness['path']}") == 200
        started = engine.started_s
    early = [(t, code) for t, code, loaded in seen if code == 200 and not loaded]
    assert not early, f"{readiness['path']} answered 200 before the model was loaded: {early}"
    rendered = container["args"]
    # Pulumi's mock runtime hands numbers back as floats (8000.0).
    assert int(rendered[rendered.index("--port") + 1]) == int(readiness["port"]), (
        "the probe must ask the port vLLM serves"
    )
    # Not asserted against a wall-clock time (a loaded machine is slower than any budget); reported instead.
    budget = startup.get("initialDelaySeconds", 0) + startup["periodSeconds"] * startup["failureThreshold"]
    assert startup["httpGet"] == readiness, "the startup probe must wait on the same path and port"
    # The kubelet holds liveness back until the startup probe succeeds: a start slower than liveness's own
    # period x failureThreshold is not killed, as long as the startup probe exists and asks what vLLM answers.
    assert int(liveness["port"]) == int(readiness["port"]), "the liveness probe must ask the port vLLM serves"
    print(f"startup probe budget {budget} s; the tiny model on this CPU was ready after {started:.0f} s")
