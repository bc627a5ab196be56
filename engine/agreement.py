"""Predicted vs actual: what the cluster did against what the engine, run with the cluster's own
``broker.conf``, predicts — and one agreement figure. Pure pandas/numpy.

Two sources of "what the cluster did":

* **A timeline of snapshots** (:func:`engine.io.load_timeline`). A bundle's owner in a snapshot is the
  one broker listing it in its load report's ``bundles`` (:meth:`engine.model.LoadData.owners`; a
  bundle listed by two brokers is in the middle of a hand-over and has no owner in that snapshot);
  in an Extensible Load Manager snapshot, the state channel's owner, else the broker whose top-K
  report lists it (a bundle leaving the top-K lists counts as disappeared, not as moved).
  An **observed move** is a bundle owned by broker A in snapshot *t* and by broker B ≠ A in the next
  snapshot that has an owner for it (:func:`observed_moves`). Not counted as moves (and counted in
  the notes): bundles whose old owner is gone from the later snapshot (a broker that left: its bundles
  are re-assigned, not shed), bundles that disappear (split, namespace deleted) or appear.
  The engine replays the same timeline (``python -m engine replay``: one ``doLoadShedding`` cycle per
  snapshot, strategy state carried over); the unloads of the cycle at snapshot *t* are its prediction
  for the interval *t → t+1* (:func:`predicted_moves`). The last snapshot's cycle has nothing to be
  compared with and is left out.
* **The load manager's counters** in a History dataset (``pulsar_lb_unload_bundle_count`` /
  ``..._total``, the ELM's ``pulsar_lb_unload_broker_breakdown_total{result="Success"}``): unloads per
  hour; which brokers shed only when the dataset has bundle metrics (their ``broker`` moves with the
  bundle's owner). See :mod:`dashboard.history.predicted`.

Agreement (what the number means)
---------------------------------
Both sides are reduced to *actions*:

* with known bundles on both sides (a timeline): the set of ``(interval, bundle)`` unloads;
* with counters only: the multiset of unloads per hour (hour *h* holding *n_h* unloads).

**agreement** = the Jaccard index of the two: ``|predicted ∩ observed| / |predicted ∪ observed|``;
for counts per hour that is ``Σ_h min(p_h, o_h) / Σ_h max(p_h, o_h)``. It is 100 % exactly when the
engine predicted every action the cluster took and nothing else; 0 % when no action matches. Both
sides empty (nothing predicted, nothing done) is 100 %.

Beside it, per hour (UTC): **unloads** predicted and observed, and **which brokers shed** — the sets
of ``(hour, broker)`` with at least one unload — summarised as *precision* (share of the predicted
shedding brokers that really shed) and *recall* (share of the real shedding brokers the engine
predicted); ``None`` when the denominator is empty. The count agreement ``Σmin/Σmax`` of unloads per
hour is given for timelines too (it forgives picking another bundle of the right broker).

Departure from Pulsar, said plainly: Pulsar does not record which cycle issued an unload; the
alignment by interval (timeline) or by hour (counters) is Shedlab's. An unload the leader issued a
snapshot later than the engine predicts it counts as one miss each way in the agreement (the count
agreement per hour forgives it). The replayed strategy's memory (recently unloaded bundles, hit
counters) follows the engine's own decisions, as a leader's does, not the cluster's.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

__all__ = ["MOVE_COLUMNS", "HOUR_MS", "Agreement", "observed_moves", "predicted_moves", "compare",
           "compare_timeline", "agreement_text", "moves_frame"]

MOVE_COLUMNS = ["time", "bundle", "broker", "destination"]
HOUR_MS = 3_600_000


def moves_frame(rows) -> pd.DataFrame:
    """Rows ``(time ms, bundle, broker, destination)`` as a frame with :data:`MOVE_COLUMNS`."""
    df = pd.DataFrame(list(rows), columns=MOVE_COLUMNS)
    df["time"] = df["time"].astype("int64")
    for c in ("bundle", "broker", "destination"):
        df[c] = df[c].astype(object)
    return df


def _single_owner(ld) -> dict:
    """bundle -> its one owner. A modular ``LoadData`` lists the brokers reporting each bundle (two
    during a hand-over: no owner then); an extensible snapshot gives one owner per bundle (the
    state channel's, else the top-K lists')."""
    out = {}
    for b, owners in ld.owners().items():
        if isinstance(owners, str):
            out[b] = owners
        elif len(owners) == 1:
            out[b] = owners[0]
    return out


def observed_moves(snaps, notes: list | None = None) -> pd.DataFrame:
    """Ownership changes between consecutive snapshots (module docstring); ``time`` is the earlier
    snapshot's time (the interval the move happened in)."""
    notes = notes if notes is not None else []
    rows, departed, vanished, handover = [], 0, 0, 0
    last: dict = {}  # bundle -> (owner, snapshot index) of the latest snapshot that had one
    for i, ld in enumerate(snaps):
        own = _single_owner(ld)
        listed = set(ld.owners())
        handover += len(listed) - len(own)
        brokers = set(ld.brokers)
        if i:
            for b, (owner, j) in last.items():
                if b not in listed:
                    vanished += 1
                    continue
                new = own.get(b)
                if new is None or new == owner:
                    continue
                if owner not in brokers:
                    departed += 1
                    continue
                rows.append((int(snaps[j].now), b, owner, new))
        for b in [b for b in last if b not in listed]:
            del last[b]
        last.update({b: (o, i) for b, o in own.items()})
    if departed:
        notes.append(f"{departed} bundle(s) changed owner because their broker left: re-assignments, not counted "
                     "as unloads")
    if vanished:
        notes.append(f"{vanished} bundle(s) disappeared between snapshots (split or deleted): not counted")
    if handover:
        notes.append(f"{handover} time(s) a bundle was listed by two brokers (hand-over in progress): its owner "
                     "is taken from the next snapshot")
    return moves_frame(rows)


