"""What one simulated replica of one pool is: its limits, its KV cache and its timing, from the spec."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from tokenplane import pool_model
from tokenplane.model.capacity import BLOCK_SIZE
from tokenplane.pool_model import PoolTiming
from tokenplane.serving.tokens import TokenCounter, counter_for
from tokenplane.spec import PlatformSpec
from tokenplane.vllm_args import served_model_names


class EmbeddingMode(StrEnum):
    """``--embeddings``: how an encoder pool picks its embedder."""

    AUTO = "auto"  # the model's weights where a package of them is installed, else lexical
    LEXICAL = "lexical"  # always the stand-in: fast and dependency-free, for load tests of the plumbing


@dataclass(frozen=True, eq=False)
class EngineConfig:
    """One replica of one pool, as the simulated engine runs it.

    Attributes:
        pool: The pool's name.
        served_model_names: What ``model`` may say; the first is the metrics' ``model_name``.
        max_model_len: Prompt plus completion tokens one request may reach.
        max_num_seqs: Sequences running at once.
        max_num_batched_tokens: Tokens one iteration computes (decodes plus prefill chunks).
        kv_blocks: Blocks of ``block_size`` tokens in the KV cache (0 for an encoder, which keeps none).
        prefix_caching: Whether full prompt blocks are reused across requests.
        encoder: An embedding model: prefill only, served on ``/v1/embeddings`` alone.
        embedding_dimension: Length of an embedding vector (the architecture's hidden size).
        output_tokens: Inclusive range that a completion's natural length is drawn from.
        timing: The capacity model's iteration costs, shared with the workbench simulator.
        counter: Token counts and ids of prompts.
        speed: Modelled seconds per wall second; ``math.inf`` never sleeps.
        seed: Mixed into the output of requests that carry no ``seed`` of their own.
        block_size: Tokens per KV block.
        model_preset: The registry model's catalog preset (None for explicit shapes): an encoder whose preset
            has packaged weights installed serves that model's real embeddings.
        embeddings: ``auto`` (real embeddings where the weights are installed) or ``lexical`` (the stand-in).
    """

    pool: str
    served_model_names: tuple[str, ...]
    max_model_len: int
    max_num_seqs: int
    max_num_batched_tokens: int
    kv_blocks: int
    prefix_caching: bool
    encoder: bool
    embedding_dimension: int
    output_tokens: tuple[int, int]
    timing: PoolTiming
    counter: TokenCounter
    speed: float = 1.0
    seed: int = 0
    block_size: int = BLOCK_SIZE
    model_preset: str | None = None
    embeddings: EmbeddingMode = EmbeddingMode.AUTO

    def __post_init__(self) -> None:
        if not self.speed > 0:
            raise ValueError(f"speed={self.speed} must be positive (use inf for no added latency)")
        if self.kv_blocks < 0:
            raise ValueError(f"kv_blocks={self.kv_blocks} must not be negative")
        if self.max_num_seqs >= len(self.timing.memory_s):
            # The decode-step table is indexed by batch size; a larger cap would run past it.
            raise ValueError(
                f"max_num_seqs={self.max_num_seqs} exceeds the {len(self.timing.memory_s) - 1} batch sizes "
                "the timing was built for; build the config with from_spec instead"
            )
        lo, hi = self.output_tokens
        if not 1 <= lo <= hi:
            raise ValueError(f"output_tokens={self.output_tokens} must be an ordered range of positive counts")

    @property
    def model_name(self) -> str:
        """The label vLLM puts on its metrics: the first served name."""
        return self.served_model_names[0]

    @property
    def kv_tokens(self) -> int:
        return self.kv_blocks * self.block_size

    @classmethod
    def from_spec(
        cls,
        spec: PlatformSpec,
        pool: str,
        *,
        speed: float = 1.0,
        kv_blocks: int | None = None,
        seed: int = 0,
        embeddings: EmbeddingMode = EmbeddingMode.AUTO,
        output_tokens: tuple[int, int] | None = None,
    ) -> EngineConfig:
        """Build the config of one replica of ``pool``.

        Args:
            spec: The platform spec.
            pool: The pool's name.
            speed: Modelled seconds per wall second (``math.inf``: no added latency).
            kv_blocks: Overrides the KV blocks vLLM's memory accounting gives the replica.
            seed: Output seed for requests without one.
            embeddings: How an encoder pool embeds: ``auto`` or ``lexical`` (see ``serving.engine.embedder``).
            output_tokens: Overrides the range a completion's natural length is drawn from (by default the
                pool's classes' output ranges), e.g. so that a benchmark's short completions still vary in length.

        Raises:
            ValueError: ``pool`` is not in the spec (the message lists the pools), or a value is out of range.
        """
        found = spec.pool(pool)
        engine = found.engine
        encoder = spec.is_embedding(found)
        if kv_blocks is not None and kv_blocks < 1:
            raise ValueError(f"kv_blocks={kv_blocks} must be at least 1")
        blocks = pool_model.memory(spec, found).kv_blocks if kv_blocks is None else kv_blocks
        classes = [spec.workload_classes[c].output_tokens for c in found.classes if c in spec.workload_classes]
        output = (min(r.min for r in classes), max(r.max for r in classes)) if classes else (1, 1)
        if output_tokens is not None:
            output = output_tokens
        timing = pool_model.timing(spec, found, kv_blocks=blocks)
        return cls(
            pool=found.name,
            served_model_names=tuple(served_model_names(spec, found)),
            max_model_len=engine.max_model_len,
            max_num_seqs=engine.max_num_seqs,
            max_num_batched_tokens=engine.max_num_batched_tokens,
            kv_blocks=0 if encoder else blocks,
            prefix_caching=engine.enable_prefix_caching and not encoder,
            encoder=encoder,
            embedding_dimension=spec.architecture(found).hidden_size,
            output_tokens=output,
            timing=timing,
            counter=counter_for(spec.model(found.model)),
            speed=speed,
            seed=seed,
            model_preset=spec.model(found.model).preset,
            embeddings=embeddings,
        )
