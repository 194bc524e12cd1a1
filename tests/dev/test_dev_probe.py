"""A readiness probe reads anything a port answers as "not ready", never as a crash of the supervisor."""

from __future__ import annotations

import socket
import threading

from tokenplane.dev.state import answers


def test_a_port_that_answers_garbage_is_not_ready() -> None:
    # What a TCP self-connect looks like to the probe: its own request echoed back instead of a status line.
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]

    def echo() -> None:
        conn, _ = server.accept()
        with conn:
            conn.sendall(conn.recv(4096))

    thread = threading.Thread(target=echo, daemon=True)
    thread.start()
    try:
        assert answers(f"http://127.0.0.1:{port}/metrics", port) is False
    finally:
        thread.join(5)
        server.close()
