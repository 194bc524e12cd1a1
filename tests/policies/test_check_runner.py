"""The offline runner: the pack against a rendered graph, the policy config file, and the CI report formats."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from tests.policies.fixtures import dropping, k8s_name, kind_of, rendered
from tokenplane.commands.check_report import print_table, render, to_json, to_junit, to_sarif
from tokenplane.errors import SpecError
from tokenplane.policies import ALL
from tokenplane.proof.check import (
    CheckResult,
    PolicySettings,
    load_policy_config,
    policy_resources,
    run_checks,
    settings_for,
)
from tokenplane.proof.render import RenderResult

NAMES = [p.name for p in ALL]
PDB_POLICY = "replicated-workloads-have-pdb"


def dev() -> RenderResult:
    return rendered("dev")


def dev_without_gateway_pdb() -> RenderResult:
    """dev with one mandatory violation: the AI gateway's PodDisruptionBudget is gone."""
    return dropping(dev(), lambda r: kind_of(r) == "PodDisruptionBudget" and k8s_name(r) == "ai-gateway")


def outcome(result: CheckResult, name: str) -> Any:
    [found] = [o for o in result.outcomes if o.name == name]
    return found


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "policy-config.json"
    path.write_text(text, encoding="utf-8")
    return path


def config_error(tmp_path: Path, config: Any) -> str:
    path = write(tmp_path, json.dumps(config))
    with pytest.raises(SpecError) as info:
        load_policy_config(path, ALL)
    return str(info.value)


# --- running the pack -------------------------------------------------------------------------


def test_dev_passes_every_mandatory_policy() -> None:
    result = run_checks(dev(), ALL)
    assert [o.name for o in result.outcomes] == NAMES
    assert result.ok and result.mandatory_failures == 0
    failing = {o.name: o.violations for o in result.outcomes if o.enforcement == "mandatory" and o.status != "passed"}
    assert failing == {}


def test_resource_violations_carry_the_offending_resources_urn() -> None:
    digest = outcome(run_checks(dev(), ALL), "images-pinned-by-digest")
    assert digest.status == "warned" and digest.violations  # dev pins third-party images by tag
    deployments = {r.urn for r in dev().resources if kind_of(r) in ("Deployment", "StatefulSet", "Job", "CronJob")}
    assert {v.urn for v in digest.violations} <= deployments


def test_one_mandatory_violation_fails_the_check() -> None:
    result = run_checks(dev_without_gateway_pdb(), ALL)
    assert not result.ok and result.mandatory_failures == 1
    assert outcome(result, PDB_POLICY).status == "failed"


def test_a_disabled_policy_is_skipped_and_reported_as_disabled() -> None:
    settings = settings_for({"images-pinned-by-digest": "disabled"}, ALL)
    assert settings["images-pinned-by-digest"].enforcement == "disabled"
    skipped = outcome(run_checks(dev(), ALL, settings), "images-pinned-by-digest")
    assert (skipped.status, skipped.violations) == ("disabled", [])


def test_all_advisory_turns_failures_into_warnings() -> None:
    result = run_checks(dev_without_gateway_pdb(), ALL, settings_for({"all": "advisory"}, ALL))
    assert result.ok and result.mandatory_failures == 0
    pdb = outcome(result, PDB_POLICY)
    assert (pdb.enforcement, pdb.status, len(pdb.violations)) == ("advisory", "warned", 1)


def test_a_policys_own_level_overrides_all() -> None:
    settings = settings_for({"all": {"enforcementLevel": "advisory"}, PDB_POLICY: "mandatory"}, ALL)
    assert settings["images-not-latest"].enforcement == "advisory"
    assert not run_checks(dev_without_gateway_pdb(), ALL, settings).ok


def test_config_thresholds_reach_the_policy() -> None:
    settings = settings_for({"node-groups-multi-az": {"minAzs": 3}}, ALL)
    assert settings["node-groups-multi-az"] == PolicySettings("mandatory", {"minAzs": 3})
    multi_az = outcome(run_checks(dev(), ALL, settings), "node-groups-multi-az")
    node_groups = [r.urn for r in dev().resources if r.type == "aws:eks/nodeGroup:NodeGroup"]
    assert sorted(v.urn for v in multi_az.violations) == sorted(node_groups)  # dev's region has two AZs
    assert all("at least 3 AZs" in v.message for v in multi_az.violations)


