"""How load spreads over a namespace's bundles: Gini, max/mean, and the spread random names would give."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..errors import InputError
from .constants import _clean
from .ranges import bundle_indices, check_boundaries, initial_boundaries, topic_hashes

def gini(values: Sequence[float] | np.ndarray) -> float:
    """Gini coefficient of non-negative values (0 = all equal, → 1 = all in one).

    ``G = Σ_i Σ_j |x_i − x_j| / (2 n² mean)``; NaN when the total is 0 or there are no values.

    Examples
    --------
    >>> gini([0, 0, 0, 4]), gini([2, 2, 2, 2])
    (0.75, 0.0)
    """
    x = np.sort(np.asarray(values, dtype=float))
    n = x.size
    with np.errstate(over="ignore", invalid="ignore"):  # junk (±inf, ~1e308) gives inf/NaN, quietly
        total = x.sum()
        if n == 0 or total <= 0:
            return float("nan")
        i = np.arange(1, n + 1)
        return float((2.0 * np.sum(i * x)) / (n * total) - (n + 1.0) / n)


@dataclass(frozen=True)
class Distribution:
    """How one quantity (topics, msg rate, throughput) spreads over the bundles of a namespace."""

    quantity: str
    bundles: int
    total: float
    max: float
    min: float
    mean: float
    max_over_mean: float
    gini: float
    empty: int
    argmax: int

    def to_json(self) -> dict:
        return {k: _clean(getattr(self, k)) for k in ("quantity", "bundles", "total", "max", "min", "mean",
                                                      "max_over_mean", "gini", "empty", "argmax")}


def distribution(per_bundle: Sequence[float] | np.ndarray, quantity: str = "topics") -> Distribution:
    """Summary of a per-bundle quantity: max, mean, max/mean, Gini, number of empty bundles.

    Examples
    --------
    >>> d = distribution([0, 1, 1, 2])
    >>> d.max, d.mean, d.max_over_mean, d.empty
    (2.0, 1.0, 2.0, 1)
    """
    x = np.asarray(per_bundle, dtype=float)
    if x.size == 0:
        raise InputError("distribution of zero bundles")
    with np.errstate(over="ignore", invalid="ignore"):  # junk (±inf, ~1e308) gives inf/NaN, quietly
        total, mean = float(x.sum()), float(x.mean())
        mx = float(x.max())
        ratio = mx / mean if mean > 0 else float("nan")
    return Distribution(quantity, int(x.size), total, mx, float(x.min()), mean, ratio, gini(x),
                        int(np.count_nonzero(x == 0)), int(np.argmax(x)))


@dataclass(frozen=True)
class ExpectedSpread:
    """What ``max/mean`` topics per bundle random names give for ``topics`` over ``bundles``.

    Monte-Carlo (see :func:`expected_max_over_mean` for the two models). ``p_at_least_observed``
    is the share of trials whose fullest bundle holds at least ``observed_max`` topics: small means
    the real layout is unlucky; ``p_at_most_observed`` small means it is flatter than usual.
    """

    topics: int
    bundles: int
    method: str
    trials: int
    seed: Any
    mean_max: float
    mean_max_over_mean: float
    p05: float
    p50: float
    p95: float
    observed_max: int | None = None
    observed_max_over_mean: float | None = None
    p_at_least_observed: float | None = None
    p_at_most_observed: float | None = None
    model: str = "multinomial"

    @property
    def verdict(self) -> str:
        """``unlucky`` / ``lucky`` (< 5 % of random layouts as bad / as flat) / ``typical``."""
        if self.observed_max is None or self.p_at_least_observed is None:
            return "n/a"
        if self.p_at_least_observed < 0.05:
            return "unlucky"
        if self.p_at_most_observed is not None and self.p_at_most_observed < 0.05:
            return "lucky"
        return "typical"

    def to_json(self) -> dict:
        out = {k: _clean(getattr(self, k)) for k in ("topics", "bundles", "method", "model", "trials", "mean_max",
                                                      "mean_max_over_mean", "p05", "p50", "p95", "observed_max",
                                                      "observed_max_over_mean", "p_at_least_observed",
                                                      "p_at_most_observed")}
        out["seed"] = self.seed if isinstance(self.seed, (int, type(None))) else repr(self.seed)
        out["verdict"] = self.verdict
        return out


#: partition-names model: at most this many hashes in total (trials × partitions)
PARTITION_MODEL_MAX_HASHES = 5_000_000
_NAME_ALPHABET = np.array(list("abcdefghijklmnopqrstuvwxyz0123456789-_"))


def _partition_name_maxes(k: int, b: np.ndarray, trials: int, rng: np.random.Generator) -> np.ndarray:
    nb = b.size - 1
    suffixes = [f"-partition-{i}" for i in range(k)]
    maxes = np.empty(trials, dtype=np.int64)
    for t in range(trials):
        local = "".join(rng.choice(_NAME_ALPHABET, int(rng.integers(3, 25))))
        base = f"persistent://tenant-{int(rng.integers(1000))}/ns/{local}"
        idx = bundle_indices(topic_hashes([base + s for s in suffixes]), b)
        maxes[t] = np.bincount(idx[idx >= 0], minlength=nb).max()
    return maxes


def expected_max_over_mean(n_topics: int, bundles: int | Sequence[int] | np.ndarray, *,
                           observed_max: int | None = None, trials: int = 1000,
                           seed: int | np.random.Generator | None = 0,
                           model: str = "multinomial") -> ExpectedSpread:
    """Expected fullest-bundle load relative to the mean for ``n_topics`` random names.

    Parameters
    ----------
    n_topics : int
        Number of topics (partitions count one each).
    bundles : int or array-like of int
        A number of initial bundles, or boundaries (unequal bundles get proportional odds).
    observed_max : int, optional
        The real layout's max topics per bundle, to rank it against random layouts.
    trials : int, default 1000
        Monte-Carlo trials.
    seed : int, Generator or None, default 0
        Randomness (an int seeds ``numpy.random.default_rng``).
    model : {"multinomial", "partition-names"}
        ``multinomial``: every topic hashes independently and uniformly (right for many unrelated
        topic names). ``partition-names``: each trial hashes the real partition names
        ``<random base>-partition-0 … -(n_topics-1)`` of one random topic name (right for the
        partitions of one topic; needs ``n_topics × trials ≤`` :data:`PARTITION_MODEL_MAX_HASHES`).

    Returns
    -------
    ExpectedSpread

    Notes
    -----
    Monte-Carlo, not exact. CRC-32 is linear: the partition names of one topic differ only in a few
    trailing bytes, so their hashes are an XOR-shifted copy of a fixed pattern and spread *more
    evenly* than independent hashes (e.g. 120 partitions over 180 bundles: mean max ≈ 3.2 with real
    partition names vs ≈ 3.7 with independent hashes). Hence the ``partition-names`` model for a
    partitioned topic. Quantiles are of ``max/mean`` with ``mean = n_topics / bundles``.

    Examples
    --------
    >>> e = expected_max_over_mean(30, 180, observed_max=4, trials=2000, seed=1)
    >>> e.verdict, e.p50
    ('unlucky', 12.0)
    """
    if isinstance(n_topics, bool) or not isinstance(n_topics, (int, np.integer)) or n_topics < 0:
        raise InputError(f"n_topics must be a non-negative integer, got {n_topics!r}")
    if isinstance(trials, bool) or not isinstance(trials, (int, np.integer)) or trials < 1:
        raise InputError(f"trials must be a positive integer, got {trials!r}")
    if model not in ("multinomial", "partition-names"):
        raise InputError(f"model must be 'multinomial' or 'partition-names', got {model!r}")
    if isinstance(bundles, (int, np.integer)) and not isinstance(bundles, bool):
        b = initial_boundaries(int(bundles))
    else:
        b = check_boundaries(bundles)
    trials = int(trials)
    nb = b.size - 1
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    if model == "partition-names":
        if n_topics * trials > PARTITION_MODEL_MAX_HASHES:
            raise InputError(f"partition-names model: {n_topics:,} partitions × {trials:,} trials is more than "
                             f"{PARTITION_MODEL_MAX_HASHES:,} hashes; use fewer trials or the multinomial model")
        maxes = _partition_name_maxes(int(n_topics), b, trials, rng)
    else:
        widths = np.diff(b).astype(float)  # the hash 0xffffffff itself is served by no bundle
        p = widths / widths.sum()
        maxes = np.empty(trials, dtype=np.int64)
        chunk = max(1, min(trials, 2_000_000 // max(nb, 1)))
        for start in range(0, trials, chunk):
            k = min(chunk, trials - start)
            maxes[start:start + k] = rng.multinomial(int(n_topics), p, size=k).max(axis=1)
    mean = n_topics / nb
    ratio = maxes / mean if mean > 0 else np.full(maxes.shape, np.nan)
    q = np.quantile(ratio, [0.05, 0.5, 0.95]) if mean > 0 else [float("nan")] * 3
    obs_ratio = p_ge = p_le = None
    if observed_max is not None:
        observed_max = int(observed_max)
        obs_ratio = observed_max / mean if mean > 0 else None
        p_ge = float(np.mean(maxes >= observed_max))
        p_le = float(np.mean(maxes <= observed_max))
    return ExpectedSpread(int(n_topics), nb, "monte-carlo", trials,
                          seed if isinstance(seed, (int, type(None))) else "generator",
                          float(maxes.mean()), float(np.mean(ratio)), float(q[0]), float(q[1]), float(q[2]),
                          observed_max, obs_ratio, p_ge, p_le, model)
