"""Seeded percentile-bootstrap intervals, paired differences and the exact sign test. Pure (numpy).

Resampling draws questions with replacement. The index matrix depends only on (n, resamples,
seed), so two systems scored on the same questions share every resample: that is what makes the
interval of their difference a paired one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

RESAMPLES = 2000
SEED = 20251121
LEVEL = 0.95


@dataclass(frozen=True, slots=True)
class Interval:
    """A mean and its percentile-bootstrap interval."""

    mean: float
    low: float
    high: float

    def excludes_zero(self) -> bool:
        """True when the whole interval lies on one side of zero."""
        return self.low > 0.0 or self.high < 0.0


def bootstrap_indices(n: int, resamples: int = RESAMPLES, seed: int = SEED) -> np.ndarray:
    """A (resamples, n) matrix of indices drawn with replacement; same inputs, same matrix."""
    if n <= 0:
        return np.zeros((resamples, 0), dtype=np.int64)
    return np.random.default_rng([seed, n]).integers(0, n, size=(resamples, n))


def bootstrap_ci(
    values: Sequence[float],
    resamples: int = RESAMPLES,
    seed: int = SEED,
    level: float = LEVEL,
) -> Interval:
    """Mean of `values` with its percentile-bootstrap interval (all NaN when there are none)."""
    data = np.asarray(values, dtype=np.float64)
    if data.size == 0:
        return Interval(math.nan, math.nan, math.nan)
    means = data[bootstrap_indices(data.size, resamples, seed)].mean(axis=1)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    # Clamp so that rounding in the resample means never puts the mean outside its own interval.
    mean = float(data.mean())
    return Interval(mean, min(float(low), mean), max(float(high), mean))


def paired_difference_ci(
    a: Sequence[float],
    b: Sequence[float],
    resamples: int = RESAMPLES,
    seed: int = SEED,
    level: float = LEVEL,
) -> Interval:
    """Mean of a - b over paired questions, with the bootstrap interval of that difference."""
    if len(a) != len(b):
        raise ValueError(f"paired samples differ in length: {len(a)} vs {len(b)}")
    diff = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    return bootstrap_ci(diff.tolist(), resamples, seed, level)


@dataclass(frozen=True, slots=True)
class SignTest:
    """Questions where a beat b, where b beat a, and the exact two-sided binomial p-value."""

    wins: int
    losses: int
    p_value: float


def sign_test(a: Sequence[float], b: Sequence[float]) -> SignTest:
    """Exact two-sided sign test of paired scores; ties are dropped (p = 1 when all tie)."""
    wins = sum(1 for x, y in zip(a, b, strict=True) if x > y)
    losses = sum(1 for x, y in zip(a, b, strict=True) if x < y)
    n = wins + losses
    if n == 0:
        return SignTest(0, 0, 1.0)
    tail = sum(math.comb(n, i) for i in range(min(wins, losses) + 1)) / 2.0**n
    return SignTest(wins, losses, min(1.0, 2.0 * tail))


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100, linear interpolation); NaN for no values."""
    if not values:
        return math.nan
    return float(np.percentile(np.asarray(values, dtype=np.float64), q))