def predicted_moves(cycles, last_time: int | None = None) -> pd.DataFrame:
    """The unloads the engine issued, one row per unload, ``time`` = its cycle's time. Cycles at or
    after ``last_time`` (the last snapshot: nothing observed after it) are left out."""
    rows = []
    for c in cycles:
        if last_time is not None and int(c.now_ms) >= int(last_time):
            continue
        for u in c.unloads:
            rows.append((int(c.now_ms), u.bundle, u.broker, u.destination))
    return moves_frame(rows)


@dataclass
class Agreement:
    """The comparison. ``hours``: one row per UTC hour (``hour`` Timestamp, ``predicted``,
    ``observed`` unloads, ``predicted_brokers`` / ``observed_brokers`` / ``both_brokers`` as sorted
    lists); ``moves`` (timelines): every unload of either side with ``status`` = ``both``,
    ``predicted only`` or ``observed only``; ``metrics``: ``agreement``, ``basis``,
    ``count_agreement``, ``broker_precision``, ``broker_recall``, ``bundle_precision``,
    ``bundle_recall``, totals."""

    hours: pd.DataFrame
    moves: pd.DataFrame | None
    metrics: dict
    notes: list = field(default_factory=list)
    source: str = ""
    strategy: str = ""

    def to_json(self) -> dict:
        h = self.hours.copy()
        h["hour"] = h["hour"].dt.strftime("%Y-%m-%dT%H:00Z")
        out = {"source": self.source, "strategy": self.strategy, "metrics": self.metrics, "notes": list(self.notes),
               "hours": h.to_dict("records")}
        if self.moves is not None:
            m = self.moves.copy()
            m["time"] = pd.to_datetime(m["time"], unit="ms").dt.strftime("%Y-%m-%dT%H:%M:%SZ")
            out["moves"] = [{k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in r.items()}
                            for r in m.to_dict("records")]
        return out


def _ratio(num: float, den: float):
    return None if den == 0 else float(num) / float(den)


def _jaccard(inter: float, union: float) -> float:
    return 1.0 if union == 0 else float(inter) / float(union)


