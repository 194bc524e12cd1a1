"""A pass-through HTTP proxy that writes down what the model gateway sends a vLLM replica.

    python recording_proxy.py --port P --upstream http://127.0.0.1:E --record FILE

Every request is forwarded to the upstream unchanged (method, path, query, body, ``content-type``
and ``x-request-id``) and its answer streamed back chunk by chunk, so server-sent events pass as
they come. For each POST with a body, one JSON line goes to FILE when it is sent (``"sent"``: the
path, the request id, the body as vLLM parses it) and one when the upstream's response headers
arrive (``"answered"``). The engine tier stands it in the place of a replica, in front of a real
engine, to see the body the model gateway forwards: vLLM does not say which ``priority`` a request
carried. Run by file path (the dev stack's children need not import ``tests``); only aiohttp.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

# Hop-by-hop or recomputed when the body is re-sent; every other header passes both ways.
_DROPPED = {"host", "content-length", "transfer-encoding", "connection", "keep-alive", "content-encoding"}
SESSION = web.AppKey("session", aiohttp.ClientSession)  # a typed key: aiohttp warns about a str one


def parsed(body: bytes) -> Any:
    """The body as vLLM reads it (JSON keeps a repeated key's last value), or its text if it is not JSON."""
    try:
        return json.loads(body)
    except ValueError:
        return body.decode("utf-8", "replace")


def make_app(upstream: str, record: Path) -> web.Application:
    out = record.open("a", encoding="utf-8", buffering=1)  # a line at a time: the test reads while requests wait

    def note(entry: dict[str, Any]) -> None:
        out.write(json.dumps(entry) + "\n")

    async def session(app: web.Application) -> Any:
        # No total timeout: a paused engine holds requests as long as the test keeps it paused.
        app[SESSION] = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None), auto_decompress=True)
        yield
        await app[SESSION].close()
        out.close()

    async def forward(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        request_id = request.headers.get("x-request-id")
        recorded = request.method == "POST" and bool(body)
        if recorded:
            note({"event": "sent", "path": request.path, "request_id": request_id, "body": parsed(body)})
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _DROPPED}
        client = request.app[SESSION]
        async with client.request(request.method, upstream + request.path_qs, data=body, headers=headers) as answer:
            if recorded:
                note({"event": "answered", "path": request.path, "request_id": request_id, "status": answer.status})
            response = web.StreamResponse(
                status=answer.status,
                headers={k: v for k, v in answer.headers.items() if k.lower() not in _DROPPED},
            )
            await response.prepare(request)
            async for chunk in answer.content.iter_any():
                await response.write(chunk)
            await response.write_eof()
            return response

    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.cleanup_ctx.append(session)
    app.router.add_route("*", "/{tail:.*}", forward)
    return app


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--upstream", required=True, help="the replica's base URL, e.g. http://127.0.0.1:8000")
    parser.add_argument("--record", type=Path, required=True, help="the JSON-lines file to append to")
    args = parser.parse_args(argv)
    print(f"recording proxy on {args.host}:{args.port} -> {args.upstream}, writing {args.record}", flush=True)
    web.run_app(make_app(args.upstream.rstrip("/"), args.record), host=args.host, port=args.port, print=None)


if __name__ == "__main__":
    main()
