"""The dev stack's ports are chosen where no outgoing connection can take them before they are bound."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tokenplane.dev import standins
from tokenplane.dev.standins import LOOPBACK, StandInError, free_port, free_port_block


def test_a_block_lies_below_the_ephemeral_range_and_is_free() -> None:
    start = standins._ephemeral_start()
    for _ in range(20):
        base = free_port_block(12)
        assert base >= 20_000 and base + 12 <= start
        with socket.socket() as s:  # the first port of the block binds
            s.bind((LOOPBACK, base))
    assert free_port() < start


def test_a_held_port_is_never_handed_out(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as held:
        held.bind((LOOPBACK, 0))
        taken = held.getsockname()[1]
        choices = iter([taken, taken + 1 if taken + 1 < 65_000 else taken - 1])
        monkeypatch.setattr("random.randrange", lambda *_: next(choices))
        monkeypatch.setattr(standins, "_ephemeral_start", lambda: 65_535)
        assert free_port() != taken


def test_no_room_below_the_range_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    low = tmp_path / "ip_local_port_range"
    low.write_text("20005\t60999\n")
    monkeypatch.setattr(standins, "_EPHEMERAL_RANGE", low)
    with pytest.raises(StandInError, match="starts at 20005"):
        free_port_block(12)
    low.write_text("garbage")
    assert standins._ephemeral_start() == 32_768
