"""Cross-field rules of the spec: one failing variant of stacks/dev.yaml per rule.

Each test asserts that the issue sits at the field to change, quotes the bad
value, and says how to fix it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from tokenplane.contract import SECRET_SCHEMES
from tokenplane.errors import Issue
from tokenplane.serving import secrets
from tokenplane.spec import PlatformSpec, secret_ref

SpecData = dict[str, Any]
Reject = Callable[[SpecData], list[Issue]]
Load = Callable[[SpecData], PlatformSpec]
IssueAt = Callable[[list[Issue], str], Issue]
IndexOf = Callable[[SpecData, str], int]


def _us_only(data: SpecData) -> None:
    """Move the dev spec's only region to the US, so that no region serves EU tenants."""
    data["regions"][0].update(cloud_region="us-east-1", azs=["us-east-1a", "us-east-1b"], jurisdiction="US")


def _add_dr_region(data: SpecData, name: str, cloud_region: str, jurisdiction: str) -> None:
    data["regions"].append(
        {
            "name": name,
            "cloud_region": cloud_region,
            "azs": [f"{cloud_region}a"],
            "jurisdiction": jurisdiction,
            "role": "dr",
            "pools": [],
        }
    )


def test_dev_spec_passes_every_rule(dev_data: SpecData, load_data: Load) -> None:
    spec = load_data(dev_data)
    assert [p.name for p in spec.pools] == [p["name"] for p in dev_data["pools"]]


# --- parallelism ------------------------------------------------------------------------------


def test_tp_times_pp_beyond_the_instance_gpus_is_rejected(
    dev_data: SpecData, rejected: Reject, issue_at: IssueAt, pool_at: IndexOf
) -> None:
    i = pool_at(dev_data, "large")
    dev_data["pools"][i].update(tensor_parallel=4, pipeline_parallel=4)
    issue = issue_at(rejected(dev_data), f"pools[{i}].tensor_parallel")
    assert "4 x 4 = 16 GPUs" in issue.message
    assert "8 GPUs of p5.48xlarge" in issue.message
    assert "lower TP/PP or use a larger instance_type" in issue.message


def test_tp_that_does_not_divide_attention_heads_lists_valid_options(
    dev_data: SpecData, rejected: Reject, issue_at: IssueAt, pool_at: IndexOf
) -> None:
    i = pool_at(dev_data, "large")
    dev_data["pools"][i]["tensor_parallel"] = 3
    issue = issue_at(rejected(dev_data), f"pools[{i}].tensor_parallel")
    assert "tensor_parallel=3" in issue.message
    assert "num_attention_heads=64" in issue.message
    assert "(try 1, 2, 4, 8)" in issue.message


def test_tp16_for_llama_70b_on_an_8_gpu_node_is_rejected(
    dev_data: SpecData, rejected: Reject, issue_at: IssueAt, pool_at: IndexOf
) -> None:
    i = pool_at(dev_data, "large")
    model = next(m for m in dev_data["models"] if m["name"] == dev_data["pools"][i]["model"])
    assert model["preset"] == "llama-3.1-70b"
    dev_data["pools"][i]["tensor_parallel"] = 16
    issue = issue_at(rejected(dev_data), f"pools[{i}].tensor_parallel")
    assert "16 x 1 = 16 GPUs" in issue.message
    assert "exceeds the 8 GPUs" in issue.message
    assert "lower TP/PP" in issue.message


def test_pipeline_parallel_beyond_the_model_layers_is_rejected(
    dev_data: SpecData, rejected: Reject, issue_at: IssueAt, pool_at: IndexOf
) -> None:
    # all-minilm-l6-v2 has 6 layers; an 8-GPU L4 node allows PP=8 GPU-wise.
    i = pool_at(dev_data, "embed")
    dev_data["pools"][i].update(instance_type="g6.48xlarge", pipeline_parallel=8)
    issue = issue_at(rejected(dev_data), f"pools[{i}].pipeline_parallel")
    assert "pipeline_parallel=8" in issue.message
    assert "6 layers" in issue.message


