"""`tokenplane plan` renders the Pulumi graph offline: counts, tree, JSON resources and a picture."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.paths import REPO_ROOT
from tokenplane.commands.cli import app

ROOT = REPO_ROOT
DEV = str(ROOT / "stacks" / "dev.yaml")


@pytest.mark.slow
def test_plan_json_lists_every_rendered_resource_with_its_region_and_inputs() -> None:
    result = CliRunner().invoke(app, ["plan", DEV, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    resources = data["resources"]
    assert {"urn", "type", "name", "parent", "provider", "region", "inputs"} <= set(resources[0])
    urns = [r["urn"] for r in resources]
    assert len(urns) == len(set(urns))
    deployments = [r for r in resources if r["type"] == "kubernetes:apps/v1:Deployment"]
    assert {r["region"] for r in deployments} == {"local"}
    assert data["render"]["issues"] == []
    assert data["render"]["resource_count"] == sum(1 for r in resources if not r["type"].startswith("tokenplane:"))
    secret = next(r for r in resources if r["type"] == "kubernetes:core/v1:Secret")
    assert set(secret["inputs"]["stringData"].values()) == {"[secret]"}  # no credential reaches the output


@pytest.mark.slow
def test_plan_prints_counts_tree_and_writes_the_topology_svg(tmp_path: Path) -> None:
    svg = tmp_path / "topology.svg"
    result = CliRunner().invoke(app, ["plan", DEV, "--tree", "--graph", str(svg)])
    assert result.exit_code == 0, result.output
    assert "resources by type and region" in result.stdout
    assert "kubernetes:apps/v1:Deployment" in result.stdout
    assert "tokenplane:vllm_pool:VllmPool" in result.stdout  # the tree shows components with their types
    assert "render ok" in result.stdout
    text = svg.read_text(encoding="utf-8")
    assert text.lstrip().startswith("<?xml") and "<svg" in text
    assert "VllmPool" in text


@pytest.mark.slow
def test_graph_with_an_unknown_extension_is_a_clear_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["plan", DEV, "--graph", str(tmp_path / "topology.gif")])
    assert result.exit_code == 2
    assert "must end in .svg or .png" in result.output


@pytest.mark.slow
def test_capacity_only_never_imports_pulumi() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from typer.testing import CliRunner; from tokenplane.commands.cli import app; "
        f"r = CliRunner().invoke(app, ['plan', {DEV!r}, '--capacity-only']); "
        "print(r.exit_code, 'pulumi' in sys.modules, 'tokenplane.components' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout.split()
    assert out == ["0", "False", "False"]
