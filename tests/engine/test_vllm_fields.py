"""The gateway's list of vLLM's request fields (``gateway.fields``) is the installed release's.

A field vLLM adds in an upgrade would otherwise be refused at the front door as unknown; one it drops
would still be forwarded, for vLLM to ignore. Reads the request models only: no engine is started.
"""

from __future__ import annotations

import pytest

from tokenplane.serving.gateway import fields


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # vLLM's imports of torch warn; not ours to fix
@pytest.mark.parametrize(
    ("module", "model", "ours"),
    [
        ("vllm.entrypoints.openai.chat_completion.protocol", "ChatCompletionRequest", fields.VLLM_CHAT),
        ("vllm.entrypoints.openai.completion.protocol", "CompletionRequest", fields.VLLM_COMPLETIONS),
        ("vllm.entrypoints.pooling.embed.protocol", "EmbeddingCompletionRequest", fields.VLLM_EMBEDDINGS),
    ],
)
def test_the_gateway_knows_exactly_the_installed_vllms_request_fields(
    engine_version: str, module: str, model: str, ours: frozenset[str]
) -> None:
    theirs = set(getattr(__import__(module, fromlist=[model]), model).model_fields)
    assert theirs == ours, (
        f"vLLM {engine_version} {model}: missing from gateway.fields {sorted(theirs - ours)}, "
        f"no longer in vLLM {sorted(ours - theirs)}"
    )
