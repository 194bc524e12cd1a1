"""``sample_quantiles`` is ``np.quantile`` (linear) bit for bit: the pool model's TTFT percentiles must not move."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tokenplane.model.pool_performance import sample_quantiles

QS = [(0.5, 0.95, 0.99), (0.95,), (0.0, 1.0), (0.25, 0.5, 0.75), (0.999,)]


def _same(got: tuple[float, ...], want: np.ndarray) -> bool:
    return all((math.isnan(g) and math.isnan(w)) or g == w for g, w in zip(got, want.tolist(), strict=True))


@pytest.mark.parametrize("qs", QS)
@pytest.mark.parametrize("seed", range(40))
def test_it_gives_numpys_doubles_on_random_samples(qs: tuple[float, ...], seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.choice([1, 2, 3, 7, 100, 8192]))
    values = rng.lognormal(size=n) * 10.0 ** rng.integers(-3, 4)
    if seed % 3 == 0:
        values = np.round(values, 1)  # ties, as the chains' whole-iteration times make
    assert _same(sample_quantiles(values, qs), np.quantile(values, qs))


@pytest.mark.parametrize("special", [math.inf, -math.inf, math.nan])
@pytest.mark.parametrize("qs", QS)
def test_infinities_and_nans_come_out_as_numpy_gives_them(special: float, qs: tuple[float, ...]) -> None:
    values = np.random.default_rng(1).random(500)
    values[[3, 70]] = special
    with np.errstate(invalid="ignore"):  # inf - inf: numpy warns as it interpolates, and so does this
        assert _same(sample_quantiles(values, qs), np.quantile(values, qs))


def test_it_leaves_its_input_unsorted() -> None:
    values = np.random.default_rng(2).random(64)
    before = values.copy()
    sample_quantiles(values, (0.5,))
    assert np.array_equal(values, before)


def test_a_changed_interpolation_would_be_seen() -> None:
    """The check above can fail: interpolating from the lower end only (numpy's ``_lerp`` takes the nearer one) differs
    in the last bit on some of the same kind of samples."""
    differs = 0
    for seed in range(40):
        rng = np.random.default_rng(seed)
        values = np.sort(rng.lognormal(size=int(rng.choice([7, 100, 1001, 8192]))))
        for q in (0.25, 0.75, 0.9, 0.95, 0.99):
            v = (len(values) - 1) * q
            lo = math.floor(v)
            from_below = values[lo] + (values[lo + 1] - values[lo]) * (v - lo)
            differs += int(float(from_below) != sample_quantiles(values, (q,))[0])
    assert differs > 0
