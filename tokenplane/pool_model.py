"""What one pool is at run time: its node, its replicas' memory and timing, derived from the spec once.

The capacity model (``tokenplane.model.capacity``) is pure arithmetic over numbers;
this module decides which numbers of the spec go in. The planner, the spec's
cross-field rules, the workbench simulator, the simulated engine, the Pulumi
components and ``tokenplane dev`` all ask here, so that a pool's node type,
its node count, its KV cache and its iteration costs cannot drift apart
between what is sized, what is deployed and what is simulated.

It imports only the vocabulary (spec, catalog), the capacity model and the scheduling decision
(``tokenplane.model.scheduling``: which policy the rendered replicas run).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import overload

import numpy as np
import numpy.typing as npt

from tokenplane.catalog import GPUS, InstanceType, default_instance, instance_type
from tokenplane.model import capacity as cap
from tokenplane.model.host_calibration import HostTiming, fit, read_calibration
from tokenplane.model.scheduling import serves_several_levels
from tokenplane.model.sizing import IMAGE_VLLM
from tokenplane.model.vllm_memory import overheads_for_version
from tokenplane.spec import PlatformSpec, Pool, SpeculativeMethod
from tokenplane.transformer import ModelKind

F64 = npt.NDArray[np.float64]

EAGLE_DRAFT_COST = 0.05  # an EAGLE head is about one decoder layer of the target
REQUEST_SHARE = 0.8  # of a node's CPU and memory per GPU; the rest is for kubelet and daemons
MIN_CPU, MIN_MEMORY_GIB = 1, 4  # below these vLLM's API server and tokenizer workers starve


def node_for(pool: Pool) -> InstanceType:
    """The instance type a pool's replicas run on: the spec's ``instance_type``, else the GPU's default."""
    return instance_type(pool.instance_type) if pool.instance_type else default_instance(pool.gpu)