def _hour(ms) -> np.ndarray:
    return (np.asarray(ms, dtype=np.int64) // HOUR_MS) * HOUR_MS


def compare(pred_hours: pd.DataFrame, obs_hours: pd.DataFrame, *, pred_brokers: pd.DataFrame | None = None,
            obs_brokers: pd.DataFrame | None = None, moves: tuple | None = None, source: str = "",
            strategy: str = "", notes=(), unit: str = "unloads") -> Agreement:
    """The general comparison.

    ``pred_hours`` / ``obs_hours``: columns ``hour`` (epoch ms, start of the hour) and ``unloads``;
    ``pred_brokers`` / ``obs_brokers``: ``hour``, ``broker`` rows of brokers that shed in that hour
    (``obs_brokers=None``: the source does not say who shed — broker precision/recall are ``None``);
    ``moves``: ``(predicted, observed)`` move frames when both sides know the bundles (the agreement is
    then their ``(interval, bundle)`` Jaccard index, else the per-hour count Jaccard index). ``unit``:
    what the per-hour counts count (``"unloads"``, or ``"brokers shed"`` when only the cluster's
    ``unload_broker`` counter observed it); in ``metrics["unit"]``."""
    notes = list(notes)
    ph = pred_hours.groupby("hour")["unloads"].sum() if len(pred_hours) else pd.Series(dtype=float)
    oh = obs_hours.groupby("hour")["unloads"].sum() if len(obs_hours) else pd.Series(dtype=float)
    hours = sorted(set(ph.index.astype("int64")) | set(oh.index.astype("int64")))
    p = np.array([float(ph.get(h, 0.0)) for h in hours])
    o = np.array([float(oh.get(h, 0.0)) for h in hours])
    count_agreement = _jaccard(np.minimum(p, o).sum(), np.maximum(p, o).sum())

    def by_hour(df):
        out: dict = {}
        if df is not None:
            for h, b in zip(df["hour"].astype("int64"), df["broker"]):
                out.setdefault(int(h), set()).add(b)
        return out

    pb, ob = by_hour(pred_brokers), by_hour(obs_brokers)
    hours = sorted(set(hours) | set(pb) | set(ob))
    p = np.array([float(ph.get(h, 0.0)) for h in hours])
    o = np.array([float(oh.get(h, 0.0)) for h in hours])
    table = pd.DataFrame({
        "hour": pd.to_datetime(np.asarray(hours, dtype=np.int64), unit="ms"),
        "predicted": p, "observed": o,
        "predicted_brokers": [sorted(pb.get(h, ())) for h in hours],
        "observed_brokers": [sorted(ob.get(h, ())) if obs_brokers is not None else None for h in hours],
        "both_brokers": [sorted(pb.get(h, set()) & ob.get(h, set())) if obs_brokers is not None else None
                         for h in hours],
    })
    n_pb = sum(len(v) for v in pb.values())
    metrics = {"predicted_unloads": float(p.sum()), "observed_unloads": float(o.sum()), "hours": len(hours),
               "count_agreement": count_agreement, "broker_precision": None, "broker_recall": None,
               "bundle_precision": None, "bundle_recall": None, "unit": unit}
    if obs_brokers is not None:
        n_ob = sum(len(v) for v in ob.values())
        both = sum(len(pb.get(h, set()) & ob.get(h, set())) for h in hours)
        metrics.update(broker_precision=_ratio(both, n_pb), broker_recall=_ratio(both, n_ob),
                       predicted_shedding=n_pb, observed_shedding=n_ob, both_shedding=both)
    else:
        notes.append("the counters do not say which brokers shed (the dataset has no bundle metrics): broker "
                     "precision/recall are not available")
    move_table = None
    if moves is not None:
        pm, om = moves
        pk = set(zip(pm["time"].astype("int64"), pm["bundle"]))
        ok = set(zip(om["time"].astype("int64"), om["bundle"]))
        inter = pk & ok
        metrics.update(agreement=_jaccard(len(inter), len(pk | ok)), basis="(interval, bundle) unloads",
                       bundle_precision=_ratio(len(inter), len(pk)), bundle_recall=_ratio(len(inter), len(ok)))
        a = pm.rename(columns={"destination": "predicted_destination"})
        b = om.rename(columns={"broker": "observed_broker", "destination": "observed_destination"})
        move_table = a.merge(b, on=["time", "bundle"], how="outer", indicator=True)
        move_table["status"] = move_table["_merge"].map({"both": "both", "left_only": "predicted only",
                                                         "right_only": "observed only"}).astype(object)
        move_table["broker"] = move_table["broker"].where(move_table["broker"].notna(),
                                                          move_table["observed_broker"])
        move_table = move_table.drop(columns=["_merge", "observed_broker"]).sort_values(
            ["time", "bundle"], kind="stable").reset_index(drop=True)
        move_table = move_table[["time", "bundle", "broker", "predicted_destination", "observed_destination",
                                 "status"]].astype({"time": "int64"})
    else:
        metrics.update(agreement=count_agreement, basis=f"{unit} per hour (counts)")
    return Agreement(table, move_table, metrics, notes, source, strategy)


def _hours_of(moves: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    h = _hour(moves["time"].to_numpy()) if len(moves) else np.zeros(0, dtype=np.int64)
    counts = pd.DataFrame({"hour": h, "unloads": 1.0})
    brokers = pd.DataFrame({"hour": h, "broker": moves["broker"].to_numpy()}).drop_duplicates()
    return counts, brokers


def compare_timeline(snaps, cycles, *, source: str = "", strategy: str = "") -> Agreement:
    """Observed moves of ``snaps`` against the unloads of ``cycles`` (one cycle per snapshot, from the
    engine's replay of the same timeline)."""
    from .errors import InputError

    if len(snaps) < 2:
        raise InputError("a timeline needs at least two snapshots to observe ownership changes", source=source)
    notes: list = []
    obs = observed_moves(snaps, notes)
    pred = predicted_moves(cycles, last_time=int(snaps[-1].now))
    if len({int(s.now) for s in snaps}) < len(snaps):
        notes.append("some snapshots share a time: their intervals merge")
    pc, pb = _hours_of(pred)
    oc, ob = _hours_of(obs)
    return compare(pc, oc, pred_brokers=pb, obs_brokers=ob, moves=(pred, obs), source=source, strategy=strategy,
                   notes=notes)


def _pct(x) -> str:
    return "n/a" if x is None else f"{100.0 * x:.0f} %"


def agreement_text(ag: Agreement, limit: int = 40) -> str:
    """The comparison as plain text (the command lines print it)."""
    m = ag.metrics
    lines = [f"predicted vs actual — {ag.source}" + (f" ({ag.strategy})" if ag.strategy else ""),
             f"agreement {_pct(m['agreement'])} ({m['basis']}); {m.get('unit', 'unloads')} predicted "
             f"{m['predicted_unloads']:g}, "
             f"observed {m['observed_unloads']:g}, count agreement {_pct(m['count_agreement'])}",
             f"shedding brokers per hour: precision {_pct(m['broker_precision'])}, recall {_pct(m['broker_recall'])}"]
    if m.get("bundle_precision") is not None or m.get("bundle_recall") is not None:
        lines.append(f"bundles: precision {_pct(m['bundle_precision'])}, recall {_pct(m['bundle_recall'])}")
    lines.append("")
    lines.append(f"{'hour (UTC)':<17} {'predicted':>9} {'observed':>9}  shedding brokers predicted | observed")
    for r in ag.hours.itertuples():
        ob = "?" if r.observed_brokers is None else ", ".join(r.observed_brokers) or "-"
        lines.append(f"{r.hour:%Y-%m-%d %H:00} {r.predicted:>9g} {r.observed:>9g}  "
                     f"{', '.join(r.predicted_brokers) or '-'} | {ob}")
    if ag.moves is not None and len(ag.moves):
        lines.append("")
        lines.append("unloads (time of the earlier snapshot): bundle  from  → predicted / observed destination")
        for r in ag.moves.head(limit).itertuples():
            t = pd.Timestamp(int(r.time), unit="ms")
            pd_ = r.predicted_destination if isinstance(r.predicted_destination, str) else "-"
            od = r.observed_destination if isinstance(r.observed_destination, str) else "-"
            lines.append(f"  {t:%Y-%m-%d %H:%M} {r.status:<14} {r.bundle}  {r.broker} → {pd_} / {od}")
        if len(ag.moves) > limit:
            lines.append(f"  … {len(ag.moves) - limit} more")
    for n in ag.notes:
        lines.append(f"note: {n}")
    return "\n".join(lines)
