"""The numbers the field findings read off a run: one extractor per kind of figure the articles report.

Each extractor takes a run — a :class:`~engine.simulator.run.SimulationResult` (``x_*``: its summary,
cluster, broker and event tables) or one shedding cycle on a sample (``s_*``: the cycle's scores, lines
and placement) — and keyword arguments from the figure, and returns the simulator's value of that figure
(``None`` when the run has none). :data:`EXTRACTORS` names them; a :class:`~engine.simulator.findings.Figure`
refers to one by that name (its ``metric``). The declarations — which finding, which figure, the
article's number and range — are in :mod:`engine.simulator.findings`.
"""
from __future__ import annotations

from typing import Callable

from .run import SimulationResult

__all__ = ["EXTRACTORS"]


def _unloads(r: SimulationResult, since: int = 0):
    ev = r.events
    return ev[(ev["kind"] == "unload") & (ev["minute"] >= since)]


def _first_unload_minute(r, since=0):
    u = _unloads(r, since)
    return int(u["minute"].min()) if len(u) else None


def x_summary(r, key):
    v = r.summary.get(key)
    return None if v is None else float(v)


def x_unloads(r, since=0):
    return float(len(_unloads(r, since)))


def x_unload_rounds(r, since=0):
    u = _unloads(r, since)
    return float(u["cycle"].nunique()) if len(u) else 0.0


def x_unloads_per_day(r):
    return float(len(_unloads(r))) * 1440.0 / float(r.summary["minutes"])


def _summary_minus(r, key, start=0):
    v = r.summary.get(key)
    return None if v is None else float(v - start)


def x_settle_after(r, start):
    return _summary_minus(r, "settled_minute", start)


def x_checks_until_unload(r, since):
    """Shedding checks from minute ``since`` (the gap appears) up to and including the first unload's."""
    first = _first_unload_minute(r, since)
    if first is None:
        return None
    ev = r.events
    return float(((ev["kind"] == "check") & (ev["minute"] >= since) & (ev["minute"] <= first)).sum())


def _usage_at(r, minute, col="usage"):
    b = r.brokers
    return b[b["minute"] == minute].set_index("broker")[col]


def _coolest_after(r, minute):
    """The least used broker two minutes after ``minute`` (the run's last minute at the latest)."""
    return _usage_at(r, min(minute + 2, int(r.summary["minutes"]) - 1)).idxmin()


def x_usage_before_first_unload(r, since=0, which="max"):
    first = _first_unload_minute(r, since)
    if first is None:
        return None
    u = _usage_at(r, first - 1)
    return float(u.max() if which == "max" else u.min())


def x_pairs_hottest_with_coolest(r, since=0):
    """1 when the first unload goes from the hottest to the coolest broker (real usage the minute before)."""
    u = _unloads(r, since)
    if not len(u):
        return 0.0
    first = u.iloc[0]
    before = _usage_at(r, int(first["minute"]) - 1)
    return float(first["broker"] == before.idxmax() and first["destination"] == before.idxmin())


def x_pairs_hottest_with_new(r, since):
    """1 when the first unload after ``since`` goes from the hottest broker to the broker added at ``since``."""
    ev = r.events
    added = ev[(ev["kind"] == "broker-added") & (ev["minute"] == since)]
    u = _unloads(r, since)
    if not len(u) or not len(added):
        return 0.0
    first = u.iloc[0]
    new = added.iloc[0]["broker"]
    before = _usage_at(r, int(first["minute"]) - 1)
    return float(first["destination"] == new and first["broker"] == before.drop(new, errors="ignore").idxmax())


def x_cluster_at(r, minute, key):
    cl = r.cluster.set_index("minute")
    if minute < 0:
        minute = int(cl.index.max()) + 1 + minute
    return float(cl.loc[minute, key])


def x_cluster_max(r, key, since=0):
    """The largest value of the cluster column ``key`` from minute ``since`` on ("reaches ...")."""
    cl = r.cluster
    return float(cl.loc[cl["minute"] >= since, key].max())


