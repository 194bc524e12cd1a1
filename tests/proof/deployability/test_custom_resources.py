"""The false positive of issue 27: a custom resource other than KEDA's failed the render.

A ServiceMonitor that waits for kube-prometheus-stack is a correct program: `check --program` passes it. The
same ServiceMonitor sent without the release is still caught, by crd-order; a resource of a group no known
chart installs is still refused by the render, saying which groups it knows.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tokenplane.commands.cli import app
from tokenplane.proof import deployability as deploy
from tokenplane.proof.deployability import Assumptions
from tokenplane.proof.program import load_project, render_project

pytestmark = pytest.mark.slow  # each test renders a program in a child process

PROGRAM = """
import pulumi
import pulumi_kubernetes as k8s

provider = k8s.Provider("k8s", kubeconfig="{{}}")
opts = pulumi.ResourceOptions(provider=provider)
release = k8s.helm.v3.Release(
    "kps", chart="kube-prometheus-stack", version="67.9.0", namespace="monitoring",
    repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo="https://prometheus-community.github.io/helm-charts"),
    opts=opts,
)
k8s.apiextensions.CustomResource(
    "monitor",
    api_version="{group}/v1",
    kind="ServiceMonitor",
    metadata={{"name": "api", "namespace": "monitoring"}},
    spec={{"selector": {{"matchLabels": {{"app": "api"}}}}, "endpoints": [{{"port": "metrics"}}]}},
    opts=pulumi.ResourceOptions(provider=provider, depends_on={after}),
)
"""


def _write(tmp_path: Path, *, group: str = "monitoring.coreos.com", after: str = "[release]") -> Path:
    (tmp_path / "Pulumi.yaml").write_text("name: p\nruntime: python\n", encoding="utf-8")
    (tmp_path / "__main__.py").write_text(PROGRAM.format(group=group, after=after), encoding="utf-8")
    return tmp_path


def _check(tmp_path: Path, *args: str, **program: str) -> tuple[int, str]:
    directory = _write(tmp_path, **program)
    result = CliRunner().invoke(app, ["check", "--program", str(directory), "--format", "json", *args])
    return result.exit_code, result.stdout + result.stderr


def _rules(tmp_path: Path, assume: Assumptions, **program: str) -> set[str]:
    rendered = render_project(load_project(_write(tmp_path, **program)))
    assert rendered.ok, rendered.issues
    return {f.rule for f in deploy.run(None, rendered, assume)}


EXISTING = Assumptions(cluster=True, namespaces=frozenset({"monitoring"}))


def test_a_service_monitor_after_kube_prometheus_stack_renders_and_is_ordered(tmp_path: Path) -> None:
    # The chart's own values (storage, Grafana's password) are monitoring-state's to judge, not this program's.
    assert _rules(tmp_path, EXISTING) <= {"monitoring-state"}


def test_an_existing_cluster_and_namespace_are_assumed_not_reported(tmp_path: Path) -> None:
    assert {"namespace-exists", "cluster-ready"} <= _rules(tmp_path, Assumptions())
    code, output = _check(tmp_path, "--assume", "cluster", "--assume", "namespace:monitoring")
    assert code == 1, output  # the chart values' monitoring-state findings remain
    status = {p["name"]: p["status"] for p in json.JSONDecoder().raw_decode(output)[0]["policies"]}
    assert status["deploy/namespace-exists"] == status["deploy/cluster-ready"] == "passed", status
    assert status["deploy/crd-order"] == "passed" and status["deploy/monitoring-state"] == "failed", status


def test_an_unknown_assumption_is_refused_with_the_forms_allowed(tmp_path: Path) -> None:
    code, output = _check(tmp_path, "--assume", "nodes")
    assert code == 2 and "--assume namespace:NAME" in output, output


def test_the_same_service_monitor_without_the_release_is_a_crd_order_finding(tmp_path: Path) -> None:
    assert "crd-order" in _rules(tmp_path, EXISTING, after="[]")


def test_a_custom_resource_no_known_chart_installs_is_refused_by_the_render(tmp_path: Path) -> None:
    code, output = _check(tmp_path, group="example.acme.io")
    assert code == 1 and "no chart the checks know installs its CRD" in output, output
