"""The model gateway's processes, dealt one request each in turn by their callers (the AI gateway, the batch workers).

Through one ClusterIP Service, kube-proxy picks a process per keep-alive connection, so each caller's share of
the processes is its few connections' share, drawn at random, and the model gateway's processes get uneven shares of
the requests. Uneven shares are what the replicas' owners cannot absorb: with spill partitioning
(``serving.modelgw.balancer``), eight processes meet 99% of class A's SLO at even shares and 97.9-98.4% at
Dirichlet(30) ones (BENCHMARKS.md, "Sharing the replicas among model gateway processes"). So a caller reads every
ready process's address from the model gateway's headless Service (``components.model_gateway``: the URL it is
given names it) and deals its requests over them in turn: the shares are even at their source.

The addresses are read again every ``REFRESH_S`` (a process scaled in or out is seen within one DNS TTL); a
failed or empty lookup keeps the last set, and a URL whose host is an address (``tokenplane dev``) is used as it is.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from urllib.parse import urlsplit

from tokenplane.serving.modelgw.discovery import REFRESH_S, Resolve, is_address, resolve_host, with_host

log = logging.getLogger(__name__)


class PeerDealer:
    """Deals requests over the addresses the model gateway's URL resolves to, one each in turn.

    Args:
        url: The model gateway's base URL (its headless Service's name, or an address).
        resolve: Looks a host up; ``resolve_host`` unless a test passes a fake.
    """

    def __init__(self, url: str, *, resolve: Resolve = resolve_host) -> None:
        self.url = url.rstrip("/")
        parts = urlsplit(self.url)
        self._host = parts.hostname or ""
        self._port = parts.port or (443 if parts.scheme == "https" else 80)
        self._resolve = resolve
        self._urls: tuple[str, ...] = (self.url,)
        self._turn = 0
        self._refreshing: asyncio.Task[None] | None = None
        self._started = False

    @property
    def urls(self) -> tuple[str, ...]:
        """The processes' base URLs, as last read (the configured URL until a lookup has found any)."""
        return self._urls

    async def next_urls(self) -> list[str]:
        """Every process's URL, starting from the next one in turn: the first to send to, then where to go if it
        cannot be reached. The first call looks the name up and starts reading it again in the background."""
        if not self._started:
            self._started = True
            if not is_address(self._host):
                await self.refresh()
                self._refreshing = asyncio.create_task(self._run())
        urls = self._urls
        start = self._turn % len(urls)
        self._turn = start + 1
        return [*urls[start:], *urls[:start]]

    async def refresh(self) -> None:
        """Look the name up once; keep the last set when the lookup fails or finds nothing."""
        try:
            found = sorted(set(await self._resolve(self._host, self._port)))
        except OSError as e:
            log.warning("looking up the model gateway's processes at %s failed: %s", self._host, e)
            return
        if not found:
            return
        urls = tuple(with_host(self.url, address) for address in found)
        if urls != self._urls:
            log.info("model gateway: %d processes: %s", len(urls), ", ".join(found))
            if self._urls == (self.url,):
                self._turn = random.randrange(len(urls))  # callers started together do not all begin on one
            self._urls = urls

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(REFRESH_S)
            await self.refresh()

    async def aclose(self) -> None:
        if self._refreshing is not None:
            self._refreshing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._refreshing
