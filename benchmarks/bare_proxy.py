"""A pass-through HTTP proxy with no stages: the floor under the gateway's CPU per request.

The deployed gateway is two Python processes in series (the AI gateway, then
the model gateway), each an ASGI app under uvicorn (httptools) calling the
next hop with aiohttp. This proxy is that transport and nothing else: it reads
the body, posts it to ``--upstream`` on a pooled connection and relays the
answer, streamed chunk by chunk as it arrives, with no auth, limits, caches,
metering or JSON parsing. Two of them in series, measured by
``deployed_bench.py`` next to the gateway, say how much of the gateway's CPU is
the stages and how much the Python HTTP stack that any gateway built this way
pays on every hop.

Run: ``python -m benchmarks.bare_proxy --port 8100 --upstream http://127.0.0.1:8000``.
"""

from __future__ import annotations

import argparse
from typing import Any

import aiohttp
import uvicorn

# Hop-by-hop and length headers the relay sets itself (RFC 9110, 7.6.1).
SKIPPED = frozenset({"connection", "keep-alive", "transfer-encoding", "content-length", "host"})


class PassThrough:
    """The ASGI app: every request is posted upstream as it came; the answer is relayed as it arrives."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.session: aiohttp.ClientSession | None = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        headers = {k.decode(): v.decode() for k, v in scope["headers"] if k.decode() not in SKIPPED}
        if self.session is None:
            raise RuntimeError("PassThrough serves requests only after the ASGI lifespan's startup")
        async with self.session.post(self.upstream + scope["path"], data=body, headers=headers) as r:
            relayed = [(k.lower().encode(), v.encode()) for k, v in r.headers.items() if k.lower() not in SKIPPED]
            await send({"type": "http.response.start", "status": r.status, "headers": relayed})
            async for chunk in r.content.iter_any():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _lifespan(self, receive: Any, send: Any) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self.session is not None:
                    await self.session.close()
                await send({"type": "lifespan.shutdown.complete"})
                return


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--upstream", required=True, help="base URL of the next hop")
    args = parser.parse_args()
    # The gateway's own server settings (serving.gateway.__main__): uvloop, httptools, no access log.
    uvicorn.run(
        PassThrough(args.upstream), host=args.host, port=args.port, loop="uvloop", http="httptools", access_log=False
    )


if __name__ == "__main__":
    main()
