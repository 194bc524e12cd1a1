"""A tiny deterministic Llama for the real vLLM engine on a CPU: random weights, a locally trained tokenizer.

``tokenplane dev --engine vllm`` and the real-engine tests need a model folder that vLLM loads
like any Hugging Face checkpoint, without reaching a hub and without torch in this process: the
weights are drawn with numpy from a fixed seed and written with ``safetensors``, the tokenizer is a
byte-level BPE trained by ``tokenizers`` on a fixed corpus, and ``tokenizer_config.json`` carries a
chat template. The same call makes the same bytes, so the folder's sha256 manifest is stable and a
cached copy is reused.

The shape is the smallest the CPU attention backend accepts: ``head_dim=16`` is refused there
("Unsupported CPU attention configuration"), 64 works.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from tokenplane.runtime_env import Var

TINY_SEED = 2026
# What vLLM and transformers read to load the folder. A folder without them is not a model.
REQUIRED_FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json")
# Llama's chat template, shortened: system, user and assistant turns, then the generation prompt.
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{{ '<|' + message['role'] + '|>\n' + message['content'] + eos_token + '\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}"
)
SPECIAL_TOKENS = ("<unk>", "<s>", "</s>", "<pad>")
# The corpus the tokenizer learns its merges from: fixed text, so the merges (and every token count) are
# the same on every machine.
_WORDS = [
    "the",
    "a",
    "an",
    "of",
    "to",
    "and",
    "in",
    "is",
    "for",
    "on",
    "with",
    "as",
    "by",
    "at",
    "from",
    "that",
    "this",
    "it",
    "be",
    "are",
    "was",
    "or",
    "not",
    "have",
    "has",
    "you",
    "your",
    "we",
    "our",
    "model",
    "token",
    "tokens",
    "request",
    "requests",
    "gateway",
    "engine",
    "pool",
    "replica",
    "latency",
    "throughput",
    "prompt",
    "completion",
    "chat",
    "user",
    "assistant",
    "system",
    "hello",
    "world",
    "question",
    "answer",
    "please",
    "explain",
    "summarize",
    "write",
    "code",
    "python",
    "data",
    "cloud",
    "region",
    "tenant",
    "priority",
    "queue",
    "cache",
    "memory",
    "batch",
    "stream",
    "first",
    "second",
    "time",
    "cost",
    "price",
    "GPU",
    "CPU",
    "vLLM",
    "server",
]


@dataclass(frozen=True)
class TinyShape:
    """The architecture's numbers, written to ``config.json``."""

    hidden_size: int = 128
    intermediate_size: int = 256
    num_hidden_layers: int = 2
    num_attention_heads: int = 2
    num_key_value_heads: int = 2
    head_dim: int = 64
    vocab_size: int = 512
    max_position_embeddings: int = 32768


class NotAModel(ValueError):
    """A folder named as a model's weights lacks the files vLLM loads."""


def check_model_dir(path: Path, *, field: str) -> None:
    """Raise ``NotAModel`` naming ``field``, the folder and the files it lacks, unless it holds a checkpoint."""
    if not path.is_dir():
        raise NotAModel(f"{field}={path} is not a directory; name a folder holding a Hugging Face checkpoint")
    missing = [f for f in REQUIRED_FILES if not (path / f).exists() and not _has_sharded(path, f)]
    if missing:
        raise NotAModel(
            f"{field}={path} is not a model folder: it lacks {', '.join(missing)} (a Hugging Face checkpoint has "
            "config.json, *.safetensors and the tokenizer files); point it at the downloaded model"
        )


