"""Sizing a spec's pools on every core: forked workers take the pools one at a time and hand back their plans.

A first plan spends nearly all its time in the pool model's TTFT pricings, and the pools are
independent of one another (each pricing draws from its own fixed seed). Forked workers (the
parent's imports and spec come with them for free) take the pools off a shared pipe, one at a
time, so that a slow pool does not hold a queue up, and pickle their results into a file of
their own; pickling keeps every double, so the plan is the one a single process makes. A
worker that fails costs time, not correctness: the parent computes what it did not hand back.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import sys
import tempfile
import warnings
from collections.abc import Callable, Sequence
from typing import IO, Any, TypeVar

T = TypeVar("T")

_INDEX_BYTES = 4  # one task index a read: a pipe read this small is atomic, so no two workers take the same task
_PIPE_CAPACITY = 65_536  # Linux's default pipe buffer: the indices are all written before the workers start


def available_cpus() -> int:
    """The cores this process may run on (its affinity, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def can_fork() -> bool:
    """Forked workers only on Linux: macOS's system libraries (numpy's Accelerate) are not fork-safe."""
    return sys.platform.startswith("linux") and hasattr(os, "fork")


def share_out(tasks: Sequence[Callable[[], T]], workers: int) -> list[T]:
    """``[task() for task in tasks]``, computed by ``workers`` processes (this one included).

    With one worker, or where forking is not safe, every task runs here, in order.
    """
    workers = min(workers, len(tasks))
    if workers <= 1 or not can_fork() or len(tasks) * _INDEX_BYTES > _PIPE_CAPACITY:
        return [task() for task in tasks]
    read_end, write_end = os.pipe()
    os.write(write_end, b"".join(i.to_bytes(_INDEX_BYTES, "little") for i in range(len(tasks))))
    os.close(write_end)  # the workers see the end of the pipe once every index is taken
    children: list[int] = []
    with contextlib.ExitStack() as files:
        handed_files = [files.enter_context(tempfile.TemporaryFile()) for _ in range(workers - 1)]
        try:
            for handed in handed_files:
                with warnings.catch_warnings():  # Python 3.12 warns of forking beside threads; the workers start none
                    warnings.simplefilter("ignore", DeprecationWarning)
                    pid = os.fork()
                if pid == 0:  # a worker: it must never return into the caller's code
                    code = 0
                    try:
                        pickle.dump(_take(read_end, tasks), handed)
                        handed.flush()
                    except BaseException:
                        code = 1
                    os._exit(code)
                children.append(pid)
            done = _take(read_end, tasks)
        finally:
            os.close(read_end)
            for pid in children:
                _reap(pid)
        for handed in handed_files:
            done |= _handed_back(handed)
    return [done[i] if i in done else task() for i, task in enumerate(tasks)]


def _take(read_end: int, tasks: Sequence[Callable[[], T]]) -> dict[int, T]:
    done: dict[int, T] = {}
    while True:
        chunk = os.read(read_end, _INDEX_BYTES)
        if len(chunk) < _INDEX_BYTES:
            return done
        index = int.from_bytes(chunk, "little")
        done[index] = tasks[index]()


def _handed_back(handed: IO[bytes]) -> dict[int, Any]:
    """What a worker pickled, or nothing if it failed before writing it whole."""
    handed.seek(0)
    try:
        found: dict[int, Any] = pickle.load(handed)
    except Exception:  # a worker that died mid-write: its tasks are computed again
        return {}
    return found


def _reap(pid: int) -> None:
    """Wait for a worker; if this process is leaving early (an error, Ctrl-C), stop it first."""
    if sys.exc_info()[0] is not None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
