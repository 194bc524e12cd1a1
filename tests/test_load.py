"""The loader: every problem reported at once, each at its file:line:column."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tokenplane.errors import Issue, SpecLoadError
from tokenplane.load import load_spec, load_spec_text
from tokenplane.spec import PlatformSpec

# A hand-written valid spec; tests replace one line and look for the issue on it.
MINIMAL = """\
platform:
  name: minimal
  environment: dev
  peak_rps: 5
budget:
  max_usd_per_hour: 20
regions:
  - name: us
    cloud_region: us-east-1
    azs: [us-east-1a, us-east-1b]
    jurisdiction: US
    traffic_share: 1.0
    pools:
      - {pool: chat, min_replicas: 1, max_replicas: 2}
models:
  - name: qwen-7b-chat
    version: v1
    preset: qwen2.5-7b
    uri: s3://minimal-models/qwen-7b-chat/v1/
    sha256: 5f1a9c0e2b7d4c38a6e1f0b9d2c7a4e6f8b1d3c5a7e9f0b2d4c6e8a0b1c3d5e7
    tokenizer: Qwen/Qwen2.5-7B-Instruct
    prompt_contract: chat-v1
pools:
  - name: chat
    tier: small
    model: qwen-7b-chat
    gpu: L4
    tensor_parallel: 1
    classes: [A]
workload_classes:
  A:
    share: 1.0
    prompt_tokens: {min: 50, max: 1000}
    output_tokens: {min: 20, max: 400}
    ttft_p95_ms: 500
routing:
  mix: {small: 1.0}
