"""Points added after the latency model was frozen stay out of every fit (issue 28, item 3).

``tokenplane.model.held_out`` holds public loaded points added after ``FROZEN_AT``. A term fitted on one
of them would make its error a fit residual, not a held-out error, so each fit list is checked here.
"""

from __future__ import annotations

import pytest

from tokenplane.model import calibration as cal
from tokenplane.model import held_out, moe_kernels

POST_FREEZE_LABELS = {p.label for p in held_out.POST_FREEZE}


def fit_lists() -> dict[str, set[str]]:
    """Every list of points a latency term is read from, by the term's name."""
    return {
        "Efficiency floors (LatencyPoint.fit)": {p.label for p in (*cal.LATENCY, *held_out.POST_FREEZE) if p.fit},
        "calibration.API_TERM_FIT": set(cal.API_TERM_FIT),
    }


def test_the_moe_kernel_term_is_read_from_kernel_tables_not_from_held_out_runs() -> None:
    held_out_sources = {p.source for p in held_out.POST_FREEZE}
    assert not held_out_sources & {t.source for t in moe_kernels.TABLES}


@pytest.mark.parametrize("term", sorted(fit_lists()))
def test_no_fit_list_names_a_point_added_after_the_freeze(term: str) -> None:
    used = fit_lists()[term] & POST_FREEZE_LABELS
    assert not used, f"{term} is fitted on held-out points {sorted(used)}: move them out or stop calling them held out"


def test_the_fitted_server_term_does_not_move_when_the_held_out_points_join_the_fit_pool() -> None:
    """``fit_api_per_request`` chooses its points by label, so the held-out points cannot leak into it."""
    assert cal.fit_api_per_request((*cal.LATENCY, *held_out.POST_FREEZE)) == cal.fit_api_per_request()


def test_held_out_points_are_not_also_calibration_points() -> None:
    assert not POST_FREEZE_LABELS & {p.label for p in cal.LATENCY}
    assert not {p.source for p in held_out.POST_FREEZE} & {p.source for p in cal.LATENCY}


def test_each_held_out_point_is_loaded_cites_its_source_and_records_its_error_when_added() -> None:
    for commit in (held_out.FROZEN_AT, held_out.ADDED_AT):
        assert len(commit) == 40 and int(commit, 16) >= 0
    for p in held_out.POST_FREEZE:
        assert p.source.startswith("https://"), p.label
        assert p.load is not cal.Load.LONE and p.ttft_ms is not None and p.prompt_tokens, p.label
        recorded = (p.label in held_out.AT_FREEZE) + (p.label in held_out.AT_ADDITION)
        assert recorded == 1, f"{p.label}: record the model's error when adding a point, in exactly one record"
    assert set(held_out.AT_FREEZE) | set(held_out.AT_ADDITION) == POST_FREEZE_LABELS
    assert not set(held_out.AT_FREEZE) & set(held_out.AT_ADDITION)
