"""The API server's CPU at the planned peak: the busy share, the count a load needs, and plan's check."""

from __future__ import annotations

from pathlib import Path

import pytest

from tokenplane.load import load_spec_text
from tokenplane.model import capacity as cap
from tokenplane.model.planner import plan
from tokenplane.vllm_args import vllm_args

ROOT = Path(__file__).resolve().parents[2]
BYTEION = ROOT / "stacks" / "byteion.yaml"


def busy(batch: float, servers: int = 1, *, rps: float = 0.0, step_s: float = 0.02) -> float:
    return cap.api_server_busy(arrivals_per_s=rps, iteration_s=step_s, batch=batch, servers=servers)


def test_each_streamed_token_and_each_step_cost_the_server() -> None:
    one = busy(1)
    assert one == pytest.approx((cap.API_CPU_PER_STEP_S + cap.API_CPU_PER_TOKEN_S) / 0.02)
    assert busy(256) - busy(128) == pytest.approx(128 * cap.API_CPU_PER_TOKEN_S / 0.02)
    assert busy(0, rps=100) - busy(0) == pytest.approx(100 * cap.API_CPU_PER_REQUEST_S)


def test_more_processes_share_the_tokens_and_the_admissions_but_each_receives_every_step() -> None:
    # Two processes halve the tokens and requests each carries; the step's outputs reach both.
    two = busy(256, 2, rps=50)
    assert two == pytest.approx(
        (cap.API_CPU_PER_STEP_S + cap.API_CPU_PER_TOKEN_S * 128) / 0.02 + cap.API_CPU_PER_REQUEST_S * 25
    )
    assert busy(256, 1, rps=50) / 2 < two < busy(256, 1, rps=50)


def test_the_count_needed_is_the_fewest_under_the_ceiling() -> None:
    needed = cap.api_servers_needed(arrivals_per_s=0.0, iteration_s=0.015, batch=256)
    assert needed is not None and needed > 1
    assert busy(256, needed, step_s=0.015) <= cap.API_SERVER_BUSY_MAX < busy(256, needed - 1, step_s=0.015)
    assert cap.api_servers_needed(arrivals_per_s=0.0, iteration_s=0.02, batch=8) == 1
    # Steps so short that receiving their outputs alone fills a process: no count keeps up.
    assert cap.api_servers_needed(arrivals_per_s=0.0, iteration_s=cap.API_CPU_PER_STEP_S, batch=1) is None


def byteion(api_servers_of_embed: int) -> str:
    text = BYTEION.read_text()
    shipped = "max_model_len: 256, api_server_count: 2}"
    assert shipped in text
    return text.replace(shipped, f"max_model_len: 256, api_server_count: {api_servers_of_embed}}}")


def test_plan_refuses_a_pool_whose_one_server_process_cannot_keep_up_and_names_the_count() -> None:
    # byteion's embedding pools admit about 300 requests a second a replica: one server process is 70-76 % busy.
    one = plan(load_spec_text(byteion(1), filename=str(BYTEION), base_dir=BYTEION.parent))
    server = [v for v in one.violations if v.kind == "server"]
    assert {v.pool for v in server} == {"embed"}
    assert all("api_server_count: 2" in v.message and "busy at the planned peak" in v.message for v in server)
    # An encoder's server admits requests and returns vectors: the message claims no token stream for it.
    assert all("returning vectors" in v.message and "tokens/s" not in v.message for v in server)
    shipped = plan(load_spec_text(byteion(2), filename=str(BYTEION), base_dir=BYTEION.parent))
    assert not [v for v in shipped.violations if v.kind == "server"]
    embed = [p for p in shipped.pools if p.name == "embed" and p.arrival_rps > 0]
    assert embed and all(0 < p.api_server_busy <= cap.API_SERVER_BUSY_MAX for p in embed)
    assert all(p.api_servers_needed == 2 for p in embed if p.api_server_busy > cap.API_SERVER_BUSY_MAX / 2)


def test_the_count_reaches_vllms_command_line_only_when_above_its_default() -> None:
    spec = load_spec_text(byteion(2), filename=str(BYTEION), base_dir=BYTEION.parent)
    argv = vllm_args(spec, spec.pool("embed"), models_dir="/models")
    assert argv[argv.index("--api-server-count") + 1] == "2"
    assert "--api-server-count" not in vllm_args(spec, spec.pool("small-chat"), models_dir="/models")


def test_plan_warns_when_the_server_processes_and_the_engine_core_outnumber_the_pods_cores() -> None:
    # A g6.xlarge replica requests 3 of its 4 vCPUs: two servers and the engine core fit, four servers do not.
    crowded = plan(load_spec_text(byteion(4), filename=str(BYTEION), base_dir=BYTEION.parent))
    cores = [w for w in crowded.warnings if w.kind == "server"]
    assert cores and {w.pool for w in cores} == {"embed"}
    assert all("need 5 cores" in w.message and "requests 3" in w.message for w in cores)
    shipped = plan(load_spec_text(byteion(2), filename=str(BYTEION), base_dir=BYTEION.parent))
    assert not [w for w in shipped.warnings if w.kind == "server"]
