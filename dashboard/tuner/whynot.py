""""Why not?" for a broker or a bundle: which threshold it missed, by how much, and the slider value
that would change the outcome.

Two parts, both pure:

* :func:`missed` reads the cycle's own numbers (the broker's verdict, its AvgShedder pair, the
  bundle's rank among its broker's bundles) and says in words what the strategy compared.
* :func:`flips` runs the real engine again for other values of each key the chosen strategies read
  (the same grid as the slider) and finds, in each direction, the nearest value at which the
  outcome for the target changes — by galloping away from the current value and bisecting the last
  step. The outcome is "the target broker sheds a bundle" / "the target bundle is unloaded" within
  the cycles asked for; an outcome that changes more than once inside one galloping step can be
  missed (noted in the result). A time budget bounds the search on large clusters.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from engine.config import LoadBalancerConfig
from engine.results import fmt_bytes, fmt_rate

from engine.strategies.registry import explains

from ..keys import KeySpec, format_value, groups_for, key_spec, value_to_conf
from .analysis import Analysis, build_manager

__all__ = ["Flip", "WhyNot", "explain", "missed", "flips", "target_kind", "outcome"]


@dataclass
class Flip:
    """A slider value at which the outcome for the target changes."""

    key: str
    current: object
    value: object
    text: str  # e.g. "lower loadBalancerBrokerThresholdShedderPercentage from 10 % to 1 %"
    evaluations: int = 0


@dataclass
class WhyNot:
    """The explanation for one target."""

    target: str
    kind: str  # "broker" | "bundle"
    outcome: bool  # sheds / is unloaded now
    headline: str
    missed: list = field(default_factory=list)  # lines of text
    flips: list = field(default_factory=list)  # Flip
    notes: list = field(default_factory=list)
    evaluations: int = 0
    seconds: float = 0.0


def target_kind(view, target: str) -> str | None:
    if target in view.broker_index:
        return "broker"
    if target in view.bundle_index:
        return "bundle"
    return None


def outcome(cycles, target: str, kind: str) -> bool:
    """Did the shedding strategy select ``target`` (a broker's bundles, or the bundle) in any of ``cycles``?

    The strategy's selection is what its thresholds decide; whether the leader then issues the
    unload also depends on placement (a random draw may pick the owner itself) and is reported in
    :func:`missed`.
    """
    for c in cycles:
        sel = c.shedding.selected if c.shedding is not None else []
        for s in sel:
            if (kind == "broker" and s.broker == target) or (kind == "bundle" and s.bundle == target):
                return True
    return False


# ------------------------------------------------------------------------------------------ missed
def _broker_of(view, bundle: str) -> str | None:
    k = view.bundle_index.get(bundle)
    if k is None:
        return None
    owners = view.owners.get(k) or []
    return view.brokers[owners[0]] if owners else None


def missed(a: Analysis, target: str) -> tuple[str, list]:
    """(headline, lines): what the strategy compared for ``target`` this cycle, in words."""
    v = a.view
    kind = target_kind(v, target)
    res = a.result
    if kind is None:
        return f"{target} is not in this snapshot", []
    if res is None:
        return f"no shedding ran: {a.cycle.reason}", []
    broker = target if kind == "broker" else _broker_of(v, target)
    lines = []
    if kind == "bundle":
        if broker is None:
            return f"{target} is not owned by any broker in this snapshot", []
        k = v.bundle_index[target]
        if not v.sheddable[k]:
            lines.append("the bundle has no bundle data or is an SLA-monitor / heartbeat bundle: never shed")
        if target in a.snap.ld.recently_unloaded:
            lines.append("the bundle was unloaded recently (loadBalancerSheddingGracePeriodMinutes): skipped")
    sel_broker = [s for s in res.selected if s.broker == broker]
    verdict = next((x for x in res.verdicts if x.broker == broker), None)
    if "pairs" in explains(res.strategy):  # a pairing strategy (AvgShedder): the broker's pair
        lines += _avg_lines(a, broker)
    elif verdict is not None and verdict.line is not None:
        gap = verdict.line - verdict.score
        unit = res.score_unit
        if verdict.status == "ok":
            lines.append(f"{broker} score {verdict.score:,.2f}{_u(unit)} is below {verdict.line_name} "
                         f"{verdict.line:,.2f}{_u(unit)}: missed by {gap:,.2f}{' points' if unit == '%' else _u(unit)}")
        elif verdict.reason:
            lines.append(f"{broker}: {verdict.reason}")
    elif verdict is not None and verdict.reason:
        lines.append(f"{broker}: {verdict.reason}")
    st = res.state.to_json() if hasattr(res.state, "to_json") else res.state if isinstance(res.state, dict) else {}
    if "max_rate_broker" in st and verdict is not None and verdict.status != "over":  # UniformLoadShedder
        lines.append(f"{res.strategy} sheds only from the broker with the highest message rate (or throughput): "
                     f"{st.get('max_rate_broker', '?')} this cycle")
    if kind == "bundle" and broker is not None:
        lines += _bundle_lines(a, target, broker, sel_broker)
    selected = outcome([a.cycle], target, kind)
    issued = any((u.broker if kind == "broker" else u.bundle) == target for u in a.cycle.unloads)
    what = "sheds" if kind == "broker" else "is unloaded"
    if issued:
        head = f"{target} {what} this cycle"
    elif selected:
        head = f"{res.strategy} selects {target}, but the leader does not unload it"
        sk = sorted({u.skipped for u in a.cycle.skipped
                     if (u.broker if kind == "broker" else u.bundle) == target and u.skipped})
        if sk:
            lines.append("not unloaded: " + "; ".join(sk))
    else:
        head = f"{target} {'does not shed' if kind == 'broker' else 'is not unloaded'} this cycle"
    return head, lines


def _u(unit: str) -> str:
    return " %" if unit == "%" else f" {unit}"


def _avg_lines(a: Analysis, broker: str) -> list:
    cfg, res = a.config, a.result
    low, high = cfg.loadBalancerAvgShedderLowThreshold, cfg.loadBalancerAvgShedderHighThreshold
    n_low, n_high = cfg.loadBalancerAvgShedderHitCountLowThreshold, cfg.loadBalancerAvgShedderHitCountHighThreshold
    for p in res.pairs:
        if broker not in (p.low, p.high):
            continue
        other = p.high if broker == p.low else p.low
        role = "cool" if broker == p.low else "hot"
        if p.gap < low:
            return [f"{broker} ({role}) is paired with {other}: gap {p.gap:.2f} < low threshold {low:g} by "
                    f"{low - p.gap:.2f} points: counters reset"]
        hl, hh = max(p.hit_low.values() or [0]), max(p.hit_high.values() or [0])
        out = [f"{broker} ({role}) is paired with {other}: gap {p.gap:.2f} "
               f"{'>= high threshold %g' % high if p.gap >= high else '>= low threshold %g (< high %g by %.2f)' % (low, high, high - p.gap)}"]
        if p.triggered:
            out.append(f"hit count reached ({'high' if p.trigger == 'high' else 'low'}): the pair shares load — "
                       + (p.reason or ""))
        else:
            need_h = max(0, n_high - hh) if p.gap >= high else None
            need_l = max(0, n_low - hl)
            out.append(f"high hits {hh} of {n_high}, low hits {hl} of {n_low}: "
                       + (f"{need_h} more cycle(s) at gap >= {high:g}, or " if need_h is not None else "")
                       + f"{need_l} more cycle(s) at gap >= {low:g}")
        return out
    return [f"{broker} is the middle broker (paired with itself) or not in any pair"]


def _bundle_lines(a: Analysis, bundle: str, broker: str, selected: list) -> list:
    v, res = a.view, a.result
    k = v.bundle_index[bundle]
    j = v.broker_index[broker]
    rate, thr = float(v.short_rate[k]), float(v.short_throughput[k])
    if any(s.bundle == bundle for s in res.selected):
        return []
    if not selected:
        return [f"its broker {broker} is not shedding this cycle, so none of its bundles moves"]
    # strategies that move an amount between two brokers (AvgShedder's pairs, UniformLoadShedder's max and
    # min broker) take bundles while they fit it; the others take the largest until the amount is covered
    fits = "pairs" in explains(res.strategy) or "min msg rate" in (res.lines or {})
    by_rate = fits and selected[0].value_unit == "msg/s"
    vals = v.short_rate if by_rate else v.short_throughput
    own = v.owned[j]
    rank = 1 + int(np.sum(vals[own] > vals[k]))
    moved = sum(s.value for s in selected)
    what = fmt_rate(rate) if by_rate else fmt_bytes(thr)
    if fits:
        return [f"{broker} sheds {len(selected)} bundle(s) worth {fmt_rate(moved) if by_rate else fmt_bytes(moved)}; "
                f"bundles are taken largest first while they fit the remaining amount — this one ({what}, "
                f"#{rank} of {len(own)}) did not fit or was not needed"]
    return [f"{broker} sheds its largest bundles by short-term throughput until the amount is covered: "
            f"{len(selected)} bundle(s), {fmt_bytes(moved)}; this one is #{rank} of {len(own)} ({what})"]


# ------------------------------------------------------------------------------------------ flips
def _grid(spec: KeySpec, current) -> list:
    """Candidate values of a key: the slider grid (bools: the other value)."""
    if spec.kind == "bool":
        return [not bool(current)]
    if spec.kind != "slider" or spec.step is None:
        return []
    lo, hi = spec.range_for(current)
    n = int(round((hi - lo) / spec.step))
    if n <= 0 or n > 5000:
        return []
    vals = [lo + i * spec.step for i in range(n + 1)]
    return [int(round(x)) if spec.type == "int" else round(x, 10) for x in vals]


def _evaluate(a: Analysis, cfg: LoadBalancerConfig, target: str, kind: str, cycles: int) -> bool:
    lm = build_manager(a.snap, cfg, a.seed)
    return outcome(lm.run_cycles(cycles) if cycles > 1 else [lm.do_load_shedding()], target, kind)


def _search(values: list, cur_i: int, step: int, same, budget_ok):
    """Nearest index from ``cur_i`` in direction ``step`` where ``same(i)`` is False (gallop + bisect)."""
    n = len(values)
    last_same = cur_i
    d = 1
    while True:
        if not budget_ok():
            return None
        i = cur_i + step * d
        if not 0 <= i < n:
            i = 0 if step < 0 else n - 1
            if i == last_same or same(i):
                return None
            first_diff = i
            break
        if same(i):
            last_same = i
            d *= 2
            continue
        first_diff = i
        break
    lo, hi = last_same, first_diff  # same at lo, different at hi
    while abs(hi - lo) > 1:
        if not budget_ok():
            return None
        mid = (lo + hi) // 2
        if same(mid):
            lo = mid
        else:
            hi = mid
    return hi


def flips(a: Analysis, target: str, *, cycles: int = 1, keys=None, budget_s: float = 3.0) -> tuple[list, int, list]:
    """(flips, evaluations, notes): per key, the nearest slider values that change the outcome."""
    kind = target_kind(a.view, target)
    if kind is None:
        return [], 0, []
    cfg = a.config
    base = _evaluate(a, cfg, target, kind, cycles) if cycles > 1 else outcome([a.cycle], target, kind)
    if keys is None:
        keys = [k for g in groups_for(a.shedding, a.placement) for k in g.keys]
    t0 = time.perf_counter()
    evals = [0]
    notes = []
    out = []
    memo = {}

    def budget_ok():
        return time.perf_counter() - t0 < budget_s

    for key in keys:
        try:
            spec = key_spec(key)
        except KeyError:
            continue
        cur = getattr(cfg, key)
        grid = _grid(spec, cur)
        if not grid:
            continue
        if spec.kind == "bool":
            c2 = cfg.with_values({key: value_to_conf(spec, grid[0])})
            evals[0] += 1
            if _evaluate(a, c2, target, kind, cycles) != base:
                out.append(Flip(key, cur, grid[0], f"set {key} to {str(grid[0]).lower()}", 1))
            continue
        values = sorted(set(grid) | {cur})
        cur_i = values.index(cur)

        def same(i, key=key, spec=spec, values=values):
            mk = (key, values[i])
            if mk not in memo:
                evals[0] += 1
                try:
                    c2 = cfg.with_values({key: value_to_conf(spec, values[i])})
                    memo[mk] = _evaluate(a, c2, target, kind, cycles) == base
                except Exception:  # a value the engine rejects (e.g. low > high) counts as "no change"
                    memo[mk] = True
            return memo[mk]

        for step in (-1, 1):
            i = _search(values, cur_i, step, same, budget_ok)
            if i is None:
                continue
            val = values[i]
            verb = "lower" if step < 0 else "raise"
            out.append(Flip(key, cur, val, f"{verb} {key} from {format_value(cur, spec.fmt)} to "
                                            f"{format_value(val, spec.fmt)}"))
        if not budget_ok():
            notes.append(f"stopped after {time.perf_counter() - t0:.1f} s; keys after {key} not searched")
            break
    notes.append("found by re-running the engine: galloping from the current value, then bisecting")
    return out, evals[0], notes


def explain(a: Analysis, target: str, *, cycles: int = 1, budget_s: float = 3.0) -> WhyNot:
    """The whole answer for ``target`` (a broker id or a bundle name) on analysis ``a``."""
    t0 = time.perf_counter()
    kind = target_kind(a.view, target)
    head, lines = missed(a, target)
    if kind is None:
        return WhyNot(target, "unknown", False, head, lines)
    now = outcome([a.cycle], target, kind)
    fl, n, notes = flips(a, target, cycles=max(1, int(cycles)), budget_s=budget_s)
    notes.insert(0, f"outcome = selected by {a.shedding}" + (f" within {cycles} cycles" if cycles > 1 else ""))
    w = WhyNot(target, kind, now, head, lines, fl, notes, n, time.perf_counter() - t0)
    if not fl:
        w.notes.insert(0, "no single slider within its range changes the outcome")
    return w
