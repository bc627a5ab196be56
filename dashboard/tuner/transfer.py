"""What TransferShedder decided and why, as the Tuner shows it (pure; no Dash, no Plotly).

TransferShedder (the Extensible Load Manager's shedding strategy, ``pulsar-load-balancing.md`` §8.3)
compares the standard deviation of the brokers' load (each broker's ``weightedMaxEMA``) with
``loadBalancerBrokerLoadTargetStd``; when that (or an underloaded min / overloaded max broker) holds
for more than ``loadBalancerSheddingConditionHitCountThreshold`` consecutive cycles it walks
max/min broker pairs. :func:`transfer_view` turns one :class:`dashboard.tuner.analysis.Analysis` into the
numbers the page draws: the loads, average, std against the target, the hit count "k of n" and
the decisions with their label and reason code. :func:`hit_counts` gives the hit count each cycle
of "Run N cycles" compared.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from engine.strategies.registry import explains

__all__ = ["TransferView", "transfer_view", "hit_counts", "start_hit_count", "is_transfer", "REASONS"]

#: Pulsar's reason codes (``UnloadDecision.Reason``) in the page's words
REASONS = {
    "Overloaded": "the load std is above the target (or the max broker is overloaded): load moves max → min",
    "Underloaded": "the std is within the target but the min broker is underloaded: load moves to it",
    "HitCount": "the shedding condition has not held for more than the hit-count threshold yet (or the cluster "
                "is balanced: the count is reset)",
    "NoBundles": "the max broker had no bundle that could be unloaded (a sole bundle, or every bundle too big, "
                 "excluded or recently unloaded)",
    "CoolDown": "a recently unloaded broker has not published load data newer than loadBalanceSheddingDelayInSeconds",
    "OutDatedData": "every broker's load data is older than loadBalancerBrokerLoadDataTTLInSeconds",
    "NoLoadData": "an available broker (or a max broker's top bundles) has no load data",
    "NoBrokers": "no broker load data at all",
    "Balanced": "balanced",
}


def _as_dict(state) -> dict:
    """A strategy's state as a dict (a state value's ``to_json()``; a dict as it is)."""
    if hasattr(state, "to_json"):
        state = state.to_json()
    return state if isinstance(state, dict) else {}


def is_transfer(result) -> bool:
    """True for a result whose strategy explains itself by the load std and its decisions (the
    spec's ``explains``: TransferShedder's)."""
    return result is not None and "std" in explains(getattr(result, "strategy", None))


def start_hit_count(ld, strategy: str | None = None) -> int:
    """``unloadConditionHitCount`` a snapshot seeds for ``strategy`` (``shedlabStrategyState``; without a
    name, the first strategy there explaining the std), 0 without one."""
    states = getattr(ld, "strategy_state", None) or {}
    if strategy is None:
        strategy = next((k for k in states if "std" in explains(k)), None)
    st = states.get(strategy) if strategy else None
    try:
        return max(0, int((st or {}).get("unloadConditionHitCount", 0)))
    except (TypeError, ValueError, AttributeError):
        return 0


@dataclass
class TransferView:
    """One TransferShedder cycle, in percent of load (``weightedMaxEMA`` × 100)."""

    load: dict  # broker -> load %, highest first
    average: float | None
    std: float | None
    target: float
    std_after: float | None
    overload: float
    underload: float | None
    n: int  # brokers in the average (outdated ones are left out)
    hit: int  # the hit count compared with the threshold this cycle
    threshold: int  # loadBalancerSheddingConditionHitCountThreshold (shedding needs hit > threshold)
    label: str  # Success | Skip
    code: str  # reason code of the cycle (Overloaded, Underloaded, HitCount, NoBundles, CoolDown, ...)
    detail: str
    std_over_target: bool = False
    min_underloaded: bool = False
    max_overloaded: bool = False
    min_broker: str | None = None
    max_broker: str | None = None
    decisions: list = field(default_factory=list)  # dicts: label, reason, broker, bundle, destination, swap, detail
    walk: list = field(default_factory=list)  # the engine's notes of each max -> min step

    @property
    def needed(self) -> int:
        """Consecutive hits shedding needs (Pulsar sheds when the count *exceeds* the threshold)."""
        return self.threshold + 1

    @property
    def sheds(self) -> bool:
        return self.label == "Success"

    @property
    def condition(self) -> bool:
        """The shedding condition held this cycle (std over target, min underloaded or max overloaded)."""
        return self.std_over_target or self.min_underloaded or self.max_overloaded

    def hit_text(self) -> str:
        return f"hit count {self.hit} of {self.needed}"

    def std_text(self) -> str:
        """``"std 18.00 % > target 10.00 %"`` (or ≤), empty when no std was computed."""
        if self.std is None:
            return ""
        op = ">" if self.std_over_target else "≤"
        return f"std {self.std:.2f} % {op} target {self.target:.2f} %"

    def why(self, short: bool = False) -> list[str]:
        """The parts of the shedding condition that held (empty: balanced)."""
        out = []
        if self.std_over_target:
            out.append(self.std_text())
        if self.min_underloaded:
            out.append("min broker underloaded" if short else f"min broker {self.min_broker} underloaded")
        if self.max_overloaded:
            out.append("max broker overloaded" if short else f"max broker {self.max_broker} overloaded")
        return out

    def verdict(self, short: bool = False) -> str:
        """The one-line answer: the std against the target and what happens (``short``: no broker names)."""
        std = self.std_text()
        if self.std is None:
            return f"no load statistics: {self.code}"
        parts = self.why(short)
        if short and len(parts) > 1:
            parts = parts[:1]
        why = ", ".join(parts) or std
        if self.sheds:
            n = sum(1 for d in self.decisions if d["label"] == "Success")
            after = f"; std after ≈ {self.std_after:.2f} %" if self.std_after is not None and not short else ""
            return f"{why} → shedding: {n} unload{'s' if n != 1 else ''} ({self.code}{after})"
        if not self.condition:
            return f"std under target ({self.std:.2f} % ≤ {self.target:.2f} %): no unloads"
        if self.code == "HitCount":
            return f"{why} → condition holds, {self.hit_text()}: no unloads yet"
        return f"{why} → no unloads: {self.code}"


def transfer_view(a) -> TransferView | None:
    """The :class:`TransferView` of an analysis, None unless its result explains the load std
    (:func:`is_transfer`)."""
    res = a.result
    if not is_transfer(res):
        return None
    cfg = a.config
    stats = getattr(a, "transfer_stats", None)
    lines = res.lines or {}
    load = dict(sorted(((b, float(v)) for b, v in res.scores.items()), key=lambda kv: -kv[1]))
    decisions = [{"label": d.label, "reason": d.reason, "broker": d.broker, "bundle": d.bundle,
                  "destination": d.destination, "swap": bool(d.swap), "detail": d.detail or ""}
                 for d in (res.decisions or [])]
    code = decisions[0]["reason"] if decisions else (res.reason.split(":", 1)[0] if res.reason else "")
    if res.label == "Success":
        codes = sorted({d["reason"] for d in decisions if d["label"] == "Success"})
        code = " / ".join(codes) or code
    detail = decisions[0]["detail"] if decisions and res.label != "Success" else res.reason
    threshold = int(cfg.loadBalancerSheddingConditionHitCountThreshold)
    if stats is not None:
        hit = int(stats.hit_count)
    else:  # before the statistics: the count is unchanged
        hit = int(_as_dict(res.state).get("unloadConditionHitCount", 0))
    std = lines.get("std")
    target = float(lines.get("target std", cfg.loadBalancerBrokerLoadTargetStd * 100))
    return TransferView(
        load=load, average=lines.get("average"), std=std, target=target, std_after=lines.get("std after"),
        overload=float(lines.get("overload threshold", cfg.loadBalancerBrokerOverloadedThresholdPercentage)),
        underload=lines.get("underload line"), n=int(getattr(stats, "n", 0) or 0), hit=hit, threshold=threshold,
        label=res.label, code=code, detail=detail,
        std_over_target=bool(getattr(stats, "std_over_target", std is not None and std > target)),
        min_underloaded=bool(getattr(stats, "min_underloaded", False)),
        max_overloaded=bool(getattr(stats, "max_overloaded", False)),
        min_broker=getattr(stats, "min_broker", None), max_broker=getattr(stats, "max_broker", None),
        decisions=decisions, walk=list(res.notes[1:]),
    )


def hit_counts(cycles, start: int = 0) -> list[int]:
    """The hit count each TransferShedder cycle compared with the threshold.

    The strategy's state after a cycle holds the count, except after a Success, which resets it to
    0: that cycle compared the previous count + 1. ``start`` is the count the manager was seeded with.
    """
    out, prev = [], int(start)
    for c in cycles:
        sh = c.shedding
        if sh is None:
            out.append(prev)
            continue
        after = int(_as_dict(sh.state).get("unloadConditionHitCount", prev))
        out.append(prev + 1 if sh.label == "Success" else after)
        prev = after
    return out