def x_ratio_before_first_unload(r, since=0, key="msg_rate_ratio"):
    first = _first_unload_minute(r, since)
    return None if first is None else x_cluster_at(r, first - 1, key)


def x_last_unload_after(r, start):
    """Minutes from ``start`` (a scale-in, a load change) to the last unload of the run."""
    return _summary_minus(r, "last_unload_minute", start)


def x_last_unload_minute(r):
    return _summary_minus(r, "last_unload_minute")


def _last_minutes_mean(r, col, last):
    """Each broker's mean ``col`` over the run's last ``last`` minutes."""
    b = r.brokers
    return b[b["minute"] >= b["minute"].max() - last + 1].groupby("broker")[col].mean()


def x_broker_share(r, broker, col="cpu", last=10, of="others_mean"):
    """``broker``'s mean ``col`` over the last minutes divided by the other brokers' mean."""
    b = _last_minutes_mean(r, col, last)
    return float(b[broker] / b.drop(broker).mean())


def x_is_least_used(r, broker, col="usage", last=10):
    return float(_last_minutes_mean(r, col, last).idxmin() == broker)


def x_is_most_loaded(r, broker, col="msg_rate", last=10):
    return float(_last_minutes_mean(r, col, last).idxmax() == broker)


def x_minutes_over(r, key, above, since=0):
    """Minutes from ``since`` on whose cluster ``key`` is above ``above``."""
    cl = r.cluster
    return float(((cl["minute"] >= since) & (cl[key] > above)).sum())


def x_cycles_with_unload(r, period=2, since=2):
    """Share of the ``period``-minute cycles from ``since`` on with at least one unload."""
    T = int(r.summary["minutes"])
    u = set(_unloads(r, since)["minute"].astype(int))
    n = hit = 0
    for start in range(since, T - period + 1, period):
        n += 1
        hit += any(m in u for m in range(start, start + period))
    return float(hit / n) if n else None


def x_broker_max(r, broker, col="cpu"):
    b = r.brokers
    return float(b.loc[b["broker"] == broker, col].max())


def x_assigns_of(r, since, namespace):
    ev = r.events
    a = ev[(ev["kind"] == "assign") & (ev["minute"] >= since) & ev["bundle"].astype(str).str.startswith(namespace + "/")]
    return a


def x_assign_count(r, since, namespace):
    return float(len(x_assigns_of(r, since, namespace)))


def x_assign_destinations(r, since, namespace):
    return float(x_assigns_of(r, since, namespace)["destination"].nunique())


def _episodes(r, since=0):
    """Unloads from minute ``since`` on grouped into episodes by source broker (a run of unloads from one
    broker, in time order): ``[(source, rows)]``."""
    u = _unloads(r, since)
    eps = []
    for _, row in u.iterrows():
        if eps and eps[-1][0] == row["broker"]:
            eps[-1][1].append(row)
        else:
            eps.append((row["broker"], [row]))
    return eps


def x_episode(r, since=0, index=0, what="count", broker=None):
    """The ``index``-th episode of unloads (a run of unloads from one broker): ``what`` = ``count`` (its
    unloads), ``hottest`` (1 if its source was the hottest broker the minute before it started),
    ``source`` (1 if its source is ``broker``), ``destinations`` (how many brokers received them),
    ``coolest_after`` (1 if its source is the least used
    broker two minutes after its last unload: over-unloading), ``to`` (1 if every one of its unloads
    went to ``broker``)."""
    eps = _episodes(r, since)
    if index >= len(eps):
        return None
    src, rows = eps[index]
    if what == "count":
        return float(len(rows))
    if what == "source":
        return float(src == broker)
    if what == "to":
        return float(all(row["destination"] == broker for row in rows))
    if what == "destinations":
        return float(len({row["destination"] for row in rows}))
    if what == "coolest_after":
        return float(_coolest_after(r, int(rows[-1]["minute"])) == src)
    before = _usage_at(r, int(rows[0]["minute"]) - 1)
    return float(before.idxmax() == src)


