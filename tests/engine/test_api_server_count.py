"""``engine.api_server_count`` on the real engine: the rendered flag starts that many server processes, and they share the load.

``plan`` names the count a pool's load needs (``capacity.api_server_busy``) and ``vllm_args`` renders it as
``--api-server-count``. The pinned release's parser knowing the flag is not enough: this starts the dev
spec's ``small`` pool with a count of two through the same ``vllm serve`` the pods run, and fails unless two
API server processes come up beside the engine core and each carries some of the streams' work.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from benchmarks.server_cpu import process_cpu_s
from tokenplane.dev.real_engine import RealEngine, running_engine
from tokenplane.spec import PlatformSpec

POOL = "small"
SERVERS = 2
STREAMS = 16  # enough that the round-robin deals each process several


def with_servers(spec: PlatformSpec, pool: str, count: int) -> PlatformSpec:
    """``spec`` with ``pool``'s ``engine.api_server_count`` set to ``count``."""
    old = spec.pool(pool)
    new = old.model_copy(update={"engine": old.engine.model_copy(update={"api_server_count": count})})
    return spec.model_copy(update={"pools": [new if p.name == pool else p for p in spec.pools]})


def server_processes(engine: RealEngine) -> dict[int, str]:
    """The launcher's children that are API servers (vLLM names them ``VLLM::APIServer_<n>``), by pid."""
    assert engine.process.process is not None
    parent = engine.process.process.pid
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text()
        except OSError:  # the process ended while the walk read it
            continue
        name, rest = fields[fields.index("(") + 1 : fields.rindex(")")], fields[fields.rindex(")") + 2 :].split()
        if int(rest[1]) == parent and name.startswith("VLLM::APIServer"):
            found[int(stat.parent.name)] = name
    return found


@pytest.fixture(scope="module")
def two_servers(
    engine_version: str, dev_spec: PlatformSpec, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RealEngine]:
    spec = with_servers(dev_spec, POOL, SERVERS)
    with running_engine(spec, spec.pool(POOL), tmp_path_factory.mktemp("api-servers")) as engine:
        yield engine


def test_the_rendered_count_starts_that_many_servers_and_each_carries_streams(
    two_servers: RealEngine, dev_spec: PlatformSpec
) -> None:
    argv = two_servers.argv
    assert argv[argv.index("--api-server-count") + 1] == str(SERVERS)
    servers = server_processes(two_servers)
    assert len(servers) == SERVERS, f"expected {SERVERS} API server processes beside the engine core, found {servers}"
    before = {pid: process_cpu_s(pid) for pid in servers}
    body = {
        "model": dev_spec.model(dev_spec.pool(POOL).model).ref,
        "prompt": "hello",
        "max_tokens": 64,
        "ignore_eos": True,
    }

    def complete(_: int) -> int:
        request = urllib.request.Request(
            f"{two_servers.base_url}/v1/completions",
            data=json.dumps(body).encode(),
            headers={"content-type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=120) as response:
            return int(json.loads(response.read())["usage"]["completion_tokens"])

    with ThreadPoolExecutor(max_workers=STREAMS) as pool:
        assert sum(pool.map(complete, range(STREAMS))) == STREAMS * 64
    spent = {servers[pid]: process_cpu_s(pid) - cpu for pid, cpu in before.items()}
    assert all(s > 0 for s in spent.values()), f"a server process carried none of the requests: {spent}"
