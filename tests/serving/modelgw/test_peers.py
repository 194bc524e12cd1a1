"""The AI gateway deals its requests over the model gateway's processes, one each in turn (serving/modelgw/peers.py)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

import aiohttp
import pytest
from prometheus_client import CollectorRegistry

from tests.serving.conftest import serve
from tests.serving.modelgw.test_modelgw_gateway import FakeReplica, chat
from tokenplane.dev.standins import free_port
from tokenplane.serving.errors import UpstreamUnavailable
from tokenplane.serving.modelgw.app import create_app
from tokenplane.serving.modelgw.client import HttpUpstream
from tokenplane.serving.modelgw.config import load_modelgw_config
from tokenplane.serving.modelgw.gateway import FailoverUpstream
from tokenplane.serving.modelgw.peers import PeerDealer
from tokenplane.spec import PlatformSpec

HEADLESS = "model-gateway-peers.llm-gateway.svc"
Resolve = Callable[[str, int], Awaitable[list[str]]]


@pytest.fixture
async def stack() -> AsyncIterator[contextlib.AsyncExitStack]:
    async with contextlib.AsyncExitStack() as s:
        yield s


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as s:
        yield s


def resolving(*answers: list[str] | OSError) -> tuple[list[str], Resolve]:
    """A fake DNS: ``answers`` in turn (the last one again after that), and the hosts it was asked for."""
    asked: list[str] = []
    left = list(answers)

    async def resolve(host: str, port: int) -> list[str]:
        asked.append(host)
        answer = left.pop(0) if len(left) > 1 else left[0]
        if isinstance(answer, OSError):
            raise answer
        return answer

    return asked, resolve


async def processes(
    stack: contextlib.AsyncExitStack, session: aiohttp.ClientSession, spec: PlatformSpec, hosts: list[str]
) -> tuple[int, dict[str, FakeReplica]]:
    """A real model gateway on each loopback address of ``hosts``, all on one port as the pods behind a headless
    Service are, each over a replica of pool small of its own (whose requests say which process sent them)."""
    port = free_port()
    replicas = {}
    for host in hosts:
        replica = FakeReplica("small")
        replica_url = await stack.enter_async_context(serve(replica.app))
        registry = CollectorRegistry()
        config = load_modelgw_config(spec, "local", {"POOL_URL_SMALL": replica_url})
        gateway = FailoverUpstream(config, session=session, registry=registry)
        stack.push_async_callback(gateway.aclose)
        await stack.enter_async_context(serve(create_app(gateway, registry=registry), host=host, port=port))
        replicas[host] = replica
    return port, replicas


async def test_each_of_the_processes_gets_every_third_request(
    stack: contextlib.AsyncExitStack, session: aiohttp.ClientSession, dev_spec: PlatformSpec
) -> None:
    hosts = ["127.0.0.1", "127.0.0.2", "127.0.0.3"]
    port, replicas = await processes(stack, session, dev_spec, hosts)
    asked, resolve = resolving(hosts)
    url = f"http://{HEADLESS}:{port}"
    upstream = HttpUpstream(url, session=session, peers=PeerDealer(url, resolve=resolve))
    stack.push_async_callback(upstream.aclose)
    for _ in range(30):
        await upstream.complete(chat("pool:small@small"))
    counts = {host: len(replica.bodies) for host, replica in replicas.items()}
    assert counts == dict.fromkeys(hosts, 10), counts  # kube-proxy's pick per connection gives one process all 30
    assert asked == [HEADLESS]


async def test_one_url_with_keep_alive_sends_every_request_to_one_process(
    stack: contextlib.AsyncExitStack, session: aiohttp.ClientSession, dev_spec: PlatformSpec
) -> None:
    # The defect put back: without dealing, a caller's keep-alive connection pins it to the process it first reached
    # (as through a ClusterIP Service), and that process's share is the caller's.
    hosts = ["127.0.0.1", "127.0.0.2"]
    port, replicas = await processes(stack, session, dev_spec, hosts)
    url = f"http://127.0.0.2:{port}"
    upstream = HttpUpstream(url, session=session)
    for _ in range(10):
        await upstream.complete(chat("pool:small@small"))
    assert {host: len(r.bodies) for host, r in replicas.items()} == {"127.0.0.1": 0, "127.0.0.2": 10}


async def test_a_process_gone_since_the_last_lookup_is_passed_over(
    stack: contextlib.AsyncExitStack, session: aiohttp.ClientSession, dev_spec: PlatformSpec
) -> None:
    port, replicas = await processes(stack, session, dev_spec, ["127.0.0.1"])
    _, resolve = resolving(["127.0.0.1", "127.0.0.9"])  # nothing listens on 127.0.0.9: connection refused
    url = f"http://{HEADLESS}:{port}"
    upstream = HttpUpstream(url, session=session, peers=PeerDealer(url, resolve=resolve))
    stack.push_async_callback(upstream.aclose)
    for _ in range(6):
        completion = await upstream.complete(chat("pool:small@small"))
        assert str(completion.served_by) == "pool:small@small"
    assert len(replicas["127.0.0.1"].bodies) == 6


async def test_no_process_reachable_is_upstream_unavailable(session: aiohttp.ClientSession) -> None:
    port = free_port()
    _, resolve = resolving(["127.0.0.8", "127.0.0.9"])
    url = f"http://{HEADLESS}:{port}"
    upstream = HttpUpstream(url, session=session, peers=PeerDealer(url, resolve=resolve))
    with pytest.raises(UpstreamUnavailable, match="unreachable"):
        await upstream.complete(chat("pool:small@small"))
    await upstream.aclose()


async def test_a_failed_or_empty_lookup_keeps_the_last_processes() -> None:
    _, resolve = resolving(["10.0.0.2", "10.0.0.1"], OSError("SERVFAIL"), [], ["10.0.0.3"])
    dealer = PeerDealer(f"http://{HEADLESS}:8080", resolve=resolve)
    first = await dealer.next_urls()
    assert sorted(first) == ["http://10.0.0.1:8080", "http://10.0.0.2:8080"]
    second = await dealer.next_urls()
    assert second == [first[1], first[0]]  # the next in turn first; the other where it cannot connect
    await dealer.refresh()  # SERVFAIL
    await dealer.refresh()  # no address
    assert dealer.urls == ("http://10.0.0.1:8080", "http://10.0.0.2:8080")
    await dealer.refresh()
    assert dealer.urls == ("http://10.0.0.3:8080",)
    await dealer.aclose()


async def test_a_lookup_that_never_answers_leaves_the_name_to_the_connection() -> None:
    _, resolve = resolving(OSError("no such host"))
    dealer = PeerDealer(f"http://{HEADLESS}:8080/", resolve=resolve)
    assert await dealer.next_urls() == [f"http://{HEADLESS}:8080"]
    await dealer.aclose()


async def test_an_address_is_used_as_it_stands() -> None:
    asked, resolve = resolving(["10.9.9.9"])
    dealer = PeerDealer("http://127.0.0.1:9000", resolve=resolve)
    assert await dealer.next_urls() == ["http://127.0.0.1:9000"]
    assert asked == []
    await dealer.aclose()
