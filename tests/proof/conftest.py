"""Fixtures shared by the proof's tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.paths import REPO_ROOT
from tokenplane.components import weights_publish


@pytest.fixture
def unpublished(monkeypatch: pytest.MonkeyPatch) -> Path:
    """minimal.yaml with the publish step lost: no Job copies the weights, so the pools' checksum can never pass.

    A spec can no longer say this (a source the stack cannot publish is refused at load), so the defect is put
    back in the component, where a regression would put it.
    """
    monkeypatch.setattr(weights_publish, "publishable", lambda model: False)
    return REPO_ROOT / "stacks" / "minimal.yaml"