def _has_sharded(path: Path, name: str) -> bool:
    return name == "model.safetensors" and any(path.glob("*.safetensors"))


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/tokenplane/tiny-models`` (``~/.cache`` when unset)."""
    base = os.environ.get(Var.XDG_CACHE_HOME.value) or str(Path.home() / ".cache")
    return Path(base) / "tokenplane" / "tiny-models"


def tiny_model(cache_dir: Path, *, max_len: int = 32768) -> Path:
    """The tiny Llama's folder under ``cache_dir``, made once per shape and reused afterwards.

    ``max_len`` is the context the pools' ``--max-model-len`` asks for; vLLM refuses a length beyond the
    model's ``max_position_embeddings``.
    """
    shape = TinyShape(max_position_embeddings=max_len)
    key = hashlib.sha256(json.dumps([asdict(shape), TINY_SEED, CHAT_TEMPLATE]).encode()).hexdigest()[:12]
    folder = cache_dir / f"tiny-llama-{key}"
    if all((folder / f).exists() for f in REQUIRED_FILES):
        return folder
    partial = cache_dir / f".{folder.name}.partial.{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    _write_tokenizer(partial)
    _write_config(partial, shape)
    _write_weights(partial, shape)
    # Renamed into place whole: a second stack starting at the same moment sees a complete folder or none.
    try:
        partial.rename(folder)
    except OSError:
        shutil.rmtree(partial, ignore_errors=True)  # a sibling finished first; its bytes are the same
    return folder


def _write_tokenizer(folder: Path) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=TinyShape.vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    rng = np.random.default_rng(TINY_SEED)
    corpus = [" ".join(rng.choice(_WORDS, size=40)) for _ in range(200)]
    tokenizer.train_from_iterator(corpus, trainer=trainer)
    tokenizer.save(str(folder / "tokenizer.json"))
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": "<s>",
        "eos_token": "</s>",
        "unk_token": "<unk>",
        "pad_token": "<pad>",
        "model_max_length": 1_000_000,
        "chat_template": CHAT_TEMPLATE,
    }
    (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    special = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"}
    (folder / "special_tokens_map.json").write_text(json.dumps(special, indent=2), encoding="utf-8")


def _write_config(folder: Path, shape: TinyShape) -> None:
    ids = {t: SPECIAL_TOKENS.index(t) for t in SPECIAL_TOKENS}
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        **asdict(shape),
        "hidden_act": "silu",
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "bos_token_id": ids["<s>"],
        "eos_token_id": ids["</s>"],
        "pad_token_id": ids["<pad>"],
    }
    (folder / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    generation = {"bos_token_id": ids["<s>"], "eos_token_id": ids["</s>"]}
    (folder / "generation_config.json").write_text(json.dumps(generation, indent=2), encoding="utf-8")


def _write_weights(folder: Path, shape: TinyShape) -> None:
    from safetensors.numpy import save_file

    rng = np.random.default_rng(TINY_SEED)
    hidden, inter, heads = shape.hidden_size, shape.intermediate_size, shape.num_attention_heads
    kv = shape.num_key_value_heads * shape.head_dim

    def normal(*dims: int) -> np.ndarray:
        return (rng.standard_normal(dims) * 0.02).astype(np.float32)

    tensors = {"model.embed_tokens.weight": normal(shape.vocab_size, hidden)}
    for i in range(shape.num_hidden_layers):
        layer = f"model.layers.{i}"
        tensors |= {
            f"{layer}.self_attn.q_proj.weight": normal(heads * shape.head_dim, hidden),
            f"{layer}.self_attn.k_proj.weight": normal(kv, hidden),
            f"{layer}.self_attn.v_proj.weight": normal(kv, hidden),
            f"{layer}.self_attn.o_proj.weight": normal(hidden, heads * shape.head_dim),
            f"{layer}.mlp.gate_proj.weight": normal(inter, hidden),
            f"{layer}.mlp.up_proj.weight": normal(inter, hidden),
            f"{layer}.mlp.down_proj.weight": normal(hidden, inter),
            f"{layer}.input_layernorm.weight": np.ones(hidden, dtype=np.float32),
            f"{layer}.post_attention_layernorm.weight": np.ones(hidden, dtype=np.float32),
        }
    tensors |= {
        "model.norm.weight": np.ones(hidden, dtype=np.float32),
        "lm_head.weight": normal(shape.vocab_size, hidden),
    }
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