def test_pipeline_parallel_beyond_the_model_layers_message_says_how_to_fix(
    dev_data: SpecData, rejected: Reject, issue_at: IssueAt, pool_at: IndexOf
) -> None:
    i = pool_at(dev_data, "embed")
    dev_data["pools"][i].update(instance_type="g6.48xlarge", pipeline_parallel=8)
    issue = issue_at(rejected(dev_data), f"pools[{i}].pipeline_parallel")
    assert re.search(r"\b(lower|try|at most|use)\b", issue.message, re.IGNORECASE), issue.message


# --- memory -----------------------------------------------------------------------------------


def _llama70b_bf16_on_one_h100(data: SpecData, pool: int) -> None:
    data["pools"][pool]["tensor_parallel"] = 1
    model = next(m for m in data["models"] if m["name"] == data["pools"][pool]["model"])
    assert model["preset"] == "llama-3.1-70b"
    model["quantization"] = "bf16"


def test_model_that_does_not_fit_says_how_many_gib_are_missing(
    dev_data: SpecData, rejected: Reject, issue_at: IssueAt, pool_at: IndexOf
) -> None:
    i = pool_at(dev_data, "large")
    _llama70b_bf16_on_one_h100(dev_data, i)
    issue = issue_at(rejected(dev_data), f"pools[{i}].tensor_parallel")
    assert "(bf16) on H100-80GB at TP=1" in issue.message
    missing = re.search(r"one 16384-token sequence needs ([\d.]+) GiB more", issue.message)
    assert missing is not None, issue.message
    # 70B parameters at 2 bytes are ~131 GiB against a ~71 GiB budget: tens of GiB short.
    assert float(missing.group(1)) > 50


def test_model_that_does_not_fit_suggests_a_tensor_parallel_and_a_gpu(
    dev_data: SpecData, rejected: Reject, issue_at: IssueAt, pool_at: IndexOf
) -> None:
    i = pool_at(dev_data, "large")
    _llama70b_bf16_on_one_h100(dev_data, i)
    issue = issue_at(rejected(dev_data), f"pools[{i}].tensor_parallel")
    assert re.search(r"Try tensor_parallel: \d+ or gpu: \S+", issue.message), issue.message


def test_suggested_tensor_parallel_for_a_model_that_does_not_fit_makes_it_fit(
    dev_data: SpecData, rejected: Reject, issue_at: IssueAt, load_data: Load, pool_at: IndexOf
) -> None:
    i = pool_at(dev_data, "large")
    _llama70b_bf16_on_one_h100(dev_data, i)
    issue = issue_at(rejected(dev_data), f"pools[{i}].tensor_parallel")
    suggested = re.search(r"tensor_parallel: (\d+)", issue.message)
    assert suggested is not None, issue.message
    dev_data["pools"][i]["tensor_parallel"] = int(suggested.group(1))
    assert load_data(dev_data).pools[i].tensor_parallel == int(suggested.group(1))


def test_suggested_gpu_for_a_model_that_does_not_fit_makes_it_fit(
    dev_data: SpecData, rejected: Reject, issue_at: IssueAt, load_data: Load, pool_at: IndexOf
) -> None:
    i = pool_at(dev_data, "large")
    _llama70b_bf16_on_one_h100(dev_data, i)
    issue = issue_at(rejected(dev_data), f"pools[{i}].tensor_parallel")
    suggested = re.search(r"gpu: (\S+)", issue.message)
    assert suggested is not None, issue.message
    dev_data["pools"][i]["gpu"] = suggested.group(1)
    assert load_data(dev_data).pools[i].gpu == suggested.group(1)


# --- references -------------------------------------------------------------------------------


def test_region_placement_of_an_undefined_pool_is_rejected(
    dev_data: SpecData, rejected: Reject, issue_at: IssueAt
) -> None:
    dev_data["regions"][0]["pools"].append({"pool": "ghost", "min_replicas": 0, "max_replicas": 1})
    n = len(dev_data["regions"][0]["pools"]) - 1
    issue = issue_at(rejected(dev_data), f"regions[0].pools[{n}].pool")
    assert "'ghost' is not defined under pools" in issue.message
    assert "known: embed, large, medium, small" in issue.message