def test_without_a_config_every_policy_runs_at_its_own_level_with_schema_defaults() -> None:
    settings = settings_for({}, ALL)
    assert {n: s.enforcement for n, s in settings.items()} == {
        p.name: getattr(p.enforcement_level, "value", None) for p in ALL
    }
    assert settings["capacity-kv-headroom"].config == {"maxKvUsage": 0.9}
    assert settings["only-ai-gateway-load-balancer"].config == {"allowed": ["ai-gateway"], "allowInternal": True}
    assert settings["budget-under-cap"].config == {}  # no default: the spec's own cap applies


def test_policy_resources_link_parents_providers_and_property_dependencies() -> None:
    resources = {r.urn: r for r in policy_resources(dev())}
    [versioning] = [r for r in resources.values() if r.name == "dev-registry-local-versioning"]
    [bucket] = versioning.property_dependencies["bucket"]
    assert (bucket.resource_type, bucket.name) == ("aws:s3/bucket:Bucket", "dev-registry-local")
    assert bucket in versioning.dependencies
    [gateway] = [r for r in resources.values() if r.name == "dev-local-ai-gateway-deployment"]
    assert gateway.provider is not None and gateway.provider.resource_type == "pulumi:providers:kubernetes"
    assert gateway.parent is not None and gateway.parent.resource_type == "tokenplane:ai_gateway:AiGateway"
    assert gateway.parent.parent is not None and gateway.parent.parent.name == "dev-local"


# --- the policy config file -------------------------------------------------------------------


def test_a_valid_config_file_sets_levels_and_thresholds(tmp_path: Path) -> None:
    config = {"all": "advisory", "node-groups-multi-az": {"enforcementLevel": "mandatory", "minAzs": 3}}
    settings = load_policy_config(write(tmp_path, json.dumps(config)), ALL)
    assert settings["node-groups-multi-az"] == PolicySettings("mandatory", {"minAzs": 3})
    assert settings["images-not-latest"] == PolicySettings("advisory", {})


def test_invalid_json_names_the_file_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path, '{\n  "all": "advisory",\n  oops\n}\n')
    with pytest.raises(SpecError) as info:
        load_policy_config(path, ALL)
    assert str(info.value).startswith(f"{path}:3:3: not valid JSON")
    assert isinstance(info.value.__cause__, json.JSONDecodeError)


def test_a_missing_config_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="no such policy config file"):
        load_policy_config(tmp_path / "absent.json", ALL)


def test_a_config_that_is_not_an_object_is_rejected(tmp_path: Path) -> None:
    assert "expected a JSON object" in config_error(tmp_path, ["images-not-latest"])


def test_an_unknown_policy_name_lists_the_packs_policies(tmp_path: Path) -> None:
    message = config_error(tmp_path, {"images-not-lastest": "advisory"})
    assert "unknown policy 'images-not-lastest'" in message
    assert all(name in message for name in NAMES)


def test_a_bad_enforcement_level_lists_the_allowed_levels(tmp_path: Path) -> None:
    message = config_error(tmp_path, {"images-not-latest": "warn"})
    assert (
        "images-not-latest: enforcement level 'warn' is not one of advisory, mandatory, remediate, disabled" in message
    )


def test_a_bad_level_for_all_lists_the_allowed_levels(tmp_path: Path) -> None:
    assert "all: enforcement level 'strict' is not one of" in config_error(tmp_path, {"all": "strict"})


def test_all_with_neither_a_level_nor_an_object_is_a_clear_error(tmp_path: Path) -> None:
    assert "all" in config_error(tmp_path, {"all": 5})


def test_an_unknown_setting_names_the_policys_settings(tmp_path: Path) -> None:
    message = config_error(tmp_path, {"node-groups-multi-az": {"minAz": 3}})
    assert "node-groups-multi-az has no setting 'minAz' (settings: minAzs)" in message


def test_a_setting_on_a_policy_without_settings_says_so(tmp_path: Path) -> None:
    assert "(settings: none)" in config_error(tmp_path, {"images-not-latest": {"threshold": 1}})


def test_a_setting_of_the_wrong_type_names_the_policy_and_value(tmp_path: Path) -> None:
    message = config_error(tmp_path, {"node-groups-multi-az": {"minAzs": "three"}})
    assert "node-groups-multi-az.minAzs='three'" in message and "integer" in message


