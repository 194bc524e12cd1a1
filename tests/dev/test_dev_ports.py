"""The dev stack's ports are chosen where no outgoing connection can take them before they are bound."""

from __future__ import annotations

import collections
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


def flags_overlap(flags: list[str], stand_ins: int) -> bool:
    port, first = int(flags[flags.index("--port") + 1]), int(flags[flags.index("--ports-from") + 1])
    return first <= port < first + stand_ins


def test_the_gateway_port_never_lands_among_the_stand_ins(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every draw starts at the same base, the worst case: two separate draws (the gateway's port, then the block)
    # returned the same port, which is how session 13's CI run failed. One block keeps the two apart.
    monkeypatch.setattr("random.randrange", lambda *_: 30_000)
    monkeypatch.setattr(standins, "_ephemeral_start", lambda: 65_535)
    monkeypatch.setattr(standins, "_HANDED_OUT", collections.deque(maxlen=1024))
    assert not flags_overlap(standins.dev_port_flags(12), 12)


def test_a_port_handed_out_is_not_handed_out_again_before_it_is_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    draws = iter([30_000, 30_000, 29_995, 30_020])
    monkeypatch.setattr("random.randrange", lambda *_: next(draws))
    monkeypatch.setattr(standins, "_ephemeral_start", lambda: 65_535)
    monkeypatch.setattr(standins, "_HANDED_OUT", collections.deque(maxlen=1024))
    assert free_port() == 30_000
    assert free_port_block(12) == 30_020  # 30,000 again, then a block over it (29,995-30,006): both skipped


def test_without_the_memory_two_draws_overlap(monkeypatch: pytest.MonkeyPatch) -> None:
    # The defect put back: forget each port as it is handed out, and the two draws of the old flags collide.
    monkeypatch.setattr("random.randrange", lambda *_: 30_000)
    monkeypatch.setattr(standins, "_ephemeral_start", lambda: 65_535)
    forgetful = collections.deque(maxlen=0)
    monkeypatch.setattr(standins, "_HANDED_OUT", forgetful)
    assert flags_overlap(["--port", str(free_port()), "--ports-from", str(free_port_block(12))], 12)