def test_pool_naming_an_undefined_model_is_rejected(
    dev_data: SpecData, rejected: Reject, issue_at: IssueAt, pool_at: IndexOf
) -> None:
    i = pool_at(dev_data, "small")
    dev_data["pools"][i]["model"] = "ghost-model"
    issue = issue_at(rejected(dev_data), f"pools[{i}].model")
    assert "'ghost-model' is not in the registry" in issue.message
    assert "known: embedder, large-chat, medium-chat, small-chat" in issue.message


def test_pool_naming_an_undefined_model_is_the_only_issue_reported(
    dev_data: SpecData, rejected: Reject, pool_at: IndexOf
) -> None:
    # The pool still sits in the EU region; a typo in its model name must not also
    # claim that the EU tenant's tier "has no pool in a EU region".
    i = pool_at(dev_data, "small")
    dev_data["pools"][i]["model"] = "ghost-model"
    issues = rejected(dev_data)
    assert [x.path for x in issues] == [f"pools[{i}].model"], "\n".join(str(x) for x in issues)


def test_fallback_to_an_unknown_target_is_rejected(dev_data: SpecData, rejected: Reject, issue_at: IssueAt) -> None:
    dev_data["routing"]["fallbacks"]["large"] = ["anthropic"]
    issue = issue_at(rejected(dev_data), "routing.fallbacks.large[0]")
    assert "fallback 'anthropic'" in issue.message
    assert "routing.mix (large, medium, small)" in issue.message
    assert "known: openai" in issue.message


def test_dr_secondary_that_is_not_a_region_is_rejected(dev_data: SpecData, rejected: Reject, issue_at: IssueAt) -> None:
    dev_data["dr"] = {"rpo_minutes": 5, "rto_minutes": 30, "secondaries": {"local": "nowhere"}}
    issue = issue_at(rejected(dev_data), "dr.secondaries.local")
    assert "secondary region 'nowhere' is not defined" in issue.message
    assert "known: local" in issue.message


def test_semantic_cache_embedding_pool_on_a_decoder_pool_is_rejected(
    dev_data: SpecData, rejected: Reject, issue_at: IssueAt
) -> None:
    dev_data["cache"]["semantic"]["embedding_pool"] = "small"
    issue = issue_at(rejected(dev_data), "cache.semantic.embedding_pool")
    assert "'small' serves a decoder" in issue.message
    assert "point this at a pool with isolation: embedding" in issue.message


# --- sums and bounds --------------------------------------------------------------------------


def test_routing_mix_not_summing_to_one_shows_the_sum(dev_data: SpecData, rejected: Reject, issue_at: IssueAt) -> None:
    dev_data["routing"]["mix"] = {"small": 0.7, "medium": 0.2, "large": 0.2}
    issue = issue_at(rejected(dev_data), "routing.mix")
    assert "shares sum to 1.1" in issue.message
    assert "large=0.2" in issue.message
    assert "they must sum to 1" in issue.message


def test_class_shares_not_summing_to_one_are_rejected(dev_data: SpecData, rejected: Reject, issue_at: IssueAt) -> None:
    dev_data["workload_classes"]["A"]["share"] = 0.5
    issue = issue_at(rejected(dev_data), "workload_classes")
    assert "class shares sum to 0.8" in issue.message
    assert "they must sum to 1" in issue.message


def test_region_traffic_shares_not_summing_to_one_are_rejected(
    dev_data: SpecData, rejected: Reject, issue_at: IssueAt
) -> None:
    dev_data["regions"][0]["traffic_share"] = 0.5
    issue = issue_at(rejected(dev_data), "regions")
    assert "traffic_share sums to 0.5 (local=0.5)" in issue.message
    assert "shares that sum to 1" in issue.message


def test_min_replicas_above_max_replicas_is_rejected(dev_data: SpecData, rejected: Reject, issue_at: IssueAt) -> None:
    dev_data["regions"][0]["pools"][0].update(min_replicas=5, max_replicas=4)
    issue = issue_at(rejected(dev_data), "regions[0].pools[0]")
    assert "min_replicas=5 exceeds max_replicas=4" in issue.message
    assert "raise max_replicas to at least 5" in issue.message


def test_duplicate_pool_names_are_rejected_at_each_use(dev_data: SpecData, rejected: Reject, pool_at: IndexOf) -> None:
    i = pool_at(dev_data, "small")
    dev_data["pools"].append(dict(dev_data["pools"][i]))
    issues = [x for x in rejected(dev_data) if "used more than once in pools" in x.message]
    assert [x.path for x in issues] == [f"pools[{i}].name", f"pools[{len(dev_data['pools']) - 1}].name"]
    assert all("'small'" in x.message and "must be unique" in x.message for x in issues)


