"""The gateway's and the batch worker's dependencies as the environment names them: the file store, the Batch API."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import aiohttp
import openai
import pytest
from openai import AsyncOpenAI
from starlette.applications import Starlette

from tests.serving.conftest import FILES_BUCKET, ROOT, S3_REGION, Broker, serve
from tokenplane.load import load_spec
from tokenplane.model import planner
from tokenplane.runtime_env import DEFAULT_FILES_DIR, ConfigError, RuntimeEnv, Var
from tokenplane.serving.files.s3 import S3FileStore
from tokenplane.serving.files.store import DirectoryFileStore
from tokenplane.serving.gateway.auth import KeyRing
from tokenplane.serving.gateway.batch_api import batch_api_absent_routes
from tokenplane.serving.gateway.pricing import Prices
from tokenplane.serving.gateway.runtime import apps_from_env, batch_api_on, file_store, resolver
from tokenplane.spec import PlatformSpec


def test_without_a_bucket_or_a_directory_files_go_to_the_default_directory() -> None:
    store = file_store({})
    assert isinstance(store, DirectoryFileStore) and store.root == Path(DEFAULT_FILES_DIR)


def test_a_files_directory_selects_the_directory_store(tmp_path: Path) -> None:
    store = file_store({"TOKENPLANE_FILES_DIR": str(tmp_path)})
    assert isinstance(store, DirectoryFileStore) and store.root == tmp_path


def test_a_files_bucket_selects_s3_under_the_prefix_and_region(s3: Any) -> None:
    env = {"TOKENPLANE_FILES_BUCKET": FILES_BUCKET, "TOKENPLANE_FILES_PREFIX": "batch/", "AWS_REGION": S3_REGION}
    store = file_store(env)
    assert isinstance(store, S3FileStore)
    assert (store.bucket, store.prefix, store.client.meta.region_name) == (FILES_BUCKET, "batch", S3_REGION)


def test_a_bucket_without_a_prefix_keeps_files_under_files(s3: Any) -> None:
    store = file_store({"TOKENPLANE_FILES_BUCKET": FILES_BUCKET, "AWS_REGION": S3_REGION})
    assert isinstance(store, S3FileStore) and store.prefix == "files"


def test_an_s3_endpoint_override_reaches_the_client() -> None:
    env = {
        "TOKENPLANE_FILES_BUCKET": FILES_BUCKET,
        "AWS_REGION": S3_REGION,
        "AWS_ENDPOINT_URL_S3": "http://s3.local:9000",
    }
    store = file_store(env)
    assert isinstance(store, S3FileStore) and store.client.meta.endpoint_url == "http://s3.local:9000"


async def test_two_processes_given_the_same_bucket_see_the_same_files(s3: Any) -> None:
    env = {"TOKENPLANE_FILES_BUCKET": FILES_BUCKET, "AWS_REGION": S3_REGION}
    gateway, worker = file_store(env), file_store(env)
    obj = await gateway.put("demo", "batch", "in.jsonl", b"{}\n")
    assert await worker.content("demo", obj["id"]) == b"{}\n"
    out = await worker.put("demo", "batch_output", "out.jsonl", b"[]\n")
    assert await gateway.get("demo", out["id"]) == out


def test_a_bucket_and_a_directory_together_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"TOKENPLANE_FILES_BUCKET=b1 and TOKENPLANE_FILES_DIR=.* are both set"):
        file_store({"TOKENPLANE_FILES_BUCKET": "b1", "TOKENPLANE_FILES_DIR": str(tmp_path)})


def test_a_prefix_without_a_bucket_is_refused() -> None:
    with pytest.raises(ConfigError, match="TOKENPLANE_FILES_PREFIX is set without TOKENPLANE_FILES_BUCKET"):
        file_store({"TOKENPLANE_FILES_PREFIX": "files"})


@pytest.mark.parametrize("bucket", ["s3://bucket", "Upper-Case", "a", "bucket/with/slash"])
def test_a_bucket_that_is_not_an_s3_bucket_name_is_refused(bucket: str) -> None:
    with pytest.raises(ConfigError, match="is not an S3 bucket name"):
        file_store({"TOKENPLANE_FILES_BUCKET": bucket})


def test_the_batch_api_is_on_unless_turned_off_and_a_typo_is_refused() -> None:
    assert batch_api_on({}) and batch_api_on({"TOKENPLANE_BATCH_API": "on"})
    assert not batch_api_on({"TOKENPLANE_BATCH_API": "off"})
    with pytest.raises(ConfigError, match=r"TOKENPLANE_BATCH_API='of'.*on .*or off"):
        batch_api_on({"TOKENPLANE_BATCH_API": "of"})


async def test_a_gateway_without_the_batch_api_answers_its_paths_with_a_404_that_says_why(
    dev_spec: PlatformSpec,
) -> None:
    keys = KeyRing.from_spec(dev_spec, {"env://TOKENPLANE_KEY_DEMO": "sk-demo"}.get)
    gateway = SimpleNamespace(keys=keys, region="local")
    app = Starlette(routes=batch_api_absent_routes(gateway))  # type: ignore[arg-type]  # only keys and region are read
    async with serve(app) as url:
        client = AsyncOpenAI(base_url=url + "/v1", api_key="sk-demo", max_retries=0)
        for call in (
            lambda: client.files.create(file=("in.jsonl", b"{}\n"), purpose="batch"),
            lambda: client.files.retrieve("file-" + "0" * 32),
            client.batches.list,
            lambda: client.batches.cancel("batch_x"),
        ):
            with pytest.raises(openai.NotFoundError) as caught:
                await call()
            assert caught.value.code == "batch_api_unavailable"
            assert "not offered in region local" in caught.value.message and "class D" in caught.value.message
        stranger = AsyncOpenAI(base_url=url + "/v1", api_key="sk-nope", max_retries=0)
        with pytest.raises(openai.AuthenticationError):
            await stranger.batches.list()
        await client.close()
        await stranger.close()


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Calls of ``RuntimeEnv.parse`` and ``planner.plan``, each still doing its work (a count, not a fake)."""
    calls: Counter[str] = Counter()
    parse, size = RuntimeEnv.parse.__func__, planner.plan  # type: ignore[attr-defined]  # a classmethod's function

    def counting_parse(cls: type[RuntimeEnv], environ: Mapping[str, str]) -> RuntimeEnv:
        calls["parse"] += 1
        return parse(cls, environ)  # type: ignore[no-any-return]

    def counting_plan(spec: PlatformSpec) -> planner.Plan:
        calls["plan"] += 1
        return size(spec)

    monkeypatch.setattr(RuntimeEnv, "parse", classmethod(counting_parse))
    monkeypatch.setattr(planner, "plan", counting_plan)
    return calls


@pytest.mark.slow
async def test_a_gateway_process_parses_its_environment_and_sizes_the_spec_once(
    redis_url: str, kafka: Broker, tmp_path: Path, counted: Counter[str]
) -> None:
    environ = {
        Var.CONFIG.value: str(ROOT / "stacks" / "dev.yaml"),
        Var.REDIS_URL.value: redis_url,
        Var.KAFKA_BOOTSTRAP_SERVERS.value: kafka.bootstrap,
        Var.SPOOL_DIR.value: str(tmp_path / "spool"),
        Var.FILES_DIR.value: str(tmp_path / "files"),
    }
    public, _ = apps_from_env(environ)
    async with serve(public) as url, aiohttp.ClientSession() as session, session.get(url + "/healthz") as response:
        assert response.status == 200
    assert counted == {"parse": 1, "plan": 1}, "the start parses the environment and sizes the spec once each"
    # The counts see a second parse and a second sizing, as the start made before (five parses, two plans).
    resolver(environ)
    Prices(load_spec(ROOT / "stacks" / "dev.yaml"), "local")
    assert counted == {"parse": 2, "plan": 2}
