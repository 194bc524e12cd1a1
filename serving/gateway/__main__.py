"""``python -m serving.gateway``: the AI gateway on port 8080, configured from the environment."""

from __future__ import annotations

import argparse
import sys

import uvicorn

from serving.gateway.runtime import app_from_env
from tokenplane.errors import SpecError

PORT = 8080  # components/gateway.py GATEWAY_PORT


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m serving.gateway", description=__doc__)
    parser.add_argument("--host", default="0.0.0.0")
    parser.add_argument("--port", type=int, default=PORT)
    args = parser.parse_args(argv)
    try:
        app = app_from_env()
    except SpecError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    # uvloop and httptools: the gateway's budget is a couple of milliseconds per request.
    uvicorn.run(
        app, host=args.host, port=args.port, loop="uvloop", http="httptools", access_log=False, log_level="info"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
