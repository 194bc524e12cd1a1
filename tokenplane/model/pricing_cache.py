"""A disk cache of the pool model's TTFT pricings, so that planning an unchanged pool again is a file read.

``tokenplane plan`` spends most of its time in ``ReplicaPerformance._ttft``: a few backlog-chain
runs per pool (numpy, a fixed seed), each a pure function of the pool's iteration costs, its
class mix, the operating point and the replica count. Planning the same spec again (the usual
edit-plan loop touches one pool at a time) asks the same questions, so the answers are kept
here, keyed by a digest of everything they depend on:

- the inputs, by ``repr`` (floats print exactly, so equal reprs mean equal doubles);
- the pool model's source (``PRICED_SOURCES``: ``pool_performance.py`` and the ``kv_stall.py`` and ``batch_spread.py`` its
  TTFT draws on, read as package data) and numpy's version, so that a changed model or random
  stream never reads an old answer.

A cached answer is the same doubles as a computed one (JSON writes floats by ``repr``), so
every plan number is unchanged. Only the CLI passes a cache in; the library computes by default.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from tokenplane.runtime_env import Var

ENV = "TOKENPLANE_CACHE_DIR"  # where the cache lives; empty or "off" turns it off
MAX_ENTRIES = 4096  # files kept: a byteion-sized spec writes ~50; the oldest quarter goes past this
PRUNE_EVERY = 64  # writes between two counts of the folder (listing it costs a syscall per file)
SCHEMA = 1  # of the stored payload; bumped when its shape changes
# The modules whose code computes a cached answer (``_ttft`` and the fluid bisection): a change to any of them
# must miss the old entries. ``preemption`` is priced after the cache, on every plan.
PRICED_SOURCES = ("pool_performance.py", "backlog_chains.py", "kv_stall.py", "batch_spread.py")


@cache
def _code_digest() -> str:
    """The pool model's own source and numpy's version: an answer is only valid for the code that computed it."""
    folder = resources.files("tokenplane.model")
    source = b"".join(folder.joinpath(name).read_bytes() for name in PRICED_SOURCES)
    return hashlib.sha256(source + np.__version__.encode() + str(SCHEMA).encode()).hexdigest()


def default_dir() -> Path | None:
    """``$TOKENPLANE_CACHE_DIR``, else ``$XDG_CACHE_HOME/tokenplane`` or ``~/.cache/tokenplane``; None when off."""
    chosen = os.environ.get(ENV)
    if chosen is not None:
        return None if chosen.strip() in ("", "off") else Path(chosen)
    base = os.environ.get(Var.XDG_CACHE_HOME.value) or str(Path.home() / ".cache")
    return Path(base) / "tokenplane"


class PricingCache:
    """Answers of a pure function kept as JSON files under ``root/pricing``, keyed by their inputs' digest."""

    def __init__(self, root: Path) -> None:
        self.folder = root / "pricing"
        self.hits = 0
        self.misses = 0
        self._writes = 0
        self._prints: dict[int, tuple[object, str]] = {}

    def key(self, *inputs: object) -> str:
        return hashlib.sha256((_code_digest() + repr(inputs)).encode()).hexdigest()

    def keyer(self, *fixed: object) -> Callable[..., str]:
        """``key`` for inputs that start with ``fixed``: ``keyer(*fixed)(*rest) == key(*fixed, *rest)``.

        A pool's TTFT pricings all start with its timing table (hundreds of floats) and class mix;
        their ``repr`` is taken and hashed once here instead of once a question, which was most of
        a warm plan's time. ``rest`` must not be empty (a tuple of one prints with a trailing comma).
        """
        head = hashlib.sha256((_code_digest() + "(" + "".join(f"{self._printed(x)}, " for x in fixed)).encode())

        def key(*rest: object) -> str:
            if not rest:
                raise ValueError("keyer(...)() needs at least one input after the fixed ones")
            digest = head.copy()
            digest.update((", ".join(map(repr, rest)) + ")").encode())
            return digest.hexdigest()

        return key

    def _printed(self, x: object) -> str:
        """``repr(x)``, printed once per object: a pool's timing table is one object in every region it serves.

        The object is held beside its print, so that its ``id`` cannot be reused by another while the cache lives;
        the inputs are the planner's frozen tables, never changed after they are built.
        """
        held = self._prints.get(id(x))
        if held is None or held[0] is not x:
            held = (x, repr(x))
            self._prints[id(x)] = held
        return held[1]

    def holds(self, key: str) -> bool:
        """Whether an answer for ``key`` is stored (``get_or_compute`` would read it, not compute it)."""
        return (self.folder / f"{key}.json").is_file()

    def get_or_compute(self, key: str, compute: Callable[[], Any]) -> Any:
        """The stored answer for ``key``, or ``compute()``'s, stored (a cache that cannot be written is skipped)."""
        path = self.folder / f"{key}.json"
        try:
            answer = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            answer = None
        if answer is not None:
            self.hits += 1
            return answer
        self.misses += 1
        answer = compute()
        self._store(path, answer)
        return answer

    def _store(self, path: Path, answer: Any) -> None:
        # Written aside and renamed into place: a concurrent plan reads a whole answer or none. The aside name is this
        # process's own (``plan_workers`` forks writers that may answer the same question), so no two share one.
        aside = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        try:
            try:
                aside.write_text(json.dumps(answer), encoding="utf-8")
            except FileNotFoundError:  # the first answer of a new cache
                self.folder.mkdir(parents=True, exist_ok=True)
                aside.write_text(json.dumps(answer), encoding="utf-8")
            os.replace(aside, path)
        except OSError:
            with contextlib.suppress(OSError):
                aside.unlink(missing_ok=True)
            return  # a read-only home still plans, at the uncached speed
        if self._writes % PRUNE_EVERY == 0:
            self._prune()
        self._writes += 1

    def _prune(self) -> None:
        try:
            # Counted from one read of the folder; its entries are stat'ed (for their age) only when it is over.
            if sum(name.endswith(".json") for name in os.listdir(self.folder)) <= MAX_ENTRIES:
                return
            entries = sorted(self.folder.glob("*.json"), key=lambda p: p.stat().st_mtime)
        except OSError:
            return
        for old in entries[: len(entries) - MAX_ENTRIES * 3 // 4]:
            old.unlink(missing_ok=True)
