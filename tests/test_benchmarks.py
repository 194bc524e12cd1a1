"""The benchmarks' own arithmetic, without running them: the deployed mix and the one-section rewrite."""

from __future__ import annotations

from benchmarks import deployed_bench, run_all


def test_the_mix_has_its_shares_of_exact_repeats_and_streams_and_is_the_same_for_a_seed() -> None:
    shots = deployed_bench.mix(4_000, seed=7)
    assert shots == deployed_bench.mix(4_000, seed=7)
    exact = [s for s in shots if s.body["temperature"] == 0]
    assert abs(len(exact) / len(shots) - deployed_bench.EXACT_SHARE) < 0.03
    assert len({s.body["messages"][0]["content"] for s in exact}) <= deployed_bench.FAQ_PROMPTS  # repeats: cache hits
    assert abs(sum(s.stream for s in shots) / len(shots) - deployed_bench.STREAM_SHARE) < 0.03


def test_only_one_section_is_rewritten_and_a_new_one_goes_in_its_place() -> None:
    title = run_all.SECTIONS["gateway_bench.py"][0]
    markdown = f"# Benchmarks\n\nhead\n\n## {title}\n\nOLD-BODY\n\n## Overload at 2x μ (overload.py)\n\nkept\n"
    updated = run_all.splice(markdown, "gateway_bench.py", [f"## {title}", "", "NEW-BODY"])
    assert "OLD-BODY" not in updated and "NEW-BODY" in updated and "kept" in updated
    deployed = run_all.SECTIONS["deployed_bench.py"][0]
    added = run_all.splice(updated, "deployed_bench.py", [f"## {deployed}", "", "first"])
    headings = [line for line in added.splitlines() if line.startswith("## ")]
    assert headings == [f"## {deployed}", f"## {title}", "## Overload at 2x μ (overload.py)"]
