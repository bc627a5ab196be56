"""Predicted vs actual over a History range (the dataset side of :mod:`engine.agreement`).

What the cluster did, per UTC hour:

* **unloads** — the load manager's own counters written by ingest (``DATASET/_actions``,
  :func:`.dataset.actual_actions`): the increase of ``unload_bundle`` (``pulsar_lb_unload_bundle_count``
  / ``pulsar_lb_unload_bundle_total``; the modular leader adds its strategy's whole selection in
  ``updateBundleUnloadingMetrics``, as the replay counts every selected bundle); when a range has only the ELM's breakdown, the increase of
  ``unload_broker_breakdown`` with ``result="Success"`` (a transfer is an unload decision there).
  Without counters, the bundle ownership changes below are counted instead (said in the notes).
  Without a counter of unloaded bundles and without bundle metrics, the ``unload_broker`` counter
  (``pulsar_lb_unload_broker_count``: one per broker and cycle that unloaded at least one bundle) is
  compared with the engine's brokers shed per cycle (the unit says "brokers shed"); with none of these
  either, the refusal names the counters the range has and the ones it would need.
* **which brokers shed** — only when the dataset has bundle metrics (``pulsar_bundle_*``): a bundle's
  series is exported by its owner, so a bundle whose ``broker`` changes between two minutes moved
  off that broker (:func:`ownership_moves`; a bundle reported by two brokers in one minute is in a
  hand-over and skipped that minute; a move off a broker absent in the later minute is a broker
  that left, not an unload). Counters alone do not say who shed: the ELM's ``broker`` label is the
  *leader* that decided, not the broker that shed.

What the engine predicts: the History backtest (:func:`.jobs.run_job` ``"backtest"`` — the engine's own
strategy minute by minute, state carried over, :mod:`engine.backtest`; cached, pandas or Spark) with
the cluster's ``broker.conf``; one event per broker and shedding minute, ``n_bundles`` unloads each.
A broker counts as present in a minute when it reports at least one bundle there (for telling a
broker that left from a shed).

Departures: the replay runs the shedding strategies of the modular load manager (the registry's,
:func:`engine.backtest.shedding_strategies`); a ``broker.conf`` naming another (the extensible load
manager's TransferShedder) is refused with the reason — compare those on a timeline
(``python -m engine replay TIMELINE --observed``). The first sample of a counter is its baseline, so
the first hour of a range may count fewer unloads.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from engine.agreement import HOUR_MS, Agreement, compare
from engine.config import LoadBalancerConfig, parse_broker_conf, release_defaults
from engine.errors import InputError, UsageError

from .dataset import actual_actions, read_long, read_meta, wide_bundles

__all__ = ["history_agreement", "ownership_moves", "observed_unloads", "timeline_from_bytes", "page_agreement"]

MAX_CONF_CHARS = 512 * 1024
PAGE_MAX_DAYS = 7  # the page compares synchronously (pandas); longer ranges: the command line (Spark)


def _ms(col) -> np.ndarray:
    return pd.to_datetime(col).to_numpy().astype("datetime64[ms]").astype(np.int64)


def ownership_moves(bundle_wide: pd.DataFrame, broker_wide: pd.DataFrame, notes: list | None = None) -> pd.DataFrame:
    """Bundle owner changes between consecutive minutes of a bundle: ``time`` (epoch ms of the earlier
    minute), ``bundle``, ``broker`` (old owner), ``destination``."""
    notes = notes if notes is not None else []
    cols = ["time", "bundle", "broker", "destination"]
    if bundle_wide is None or bundle_wide.empty:
        return pd.DataFrame(columns=cols)
    k = pd.DataFrame({"t": _ms(bundle_wide["timestamp"]), "bundle": bundle_wide["bundle"].astype(str),
                      "broker": bundle_wide["broker"].astype(str)})
    n = k.groupby(["t", "bundle"])["broker"].transform("size")
    if (n > 1).any():
        notes.append(f"{int((n > 1).sum())} bundle-minute(s) reported by two brokers (hand-over): skipped")
    k = k[n == 1].sort_values(["bundle", "t"], kind="stable").reset_index(drop=True)
    same = k["bundle"].to_numpy()[1:] == k["bundle"].to_numpy()[:-1]
    changed = same & (k["broker"].to_numpy()[1:] != k["broker"].to_numpy()[:-1])
    idx = np.flatnonzero(changed)
    mv = pd.DataFrame({"time": k["t"].to_numpy()[idx], "bundle": k["bundle"].to_numpy()[idx],
                       "broker": k["broker"].to_numpy()[idx], "destination": k["broker"].to_numpy()[idx + 1],
                       "later": k["t"].to_numpy()[idx + 1]})
    if mv.empty:
        return pd.DataFrame(columns=cols)
    present = set(zip(_ms(broker_wide["timestamp"]), broker_wide["broker"].astype(str)))
    stays = np.array([(t, b) in present for t, b in zip(mv["later"], mv["broker"])], dtype=bool)
    if (~stays).any():
        notes.append(f"{int((~stays).sum())} bundle(s) changed owner because their broker left: re-assignments, "
                     "not counted as unloads")
    return mv[stays][cols].reset_index(drop=True)


def observed_unloads(actions: pd.DataFrame) -> tuple[pd.DataFrame, str | None]:
    """``(hour epoch ms, unloads)`` per hour from the counters, and the counter used (None: no counter)."""
    if actions is None or actions.empty:
        return pd.DataFrame(columns=["hour", "unloads"]), None
    a = actions[actions["counter"] == "unload_bundle"]
    used = "unload_bundle"
    if a.empty:
        a = actions[(actions["counter"] == "unload_broker_breakdown") & (actions["result"] == "Success")]
        used = "unload_broker_breakdown{result=Success}"
    if a.empty:
        return pd.DataFrame(columns=["hour", "unloads"]), None
    h = pd.DataFrame({"hour": _ms(a["hour"]), "unloads": a["increase"].astype(float).to_numpy()})
    return h.groupby("hour", as_index=False)["unloads"].sum(), used


_UNLOAD_BUNDLE = "pulsar_lb_unload_bundle_count / pulsar_lb_unload_bundle_total"
#: counter -> the Prometheus names it is ingested from (``.ingest.COUNTER_ALIASES``)
_COUNTER_NAMES = {"unload_bundle": _UNLOAD_BUNDLE,
                  "unload_broker": "pulsar_lb_unload_broker_count / pulsar_lb_unload_broker_total",
                  "unload_broker_breakdown{result=Success}": "pulsar_lb_unload_broker_breakdown_total"}


def observed_broker_sheds(actions: pd.DataFrame, dataset) -> tuple[pd.DataFrame, str]:
    """``(hour epoch ms, brokers shed)`` per hour from the ``unload_broker`` counter, for a range without
    a counter of unloaded bundles and without bundle metrics; :class:`InputError` naming the counters
    the range has and the ones it would need when it has none of them either."""
    a = actions[actions["counter"] == "unload_broker"] if actions is not None and len(actions) else None
    if a is None or a.empty:
        have = sorted(set(actions["counter"])) if actions is not None and len(actions) else []
        need = "; ".join(f"{k} ({v})" for k, v in _COUNTER_NAMES.items())
        raise InputError((f"the range has the load manager's counters {', '.join(have)} but none that counts "
                          if have else "the range has none of the load manager's counters ")
                         + f"unloads — it needs one of: {need} (ingest them from Prometheus) — nor bundle metrics "
                         "(pulsar_bundle_*): nothing observed to compare with", source=str(dataset))
    h = pd.DataFrame({"hour": _ms(a["hour"]), "unloads": a["increase"].astype(float).to_numpy()})
    return h.groupby("hour", as_index=False)["unloads"].sum(), "unload_broker"


def _config(conf_text: str | None, config: LoadBalancerConfig | None, source: str,
            pulsar_version: str | None = None) -> LoadBalancerConfig:
    """The config compared: ``broker.conf`` text over the defaults of ``pulsar_version``'s release (the
    default release when ``None``), or ``config``."""
    if conf_text is not None:
        if len(conf_text) > MAX_CONF_CHARS:
            raise InputError(f"broker.conf larger than {MAX_CONF_CHARS // 1024} KiB", source=source)
        return parse_broker_conf(conf_text, base=release_defaults(pulsar_version), source=source).config
    if config is not None:
        return config
    return release_defaults(pulsar_version)


def history_agreement(dataset, start=None, end=None, *, conf_text: str | None = None,
                      config: LoadBalancerConfig | None = None, conf_source: str = "broker.conf",
                      engine: str = "auto", max_days: float | None = None, use_cache: bool = True,
                      pulsar_version: str | None = None) -> Agreement:
    """Predicted vs actual for ``[start, end]`` of a dataset, the engine run with ``conf_text`` (the
    cluster's ``broker.conf``) or ``config``. The prediction is the History backtest job
    (:func:`.jobs.run_job`, cached; ``engine`` ``auto`` = pandas for small ranges, Spark for big
    ones). ``max_days`` bounds the range (the page's synchronous comparison). ``pulsar_version``: the
    release decided as (its defaults under ``conf_text``)."""
    from engine.backtest import backtest_spec, shedding_strategies
    from engine.config import to_broker_conf
    from engine.strategies import shedding_name

    from .dataset import parse_time, resolve_dataset
    from .jobs import run_job

    dataset = resolve_dataset(dataset)
    cfg = _config(conf_text, config, conf_source, pulsar_version)
    name = shedding_name(cfg.loadBalancerLoadSheddingStrategy)
    try:
        backtest_spec(name)
    except UsageError:
        raise UsageError(f"{conf_source}: loadBalancerLoadSheddingStrategy is {name}; the History replay runs "
                         f"{', '.join(shedding_strategies())} — compare {name} on a timeline of snapshots "
                         "(python -m engine replay TIMELINE --observed)") from None
    meta = read_meta(dataset)
    t0 = parse_time(start) or parse_time(meta.get("start"))
    t1 = parse_time(end, end=True) or parse_time(meta.get("end"))
    if max_days is not None and t0 is not None and t1 is not None and (t1 - t0) > pd.Timedelta(days=max_days):
        raise UsageError(f"the range spans {(t1 - t0).total_seconds() / 86400:.1f} days; the page compares up to "
                         f"{max_days:g} — narrow the range, or run python -m dashboard.history agreement")
    notes: list = []
    actions = actual_actions(dataset, start, end)
    obs_hours, used = observed_unloads(actions)
    moves = None
    if meta.get("has_bundles"):
        kw = wide_bundles(read_long(dataset, start, end, bundles=True))
        if len(kw):
            alive = kw[["timestamp", "broker"]].drop_duplicates()  # a broker reporting bundles is present
            moves = ownership_moves(kw, alive, notes)
        del kw
    unit = "unloads"
    if used is None and moves is None:
        obs_hours, used = observed_broker_sheds(actions, dataset)
        unit = "brokers shed"
        notes.append(f"the range has no unload_bundle counter ({_UNLOAD_BUNDLE}) and no bundle metrics: compared "
                     "per hour are the brokers shed — the cluster's unload_broker counter (one per broker and "
                     "cycle with at least one bundle unloaded) against the engine's brokers shed per cycle")
    elif used is None:
        notes.append("no unload counters in the range: observed unloads are the bundle ownership changes")
        obs_hours = pd.DataFrame({"hour": (moves["time"].astype("int64") // HOUR_MS) * HOUR_MS, "unloads": 1.0})
    else:
        notes.append(f"observed unloads per hour: the increase of the {used} counter")
    obs_brokers = None
    if moves is not None:
        obs_brokers = pd.DataFrame({"hour": (moves["time"].astype("int64") // HOUR_MS) * HOUR_MS,
                                    "broker": moves["broker"]}).drop_duplicates()
    else:
        notes.append("predicted bundles are synthetic (no bundle metrics): only counts compare")
    values = dict(line.split("=", 1) for line in to_broker_conf(cfg).splitlines() if "=" in line)
    values["pulsarVersion"] = cfg.pulsarVersion
    res = run_job("backtest", dataset, {"start": start, "end": end, "strategy": name, "set": values,
                                        "bundles": "auto"}, engine=engine, use_cache=use_cache)
    ev = res["events"]
    t = _ms(ev["timestamp"]) if len(ev) else np.zeros(0, dtype=np.int64)
    ph = (t // HOUR_MS) * HOUR_MS
    pred_hours = pd.DataFrame({"hour": ph, "unloads": (ev["n_bundles"].astype(float).to_numpy() if unit == "unloads"
                                                      else np.ones(len(ev)))})
    pred_brokers = pd.DataFrame({"hour": ph, "broker": ev["broker"].astype(str).to_numpy()}).drop_duplicates()
    cycles = actions[actions["counter"] == "unload_broker"]["increase"].sum() if len(actions) else 0.0
    if cycles and unit == "unloads":
        # updateBundleUnloadingMetrics adds the number of brokers of each cycle's selection
        notes.append(f"brokers shed, summed over the shedding cycles: the cluster {float(cycles):g} "
                     f"(unload_broker counter), the engine {len(ev)}")
    label = f"{meta.get('name') or dataset} {str(start or meta.get('start'))[:16]} … {str(end or meta.get('end'))[:16]}"
    return compare(pred_hours, obs_hours, pred_brokers=pred_brokers, obs_brokers=obs_brokers, source=label,
                   strategy=name, notes=notes, unit=unit)

def timeline_from_bytes(raw: bytes, source: str) -> list:
    """A timeline upload: a JSON list of LoadData snapshots, ``{"snapshots": [...]}`` or JSON lines (one
    snapshot per line) — the file layouts :func:`engine.io.load_timeline` reads."""
    import json

    from engine.io import MAX_INPUT_BYTES, load_data_from_json, read_json_bytes

    if len(raw) > MAX_INPUT_BYTES:
        raise InputError("the timeline is larger than the input size limit", source=source)
    try:
        obj = read_json_bytes(raw, source)
    except InputError:
        snaps = []
        for i, line in enumerate(raw.decode("utf-8", "replace").splitlines(), 1):
            if line.strip():
                try:
                    snaps.append(load_data_from_json(json.loads(line), f"{source}:{i}"))
                except ValueError as exc:
                    raise InputError(f"line {i} is not JSON ({exc})", source=source) from None
        if not snaps:
            raise
        return snaps
    if isinstance(obj, dict) and "snapshots" in obj:
        obj = obj["snapshots"]
    if not isinstance(obj, list):
        raise InputError("a timeline is a JSON list of LoadData snapshots (or JSON lines, one per line)",
                         source=source)
    return [load_data_from_json(x, f"{source}[{i}]") for i, x in enumerate(obj)]


def page_agreement(dataset, start, end, conf_contents=None, conf_name=None, timeline_contents=None,
                   timeline_name=None) -> tuple[Agreement, str]:
    """The History page's comparison: ``(agreement, broker.conf text)``. With a timeline upload, the
    timeline is compared (:func:`engine.agreement.compare_timeline`, the engine's ``replay``); else the
    dataset's range with its counters (:func:`history_agreement`)."""
    from dashboard.uploads import decode_data_url

    conf_text = ""
    conf_label = str(conf_name or "broker.conf")
    if conf_contents:
        raw = decode_data_url(conf_contents, conf_label, MAX_CONF_CHARS)
        try:
            conf_text = raw.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise InputError("not UTF-8 text", source=conf_label) from None
    if timeline_contents:
        from engine.agreement import compare_timeline
        from engine.cli.replay import replay_timeline
        from engine.io import MAX_INPUT_BYTES

        label = str(timeline_name or "timeline")
        snaps = timeline_from_bytes(decode_data_url(timeline_contents, label, MAX_INPUT_BYTES), label)
        if len(snaps) > 5000:
            raise InputError("more than 5000 snapshots: replay it with python -m engine replay --observed",
                             source=label)
        cfg = _config(conf_text, None, conf_label)
        lm, cycles, _ = replay_timeline(snaps, cfg, 0)
        return compare_timeline(snaps, cycles, source=label, strategy=lm.shedding.name), conf_text
    if not dataset:
        raise InputError("choose a dataset or upload a timeline")
    from .dataset import dataset_by_name

    dataset = dataset_by_name(dataset)  # a browser value: a dataset name under the history roots, never a path
    return history_agreement(dataset, start, end, conf_text=conf_text, conf_source=conf_label, engine="pandas",
                             max_days=PAGE_MAX_DAYS), conf_text
