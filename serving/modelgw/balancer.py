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

Several model gateway processes (prod runs at least three) each know only what they sent, and
their independent rotations add up to arrivals far less regular than one rotation (class A at
91-97% of its 99% TTFT target in ``benchmarks/balancing.py``). So each process learns its peers
(the model gateway's own headless Service, ``serving.modelgw.discovery``; ``share``) and prefers the
replicas it owns (``tokenplane.model.balancing.owners``: rendezvous hashing with bounded loads), whose
pending prefills it alone sends, spilling over every replica only when each of its own has one
pending. A lone process, or one that has not found itself among its peers, owns every replica.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from tokenplane.model.balancing import (
    AFFINITY_SLACK_PREFILLS,
    DEPLOYED,
    BalancePolicy,
    Load,
    choose,
    owned,
    rendezvous_weight,
)

__all__ = ["AFFINITY_SLACK_PREFILLS", "Balancer", "Lease"]


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
        self._peers: tuple[str, ...] = ()  # the model gateway processes sharing the replicas, this one included
        self._me = ""
        self._own = dict.fromkeys(replicas, True)

    def share(self, peers: Collection[str], me: str) -> None:
        """Share the replicas with ``peers`` (this process is ``me`` among them): prefer the ones it owns.

        No peers, only itself, or ``me`` not among them (a lookup that has not seen it ready yet): it
        owns every replica, as a lone process does.
        """
        peers = tuple(sorted(set(peers)))
        if (peers, me) != (self._peers, self._me):
            self._peers, self._me = peers, me
            self._assign()

    def owns(self, replica: str) -> bool:
        return self._own.get(replica, True)

    def _assign(self) -> None:
        self._own = dict(zip(self.replicas, owned(self.replicas, self._peers, self._me), strict=True))

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
        self._assign()

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
            preferred = max(range(len(candidates)), key=lambda i: rendezvous_weight(affinity_key, candidates[i]))
        loads = [Load(self._pending[r], self._outstanding[r]) for r in candidates]
        own = [self.owns(r) for r in candidates] if self._peers else None
        index = choose(loads, turn=self._turn, preferred=preferred, policy=self.policy, slack=self._slack, own=own)
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