"""
TP_LINE = 28  # "    tensor_parallel: 1"
PEAK_LINE = 4  # "  peak_rps: 5"
GPU_LINE = 27  # "    gpu: L4"


def _replace_line(text: str, line: int, new: str) -> str:
    lines = text.splitlines()
    lines[line - 1] = new
    return "\n".join(lines) + "\n"


def _issues(text: str, filename: str = "stacks/test.yaml") -> list[Issue]:
    with pytest.raises(SpecLoadError) as info:
        load_spec_text(text, filename=filename)
    return info.value.issues


def test_hand_written_minimal_spec_loads() -> None:
    assert MINIMAL.splitlines()[TP_LINE - 1] == "    tensor_parallel: 1"
    spec = load_spec_text(MINIMAL)
    assert spec.pools[0].tensor_parallel == 1


def test_misspelt_key_is_reported_at_its_line_and_column() -> None:
    text = _replace_line(MINIMAL, TP_LINE, "    tensor_paralel: 1")
    [issue] = _issues(text)
    assert (issue.file, issue.line, issue.column) == ("stacks/test.yaml", TP_LINE, 5)
    assert issue.path == "pools[0].tensor_paralel"


def test_misspelt_key_message_lists_the_allowed_fields() -> None:
    text = _replace_line(MINIMAL, TP_LINE, "    tensor_paralel: 1")
    [issue] = _issues(text)
    assert issue.message.startswith("unknown field 'tensor_paralel'; allowed here: ")
    allowed = issue.message.split("allowed here: ")[1].split(", ")
    assert "tensor_parallel" in allowed
    assert "pipeline_parallel" in allowed


def test_misspelt_key_in_a_keyed_section_lists_that_sections_fields() -> None:
    text = MINIMAL.replace("    share: 1.0", "    sahre: 1.0")
    issues = _issues(text)
    typo = next(i for i in issues if i.path == "workload_classes.A.sahre")
    assert typo.line == text.splitlines().index("    sahre: 1.0") + 1
    assert "allowed here: " in typo.message
    assert "share" in typo.message.split("allowed here: ")[1].split(", ")


def test_bad_value_is_reported_at_its_line_with_the_value() -> None:
    text = _replace_line(MINIMAL, PEAK_LINE, "  peak_rps: -3")
    [issue] = _issues(text)
    assert (issue.path, issue.line, issue.column) == ("platform.peak_rps", PEAK_LINE, 3)
    assert "greater than 0" in issue.message
    assert "(got -3)" in issue.message


def test_rule_violation_is_reported_at_the_field_it_names() -> None:
    text = _replace_line(MINIMAL, TP_LINE, "    tensor_parallel: 3")
    [issue] = _issues(text)
    assert (issue.path, issue.line, issue.column) == ("pools[0].tensor_parallel", TP_LINE, 5)
    assert "tensor_parallel=3 must divide num_attention_heads=28" in issue.message


def test_several_field_errors_are_reported_at_once() -> None:
    text = _replace_line(_replace_line(MINIMAL, TP_LINE, "    tensor_paralel: 1"), PEAK_LINE, "  peak_rps: 0")
    issues = _issues(text)
    assert sorted((i.path, i.line) for i in issues) == [
        ("platform.peak_rps", PEAK_LINE),
        ("pools[0].tensor_paralel", TP_LINE),
    ]


def test_several_rule_violations_are_reported_at_once() -> None:
    text = MINIMAL.replace("  mix: {small: 1.0}", "  mix: {small: 0.5}").replace("    share: 1.0", "    share: 0.5")
    paths = {i.path for i in _issues(text)}
    assert {"routing.mix", "workload_classes"} <= paths


def test_unknown_gpu_is_reported_as_a_located_issue() -> None:
    text = _replace_line(MINIMAL, GPU_LINE, "    gpu: H1000")
    [issue] = _issues(text)
    assert (issue.path, issue.line) == ("pools[0].gpu", GPU_LINE)
    assert "unknown GPU 'H1000'" in issue.message
    assert "H100-80GB" in issue.message


def test_unknown_model_preset_is_reported_as_a_located_issue() -> None:
    text = MINIMAL.replace("    preset: qwen2.5-7b", "    preset: qwen9-7b")
    [issue] = _issues(text)
    lines = text.splitlines()
    assert issue.path.startswith("models[0]")
    assert issue.line is not None
    # Within the first model's entry: from its "- name:" down to the preset line.
    assert lines.index("  - name: qwen-7b-chat") + 1 <= issue.line <= lines.index("    preset: qwen9-7b") + 1
    assert "unknown model preset 'qwen9-7b'" in issue.message


@pytest.mark.parametrize(
    ("uri", "fetch"),
    [
        ("hf://Qwen/Qwen2.5-7B-Instruct", "huggingface-cli download Qwen/Qwen2.5-7B-Instruct --local-dir DIR"),
        ("gs://bucket/qwen/v1/", "gcloud storage cp -r gs://bucket/qwen/v1 DIR"),
        ("file:///models/qwen", "copy the files into DIR"),
    ],
)
def test_a_weights_source_the_stack_cannot_publish_is_refused_with_the_mirror_command(uri: str, fetch: str) -> None:
    line = "    uri: s3://minimal-models/qwen-7b-chat/v1/"
    text = MINIMAL.replace(line, f"    uri: {uri}")
    [issue] = _issues(text)
    assert (issue.path, issue.line) == ("models[0].uri", text.splitlines().index(f"    uri: {uri}") + 1)
    assert uri in issue.message and "only from S3" in issue.message
    assert f"`{fetch} && aws s3 sync DIR s3://BUCKET/PREFIX/`" in issue.message
    assert "tokenplane hash-model DIR" in issue.message


def test_an_s3_uri_without_a_key_prefix_is_refused() -> None:
    text = MINIMAL.replace("    uri: s3://minimal-models/qwen-7b-chat/v1/", "    uri: s3://")
    [issue] = _issues(text)
    assert issue.path == "models[0].uri"


def test_duplicate_key_is_rejected_with_both_line_numbers() -> None:
    text = MINIMAL.replace("    tier: small\n", "    tier: small\n    tier: medium\n")
    first = text.splitlines().index("    tier: small") + 1
    [issue] = _issues(text)
    assert issue.path == "pools[0].tier"
    assert issue.line == first + 1
    assert f"first on line {first}" in issue.message


def test_invalid_yaml_reports_line_and_column() -> None:
    text = _replace_line(MINIMAL, TP_LINE, "    tensor_parallel: [1, 2")
    [issue] = _issues(text)
    assert issue.message.startswith("not valid YAML/JSON: ")
    assert issue.line is not None
    assert issue.column is not None
    assert issue.line >= TP_LINE


def test_tab_indentation_reports_the_line_of_the_tab() -> None:
    text = _replace_line(MINIMAL, TP_LINE, "\ttensor_parallel: 1")
    [issue] = _issues(text)
    assert issue.line == TP_LINE
    assert "not valid YAML/JSON" in issue.message


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n"])
def test_empty_file_is_rejected_with_what_a_spec_needs(text: str) -> None:
    [issue] = _issues(text)
    assert (issue.line, issue.column) == (1, 1)
    assert "the file is empty" in issue.message
    assert "platform, budget, regions" in issue.message


def test_top_level_list_is_rejected() -> None:
    [issue] = _issues("- platform\n- budget\n")
    assert "the top level must be a mapping of sections, got a list" in issue.message


def test_missing_sections_are_each_reported() -> None:
    issues = _issues("platform: {name: x, peak_rps: 1}\n")
    missing = {i.path for i in issues if i.message == "required field is missing"}
    assert missing == {"budget", "regions", "models", "pools", "workload_classes", "routing"}


def test_missing_file_is_reported_with_its_path(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    with pytest.raises(SpecLoadError) as info:
        load_spec(path)
    [issue] = info.value.issues
    assert issue.file == str(path)
    assert "no such file" in issue.message
    assert isinstance(info.value.__cause__, FileNotFoundError)


def test_spec_file_on_disk_loads(tmp_path: Path) -> None:
    path = tmp_path / "minimal.yaml"
    path.write_text(MINIMAL, encoding="utf-8")
    assert isinstance(load_spec(path), PlatformSpec)


def test_json_spec_loads(dev_data: dict[str, Any]) -> None:
    spec = load_spec_text(json.dumps(dev_data), filename="dev.json")
    assert spec.platform.name == dev_data["platform"]["name"]
    assert len(spec.pools) == len(dev_data["pools"])


def test_json_spec_errors_carry_positions(dev_data: dict[str, Any]) -> None:
    large = next(i for i, p in enumerate(dev_data["pools"]) if p["name"] == "large")
    dev_data["pools"][large]["tensor_parallel"] = 3
    text = json.dumps(dev_data, indent=2)
    lines = text.splitlines()
    line = next(n for n, s in enumerate(lines, 1) if s.strip() == '"tensor_parallel": 3,')
    [issue] = _issues(text, filename="dev.json")
    assert (issue.path, issue.file, issue.line) == (f"pools[{large}].tensor_parallel", "dev.json", line)
    assert issue.column == lines[line - 1].index('"') + 1


def test_dumped_yaml_errors_point_at_the_offending_key(dev_data: dict[str, Any]) -> None:
    dev_data["routing"]["mix"]["large"] = 0.3
    text = yaml.safe_dump(dev_data)
    [issue] = _issues(text)
    assert issue.path == "routing.mix"
    assert issue.line is not None
    assert text.splitlines()[issue.line - 1].strip() == "mix:"


def test_error_string_lists_each_issue_as_file_line_col_path_message() -> None:
    text = _replace_line(_replace_line(MINIMAL, TP_LINE, "    tensor_paralel: 1"), PEAK_LINE, "  peak_rps: 0")
    with pytest.raises(SpecLoadError) as info:
        load_spec_text(text, filename="stacks/test.yaml")
    lines = str(info.value).splitlines()
    assert lines[0] == "2 problems in the spec:"
    for issue in info.value.issues:
        assert f"  stacks/test.yaml:{issue.line}:{issue.column}: {issue.path}: {issue.message}" in lines
    assert any(line.startswith(f"  stacks/test.yaml:{TP_LINE}:5: pools[0].tensor_paralel: ") for line in lines)


def test_spec_load_error_chains_the_validation_error() -> None:
    text = _replace_line(MINIMAL, PEAK_LINE, "  peak_rps: 0")
    with pytest.raises(SpecLoadError) as info:
        load_spec_text(text)
    assert info.value.__cause__ is not None