def test_duplicate_tenant_names_are_rejected_at_each_use(
    dev_data: SpecData, rejected: Reject, tenant_at: IndexOf
) -> None:
    i = tenant_at(dev_data, "demo")
    dev_data["tenants"].append(dict(dev_data["tenants"][i]))
    issues = [x for x in rejected(dev_data) if "used more than once in tenants" in x.message]
    assert [x.path for x in issues] == [f"tenants[{i}].name", f"tenants[{len(dev_data['tenants']) - 1}].name"]
    assert all("'demo'" in x.message and "must be unique" in x.message for x in issues)


# --- residency --------------------------------------------------------------------------------


def test_eu_tenant_without_eu_pool_or_provider_is_rejected(
    dev_data: SpecData, rejected: Reject, tenant_at: IndexOf
) -> None:
    _us_only(dev_data)
    t = tenant_at(dev_data, "acme-eu")
    issues = [x for x in rejected(dev_data) if x.path == f"tenants[{t}].allowed_tiers"]
    assert len(issues) == 3, "\n".join(str(x) for x in issues)  # one per allowed tier
    small = next(x for x in issues if "tier small" in x.message)
    assert "tenant 'acme-eu' is pinned to EU" in small.message
    assert "reaches nothing in EU along small -> medium -> openai" in small.message
    assert "openai (US)" in small.message  # what is missing: every provider on the chain is outside the EU
    assert "add a provider with jurisdictions [EU] to routing.fallbacks.small" in small.message


def _eu_llm_for_small(data: SpecData) -> None:
    data["providers"].append(
        {
            "name": "eu-llm",
            "kind": "openai-compatible",
            "base_url": "https://llm.example.eu/v1",
            "api_key_secret": "env://EU_LLM_KEY",
            "jurisdictions": ["EU"],
            "models": {"small": {"model": "eu-small", "input_usd_per_1m": 0.1, "output_usd_per_1m": 0.2}},
        }
    )
    data["routing"]["fallbacks"]["small"] = ["eu-llm", "openai"]


def test_eu_tenant_is_rejected_only_for_tiers_whose_chain_lacks_an_eu_provider(
    dev_data: SpecData, rejected: Reject, tenant_at: IndexOf
) -> None:
    _us_only(dev_data)
    _add_dr_region(dev_data, "eu", "eu-west-1", "EU")  # a gateway in the EU with no pools: providers only
    _eu_llm_for_small(dev_data)
    t = tenant_at(dev_data, "acme-eu")
    flagged = [x.message for x in rejected(dev_data) if x.path == f"tenants[{t}].allowed_tiers"]
    tiers = sorted(tier for tier in ("small", "medium", "large") for m in flagged if f"but tier {tier} reaches" in m)
    assert tiers == ["large", "medium"]


def test_an_eu_provider_without_an_eu_region_does_not_serve_an_eu_tenant(
    dev_data: SpecData, rejected: Reject, tenant_at: IndexOf
) -> None:
    # The gateway refuses a pinned tenant outside its jurisdiction, so the provider is never reached.
    _us_only(dev_data)
    _eu_llm_for_small(dev_data)
    t = tenant_at(dev_data, "acme-eu")
    flagged = [x.message for x in rejected(dev_data) if x.path == f"tenants[{t}].allowed_tiers"]
    small = [m for m in flagged if "but tier small reaches" in m]
    assert len(small) == 1 and "no region is in EU, so no gateway may take its requests" in small[0]


def test_eu_tenant_served_by_an_eu_allowed_provider_on_the_chain_passes(dev_data: SpecData, load_data: Load) -> None:
    _us_only(dev_data)
    _add_dr_region(dev_data, "eu", "eu-west-1", "EU")
    dev_data["providers"][0]["jurisdictions"] = ["US", "EU"]
    spec = load_data(dev_data)
    assert spec.regions[0].jurisdiction.value == "US"