def replicas_per_node(pool: Pool) -> int:
    """Replicas one node holds (at least one: the rules reject a replica larger than its node)."""
    return max(1, node_for(pool).gpus // pool.gpus_per_replica)


def nodes_for(pool: Pool, replicas: int) -> int:
    """Nodes that ``replicas`` replicas of the pool occupy, whole replicas per node."""
    return cap.nodes_needed(replicas, pool.gpus_per_replica, node_for(pool).gpus)


@dataclass(frozen=True)
class ReplicaRequests:
    """What one replica's pod asks the scheduler for: its GPUs and its GPUs' share of the node's CPU and memory."""

    gpus: int
    cpu: int
    memory_gib: int


def replica_requests(pool: Pool) -> ReplicaRequests:
    """The pod requests of one replica, sized so that whole replicas pack the pool's node."""
    node = node_for(pool)
    share = pool.gpus_per_replica / node.gpus
    return ReplicaRequests(
        gpus=pool.gpus_per_replica,
        cpu=max(MIN_CPU, math.floor(node.vcpus * share * REQUEST_SHARE)),
        memory_gib=max(MIN_MEMORY_GIB, math.floor(node.memory_gib * share * REQUEST_SHARE)),
    )


def replica_model(spec: PlatformSpec, pool: Pool) -> cap.ReplicaModel:
    """The capacity model's view of one replica of a pool."""
    model = spec.model(pool.model)
    return cap.ReplicaModel(
        arch=model.resolved_architecture(),
        gpu=GPUS[pool.gpu],
        tp=pool.tensor_parallel,
        pp=pool.pipeline_parallel,
        quantization=model.quantization,
        kv_cache_dtype=pool.engine.kv_cache_dtype,
        speculation=speculation(spec, pool),
    )


def speculation(spec: PlatformSpec, pool: Pool) -> cap.Speculation | None:
    """The pool's speculative decoding as the capacity model prices it (None: off)."""
    s = pool.engine.speculative
    if s is None:
        return None
    if s.method is SpeculativeMethod.NGRAM:
        ratio = 0.0  # n-gram lookup runs on the CPU against the prompt
    elif s.method is SpeculativeMethod.EAGLE:
        ratio = EAGLE_DRAFT_COST
    else:
        draft, target = spec.model(s.draft_model or ""), spec.model(pool.model)
        ratio = cap.model_weight_bytes(draft.resolved_architecture(), draft.quantization) / cap.model_weight_bytes(
            target.resolved_architecture(), target.quantization
        )
    return cap.Speculation(s.num_speculative_tokens, s.acceptance_rate, ratio)


def engine_release(pool: Pool) -> str:
    """The vLLM release a pool runs, and whose memory accounting sizes it: ``engine.vllm_version``, else the image's."""
    return pool.engine.vllm_version or IMAGE_VLLM


def memory(
    spec: PlatformSpec, pool: Pool, *, tp: int | None = None, gpu_name: str | None = None, release: str | None = None
) -> cap.MemoryPlan:
    """One replica's memory as vLLM accounts it at startup; ``tp``/``gpu_name``/``release`` ask "what if".

    (``tp``/``gpu_name`` for fix hints; ``release`` to compare accountings, as ``benchmarks/capacity_validation.py``.)

    The accounting is the pool's release's (``vllm_memory.overheads_for_version``: from 0.21 vLLM
    takes its CUDA-graph estimate out of the KV budget).
    """
    model = spec.model(pool.model)
    return cap.replica_memory(
        model.resolved_architecture(),
        GPUS[pool.gpu if gpu_name is None else gpu_name],
        tp=pool.tensor_parallel if tp is None else tp,
        pp=pool.pipeline_parallel,
        quantization=model.quantization,
        kv_cache_dtype=pool.engine.kv_cache_dtype,
        gpu_memory_utilization=pool.engine.gpu_memory_utilization,
        max_num_batched_tokens=pool.engine.max_num_batched_tokens,
        max_num_seqs=pool.engine.max_num_seqs,
        overheads=overheads_for_version(release or engine_release(pool)),
    )


def prefix_kept_share(spec: PlatformSpec, pool: Pool) -> float:
    """Share of prompt tokens that still need prefill after engine prefix-cache hits."""
    if pool.engine.enable_prefix_caching and spec.cache.prefix.enabled:
        return 1 - spec.cache.prefix.expected_hit_rate
    return 1.0


@dataclass
class PoolTiming:
    """One pool's replica iteration costs as plain numbers: what the workbench and the simulated engine step by."""

    max_num_seqs: int
    token_budget: int
    kv_tokens: float  # infinite for encoders, which keep no KV cache
    memory_s: list[float]  # DecodeStepTerms per batch size 0..max_num_seqs
    compute_s: list[float]
    kv_s_per_token: float
    overhead_s: float
    speculation: float
    prefill: cap.PrefillCost
    encoder: bool = False  # an embedding model: prefill only, no KV cache, first token = last
    # The OpenAI server's share of every response (tokenization, the first scheduling step, detokenization,
    # the first chunk): each byte reaches the client this much after the engine's iteration produced it.
    ttft_floor_s: float = 0.0
    # The server's work per stream: each other request decoding beside a first token delays it this much more
    # (detokenizing and streaming its tokens). The planner and the simulator both add it through
    # ``first_token_server_s``, per the batch decoding then. A burst's arrivals cost the server more each
    # (``capacity.API_PER_REQUEST_S``), but the pool model's arrivals land at random phases and rarely meet.
    api_per_stream_s: float = 0.0
    # Whether ``api_per_stream_s`` was measured on the pool's host (its calibration file's); False: the
    # datasheet's constant, which a calibration written before the term was measured keeps too.
    api_per_stream_measured: bool = False
    # vLLM's KV block, in tokens: every sequence holds a part-filled last block (half of one on average).
    block_size: int = cap.BLOCK_SIZE
    # vLLM's ``--scheduling-policy priority`` (rendered for pools that serve several levels): a full KV cache
    # preempts the running sequence of the lowest level, latest arrival, and a preempted sequence waits again
    # in its own level's place. Under FCFS the newest admitted one is preempted and waits first in line.
    priority_scheduling: bool = False

    @overload
    def first_token_server_s(self, batch: float) -> float: ...
    @overload
    def first_token_server_s(self, batch: F64) -> F64: ...
    def first_token_server_s(self, batch: float | F64) -> float | F64:
        """What the OpenAI server adds to a first token produced beside ``batch`` decoding sequences (streams).

        The one TTFT server term (``capacity.server_seconds``), which the planner's pool model (on its
        chains' batches) and the simulated engine (on each prefill iteration's batch) both call, as the
        validation table does: the three cannot price a first token's server work differently.
        """
        return cap.server_seconds(self.ttft_floor_s, self.api_per_stream_s, batch)

    @property
    def waste_tokens(self) -> float:
        """The KV tokens a sequence's last block leaves empty, on average."""
        return (self.block_size - 1) / 2

    @classmethod
    def build(
        cls,
        model: cap.ReplicaModel,
        *,
        max_num_seqs: int,
        token_budget: int,
        kv_tokens: float,
        encoder: bool = False,
        block_size: int = cap.BLOCK_SIZE,
        priority_scheduling: bool = False,
    ) -> PoolTiming:
        terms = cap.decode_step_table(model, max_num_seqs)
        return cls(
            max_num_seqs=max_num_seqs,
            token_budget=token_budget,
            kv_tokens=kv_tokens,
            memory_s=[t.memory_s for t in terms],
            compute_s=[t.compute_s for t in terms],
            kv_s_per_token=terms[0].kv_s_per_token,
            overhead_s=terms[0].overhead_s,
            speculation=cap.speculation_factor(model),
            prefill=cap.prefill_cost(model),
            encoder=encoder,
            ttft_floor_s=model.efficiency.ttft_floor_s,
            api_per_stream_s=model.efficiency.api_per_stream_s,
            block_size=block_size,
            priority_scheduling=priority_scheduling,
        )

    @classmethod
    def calibrated(
        cls,
        host: HostTiming,
        *,
        max_num_seqs: int,
        token_budget: int,
        kv_tokens: float,
        encoder: bool = False,
    ) -> PoolTiming:
        """The iteration costs measured on the pool's host (``host_calibration``) in the engines' terms.

        A decode step of ``b`` sequences is the measured step at ``b`` (all of it in ``memory_s``, so
        that ``compute_s`` never binds), less the host's KV read at the measured context, which the
        engines add back at the batch's actual context.
        """
        kv_s = host.kv_s_per_token
        # Every step holds its KV read too: the overhead is at most what is left of the smallest (a noisy host can
        # measure a larger batch's step below a smaller one's), and the floor takes the rest, so that a lone
        # request's TTFT (floor + overhead + prefill) stays the fitted one and no step is clipped.
        least = min(host.step_s(b) - kv_s * b * host.context_tokens for b in range(1, max_num_seqs + 1))
        overhead = max(min(host.overhead_s, least), 0.0)
        memory = [0.0] + [
            max(host.step_s(b) - overhead - kv_s * b * host.context_tokens, 0.0) for b in range(1, max_num_seqs + 1)
        ]
        return cls(
            max_num_seqs=max_num_seqs,
            token_budget=token_budget,
            kv_tokens=kv_tokens,
            memory_s=memory,
            compute_s=[0.0] * (max_num_seqs + 1),
            kv_s_per_token=kv_s,
            overhead_s=overhead,
            speculation=1.0,  # measured with the pool's own argv: speculation is in the steps
            prefill=cap.PrefillCost(host.prefill_per_token_s, host.prefill_per_pair_s),
            encoder=encoder,
            ttft_floor_s=host.ttft_floor_s + host.overhead_s - overhead,
            # The host's own per-request work where the file measured it (``host_calibration.per_request_s``,
            # fitted against this same pricing of a first token beside a batch); an older file's host floor,
            # measured one request at a time, holds none of it, so the pool keeps the default term.
            api_per_stream_s=cap.DEFAULT_EFFICIENCY.api_per_stream_s
            if host.api_per_request_s is None
            else host.api_per_request_s,
            api_per_stream_measured=host.api_per_request_s is not None,
        )

    def decode_seconds(self, batch: int, context: float) -> float:
        step = max(self.memory_s[batch] + self.kv_s_per_token * context, self.compute_s[batch]) + self.overhead_s
        return step * self.speculation


def timing(
    spec: PlatformSpec,
    pool: Pool,
    *,
    kv_blocks: int | None = None,
    block_size: int = cap.BLOCK_SIZE,
    priority_scheduling: bool | None = None,
) -> PoolTiming:
    """The pool's iteration costs; ``kv_blocks`` (of ``block_size`` tokens) overrides the KV cache vLLM's
    accounting gives a replica; ``priority_scheduling`` is whether its replicas run vLLM's priority policy.

    By default the policy is the rendered one (``serves_several_levels``, which ``vllm_args`` is given):
    the planner, ``plan --verify`` and ``simulate`` then schedule as the deployed replicas do. Only a
    benchmark or a test that sets up one policy on purpose passes it.
    """
    if priority_scheduling is None:
        priority_scheduling = serves_several_levels(spec, pool)
    encoder = spec.model(pool.model).resolved_architecture().kind is ModelKind.ENCODER
    blocks = memory(spec, pool).kv_blocks if kv_blocks is None else kv_blocks
    seqs, budget = pool.engine.max_num_seqs, pool.engine.max_num_batched_tokens
    kv_tokens = math.inf if encoder else float(blocks * (cap.BLOCK_SIZE if kv_blocks is None else block_size))
    if pool.calibration is not None:
        # The loader checked the file against the pool and made its path absolute.
        host = fit(read_calibration(Path(pool.calibration)))
        calibrated = PoolTiming.calibrated(
            host, max_num_seqs=seqs, token_budget=budget, kv_tokens=kv_tokens, encoder=encoder
        )
        return dataclasses.replace(calibrated, block_size=block_size, priority_scheduling=priority_scheduling)
    return PoolTiming.build(
        replica_model(spec, pool),
        max_num_seqs=seqs,
        token_budget=budget,
        kv_tokens=kv_tokens,
        encoder=encoder,
        block_size=block_size,
        priority_scheduling=priority_scheduling,
    )
