"""`check --program`: config read offline as the Pulumi CLI layers it (Pulumi.yaml, the stack file, --config)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tokenplane.errors import SpecError
from tokenplane.proof.program import load_project, render_project


def project(tmp_path: Path, project_yaml: str, stack_yaml: str | None = None, *, stack_dir: str = ".") -> Path:
    (tmp_path / "Pulumi.yaml").write_text(f"name: shop\nruntime: python\n{project_yaml}", encoding="utf-8")
    (tmp_path / "__main__.py").write_text("import pulumi\npulumi.Config('aws').require('region')\n", encoding="utf-8")
    if stack_yaml is not None:
        (tmp_path / stack_dir).mkdir(exist_ok=True)
        (tmp_path / stack_dir / "Pulumi.dev.yaml").write_text(stack_yaml, encoding="utf-8")
    return tmp_path


def test_project_config_gives_values_defaults_and_nested_values(tmp_path: Path) -> None:
    config = """config:
  aws:region: eu-west-1
  replicas:
    type: integer
    default: 3
  owner:
    value: team-a
  tags:
    value: [a, b]
  required:
    type: string
"""
    loaded = load_project(project(tmp_path, config)).config
    assert loaded == {
        "aws:region": "eu-west-1",
        "shop:replicas": "3",
        "shop:owner": "team-a",
        "shop:tags": '["a", "b"]',
    }


def test_the_stack_file_overrides_the_project_and_the_command_line_overrides_both(tmp_path: Path) -> None:
    directory = project(
        tmp_path,
        "config:\n  aws:region: eu-west-1\n  owner: a\n",
        "config:\n  aws:region: us-east-1\n  shop:owner: b\n",
    )
    assert load_project(directory).config == {"aws:region": "us-east-1", "shop:owner": "b"}
    assert load_project(directory, config={"owner": "c"}).config["shop:owner"] == "c"


def test_stack_files_are_read_from_stack_config_dir(tmp_path: Path) -> None:
    directory = project(tmp_path, "stackConfigDir: stacks\n", "config:\n  aws:region: ap-south-1\n", stack_dir="stacks")
    assert load_project(directory).config == {"aws:region": "ap-south-1"}


def test_a_declaration_that_is_neither_value_nor_schema_names_the_key_and_the_forms(tmp_path: Path) -> None:
    with pytest.raises(
        SpecError, match=r"config.owner is a mapping without value, default or type; write `owner: VALUE`"
    ):
        load_project(project(tmp_path, "config:\n  owner:\n    description: who\n"))


def test_missing_config_names_the_key_and_where_to_set_it_offline(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as raised:
        render_project(load_project(project(tmp_path, "")), kubernetes_version="1.31")
    message = str(raised.value)
    assert "needs config 'aws:region', which is not set" in message
    assert "__main__.py:2" in message
    assert "--config aws:region=VALUE" in message
    assert "pulumi config set" not in message  # the CLI the offline check exists to do without