def test_eu_tenant_reaches_a_tier_through_a_local_fallback_tier(dev_data: SpecData, load_data: Load) -> None:
    # Without a small pool, small-tier requests fall back to the EU medium pool: still in the EU.
    dev_data["pools"] = [p for p in dev_data["pools"] if p["name"] != "small"]
    dev_data["regions"][0]["pools"] = [p for p in dev_data["regions"][0]["pools"] if p["pool"] != "small"]
    dev_data["pools"][0]["classes"] = ["A", "B", "D"]
    spec = load_data(dev_data)
    assert "small" in [t.value for t in spec.tenants[1].allowed_tiers]


# --- disaster recovery ------------------------------------------------------------------------


def test_critical_pool_without_a_dr_section_is_rejected(
    dev_data: SpecData, rejected: Reject, issue_at: IssueAt, pool_at: IndexOf
) -> None:
    dev_data["pools"][pool_at(dev_data, "large")]["critical"] = True
    issue = issue_at(rejected(dev_data), "dr")
    assert "critical pools (large) run in local" in issue.message
    assert "add dr with rpo_minutes, rto_minutes and secondaries" in issue.message


def test_dr_secondary_in_another_jurisdiction_is_rejected(
    dev_data: SpecData, rejected: Reject, issue_at: IssueAt, pool_at: IndexOf
) -> None:
    dev_data["pools"][pool_at(dev_data, "large")]["critical"] = True
    _add_dr_region(dev_data, "us", "us-east-1", "US")
    dev_data["dr"] = {"rpo_minutes": 5, "rto_minutes": 30, "secondaries": {"local": "us"}}
    issue = issue_at(rejected(dev_data), "dr.secondaries.local")
    assert "secondary 'us' is in US but 'local' is in EU" in issue.message
    assert "Pick a EU region" in issue.message


def test_dr_secondary_in_the_same_jurisdiction_passes(dev_data: SpecData, load_data: Load, pool_at: IndexOf) -> None:
    dev_data["pools"][pool_at(dev_data, "large")]["critical"] = True
    _add_dr_region(dev_data, "eu2", "eu-central-1", "EU")
    dev_data["dr"] = {"rpo_minutes": 5, "rto_minutes": 30, "secondaries": {"local": "eu2"}}
    spec = load_data(dev_data)
    assert spec.dr is not None
    assert spec.dr.secondaries == {"local": "eu2"}


# --- pools, tenants and caches ----------------------------------------------------------------


def test_class_longer_than_max_model_len_is_rejected(
    dev_data: SpecData, rejected: Reject, issue_at: IssueAt, pool_at: IndexOf
) -> None:
    i = pool_at(dev_data, "small")
    dev_data["pools"][i]["engine"]["max_model_len"] = 4096
    issue = issue_at(rejected(dev_data), f"pools[{i}].engine.max_model_len")
    assert "max_model_len=4096" in issue.message
    assert "8000 prompt + 800 output = 8800 tokens" in issue.message
    assert "raise it to at least 8800" in issue.message


def test_inline_api_key_is_rejected(
    dev_data: SpecData, rejected: Reject, issue_at: IssueAt, tenant_at: IndexOf
) -> None:
    t = tenant_at(dev_data, "demo")
    dev_data["tenants"][t]["api_key_secret"] = "sk-live-0123456789abcdef"
    issue = issue_at(rejected(dev_data), f"tenants[{t}].api_key_secret")
    assert "is not a secret reference" in issue.message
    assert "env://<VAR>" in issue.message


@pytest.mark.parametrize("reference", ["vault://secret/data/acme/key", "ssm://acme/key"])
def test_a_reference_the_gateways_cannot_resolve_is_rejected_at_load(
    dev_data: SpecData, rejected: Reject, issue_at: IssueAt, tenant_at: IndexOf, reference: str
) -> None:
    """The spec accepts only the schemes the serving processes resolve (held-out set 13: a vault:// key loaded and
    then failed at every request)."""
    t = tenant_at(dev_data, "demo")
    dev_data["tenants"][t]["api_key_secret"] = reference
    issue = issue_at(rejected(dev_data), f"tenants[{t}].api_key_secret")
    scheme = reference.split("://", maxsplit=1)[0]
    assert f"{scheme}:// is not a scheme the gateways resolve" in issue.message and "aws-sm://" in issue.message


