"""The runtime contract: one typed reading of a serving process's environment, and one spec-from-env loader."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.paths import REPO_ROOT
from tokenplane.load import load_spec
from tokenplane.runtime_env import (
    DEFAULT_REDIS_URL,
    ConfigError,
    RuntimeEnv,
    Var,
    load_spec_from_env,
    pool_url_env,
    pool_url_var,
    pool_urls,
)
from tokenplane.spec import DEFAULT_TOPICS, PlatformSpec, Queues, TopicPurpose

ROOT = REPO_ROOT
DEV_YAML = ROOT / "stacks" / "dev.yaml"


@pytest.fixture(scope="module")
def dev() -> PlatformSpec:
    return load_spec(DEV_YAML)


def test_an_empty_environment_gives_the_documented_defaults() -> None:
    env = RuntimeEnv.parse({})
    assert (env.redis_url, env.gateway_replicas, env.batch_api, env.config) == (DEFAULT_REDIS_URL, 1, "on", None)


def test_an_empty_variable_counts_as_unset() -> None:
    assert RuntimeEnv.parse({Var.REDIS_URL: "", Var.GATEWAY_REPLICAS: ""}).gateway_replicas == 1


@pytest.mark.parametrize(
    ("var", "value", "fix"),
    [
        (Var.GATEWAY_REPLICAS, "three", "replica floor"),
        (Var.GATEWAY_REPLICAS, "0", "at least 1"),
        (Var.BATCH_API, "of", "use on"),
        (Var.METRICS_PORT, "99999", "TCP port"),
    ],
)
def test_a_bad_value_names_the_variable_the_value_and_the_fix(var: Var, value: str, fix: str) -> None:
    with pytest.raises(ConfigError, match=rf"^{var.value}='{value}': .*{fix}"):
        RuntimeEnv.parse({var.value: value})


def test_a_missing_required_variable_says_what_it_should_hold() -> None:
    with pytest.raises(ConfigError, match="KAFKA_BOOTSTRAP_SERVERS is not set; the brokers"):
        RuntimeEnv.parse({}).required(Var.KAFKA_BOOTSTRAP_SERVERS, "the brokers")


def test_pool_urls_read_back_what_pool_url_env_writes(dev: PlatformSpec) -> None:
    written = pool_url_env({"small": ["http://a:1/", "http://b:2"], "embed": "http://c:3", "not-a-pool": "http://d"})
    assert pool_url_var("not-a-pool") == "POOL_URL_NOT_A_POOL" in written
    assert pool_urls(dev, written) == {"small": ("http://a:1", "http://b:2"), "embed": ("http://c:3",)}


def test_the_spec_loads_from_yaml_and_from_the_configmaps_json(dev: PlatformSpec, tmp_path: Path) -> None:
    config = tmp_path / "platform.json"
    config.write_text(dev.model_dump_json(exclude_none=True), encoding="utf-8")
    from_json = load_spec_from_env({Var.CONFIG: str(config), Var.REGION: "local"})
    from_yaml = load_spec_from_env({Var.CONFIG: str(DEV_YAML)})
    assert from_json == from_yaml == (dev, "local")


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({}, "TOKENPLANE_CONFIG is not set; point it at the spec"),
        ({Var.CONFIG: "/nonexistent/platform.json"}, r"TOKENPLANE_CONFIG=/nonexistent/platform.json does not exist"),
        ({Var.CONFIG: str(DEV_YAML), Var.REGION: "mars"}, r"TOKENPLANE_REGION=mars is not a region .*\['local'\]"),
    ],
)
def test_the_spec_loader_says_which_variable_is_wrong(environ: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_spec_from_env(environ)


def test_an_invalid_spec_json_is_one_line_naming_the_field(dev: PlatformSpec, tmp_path: Path) -> None:
    data = json.loads(dev.model_dump_json(exclude_none=True))
    data["platform"]["peak_rps"] = -1
    config = tmp_path / "platform.json"
    config.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"is not a valid spec: platform\.peak_rps: ") as info:
        load_spec_from_env({Var.CONFIG: str(config)})
    assert "\n" not in str(info.value)


def test_a_spec_listing_no_topics_still_has_one_for_every_purpose() -> None:
    assert Queues().topic_names() == DEFAULT_TOPICS
    assert set(DEFAULT_TOPICS) == set(TopicPurpose)


def test_a_listed_topic_replaces_only_its_purposes_default() -> None:
    queues = Queues.model_validate({"topics": [{"name": "metering", "purpose": "usage"}]})
    assert queues.topic_names() == {**DEFAULT_TOPICS, TopicPurpose.USAGE: "metering"}


def test_the_every_purpose_check_fires_on_queues_built_without_the_defaults() -> None:
    # The latent bug, put back: queues that skip validation list no topics, and purposes go missing.
    assert set(TopicPurpose) - set(Queues.model_construct(topics=[]).topic_names()) == set(TopicPurpose)


def test_the_ledger_password_comes_from_its_file_before_the_variable(tmp_path: Path) -> None:
    secret = tmp_path / "password"
    secret.write_text("s3cret\n", encoding="utf-8")  # a hand-written file's newline is not part of it
    env = RuntimeEnv.parse({Var.CLICKHOUSE_PASSWORD_FILE: str(secret), Var.CLICKHOUSE_PASSWORD: "from-env"})
    assert env.ledger_password() == "s3cret"
    assert RuntimeEnv.parse({Var.CLICKHOUSE_PASSWORD: "from-env"}).ledger_password() == "from-env"
    assert RuntimeEnv.parse({}).ledger_password() is None


@pytest.mark.parametrize("content", [None, ""], ids=["missing", "empty"])
def test_an_unusable_ledger_password_file_names_the_variable_and_the_fix(tmp_path: Path, content: str | None) -> None:
    secret = tmp_path / "password"
    if content is not None:
        secret.write_text(content, encoding="utf-8")
    env = RuntimeEnv.parse({Var.CLICKHOUSE_PASSWORD_FILE: str(secret)})
    with pytest.raises(ConfigError, match=f"CLICKHOUSE_PASSWORD_FILE={secret}"):
        env.ledger_password()