def test_a_setting_outside_its_range_is_rejected(tmp_path: Path) -> None:
    message = config_error(tmp_path, {"capacity-kv-headroom": {"maxKvUsage": 1.5}})
    assert "capacity-kv-headroom.maxKvUsage=1.5" in message and "maximum" in message


def test_a_policy_value_of_the_wrong_shape_is_rejected(tmp_path: Path) -> None:
    assert "images-not-latest must be a level string or an object" in config_error(tmp_path, {"images-not-latest": 3})


def test_a_directory_given_as_the_config_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=str(tmp_path)):
        load_policy_config(tmp_path, ALL)


# --- reports ----------------------------------------------------------------------------------


def broken_result() -> CheckResult:
    """One mandatory failure (the gateway PDB), advisory warnings (tags), and one disabled policy."""
    settings = settings_for({"prod-node-groups-three-azs": "disabled"}, ALL)
    return run_checks(dev_without_gateway_pdb(), ALL, settings)


def test_junit_has_one_testcase_per_policy_and_failures_for_mandatory_violations() -> None:
    suite = ET.fromstring(to_junit(broken_result()))
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == NAMES
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == (str(len(NAMES)), "1", "1")
    failed = [c for c in cases if c.find("failure") is not None]
    assert [c.get("name") for c in failed] == [PDB_POLICY]
    failure = failed[0].find("failure")
    assert failure is not None and "llm-gateway/ai-gateway" in (failure.text or "")
    by_name = {c.get("name"): c for c in cases}
    assert by_name["prod-node-groups-three-azs"].find("skipped") is not None
    assert by_name["images-pinned-by-digest"].find("system-out") is not None  # warnings are output, not failures


def test_sarif_is_2_1_0_with_a_rule_per_policy_and_a_result_per_violation() -> None:
    result = broken_result()
    sarif = json.loads(render(result, "sarif"))
    assert sarif["version"] == "2.1.0"
    [run] = sarif["runs"]
    assert [rule["id"] for rule in run["tool"]["driver"]["rules"]] == NAMES
    expected = [(o.name, v.message) for o in result.outcomes if o.status in ("failed", "warned") for v in o.violations]
    assert [(r["ruleId"], r["message"]["text"]) for r in run["results"]] == expected
    levels = {r["ruleId"]: r["level"] for r in run["results"]}
    assert levels[PDB_POLICY] == "error" and levels["images-pinned-by-digest"] == "warning"


def test_every_sarif_result_has_a_physical_location_for_code_scanning() -> None:
    # github/codeql-action/upload-sarif rejects results without one ("expected artifact location").
    for sarif_result in to_sarif(broken_result())["runs"][0]["results"]:
        uris = [
            loc.get("physicalLocation", {}).get("artifactLocation", {}).get("uri") for loc in sarif_result["locations"]
        ]
        assert any(uris), (
            f"{sarif_result['ruleId']}: no physicalLocation.artifactLocation.uri in {sarif_result['locations']}"
        )


def test_json_report_lists_every_policy_with_its_status_and_violations() -> None:
    data = json.loads(render(broken_result(), "json"))
    assert set(data) == {"ok", "mandatory_violations", "policies"}
    assert (data["ok"], data["mandatory_violations"]) == (False, 1)
    assert [p["name"] for p in data["policies"]] == NAMES
    keys = {"name", "source", "description", "enforcement", "status", "violations", "waived_by_exceptions"}
    assert all(set(p) == keys for p in data["policies"])
    assert {p["source"] for p in data["policies"]} == {"tokenplane"}  # checkov's join only with --with checkov
    [pdb] = [p for p in data["policies"] if p["name"] == PDB_POLICY]
    assert pdb["status"] == "failed"
    assert set(pdb["violations"][0]) == {"message", "urn"}
    assert data == to_json(broken_result())


def test_table_lists_every_policy_and_a_summary() -> None:
    console = Console(record=True, width=400)
    print_table(broken_result(), console)
    text = console.export_text()
    assert all(name in text for name in NAMES)
    assert f"violation {PDB_POLICY}: Deployment llm-gateway/ai-gateway" in text
    assert f"{len(NAMES) - 3} passed, 1 failed, 1 warned (1 mandatory violations)" in text  # and 1 disabled


def test_an_unknown_report_format_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown format 'yaml'"):
        render(broken_result(), "yaml")
