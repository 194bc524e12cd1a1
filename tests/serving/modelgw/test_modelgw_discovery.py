"""Replica discovery: a pool URL naming a headless Service becomes one replica per address it resolves to."""

from __future__ import annotations

import pytest

from tokenplane.serving.modelgw.balancer import Balancer
from tokenplane.serving.modelgw.discovery import ReplicaDiscovery

HEADLESS = "http://vllm-chat-replicas.llm-serving.svc:8000"


class FakeDns:
    """Answers from a table the test edits; a missing name fails as a resolver does."""

    def __init__(self, table: dict[str, list[str]]) -> None:
        self.table = table
        self.asked: list[tuple[str, int]] = []

    async def __call__(self, host: str, port: int) -> list[str]:
        self.asked.append((host, port))
        if host not in self.table:
            raise OSError(f"no such host {host}")
        return self.table[host]


async def test_a_headless_service_name_becomes_one_replica_per_ready_pod() -> None:
    balancer = Balancer((HEADLESS,))
    dns = FakeDns({"vllm-chat-replicas.llm-serving.svc": ["10.0.1.7", "10.0.0.5", "10.0.1.7"]})
    await ReplicaDiscovery({"chat": balancer}, {"chat": (HEADLESS,)}, resolve=dns).refresh()
    assert balancer.replicas == ("http://10.0.0.5:8000", "http://10.0.1.7:8000")
    assert dns.asked == [("vllm-chat-replicas.llm-serving.svc", 8000)]


async def test_a_pod_that_leaves_keeps_its_counts_until_its_leases_end() -> None:
    balancer = Balancer((HEADLESS,))
    dns = FakeDns({"vllm-chat-replicas.llm-serving.svc": ["10.0.0.5", "10.0.0.6"]})
    discovery = ReplicaDiscovery({"chat": balancer}, {"chat": (HEADLESS,)}, resolve=dns)
    await discovery.refresh()
    lease = balancer.hold("http://10.0.0.6:8000", 300)
    dns.table["vllm-chat-replicas.llm-serving.svc"] = ["10.0.0.5"]
    await discovery.refresh()
    assert balancer.replicas == ("http://10.0.0.5:8000",)
    assert balancer.choose("") == "http://10.0.0.5:8000"
    lease.release()
    assert balancer.outstanding("http://10.0.0.6:8000") == 0


@pytest.mark.parametrize("answer", [None, []], ids=["lookup fails", "no address"])
async def test_a_failed_or_empty_lookup_keeps_the_last_replicas(answer: list[str] | None) -> None:
    balancer = Balancer((HEADLESS,))
    dns = FakeDns({"vllm-chat-replicas.llm-serving.svc": ["10.0.0.5"]})
    discovery = ReplicaDiscovery({"chat": balancer}, {"chat": (HEADLESS,)}, resolve=dns)
    await discovery.refresh()
    if answer is None:
        del dns.table["vllm-chat-replicas.llm-serving.svc"]
    else:
        dns.table["vllm-chat-replicas.llm-serving.svc"] = answer
    await discovery.refresh()
    assert balancer.replicas == ("http://10.0.0.5:8000",)


async def test_replica_addresses_are_used_as_they_are_and_need_no_lookup() -> None:
    urls = ("http://127.0.0.1:9001", "http://[::1]:9002")
    balancer = Balancer(urls)
    dns = FakeDns({})
    discovery = ReplicaDiscovery({"chat": balancer}, {"chat": urls}, resolve=dns)
    assert not discovery.needed
    await discovery.refresh()
    assert balancer.replicas == urls and dns.asked == []


async def test_an_ipv6_pod_address_is_bracketed_in_its_url() -> None:
    balancer = Balancer((HEADLESS,))
    dns = FakeDns({"vllm-chat-replicas.llm-serving.svc": ["fd00::5"]})
    await ReplicaDiscovery({"chat": balancer}, {"chat": (HEADLESS,)}, resolve=dns).refresh()
    assert balancer.replicas == ("http://[fd00::5]:8000",)


PEERS = "model-gateway-peers.llm-gateway.svc"
PODS = {"vllm-chat-replicas.llm-serving.svc": [f"10.0.0.{i}" for i in range(12)]}


async def _sent_to(peers: list[str] | None, me: str, requests: int = 12) -> set[str]:
    """The replicas one process sends ``requests`` requests to, none of them finished, after a lookup."""
    balancer = Balancer((HEADLESS,))
    dns = FakeDns({**PODS, **({PEERS: peers} if peers is not None else {})})
    await ReplicaDiscovery({"chat": balancer}, {"chat": (HEADLESS,)}, resolve=dns, peers=PEERS, me=me).refresh()
    sent = set()
    for _ in range(requests):
        replica = balancer.choose("")
        assert replica is not None
        balancer.hold(replica, 100)
        sent.add(replica)
    return sent


async def test_processes_send_to_the_replicas_they_own_while_one_has_no_pending_prefill() -> None:
    peers = ["10.2.0.1", "10.2.0.2", "10.2.0.3"]
    own = [await _sent_to(peers, me, requests=4) for me in peers]
    assert all(len(s) == 4 for s in own), own
    assert not (own[0] & own[1] or own[0] & own[2] or own[1] & own[2]), f"processes share replicas: {own}"


async def test_a_process_spills_over_every_replica_when_each_of_its_own_is_pending() -> None:
    sent = await _sent_to(["10.2.0.1", "10.2.0.2", "10.2.0.3"], "10.2.0.1", requests=12)
    assert len(sent) == 12, f"12 requests went to only {len(sent)} replicas"


@pytest.mark.parametrize("peers", [None, [], ["10.2.0.9"]], ids=["lookup fails", "no address", "not listed yet"])
async def test_a_process_that_cannot_place_itself_among_peers_uses_every_replica(peers: list[str] | None) -> None:
    assert len(await _sent_to(peers, "10.2.0.1", requests=12)) == 12
    # ...and stays on 4 replicas (its own) once it is listed among 3: the counterpart that can fail.
    assert len(await _sent_to(["10.2.0.1", "10.2.0.2", "10.2.0.3"], "10.2.0.1", requests=4)) == 4


def test_a_process_without_peers_or_its_own_address_needs_no_lookup() -> None:
    urls = {"chat": ("http://127.0.0.1:8001",)}
    assert not ReplicaDiscovery({}, urls, peers="", me="10.2.0.1").needed
    assert not ReplicaDiscovery({}, urls, peers=PEERS, me="").needed
    assert ReplicaDiscovery({}, urls, peers=PEERS, me="10.2.0.1").needed