def test_every_scheme_the_spec_accepts_is_one_the_gateways_resolve(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(secrets, "_read_aws", lambda path: None)  # no AWS here: the scheme is what is tested
    for scheme in SECRET_SCHEMES:
        assert secret_ref(f"{scheme}://a/b/c") == f"{scheme}://a/b/c"
        assert secrets.resolve_secret(f"{scheme}://a/b/c", environ={}) is None  # absent, not refused
    with pytest.raises(ValueError, match="not supported"):
        secrets.resolve_secret("vault://a/b/c", environ={})


def test_inline_api_key_is_not_echoed_in_full(
    dev_data: SpecData, rejected: Reject, issue_at: IssueAt, tenant_at: IndexOf
) -> None:
    t = tenant_at(dev_data, "demo")
    dev_data["tenants"][t]["api_key_secret"] = "sk-live-0123456789abcdef"
    issue = issue_at(rejected(dev_data), f"tenants[{t}].api_key_secret")
    assert "0123456789abcdef" not in str(issue)


@pytest.mark.parametrize("layer", ["edge", "exact", "semantic"])
def test_output_cache_layer_not_scoped_to_tenants_is_rejected(
    layer: str, dev_data: SpecData, rejected: Reject, issue_at: IssueAt
) -> None:
    dev_data["cache"].setdefault(layer, {}).update(enabled=True, tenant_scoped=False)
    issue = issue_at(rejected(dev_data), "cache")
    assert f"{layer}.tenant_scoped=false" in issue.message
    assert "set it to true" in issue.message


def test_encoder_model_in_a_non_embedding_pool_is_rejected(
    dev_data: SpecData, rejected: Reject, issue_at: IssueAt, pool_at: IndexOf
) -> None:
    i = pool_at(dev_data, "embed")
    dev_data["pools"][i]["isolation"] = "interactive"
    issue = issue_at(rejected(dev_data), f"pools[{i}].isolation")
    assert "isolation=interactive but embedder is an encoder" in issue.message
    assert "use isolation: embedding" in issue.message


def test_every_rule_violation_is_reported_in_one_run(dev_data: SpecData, rejected: Reject, pool_at: IndexOf) -> None:
    dev_data["routing"]["mix"]["large"] = 0.2
    dev_data["pools"][pool_at(dev_data, "large")]["tensor_parallel"] = 3
    dev_data["cache"]["semantic"]["embedding_pool"] = "small"
    paths = {x.path for x in rejected(dev_data)}
    assert {
        "routing.mix",
        f"pools[{pool_at(dev_data, 'large')}].tensor_parallel",
        "cache.semantic.embedding_pool",
    } <= paths


def test_a_spec_built_in_code_gets_the_rules_from_validate_spec(dev_data: SpecData, pool_at: IndexOf) -> None:
    # The rules run in the loader, not as a model validator (the schema must not import what sizes it):
    # the models alone accept a TP that does not divide the heads; validate_spec refuses it at its field.
    from tokenplane.errors import SpecLoadError
    from tokenplane.load import validate_spec

    i = pool_at(dev_data, "large")
    dev_data["pools"][i]["tensor_parallel"] = 3
    assert PlatformSpec.model_validate(dev_data).pools[i].tensor_parallel == 3
    with pytest.raises(SpecLoadError) as info:
        validate_spec(dev_data)
    assert [issue.path for issue in info.value.issues] == [f"pools[{i}].tensor_parallel"]


@pytest.mark.parametrize("value", [1.0, 0.3])
def test_slo_attainment_out_of_range_names_the_bounds_and_a_value_to_use(
    dev_data: SpecData, rejected: Reject, issue_at: IssueAt, value: float
) -> None:
    dev_data["workload_classes"]["A"]["slo_attainment"] = value
    issue = issue_at(rejected(dev_data), "workload_classes.A.slo_attainment")
    assert f"slo_attainment={value}" in issue.message
    assert "at least 0.5 and below 1" in issue.message and "0.99" in issue.message
    assert issue.line is not None


def test_slo_attainment_defaults_to_99_percent(dev_data: SpecData, load_data: Load) -> None:
    spec = load_data(dev_data)
    assert {c.slo_attainment for c in spec.workload_classes.values()} == {0.99}
