"""Which replica of a pool gets an attempt: ``tokenplane.model.balancing.choose``, with prefix affinity.

The rule itself lives in ``tokenplane.model.balancing`` (core, which serving may import and which
imports nothing heavy), so that the simulator's gateway runs the very same function: what the
workbench measures is what ships. This module keeps the state the rule reads, per replica:

- ``pending``: attempts sent that have not produced their first token yet. A streaming attempt
  stops being pending when its first chunk arrives (``Lease.first_token``); a whole-response
  attempt only when the response is in, since nothing earlier tells the gateway its prefill ended.
- ``outstanding``: the tokens in flight on it (prompt plus ``max_tokens`` of each request not yet
  finished, as the AI gateway estimated them once: ``UpstreamRequest.estimated_tokens``).

Requests that share an affinity key (a prompt prefix) prefer the replica that rendezvous hashing
picks for it, so the engine's prefix cache finds the prefix already computed, within the rule's
slack. Rendezvous hashing is consistent: adding or losing a replica moves only the keys that
hashed to it.

In Kubernetes a pool's URL names its headless Service, which ``serving.modelgw.discovery``
resolves to every ready replica's address (``update``); a ClusterIP would leave one "replica" here
and kube-proxy's per-connection random pick, pinned by keep-alive, in charge.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection

from tokenplane.model.balancing import AFFINITY_SLACK_PREFILLS, DEPLOYED, BalancePolicy, Load, choose

__all__ = ["AFFINITY_SLACK_PREFILLS", "Balancer", "Lease"]


def _weight(key: str, replica: str) -> int:
    digest = hashlib.blake2b(f"{key}\0{replica}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


class Balancer:
    """Replica choice for one pool.

    Args:
        replicas: The pool's replica base URLs.
        policy: The rule (``tokenplane.model.balancing.DEPLOYED`` unless a benchmark compares others).
        slack: How many more pending prefills than the least-loaded replica the preferred one may have.
    """

    def __init__(
        self,
        replicas: tuple[str, ...],
        *,
        policy: BalancePolicy = DEPLOYED,
        slack: int = AFFINITY_SLACK_PREFILLS,
    ) -> None:
        self.replicas = replicas
        self.policy = policy
        self._slack = slack
        self._pending = dict.fromkeys(replicas, 0)
        self._outstanding = dict.fromkeys(replicas, 0)
        self._turn = 0  # the rotation that breaks ties; advanced by each attempt sent (``hold``)

    def update(self, replicas: tuple[str, ...]) -> None:
        """Choose among ``replicas`` from now on (``serving.modelgw.discovery``); counts carry over by URL.

        A replica that left keeps its counts while its leases last; once idle it is forgotten, so that
        pods coming and going (a new address each) do not grow the counts without bound.
        """
        self.replicas = replicas
        for gone in set(self._pending) - set(replicas):
            if self._pending[gone] == 0 and self._outstanding[gone] == 0:
                del self._pending[gone], self._outstanding[gone]
        for replica in replicas:
            self._pending.setdefault(replica, 0)
            self._outstanding.setdefault(replica, 0)

    def pending(self, replica: str) -> int:
        return self._pending[replica]

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
        preferred = None
        if affinity_key:
            preferred = max(range(len(candidates)), key=lambda i: _weight(affinity_key, candidates[i]))
        loads = [Load(self._pending[r], self._outstanding[r]) for r in candidates]
        index = choose(loads, turn=self._turn, preferred=preferred, policy=self.policy, slack=self._slack)
        return candidates[index]

    def hold(self, replica: str, tokens: int) -> Lease:
        """Count an attempt sent to ``replica``: pending until its first token, ``tokens`` until it ends."""
        self._pending[replica] += 1
        self._outstanding[replica] += tokens
        self._turn += 1
        return Lease(self, replica, tokens)

    # A lease of 0 tokens may outlive its replica's counts (``update`` forgets an idle one): .get, not [].
    def _first_token(self, replica: str) -> None:
        self._pending[replica] = self._pending.get(replica, 0) - 1

    def _release(self, replica: str, tokens: int) -> None:
        self._outstanding[replica] = self._outstanding.get(replica, 0) - tokens


class Lease:
    """One attempt's hold on a replica; both methods are idempotent, so every exit path may call them."""

    def __init__(self, balancer: Balancer, replica: str, tokens: int) -> None:
        self._balancer = balancer
        self._replica = replica
        self._tokens = tokens
        self._pending = True
        self._held = True

    def first_token(self) -> None:
        """The attempt's first token arrived: its prefill no longer delays the replica's next request."""
        if self._pending:
            self._pending = False
            self._balancer._first_token(self._replica)

    def release(self) -> None:
        """The attempt ended, however (finished, failed, cancelled)."""
        self.first_token()
        if self._held:
            self._held = False
            self._balancer._release(self._replica, self._tokens)
