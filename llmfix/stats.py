"""The two statistics the rate gates need: an interval for a rate, and a test of a change.

A rate measured on a sample of answers is noisy: 3 invalid answers out of 100 says the
true rate is somewhere between 1 % and 8.5 % (95 % confidence). :func:`wilson` gives that
interval (the Wilson score interval, which stays inside 0–1 and behaves for rates near 0,
unlike the textbook ``p ± z·√(p(1−p)/n)``); :func:`two_proportions` says whether a rate
that moved between two runs moved more than noise explains (the pooled two-proportion
z-test); :func:`holm` corrects a set of such tests for being many (Holm's step-down
method), so that comparing fifty rates does not flag two of them by chance.

Plain arithmetic and the standard normal distribution of :mod:`statistics`: no SciPy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

__all__ = ["Change", "holm", "two_proportions", "wilson", "z_value"]

_NORMAL = NormalDist()


def z_value(confidence: float) -> float:
    """The two-sided standard normal quantile of ``confidence`` (1.96 for 0.95)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, not {confidence!r}")
    return _NORMAL.inv_cdf(0.5 + confidence / 2.0)


def wilson(count: int, total: int, confidence: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of the rate ``count / total`` at ``confidence``.

    ``(0.0, 1.0)`` for an empty sample: nothing is known.
    """
    if total <= 0:
        return 0.0, 1.0
    z = z_value(confidence)
    p = count / total
    z2n = z * z / total
    centre = (p + z2n / 2.0) / (1.0 + z2n)
    half = z * math.sqrt(p * (1.0 - p) / total + z2n / (4.0 * total)) / (1.0 + z2n)
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class Change:
    """A rate then (``before``/``n_before``) and now, and how sure the change is."""

    before: int
    n_before: int
    after: int
    n_after: int
    z: float
    p_value: float  # two-sided

    @property
    def rate_before(self) -> float:
        return self.before / self.n_before if self.n_before else 0.0

    @property
    def rate_after(self) -> float:
        return self.after / self.n_after if self.n_after else 0.0

    @property
    def delta(self) -> float:
        return self.rate_after - self.rate_before


def two_proportions(before: int, n_before: int, after: int, n_after: int) -> Change:
    """The pooled two-proportion z-test of ``before/n_before`` against ``after/n_after``.

    A sample with no items, or rates of exactly 0 or 1 in both runs (no variance to test
    against), gives ``z = 0`` and a p-value of 1: no evidence of a change.
    """
    if n_before <= 0 or n_after <= 0:
        return Change(before, n_before, after, n_after, 0.0, 1.0)
    pooled = (before + after) / (n_before + n_after)
    variance = pooled * (1.0 - pooled) * (1.0 / n_before + 1.0 / n_after)
    if variance <= 0.0:
        return Change(before, n_before, after, n_after, 0.0, 1.0)
    z = (after / n_after - before / n_before) / math.sqrt(variance)
    p_value = 2.0 * (1.0 - _NORMAL.cdf(abs(z)))
    return Change(before, n_before, after, n_after, z, min(1.0, p_value))


def holm(p_values: Sequence[float], alpha: float) -> list[bool]:
    """Which of ``p_values`` are significant at family-wise level ``alpha`` (Holm):
    the smallest is held to ``alpha/m``, the next to ``alpha/(m-1)``, and so on, stopping
    at the first that is not."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    significant = [False] * len(p_values)
    m = len(p_values)
    for rank, index in enumerate(order):
        if p_values[index] >= alpha / (m - rank):
            break
        significant[index] = True
    return significant
