"""Deployability findings are waived with the policies' scoped, justified exceptions; a stale waiver is reported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.proof.deployability.conftest import findings, mutated, rendered
from tokenplane.commands.cli import app
from tokenplane.errors import SpecError
from tokenplane.proof import deployability as deploy
from tokenplane.proof import waivers
from tokenplane.proof.render import RenderedResource, RenderResult

REASON = "Prometheus lives in the shared monitoring account; the platform team scrapes this cluster from there"


def _no_prometheus() -> RenderResult:
    def drop(r: RenderedResource) -> RenderedResource | None:
        return None if r.inputs.get("chart") == "kube-prometheus-stack" else r

    return mutated(rendered("minimal"), drop)


def test_a_scoped_waiver_covers_its_findings_and_keeps_its_reason() -> None:
    result = _no_prometheus()
    found = findings("minimal", result, "metrics-exported")
    assert found
    rules = {"metrics-exported": [{"resources": ["llm-serving/vllm-*"], "reason": REASON}]}
    applied = waivers.apply(found, result, rules)
    waived = [f for f, _ in applied.waived]
    assert waived and all("vllm_pool:VllmPool" in f.urn for f in waived), waived
    assert applied.kept and not any("vllm_pool:VllmPool" in f.urn for f in applied.kept), "only what it names"
    assert sorted(map(str, waived + applied.kept)) == sorted(map(str, found))
    assert all(reason == REASON for _, reason in applied.waived)


def test_a_waiver_scoped_to_other_resources_or_findings_does_not_cover() -> None:
    result = _no_prometheus()
    found = findings("minimal", result, "metrics-exported")
    for waiver in (
        {"resources": ["llm-gateway/*"], "reason": REASON},
        {"resources": ["llm-serving/vllm-*"], "findings": ["*kube_node_labels*"], "reason": REASON},
    ):
        applied = waivers.apply(found, result, {"metrics-exported": [waiver]})
        assert [f for f in applied.kept if f.rule == "metrics-exported"] == found, waiver
        assert [f.rule for f in applied.kept if f not in found] == [waivers.STALE], "it covered nothing: stale"


def test_a_waiver_that_covers_no_finding_is_reported_stale() -> None:
    rules = {"metrics-exported": [{"resources": ["llm-serving/vllm-*"], "reason": REASON}]}
    applied = waivers.apply(findings("minimal", rendered("minimal")), rendered("minimal"), rules)
    assert [f.rule for f in applied.kept] == [waivers.STALE] and not applied.waived
    assert "covers no finding" in applied.kept[0].message and "metrics-exported[0]" in applied.kept[0].urn


def test_tokenplanes_own_waivers_are_none_and_none_are_stale() -> None:
    assert waivers.own() == {}
    assert not waivers.apply([], rendered("minimal")).kept


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"metrics-exportd": []}, r"no such deployability rule.*metrics-exported"),
        ({"metrics-exported": [{"resources": ["x"]}]}, r"metrics-exported\[0\]: 'reason' is a required property"),
        ({"metrics-exported": [{"resources": ["x"], "reason": "ok"}]}, r"\[0\]\.reason: 'ok' is too short"),
    ],
)
def test_a_bad_waiver_is_refused_with_where_and_how(raw: object, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        waivers.parse(raw, deploy.CHECKS, "policy.json")


def test_a_crashed_check_can_be_waived_by_its_rule_which_the_loaded_config_accepts() -> None:
    raw = {deploy.CHECK_CRASHED: [{"resources": ["*"], "reason": "tracked upstream as tokenplane#123 until fixed"}]}
    assert waivers.parse(raw, deploy.rule_names(), "policy.json") == raw


@pytest.mark.slow
def test_check_waives_by_the_policy_config_and_the_report_shows_the_waiver(tmp_path: Path, unpublished: Path) -> None:
    config = tmp_path / "policy.json"
    waiver = {"resources": ["llm-serving/vllm-chat"], "findings": ["*qwen-7b-chat-v1's weights*"], "reason": REASON}
    config.write_text(json.dumps({"deployability": {"weights-published": [waiver]}}))
    out = tmp_path / "report.json"
    args = ["check", str(unpublished), "--policy-config", str(config), "--format", "json"]
    result = CliRunner().invoke(app, [*args, "--output", str(out)])
    outcome = next(p for p in json.loads(out.read_text())["policies"] if p["name"] == "deploy/weights-published")
    assert outcome["status"] == "passed" and outcome["waived_by_exceptions"] == 1, outcome
    assert REASON in outcome["description"], outcome
    assert result.exit_code == 0, result.output
