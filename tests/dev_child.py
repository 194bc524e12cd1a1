"""A stand-in service for the supervisor's tests: answers ``GET /health`` on a port, and misbehaves on request.

    python tests/dev/child.py PORT [--ignore-term] [--exit-at-start CODE] [--fork MARKER] [--exit-after S]

``--ignore-term`` ignores SIGTERM (the supervisor must SIGKILL it); ``--exit-at-start``
exits before listening; ``--fork MARKER`` leaves a grandchild running that writes its pid
to MARKER (the supervisor must take it down with the process group).
"""

from __future__ import annotations

import argparse
import http.server
import os
import signal
import sys
import time


class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, format: str, *args: object) -> None:
        pass


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("--ignore-term", action="store_true")
    parser.add_argument("--exit-at-start", type=int, default=None)
    parser.add_argument("--fork", default=None)
    parser.add_argument("--exit-after", type=float, default=None, help="serve this many seconds, then exit 3")
    args = parser.parse_args()
    print(f"child {os.getpid()} on port {args.port}", flush=True)
    if args.exit_at_start is not None:
        print("failing at start, as asked", flush=True)
        return int(args.exit_at_start)
    if args.ignore_term:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if args.fork:
        pid = os.fork()
        if pid == 0:
            with open(args.fork, "w") as f:
                f.write(str(os.getpid()))
            while True:
                time.sleep(1)
    server = http.server.HTTPServer(("127.0.0.1", args.port), Health)
    if args.exit_after is not None:
        signal.signal(signal.SIGALRM, lambda *_: os._exit(3))
        signal.setitimer(signal.ITIMER_REAL, args.exit_after)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
