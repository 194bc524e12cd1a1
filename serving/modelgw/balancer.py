"""Which replica of a pool gets an attempt: least outstanding tokens, with prefix affinity.

A replica's load is the tokens this process has in flight on it (prompt plus
``max_tokens`` of each request not yet finished, as the AI gateway estimated
them once: ``UpstreamRequest.estimated_tokens``): a decode-heavy request
weighs more than a short one, which request counts miss. Requests that share
an affinity key (a prompt prefix) prefer the replica that rendezvous hashing
picks for it, so the engine's prefix cache finds the prefix already computed;
the preference yields once that replica is busier than the least-loaded one
by more than ``AFFINITY_SLACK_TOKENS``. Rendezvous hashing is consistent:
adding or losing a replica moves only the keys that hashed to it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection
from typing import Any, Protocol

# A cached prefix saves its prefill; waiting behind up to one long prompt's worth of
# extra work is still cheaper than recomputing it elsewhere, and more is not.
AFFINITY_SLACK_TOKENS = 4096


class Chooser(Protocol):
    """The part of ``random.Random`` used to break ties between equally loaded replicas."""

    def choice(self, seq: Any) -> Any: ...


def _weight(key: str, replica: str) -> int:
    digest = hashlib.blake2b(f"{key}\0{replica}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


class Balancer:
    """Replica choice for one pool.

    Args:
        replicas: The pool's replica base URLs.
        rng: Breaks ties among equally loaded replicas.
        slack: How many more outstanding tokens than the least-loaded replica the preferred one may have.
    """

    def __init__(self, replicas: tuple[str, ...], *, rng: Chooser, slack: int = AFFINITY_SLACK_TOKENS) -> None:
        self.replicas = replicas
        self._rng = rng
        self._slack = slack
        self._outstanding = dict.fromkeys(replicas, 0)

    def outstanding(self, replica: str) -> int:
        return self._outstanding[replica]

    def choose(
        self, affinity_key: str, *, excluded: Collection[str] = (), allowed: Callable[[str], bool] = lambda _: True
    ) -> str | None:
        """The replica for the next attempt, or ``None`` when every one is excluded or its breaker is open.

        Args:
            affinity_key: Requests sharing it prefer the same replica; ``""`` for none.
            excluded: Replicas this request already tried.
            allowed: Whether a replica's breaker lets a request through.
        """
        candidates = [r for r in self.replicas if r not in excluded and allowed(r)]
        if not candidates:
            return None
        least = min(self._outstanding[r] for r in candidates)
        if affinity_key:
            preferred = max(candidates, key=lambda r: _weight(affinity_key, r))
            if self._outstanding[preferred] - least <= self._slack:
                return preferred
        tied = [r for r in candidates if self._outstanding[r] == least]
        return str(self._rng.choice(tied))

    def hold(self, replica: str, tokens: int) -> Lease:
        """Count ``tokens`` against ``replica`` until the lease is released (the request ended, however)."""
        self._outstanding[replica] += tokens
        return Lease(self._outstanding, replica, tokens)


class Lease:
    """Outstanding tokens held on a replica; ``release()`` is idempotent, so every exit path may call it."""

    def __init__(self, counts: dict[str, int], replica: str, tokens: int) -> None:
        self._counts = counts
        self._replica = replica
        self._tokens = tokens
        self._held = True

    def release(self) -> None:
        if self._held:
            self._held = False
            self._counts[self._replica] -= self._tokens
