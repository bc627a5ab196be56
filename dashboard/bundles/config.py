"""The Bundles page's split keys: the threshold sliders' value ladders and the config they describe."""
from __future__ import annotations

from engine import bundles as B
from engine.config import PULSAR_4_DEFAULTS, LoadBalancerConfig, key_info
from engine.errors import InputError

from .model import THRESHOLD_KEYS

__all__ = ["threshold_ladder", "threshold_specs", "config_from_inputs"]


def threshold_ladder(key: str) -> tuple:
    """Values a threshold slider steps through: 1-2-5 steps inside the key's range, plus its default.

    The split keys span four orders of magnitude (0 … 10,000 topics), so a linear slider could not
    reach the small values that matter on a small namespace.

    Examples
    --------
    >>> threshold_ladder("flowOrQpsDifferenceThresholdPercentage")
    (0, 1, 2, 3, 4, 5, 10, 20, 50, 100)
    """
    info = key_info(key)
    lo, hi, default = int(info["lo"] or 0), int(info["hi"] or 100), int(info["default"])
    vals = {lo, hi, default}
    vals.update(v for v in range(0, 6) if lo <= v <= hi)
    p = 1
    while p <= hi:
        vals.update(m * p for m in (1, 2, 5) if lo <= m * p <= hi)
        p *= 10
    if info["unit"] == "bundles":
        vals.update(2 ** i for i in range(13) if lo <= 2 ** i <= hi)
    return tuple(sorted(vals))


def threshold_specs() -> list[dict]:
    """One slider per split key: key, unit, default, doc, the value ladder and the default's index."""
    out = []
    for k in THRESHOLD_KEYS:
        info = key_info(k)
        ladder = threshold_ladder(k)
        out.append({"key": k, "unit": info["unit"], "default": info["default"], "doc": info["doc"],
                    "ladder": ladder, "index": ladder.index(int(info["default"]))})
    return out


def config_from_inputs(values: dict | None = None, algorithm: str | None = None,
                       auto_enabled: bool = True) -> LoadBalancerConfig:
    """The config the page's controls describe: Pulsar 4 defaults with the split keys replaced.

    Parameters
    ----------
    values : dict
        ``{broker.conf key: ladder index}`` from the threshold sliders (an index out of range or not
        an integer raises :class:`InputError`).
    algorithm : str, optional
        ``defaultNamespaceBundleSplitAlgorithm``.
    auto_enabled : bool
        ``loadBalancerAutoBundleSplitEnabled``.
    """
    changes: dict = {"loadBalancerAutoBundleSplitEnabled": bool(auto_enabled)}
    for k, i in (values or {}).items():
        if k not in THRESHOLD_KEYS:
            raise InputError(f"not a split key: {k!r}", field=k)
        ladder = threshold_ladder(k)
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(ladder):
            raise InputError(f"slider position {i!r} out of range", field=k)
        changes[k] = ladder[i]
    if algorithm:
        if algorithm not in B.SPLIT_ALGORITHMS:
            raise InputError(f"unknown split algorithm {algorithm!r}", field="defaultNamespaceBundleSplitAlgorithm")
        changes["defaultNamespaceBundleSplitAlgorithm"] = algorithm
    return PULSAR_4_DEFAULTS.with_values(changes)
