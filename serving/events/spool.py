"""The metering spool: events kept on disk, in order, while Kafka is unreachable.

A directory of append-only JSON-lines segment files (``<sequence>.jsonl``, one
``{"topic", "key", "value"}`` object a line), fsynced after every write. The
sink (``serving.events.kafka``) replays segments oldest first and deletes one
only once Kafka has acknowledged all of it; a segment left by an earlier
process is replayed before anything newer.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

SEGMENT_MAX_BYTES = 4 << 20  # a spool file is replayed and deleted whole; a crash mid-replay resends at most this much
# An outage of about an hour at 300 events/s and ~1 KB an event, within the pod's ephemeral-storage request.
DEFAULT_SPOOL_MAX_BYTES = 1 << 30


@dataclass(frozen=True, slots=True)
class Record:
    """One event as it is sent and spooled: its topic, its partition key and its JSON."""

    topic: str
    key: str
    value: bytes  # the event's JSON

    def line(self) -> bytes:
        head = json.dumps({"topic": self.topic, "key": self.key}, separators=(",", ":")).encode()
        return head[:-1] + b',"value":' + self.value + b"}\n"

    @classmethod
    def parse(cls, line: bytes) -> Record:
        data = json.loads(line)
        return cls(data["topic"], data["key"], json.dumps(data["value"], separators=(",", ":")).encode())


def _append(path: Path, data: bytes, *, new: bool) -> None:
    with path.open("ab") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    if new:  # the file's name must survive a crash too, not only its contents
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _rewrite(path: Path, data: bytes) -> None:
    temporary = path.with_suffix(".tmp")
    with temporary.open("wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    temporary.replace(path)


def _scan(directory: Path) -> list[tuple[Path, int]]:
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob("*.tmp"):  # a rewrite that crashed before its rename; the original is intact
        stale.unlink()
    return [(p, p.stat().st_size) for p in sorted(directory.glob("*.jsonl"))]


def _read(path: Path) -> list[Record]:
    records: list[Record] = []
    for number, line in enumerate(path.read_bytes().splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append(Record.parse(line))
        except (ValueError, KeyError, TypeError):
            # Only a write cut short by a crash leaves a bad line, and it is always the last one.
            log.warning("metering: %s:%d is not a whole event (a write cut short by a crash); skipped", path, number)
    return records


class Spool:
    """Segment files on disk, oldest first; the newest may be open for appends."""

    def __init__(self, directory: Path, max_bytes: int) -> None:
        self.directory = directory
        self.max_bytes = max_bytes
        self.bytes = 0
        self.nonempty = asyncio.Event()
        self.drained = asyncio.Event()
        self.drained.set()
        self._segments: dict[Path, int] = {}  # path -> size, in sequence order
        self._active: Path | None = None
        self._next = 0
        self._unbounded = False
        self._changed = asyncio.Condition()

    async def open(self) -> None:
        found = await asyncio.to_thread(_scan, self.directory)
        self._segments = dict(found)
        self.bytes = sum(self._segments.values())
        self._next = max((int(p.stem) for p, _ in found), default=-1) + 1
        if found:
            self.nonempty.set()
            self.drained.clear()

    @property
    def empty(self) -> bool:
        return not self._segments

    @property
    def full(self) -> bool:
        return not self._unbounded and self.bytes >= self.max_bytes

    def _fits(self, size: int) -> bool:
        return self._unbounded or self.bytes == 0 or self.bytes + size <= self.max_bytes

    async def unbound(self) -> None:
        """At shutdown the bound gives way: a final flush must not wait for space that may never come."""
        async with self._changed:
            self._unbounded = True
            self._changed.notify_all()

    async def append(self, lines: list[bytes]) -> None:
        """Write ``lines`` in order, fsynced, waiting for room whenever the spool is full."""
        async with self._changed:
            i = 0
            while i < len(lines):
                await self._changed.wait_for(functools.partial(self._fits, len(lines[i])))
                j, size = i, 0
                while j < len(lines) and (j == i or self._fits(size + len(lines[j]))):
                    size += len(lines[j])
                    j += 1
                new = self._active is None or self._segments[self._active] >= SEGMENT_MAX_BYTES
                if new:
                    self._active = self.directory / f"{self._next:020d}.jsonl"
                    self._next += 1
                    self._segments[self._active] = 0
                path = self._active
                if path is None:  # for mypy: set just above
                    raise RuntimeError("no active spool segment")
                await asyncio.to_thread(_append, path, b"".join(lines[i:j]), new=new)
                self._segments[path] += size
                self.bytes += size
                self.nonempty.set()
                self.drained.clear()
                i = j

    async def oldest(self) -> Path | None:
        """The oldest segment, sealed: later appends go to a new one, so it can be replayed and deleted whole."""
        async with self._changed:
            if not self._segments:
                return None
            path = next(iter(self._segments))
            if path == self._active:
                self._active = None
            return path

    async def read(self, path: Path) -> list[Record]:
        return await asyncio.to_thread(_read, path)

    async def keep_only(self, path: Path, records: list[Record]) -> None:
        """Rewrite a sealed segment with what is still unacknowledged."""
        data = b"".join(r.line() for r in records)
        await asyncio.to_thread(_rewrite, path, data)
        async with self._changed:
            self.bytes += len(data) - self._segments[path]
            self._segments[path] = len(data)
            self._changed.notify_all()

    async def remove(self, path: Path) -> None:
        await asyncio.to_thread(path.unlink, missing_ok=True)
        async with self._changed:
            self.bytes -= self._segments.pop(path)
            if not self._segments:
                self.nonempty.clear()
                self.drained.set()
            self._changed.notify_all()