def x_episodes(r, since=0):
    return float(len(_episodes(r, since)))


def x_unload_span(r, since=0):
    """Minutes from the first unload (from ``since`` on) to the last one, both included."""
    u = _unloads(r, since)
    return float(u["minute"].max() - u["minute"].min() + 1) if len(u) else None


def x_source_ends_coolest(r, since=0):
    """1 when the first episode's source broker is the least used right after its episode (over-unloading)."""
    u = _unloads(r, since)
    if not len(u):
        return 0.0
    src = u.iloc[0]["broker"]
    streak_end = int(u[u["broker"] == src]["minute"].max())
    return float(_coolest_after(r, streak_end) == src)


# --- snapshot findings: one shedding cycle of the engine on a shipped sample (a worked example / a log)
def _over(cyc):
    return [v for v in cyc.shedding.verdicts if v.status == "over"]


def s_score(cyc, broker, scale=100.0):
    return float(cyc.shedding.scores[broker]) / scale


def s_line(cyc, name, scale=1.0):
    return float(cyc.shedding.lines[name]) / scale


def s_only_over(cyc, broker):
    """1 when ``broker`` is the only broker over the line (the one that sheds)."""
    return float([v.broker for v in _over(cyc)] == [broker])


def s_need_mb(cyc):
    o = _over(cyc)
    return float(o[0].need) / (1024 * 1024) if o else None


def s_left_mb(cyc):
    import re

    o = _over(cyc)
    m = re.search(r"left throughput ([0-9.,]+) MB/s", o[0].reason) if o else None
    return float(m.group(1).replace(",", "")) if m else None


def s_placement_score(cyc, broker, scale=100.0):
    return float(cyc.processed[0].placement.scores[broker]) / scale


def s_placement_line(cyc, name="average", scale=100.0):
    return float(cyc.processed[0].placement.lines[name]) / scale


def s_placement_random_all(cyc):
    """1 when the first placement drew at random among every broker ("all brokers are overloaded")."""
    p = cyc.processed[0].placement
    return float(bool(p.random) and len(p.best) == len(p.scores))


def s_msg_rate_spread(cyc):
    ln = cyc.shedding.lines
    return 100.0 * (ln["max msg rate"] - ln["min msg rate"]) / ln["min msg rate"]


EXTRACTORS: dict[str, Callable] = {
    "s_score": s_score, "s_line": s_line, "s_only_over": s_only_over, "s_need_mb": s_need_mb, "s_left_mb": s_left_mb,
    "s_placement_score": s_placement_score, "s_placement_line": s_placement_line,
    "s_placement_random_all": s_placement_random_all, "s_msg_rate_spread": s_msg_rate_spread,
    "summary": x_summary, "unloads": x_unloads, "unload_rounds": x_unload_rounds,
    "unloads_per_day": x_unloads_per_day, "settle_after": x_settle_after,
    "checks_until_unload": x_checks_until_unload, "usage_before_first_unload": x_usage_before_first_unload,
    "pairs_hottest_with_coolest": x_pairs_hottest_with_coolest, "pairs_hottest_with_new": x_pairs_hottest_with_new,
    "cluster_at": x_cluster_at, "cluster_max": x_cluster_max, "ratio_before_first_unload": x_ratio_before_first_unload,
    "last_unload_minute": x_last_unload_minute, "last_unload_after": x_last_unload_after, "broker_share": x_broker_share, "is_least_used": x_is_least_used, "is_most_loaded": x_is_most_loaded, "minutes_over": x_minutes_over,
    "cycles_with_unload": x_cycles_with_unload, "broker_max": x_broker_max, "assign_count": x_assign_count,
    "assign_destinations": x_assign_destinations, "episode": x_episode, "episodes": x_episodes, "unload_span": x_unload_span,
    "source_ends_coolest": x_source_ends_coolest,
}
