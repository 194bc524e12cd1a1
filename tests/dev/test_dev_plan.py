"""What ``tokenplane dev`` derives from a spec before it starts anything: services, ports, keys, notes."""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import DEV_SPEC, SpecData
from tokenplane.dev.services import DevOptions, StackPlan, Stage, plan_stack, replicas
from tokenplane.errors import SpecError
from tokenplane.load import load_spec
from tokenplane.spec import PlatformSpec


def plan(tmp_path: Path, spec: PlatformSpec | None = None, **options: object) -> StackPlan:
    return plan_stack(
        spec or load_spec(DEV_SPEC),
        DEV_SPEC,
        DevOptions(state_dir=tmp_path, **options),  # type: ignore[arg-type]
        environ={"PATH": "/usr/bin", "HOME": "/home/dev", "QDRANT_URL": "http://qdrant.prod:6333"},
    )


def test_replicas_are_min_replicas_scaled_and_never_fewer_than_one() -> None:
    assert [replicas(m, s) for m, s in [(0, 1.0), (1, 0.5), (3, 0.5), (2, 1.0), (2, 2.0)]] == [1, 1, 2, 2, 4]


@pytest.mark.slow
def test_every_pool_of_the_first_region_gets_its_engines_and_the_gateways_follow(tmp_path: Path) -> None:
    stack = plan(tmp_path, scale=2.0)
    names = [s.name for s in stack.services]
    assert names[:2] == ["redis", "kafka"]
    engines = [s for s in stack.services if s.stage is Stage.ENGINES]
    assert [e.name for e in engines] == [
        f"engine-{pool}-{i}" for pool in ("small", "medium", "large", "embed") for i in range(2)
    ]
    assert [s.stage for s in stack.services] == sorted(s.stage for s in stack.services)
    assert "gateway" in names and "modelgw" in names


@pytest.mark.slow
def test_ports_run_consecutively_from_ports_from_and_the_gateway_takes_port(tmp_path: Path) -> None:
    stack = plan(tmp_path, port=9090, ports_from=21000)
    by_name = {s.name: s.port for s in stack.services}
    assert by_name["gateway"] == 9090
    others = sorted(p for s in stack.services for p in (s.port, *s.other_ports) if p != 9090)
    assert others == list(range(21000, 21000 + len(others)))
    gateway = next(s for s in stack.services if s.name == "gateway")
    assert gateway.other_ports[0] in others  # its metrics port comes from the stand-ins' range
    assert "--metrics-port" in gateway.argv
    assert stack.base_url == "http://127.0.0.1:9090/v1"


def test_the_model_gateway_gets_every_replica_url_of_each_pool(tmp_path: Path) -> None:
    stack = plan(tmp_path, scale=2.0)
    modelgw = next(s for s in stack.services if s.name == "modelgw")
    small = [f"http://127.0.0.1:{s.port}" for s in stack.services if s.name.startswith("engine-small-")]
    assert modelgw.env["POOL_URL_SMALL"] == ",".join(small)
    assert modelgw.env["TOKENPLANE_CONFIG"] == str(tmp_path.resolve() / "platform.json")


def test_tenant_keys_reach_the_gateway_under_the_variables_their_env_references_name(tmp_path: Path) -> None:
    stack = plan(tmp_path)
    gateway = next(s for s in stack.services if s.name == "gateway")
    assert gateway.env["TOKENPLANE_KEY_ACME_EU"] == stack.tenants["acme-eu"]
    assert stack.tenants["free"].startswith("sk-dev-free-")
    assert len(set(stack.tenants.values())) == len(stack.tenants)
    assert "TOKENPLANE_DEV_SECRETS" not in gateway.env


def test_a_key_referenced_outside_env_goes_to_the_dev_secrets_file(
    tmp_path: Path, dev_data: SpecData, load_data: Callable[[SpecData], PlatformSpec]
) -> None:
    dev_data["tenants"][0]["api_key_secret"] = "aws-sm://dev/demo-key"
    stack = plan(tmp_path, load_data(dev_data))
    stack.write_files()
    gateway = next(s for s in stack.services if s.name == "gateway")
    assert gateway.env["TOKENPLANE_DEV_SECRETS"] == str(tmp_path.resolve() / "secrets.json")
    assert (tmp_path / "secrets.json").read_text().count(stack.tenants["demo"]) == 1


def test_a_shell_pointing_at_a_real_qdrant_does_not_reach_the_dev_gateway(tmp_path: Path) -> None:
    gateway = next(s for s in plan(tmp_path).services if s.name == "gateway")
    assert "QDRANT_URL" not in gateway.env  # so its semantic cache is the embedded index, in its own memory


def test_every_engine_runs_one_blas_thread_and_the_gateways_keep_the_default(tmp_path: Path) -> None:
    services = plan(tmp_path).services
    engines = [s for s in services if s.stage is Stage.ENGINES]
    assert engines and all(s.env["OPENBLAS_NUM_THREADS"] == "1" for s in engines), [s.name for s in engines]
    assert all("OPENBLAS_NUM_THREADS" not in s.env for s in services if s.stage is not Stage.ENGINES)


def test_a_provider_without_its_key_is_noted_as_unavailable(tmp_path: Path) -> None:
    notes = plan(tmp_path).notes
    assert "provider openai: unavailable, OPENAI_API_KEY is not set (fallbacks to it are skipped)" in notes
    assert any("embedded HNSW index inside the gateway process" in n for n in notes)


def test_a_gateway_port_among_the_stand_ins_ports_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"--port 18002 falls inside the stand-ins' ports"):
        plan(tmp_path, port=18002)


def test_a_taken_port_names_the_port_the_service_and_the_flag(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        stack = plan(tmp_path, ports_from=port - 1)
        with pytest.raises(SpecError, match=rf"port {port} for kafka is already in use.*--ports-from N"):
            stack.check_ports()


def test_the_broker_is_in_memory_unless_kafka_storage_names_an_object_store(tmp_path: Path) -> None:
    def broker_argv(stack: StackPlan) -> list[str]:
        return next(s for s in stack.services if s.name == "kafka").argv

    assert broker_argv(plan(tmp_path))[-2:] == ["--storage-engine", "memory://tansu/"]
    durable = plan(tmp_path, kafka_storage="s3://tansu/")
    assert broker_argv(durable)[-2:] == ["--storage-engine", "s3://tansu/"]
    assert "on s3://tansu/" in next(s for s in durable.services if s.name == "kafka").description


@pytest.mark.parametrize("storage", ["sqlite:///tmp/kafka.db", "s3://", "/tmp/kafka", "postgres://localhost"])
def test_a_storage_engine_this_broker_lacks_is_a_clear_error(tmp_path: Path, storage: str) -> None:
    with pytest.raises(SpecError, match=r"--kafka-storage: .*memory://tansu/.*s3://BUCKET/") as error:
        plan(tmp_path, kafka_storage=storage)
    assert repr(storage) in str(error.value)


def test_a_new_stack_starts_with_an_empty_semantic_cache_and_keeps_the_unsent_spool(tmp_path: Path) -> None:
    stale = tmp_path / "qdrant" / "collection" / "semantic-cache"
    stale.mkdir(parents=True)
    (stale / "storage.sqlite").write_bytes(b"an earlier stack's answers")
    (tmp_path / "spool").mkdir()
    (tmp_path / "spool" / "00000000000000000000.jsonl").write_bytes(b'{"topic":"usage-events"}\n')
    plan(tmp_path).write_files()
    assert not (tmp_path / "qdrant").exists()
    assert (tmp_path / "spool" / "00000000000000000000.jsonl").exists()
