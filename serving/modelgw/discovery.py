"""Each pool's replicas, read again and again from the DNS name its ``POOL_URL_*`` gives.

In Kubernetes a pool's URL names its headless Service (``components.vllm_pool``: ``replicas_url``),
whose DNS name answers with the address of every ready replica, so the balancer
(``serving.modelgw.balancer``) can choose per request among replicas instead of sending every
request to one ClusterIP that kube-proxy spreads per connection at random. A URL whose host is an
IP address (``tokenplane dev``'s replicas on loopback) is a replica as it stands.

A failed or empty lookup keeps the last set: a DNS hiccup must not empty a pool that still serves,
and a replica that is really gone fails its attempts until its breaker opens.

The model gateway's own peers are read the same way: ``TOKENPLANE_MODEL_GATEWAY_PEERS`` names its
headless Service (``components.model_gateway``), and ``POD_IP`` (the downward API) says which of the
addresses is this process, so each balancer prefers the replicas this process owns among its peers
(``Balancer.share``). Without either (``tokenplane dev``), or before the lookup finds this pod
ready, the process owns every replica.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
from collections.abc import Awaitable, Callable, Mapping
from urllib.parse import urlsplit, urlunsplit

from tokenplane.serving.modelgw.balancer import Balancer

log = logging.getLogger(__name__)

# CoreDNS answers for a headless Service with a 5 s TTL (its kubernetes plugin's default): reading
# more often sees the same answer, and a replica that became ready waits at most this long for traffic.
REFRESH_S = 5.0

Resolve = Callable[[str, int], Awaitable[list[str]]]  # (host, port) -> addresses


async def resolve_host(host: str, port: int) -> list[str]:
    """The addresses ``host`` resolves to (the event loop's resolver, off the loop's thread)."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


def is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def with_host(url: str, address: str) -> str:
    parts = urlsplit(url)
    host = f"[{address}]" if ":" in address else address
    netloc = f"{host}:{parts.port}" if parts.port is not None else host
    return urlunsplit(parts._replace(netloc=netloc))


class ReplicaDiscovery:
    """Keeps each pool's balancer on the replicas its configured URLs resolve to.

    Args:
        balancers: Each pool's balancer, by pool name.
        urls: Each pool's configured URLs (``POOL_URL_*``), by pool name.
        resolve: Looks a host up; ``resolve_host`` unless a test passes a fake.
        peers: The DNS name of the model gateway's headless Service; ``""``: no peers (a lone process).
        me: This process's address among the peers (``POD_IP``).
    """

    def __init__(
        self,
        balancers: Mapping[str, Balancer],
        urls: Mapping[str, tuple[str, ...]],
        *,
        resolve: Resolve = resolve_host,
        peers: str = "",
        me: str = "",
    ) -> None:
        self._balancers = balancers
        self._urls = urls
        self._resolve = resolve
        self._peers_host = peers if me else ""  # without its own address a process cannot tell which peer it is
        self._me = me

    @property
    def needed(self) -> bool:
        """Whether any configured URL names a host, or there are peers (in ``tokenplane dev`` neither)."""
        named = any(not is_address(urlsplit(u).hostname or "") for urls in self._urls.values() for u in urls)
        return named or bool(self._peers_host)

    async def refresh(self) -> None:
        """Look every pool's names, and the peers, up once; hand each balancer its replicas and peers."""
        peers = await self._peers()
        for pool, balancer in self._balancers.items():
            found = await self._replicas(pool)
            if not found:
                log.warning("pool %s: no replica address found; keeping its %d", pool, len(balancer.replicas))
            elif found != balancer.replicas:
                log.info("pool %s: %d replicas: %s", pool, len(found), ", ".join(found))
                balancer.update(found)
            if peers is not None:
                balancer.share(peers, self._me)

    async def _peers(self) -> tuple[str, ...] | None:
        """The model gateway processes' addresses; ``None`` (keep the last) when the lookup fails or is empty."""
        if not self._peers_host:
            return None
        try:
            found = tuple(sorted(set(await self._resolve(self._peers_host, 0))))
        except OSError as e:
            log.warning("looking up the model gateway's peers at %s failed: %s", self._peers_host, e)
            return None
        return found or None

    async def _replicas(self, pool: str) -> tuple[str, ...]:
        found: list[str] = []
        for url in self._urls.get(pool, ()):
            parts = urlsplit(url)
            host = parts.hostname or ""
            if is_address(host):
                found.append(url)
                continue
            try:
                addresses = await self._resolve(host, parts.port or (443 if parts.scheme == "https" else 80))
            except OSError as e:
                log.warning("pool %s: looking up %s failed: %s", pool, host, e)
                return ()
            found.extend(with_host(url, a) for a in sorted(set(addresses)))
        return tuple(found)

    async def run(self, interval: float = REFRESH_S) -> None:
        """Refresh every ``interval`` seconds until cancelled; a failed lookup keeps the last set."""
        while True:
            await asyncio.sleep(interval)
            await self.refresh()
