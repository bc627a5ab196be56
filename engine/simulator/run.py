"""The time-stepped cluster simulation (one tick = one minute).

Each minute, in this order (``pulsar-load-balancing.md`` §3):

1. **Events** of the minute: brokers join or leave (graceful shutdown or crash), CPU spikes,
   config changes (traffic steps are part of the precomputed traffic).
2. **Traffic**: every bundle's msg/s and bytes/s in and out (workload patterns × per-bundle noise),
   served by its current owner; every broker's real CPU, NIC, direct-memory and heap usage.
3. **Load reports**: a broker writes its report (``LocalBrokerData``) when
   ``needBrokerDataUpdate()`` says so — a change of msg rate, throughput, bundle count or weighted
   usage above ``loadBalancerReportUpdateThresholdPercentage`` since its last *written* report, or
   ``loadBalancerReportUpdateMaxIntervalMinutes`` elapsed. Unwritten changes stay invisible to the
   leader (a broker that just lost a bundle may keep reporting it).
4. **Leader ``updateAll``**: once per written report, per broker joining or leaving, and per
   ``loadBalancerResourceQuotaUpdateIntervalMinutes`` tick; each call advances every reported
   bundle's short-term (10 samples) and long-term (1000 samples) averages by one sample; bundles no
   report lists are forgotten; preallocations seen in a report are dropped.
5. **Auto split** (only when ``loadBalancerAutoBundleSplitEnabled``): ``BundleSplitterTask`` on the
   written reports and long-term averages, split with the default algorithm, children unloaded when
   ``loadBalancerAutoUnloadSplitBundlesEnabled``.
6. **Lookups**: unowned bundles (cluster start, a broker gone, split children) are placed by
   ``selectBrokerForAssignment`` (placement strategy + preallocation).
7. **Shedding** every ``loadBalancerSheddingIntervalMinutes``: ``doLoadShedding``; each unloaded
   bundle is served by its destination from the next minute (after a short unavailability) and sits
   in the grace period.
8. **Metrics** of the minute are recorded.

A leader with an ``on_reports`` hook (the Extensible Load Manager's,
:mod:`engine.extensible.sim_leader`) also gets, right after step 3, what every running broker
measured that minute (:class:`~engine.simulator.leader.BrokerReports`): its brokers keep their own
load data (an EMA advanced every 5 s report) and publish it when their report is written.

Simplifications (documented in ``docs/scenarios.md``): all report writes of one minute reach the
leader together (Pulsar spreads them over the minute's 5-second ticks); a bundle's four traffic
values share one noise factor per minute; CPU is capped at 100 %.
"""
from __future__ import annotations

import time as _time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pandas as pd

from ..bundles import auto_split_from_config, bundle_indices, initial_boundaries, split_from_config, topic_hashes
from ..config import LoadBalancerConfig
from ..errors import InputError
from ..javacompat import java_map_rank, percent_usage_array
from ..model import is_sla_or_heartbeat_namespace
from ..strategies import placement_name, shedding_name
from ..view import BrokerInfo, LoadView
from .leader import BrokerReports, Leader, make_leader
from .metrics import build_tables
from .scenario import Scenario, expand_events, load_scenario, parse_scenario
from .traffic import topic_names, topic_rates, workload_series

__all__ = ["simulate", "run_scenario", "SimulationResult", "Simulation", "EPOCH_MS"]

MIB = 1024.0 * 1024.0
#: simulated minute 0 (2025-12-06T05:46:40Z, the engine's fixed "now")
EPOCH_MS = 1_765_000_000_000
_MIN = 60_000
_INFO = BrokerInfo()


@dataclass
class SimulationResult:
    """Everything a run produced.

    Attributes
    ----------
    events : pandas.DataFrame
        Tidy event log, one row per event, in time order: ``minute, time, kind, broker, bundle,
        destination, reason, placement, random, from_plan, bad_placement, dest_usage, avg_usage,
        src_score, dst_score, score_unit, msg_rate, throughput, unavailable_s, scores,
        placement_scores, cycle``. Kinds: ``unload``, ``unload-skipped``, ``assign``, ``split``,
        ``broker-added``, ``broker-removed``, ``leader-change``, ``config-change``, ``cpu``,
        ``check`` (one per shedding run, with its reason). ``scores`` / ``placement_scores`` are JSON
        strings ``{broker: score}``.
    brokers : pandas.DataFrame
        One row per minute and running broker: real ``cpu, bandwidth_in, bandwidth_out,
        direct_memory, memory, usage`` (%; ``usage`` = weighted max with the config weights),
        ``reported_usage`` (what its last written report says), ``score`` (what the shedding strategy
        compared at that minute's check; NaN without a check), ``msg_rate, throughput`` (in + out,
        real), ``bundles``, ``wrote_report``.
    cluster : pandas.DataFrame
        One row per minute: ``brokers, msg_rate, throughput, msg_rate_ratio, throughput_ratio,
        cpu_max, cpu_min, cpu_range, usage_mean, usage_std, usage_range, score_gap, unloads,
        unloads_total, bad_placements, assigns, splits`` (+ ``load_std, target_std`` when the leader is
        the Extensible Load Manager's, see :mod:`engine.simulator.metrics`).
    summary : dict
        One row of numbers for the whole run (see :func:`engine.simulator.metrics.summarize`).
    """

    scenario: Scenario
    config: LoadBalancerConfig
    seed: int
    minutes: int
    events: pd.DataFrame
    brokers: pd.DataFrame
    cluster: pd.DataFrame
    summary: dict
    leader_state: dict = field(default_factory=dict)
    cancelled: bool = False
    elapsed_s: float = 0.0

    def summary_frame(self) -> pd.DataFrame:
        """The summary as a one-row DataFrame."""
        return pd.DataFrame([self.summary])

    def broker_averages(self, last: int = 10) -> dict:
        """Per broker running at the end: cpu, msg_rate, throughput, bundles averaged over the last
        ``last`` minutes."""
        b = self.brokers
        if b.empty:
            return {}
        end = int(b["minute"].max())
        alive = set(b.loc[b["minute"] == end, "broker"])
        tail = b[(b["minute"] > end - last) & b["broker"].isin(alive)]
        g = tail.groupby("broker", sort=True)
        out = {}
        for bid, df in g:
            out[bid] = {"cpu": float(df["cpu"].mean()), "usage": float(df["usage"].mean()),
                        "msg_rate": float(df["msg_rate"].mean()), "throughput": float(df["throughput"].mean()),
                        "bundles": int(round(float(df["bundles"].iloc[-1])))}
        return out

    def to_json(self, *, events: str = "decisions") -> dict:
        """The command line's JSON contract (see :mod:`engine.cli.simulate`).

        ``events``: ``"decisions"`` (everything but ``check`` rows), ``"all"`` or ``"none"``.
        """
        from .metrics import json_clean

        ev = self.events
        if events == "decisions":
            ev = ev[ev["kind"] != "check"]
        elif events == "none":
            ev = ev.iloc[:0]
        rows = json_clean(ev.to_dict(orient="records"))
        return {"scenario": self.scenario.name, "strategy": self.summary.get("strategy"),
                "placement": self.summary.get("placement"), "seed": self.seed, "minutes": self.minutes,
                "cancelled": self.cancelled, "summary": json_clean(self.summary),
                "brokers": json_clean(self.broker_averages(10)), "events": rows}

    def write(self, out_dir, fmt: str = "csv") -> list:
        """Write ``events``, ``brokers``, ``cluster`` and ``summary`` as CSV or Parquet files."""
        from pathlib import Path

        d = Path(out_dir)
        d.mkdir(parents=True, exist_ok=True)
        paths = []
        for name, df in (("events", self.events), ("brokers", self.brokers), ("cluster", self.cluster),
                         ("summary", self.summary_frame())):
            p = d / f"{name}.{ 'parquet' if fmt == 'parquet' else 'csv'}"
            if fmt == "parquet":
                df.to_parquet(p, index=False)
            else:
                df.to_csv(p, index=False)
            paths.append(p)
        return paths


# ============================================================================================ engine
class Simulation:
    """One run of a scenario. Use :func:`simulate` / :func:`run_scenario`."""

    def __init__(self, scenario: Scenario, config: LoadBalancerConfig, seed: int | None = None,
                 minutes: int | None = None, leader: Leader | Callable | None = None):
        self.sc = scenario
        self.cfg = config
        self.seed = int(scenario.seed if seed is None else seed)
        self.T = int(minutes if minutes is not None else scenario.minutes)
        if self.T < 1:
            raise InputError("must be at least 1", field="minutes")
        _check_pair(config, scenario.source)
        _check_config_events(config, scenario, self.T)
        ss = np.random.SeedSequence(self.seed)
        c_traffic, c_cpu, c_leader, c_order = ss.spawn(4)
        self.rng_traffic = np.random.default_rng(c_traffic)
        self.rng_cpu = np.random.default_rng(c_cpu)
        self.rng_order = np.random.default_rng(c_order)
        self.layout_rng = np.random.default_rng(np.random.SeedSequence([scenario.seed, 0x5EED]))
        self._leader_rng = np.random.default_rng(c_leader)
        if leader is None:
            self._leader_factory = make_leader
        elif callable(leader) and not hasattr(leader, "observe"):
            self._leader_factory = leader
        else:
            self._leader_factory = None  # a Leader instance: kept across leader elections
        self.leader = self._leader_factory(config, seed=self._leader_rng) if self._leader_factory else leader
        self._give_policies()
        self._build()

    def _give_policies(self):
        """The scenario's isolation / anti-affinity / failure-domain policies go to the leader
        (``ModularLeader.policies``; TransferShedder's ``ExtensibleLeader.policies``)."""
        if getattr(self.sc, "policies", None) is not None and hasattr(self.leader, "policies"):
            self.leader.policies = self.sc.policies

    # ------------------------------------------------------------------------------ setup
    def _build(self):
        sc, cfg = self.sc, self.cfg
        # brokers (slots)
        self.ids = [b.id for b in sc.brokers]
        self.slot = {b: i for i, b in enumerate(self.ids)}
        S = len(self.ids)
        self.S = S
        self.cores = np.array([b.cores for b in sc.brokers], dtype=float)
        self.nic_kbps = np.array([b.nic_gbps for b in sc.brokers], dtype=float) * 1e6
        self.heap_mb = np.array([b.heap_mb for b in sc.brokers], dtype=float)
        self.dm_mb = np.array([b.direct_memory_mb for b in sc.brokers], dtype=float)
        self.bg_cpu = np.array([b.background_cpu for b in sc.brokers], dtype=float)
        self.heap_used = np.array([b.heap_used for b in sc.brokers], dtype=float)
        self.alive = np.zeros(S, dtype=bool)
        self.join_seq = np.full(S, 1 << 40, dtype=np.int64)
        self._seq = 0
        self.leader_slot = -1
        # written reports
        self.has_rep = np.zeros(S, dtype=bool)
        self.rep_time = np.zeros(S, dtype=np.int64)
        self.rep_rate = np.zeros((S, 4))  # rateIn, rateOut, thrIn, thrOut (sums)
        self.rep_pct = np.zeros((S, 5))  # cpu, memory, directMemory, bwIn, bwOut (float32-derived %)
        self.rep_nb = np.zeros(S, dtype=np.int64)
        self.rep_ntop = np.zeros(S, dtype=np.int64)
        self.rep_list = [np.zeros(0, dtype=np.int64) for _ in range(S)]
        self.rep_stats = [np.zeros((0, 4)) for _ in range(S)]  # thrIn, thrOut, rateIn, rateOut
        self.rep_btop = [np.zeros(0, dtype=np.int64) for _ in range(S)]
        self.rep_bses = [np.zeros(0, dtype=np.int64) for _ in range(S)]
        self.cpu_set = np.full(S, np.nan)
        self.cpu_add = np.zeros(S)
        self.cpu_until = np.full(S, -1, dtype=np.int64)
        # namespaces and bundles
        self.ns_names = [n.name for n in sc.namespaces]
        self.ns_bounds = []
        names, ns_of, lo, hi = [], [], [], []
        for i, n in enumerate(sc.namespaces):
            nb = n.bundles or cfg.defaultNumberOfNamespaceBundles
            b = initial_boundaries(nb)
            self.ns_bounds.append(np.asarray(b, dtype=np.int64))
            for j in range(nb):
                names.append(f"{n.name}/0x{int(b[j]):08x}_0x{int(b[j + 1]):08x}")
                ns_of.append(i)
                lo.append(int(b[j]))
                hi.append(int(b[j + 1]))
        self.names = names
        self.bidx = {b: k for k, b in enumerate(names)}
        K = len(names)
        self.K = K
        self.b_ns = np.array(ns_of, dtype=np.int64)
        self.b_lo = np.array(lo, dtype=np.int64)
        self.b_hi = np.array(hi, dtype=np.int64)
        self.b_active = np.ones(K, dtype=bool)
        self.owner = np.full(K, -1, dtype=np.int64)
        # leader bundle data
        self.st = np.zeros((K, 4))
        self.lt = np.zeros((K, 4))
        self.st_n = np.zeros(K, dtype=np.int64)
        self.lt_n = np.zeros(K, dtype=np.int64)
        self.in_bd = np.zeros(K, dtype=bool)
        self.bd_topics = np.zeros(K, dtype=np.int64)
        self.keep_bd = np.zeros(K, dtype=bool)
        self.lookup_reason: dict = {}  # bundle -> (why it is unowned, unavailable seconds)
        # workloads and topics
        T = self.T
        steps = {w.name: [] for w in sc.workloads}
        for e in sc.events:
            if e.kind == "traffic":
                steps[e.get("workload")].append((e.at, e.get("factor"), e.get("rate")))
        nw = len(sc.workloads)
        self.P = np.zeros((nw, T))
        self.C = np.zeros((nw, T))
        self.A = np.zeros((nw, T), dtype=bool)
        self.w_subs = np.array([w.subscriptions for w in sc.workloads], dtype=float)
        self.w_size = np.array([w.msg_size for w in sc.workloads], dtype=float)
        t_names, t_w, t_rate, t_ses = [], [], [], []
        for i, w in enumerate(sc.workloads):
            self.P[i], self.C[i], self.A[i] = workload_series(w, T, self.layout_rng, steps[w.name])
            tn = topic_names(w)
            t_names.extend(tn)
            t_w.append(np.full(len(tn), i, dtype=np.int64))
            t_rate.append(topic_rates(w, len(tn), self.layout_rng))
            t_ses.append(np.full(len(tn), w.producers_per_topic + w.subscriptions * w.consumers_per_subscription,
                                 dtype=np.int64))
        self.t_names = t_names
        self.t_w = np.concatenate(t_w) if t_w else np.zeros(0, dtype=np.int64)
        self.t_rate = np.concatenate(t_rate) if t_rate else np.zeros(0)
        self.t_ses = np.concatenate(t_ses) if t_ses else np.zeros(0, dtype=np.int64)
        self.t_hash = topic_hashes(t_names).astype(np.int64) if t_names else np.zeros(0, dtype=np.int64)
        ns_index = {n: i for i, n in enumerate(self.ns_names)}
        w_ns = np.array([ns_index[w.namespace] for w in sc.workloads], dtype=np.int64)
        self.t_ns = w_ns[self.t_w] if nw else np.zeros(0, dtype=np.int64)
        self.t_bundle = np.full(len(t_names), -1, dtype=np.int64)
        self.ns_first = []
        first = 0
        for i, n in enumerate(sc.namespaces):
            self.ns_first.append(first)
            first += len(self.ns_bounds[i]) - 1
        self.ns_bundles = [list(range(self.ns_first[i], self.ns_first[i] + len(self.ns_bounds[i]) - 1))
                           for i in range(len(self.ns_names))]
        for i in range(len(self.ns_names)):
            sel = np.flatnonzero(self.t_ns == i)
            if len(sel):
                bi = bundle_indices(self.t_hash[sel], self.ns_bounds[i])
                self.t_bundle[sel] = np.where(bi >= 0, bi + self.ns_first[i], -1)
        self.unhashable = int((self.t_bundle < 0).sum())
        self._rebuild_pairs()
        self._refresh_bundle_caches()
        # initial owners
        for i, n in enumerate(sc.namespaces):
            ks = self.ns_bundles[i]
            start_brokers = [b.id for b in sc.brokers if b.join == 0]
            if n.owners == "round_robin":
                for j, k in enumerate(ks):
                    self.owner[k] = self.slot[start_brokers[j % len(start_brokers)]]
            elif n.owners == "random":
                pick = self.layout_rng.integers(0, len(start_brokers), size=len(ks))
                for k, p in zip(ks, pick.tolist()):
                    self.owner[k] = self.slot[start_brokers[p]]
            elif n.owners == "placement":
                pass  # owned at the first lookup of one of its topics
            else:
                given = set()
                for bid, idxs in n.owners:
                    for x in idxs:
                        self.owner[ks[x]] = self.slot[bid]
                        given.add(x)
        self.timeline = {}
        for e in expand_events(sc.events, sc.brokers):
            self.timeline.setdefault(e.at, []).append(e)
        # recording
        self.rec = {k: np.full((T, S), np.nan) for k in ("cpu", "bandwidth_in", "bandwidth_out", "direct_memory",
                                                           "memory", "usage", "reported_usage", "score",
                                                           "msg_rate", "throughput", "bundles", "wrote_report")}
        self.rec_alive = np.zeros((T, S), dtype=bool)
        self.events: list = []
        self.score_unit = ""
        self.cur_usage = np.zeros(S)
        self._ent = None
        self.last_check = 0
        self.cycle_no = 0
        #: the leader is the Extensible Load Manager's (tables get load_std / target_std)
        self.ext = bool(getattr(self.leader, "extensible", False))
        self.rec_target = np.full(T, np.nan)

    def _rebuild_pairs(self):
        """Aggregate topics into (bundle, workload) pairs: traffic is computed per pair each minute."""
        self._pairs_version = getattr(self, "_pairs_version", 0) + 1
        self._top_key = None
        ok = self.t_bundle >= 0
        nw = max(1, len(self.sc.workloads))
        key = self.t_bundle[ok] * nw + self.t_w[ok]
        uk, inv = np.unique(key, return_inverse=True)
        self.p_k = uk // nw
        self.p_w = uk % nw
        self.p_rate = np.bincount(inv, weights=self.t_rate[ok], minlength=len(uk))
        self.p_top = np.bincount(inv, minlength=len(uk)).astype(np.int64)
        self.p_ses = np.bincount(inv, weights=self.t_ses[ok], minlength=len(uk)).astype(np.int64)
        if len(self.sc.workloads):
            self.p_out = self.p_rate * self.w_subs[self.p_w]
            self.p_size = self.w_size[self.p_w]
        else:
            self.p_out = np.zeros(len(uk))
            self.p_size = np.zeros(len(uk))

    def _refresh_bundle_caches(self):
        """Per-bundle lookups injected into every view (they only change on splits)."""
        self.bidx = {b: k for k, b in enumerate(self.names)}
        ns_sorted = sorted(set(self.ns_names))
        ns_pos = {n: i for i, n in enumerate(ns_sorted)}
        remap = np.array([ns_pos[n] for n in self.ns_names], dtype=np.int64)
        self.v_ns_sorted = ns_sorted
        self.v_ns_index = ns_pos
        self.v_ns_id = remap[self.b_ns]
        bad = np.array([is_sla_or_heartbeat_namespace(n) for n in ns_sorted], dtype=bool)
        self.v_bad_ns = bad[self.v_ns_id]

    def _grow(self, n):
        """Make room for ``n`` new bundles (split children)."""
        def ext(a, fill):
            shape = (n,) + a.shape[1:]
            return np.concatenate([a, np.full(shape, fill, dtype=a.dtype)])
        self.b_ns = ext(self.b_ns, 0)
        self.b_lo = ext(self.b_lo, 0)
        self.b_hi = ext(self.b_hi, 0)
        self.b_active = ext(self.b_active, True)
        self.owner = ext(self.owner, -1)
        self.st = ext(self.st, 0.0)
        self.lt = ext(self.lt, 0.0)
        self.st_n = ext(self.st_n, 0)
        self.lt_n = ext(self.lt_n, 0)
        self.in_bd = ext(self.in_bd, False)
        self.bd_topics = ext(self.bd_topics, 0)
        self.keep_bd = ext(self.keep_bd, False)
        self.K += n

    # ------------------------------------------------------------------------------ helpers
    def now_ms(self, t: int) -> int:
        return EPOCH_MS + t * _MIN

    def _event(self, t, kind, **kw):
        row = {"minute": t, "time": None, "kind": kind, "broker": None,
               "bundle": None, "destination": None, "reason": "", "placement": "", "random": False,
               "from_plan": False, "bad_placement": False, "dest_usage": np.nan, "avg_usage": np.nan,
               "src_score": np.nan, "dst_score": np.nan, "score_unit": "", "msg_rate": np.nan,
               "throughput": np.nan, "unavailable_s": 0.0, "scores": "", "placement_scores": "", "cycle": None}
        row.update(kw)
        self.events.append(row)
        return row

    def _alive_order(self) -> np.ndarray:
        """Running brokers with a written report, in Java ConcurrentHashMap order (brokerData)."""
        s = np.flatnonzero(self.alive & self.has_rep)
        if len(s) == 0:
            return s
        key = tuple(s.tolist())
        if getattr(self, "_order_key", None) != key:
            rank = java_map_rank([self.ids[i] for i in s], concurrent=True)
            self._order = s[np.argsort(rank, kind="stable")]
            self._order_key = key
        return self._order

    def _elect(self, t):
        alive = np.flatnonzero(self.alive)
        if self.leader_slot >= 0 and self.alive[self.leader_slot]:
            return
        if len(alive) == 0:
            self.leader_slot = -1
            return
        pref = self.sc.leader
        if pref is not None and self.alive[self.slot[pref]]:
            new = self.slot[pref]
        else:
            new = int(alive[np.argmin(self.join_seq[alive])])
        had = self.leader_slot >= 0
        self.leader_slot = new
        if had:
            # a new leader starts with empty strategy memory and grace-period map
            if self._leader_factory is not None:
                old = self.leader
                self.leader = self._leader_factory(self.cfg, seed=self._leader_rng)
                self._give_policies()
                take_over = getattr(self.leader, "take_over", None)
                if take_over is not None:
                    take_over(old)  # the brokers' own published data survives the election
            self._event(t, "leader-change", broker=self.ids[new],
                        reason=f"{self.ids[new]} became the leader: strategy state and recently unloaded "
                               "bundles start empty")

    # ------------------------------------------------------------------------------ events
    def _apply_events(self, t):
        changes = 0
        for e in self.timeline.get(t, ()):
            k = e.kind
            if k == "add_broker":
                s = self.slot[e.get("broker")]
                self.alive[s] = True
                self.has_rep[s] = False
                self.join_seq[s] = self._seq
                self._seq += 1
                changes += 1
                if not e.get("initial"):
                    b = self.sc.brokers[s]
                    self._event(t, "broker-added", broker=self.ids[s],
                                reason=("restarted" if e.get("restart") else "added")
                                       + f": {b.cores:g} cores, {b.nic_gbps:g} Gbit/s NIC")
            elif k == "remove_broker":
                s = self.slot[e.get("broker")]
                mode = e.get("mode")
                self.alive[s] = False
                self.has_rep[s] = False
                self.rep_list[s] = np.zeros(0, dtype=np.int64)
                self.rep_stats[s] = np.zeros((0, 4))
                self.rep_btop[s] = np.zeros(0, dtype=np.int64)
                self.rep_bses[s] = np.zeros(0, dtype=np.int64)
                self._ent = None
                orphans = np.flatnonzero((self.owner == s) & self.b_active)
                self.owner[orphans] = -1
                unav = (self.sc.timing.crash_unavailable_seconds if mode == "crash"
                        else self.sc.timing.unload_unavailable_seconds)
                why = ("crash" if mode == "crash" else "restart" if e.get("restart") else "graceful shutdown")
                for kk in orphans.tolist():
                    self.lookup_reason[kk] = (f"owner {self.ids[s]} gone ({why})", unav)
                if mode != "crash":
                    self.keep_bd[orphans] = self.in_bd[orphans]
                changes += 1
                self._event(t, "broker-removed", broker=self.ids[s],
                            reason=f"{why}: {len(orphans)} bundle(s) to place"
                                   + ("; their bundle data is lost (metadata-store session expired)"
                                      if mode == "crash" else ""))
            elif k == "cpu":
                s = self.slot[e.get("broker")]
                if e.get("cpu") is not None:
                    self.cpu_set[s], self.cpu_add[s] = e.get("cpu"), 0.0
                    what = f"CPU at {e.get('cpu'):g} %"
                else:
                    self.cpu_set[s], self.cpu_add[s] = np.nan, e.get("add")
                    what = f"CPU {e.get('add'):+g} points"
                self.cpu_until[s] = t + e.get("minutes")
                self._event(t, "cpu", broker=self.ids[s],
                            reason=f"{what} for {e.get('minutes')} minute(s), traffic unchanged")
            elif k == "config":
                vals = dict(e.get("set"))
                old = self.cfg
                self.cfg = self.cfg.with_values(vals, source=self.sc.source)
                _check_pair(self.cfg, self.sc.source)
                if _extensible(old) != _extensible(self.cfg):
                    raise InputError("a config event cannot switch between the modular and the extensible load "
                                     "manager (Pulsar needs a broker restart)", source=self.sc.source,
                                     field=f"events (minute {t})")
                self.leader.reconfigure(self.cfg)
                self._event(t, "config-change", reason=", ".join(f"{a}={b}" for a, b in vals.items()))
        return changes

    # ------------------------------------------------------------------------------ traffic and usage
    def _traffic(self, t):
        K = self.K
        P, C = self.P[:, t], self.C[:, t]
        if len(self.p_k):
            pw = P[self.p_w]
            rin = self.p_rate * pw
            rout = self.p_out * pw * C[self.p_w]
            r_in = np.bincount(self.p_k, rin, K)
            r_out = np.bincount(self.p_k, rout, K)
            t_in = np.bincount(self.p_k, rin * self.p_size, K)
            t_out = np.bincount(self.p_k, rout * self.p_size, K)
        else:
            r_in = r_out = t_in = t_out = np.zeros(K)
        sig = self.sc.noise.traffic
        if sig > 0:
            # uniform noise with standard deviation sig (a normal draw costs 10x more per bundle)
            f = 1.0 + (sig * 3.4641016151377544) * (self.rng_traffic.random(K) - 0.5)
            np.maximum(f, 0.0, out=f)
            r_in, r_out, t_in, t_out = r_in * f, r_out * f, t_in * f, t_out * f
        return r_in, r_out, t_in, t_out

    def _topics(self, t):
        """Loaded topics and sessions (producers + consumers) per bundle at minute ``t``.

        A bundle is in its owner's load report (``lastStats``) only while it has loaded topics:
        Pulsar builds bundle stats from the topics a broker serves."""
        key = (self._pairs_version, self.A[:, t].tobytes())
        if self._top_key != key:
            K = self.K
            if len(self.p_k):
                act = self.A[:, t][self.p_w]
                top = np.bincount(self.p_k, self.p_top * act, K).astype(np.int64)
                ses = np.bincount(self.p_k, self.p_ses * act, K).astype(np.int64)
            else:
                top = ses = np.zeros(K, dtype=np.int64)
            self._top, self._ses, self._top_key = top, ses, key
        return self._top, self._ses

    def _usage(self, t, r_in, r_out, t_in, t_out, top):
        S, cost = self.S, self.sc.cost
        # bundles not served (unowned, or split parents) count on a sentinel broker S
        o = np.where(self.b_active & (self.owner >= 0), self.owner, S)
        n = S + 1
        c = r_in * cost.cpu_per_msg_in + r_out * cost.cpu_per_msg_out + (t_in + t_out) * (cost.cpu_per_mib / MIB)
        cores_used = np.bincount(o, c, n)[:S]
        b_rin = np.bincount(o, r_in, n)[:S]
        b_rout = np.bincount(o, r_out, n)[:S]
        b_tin = np.bincount(o, t_in, n)[:S]
        b_tout = np.bincount(o, t_out, n)[:S]
        nb = np.bincount(np.where(top > 0, o, S), minlength=n)[:S].astype(np.int64)
        cpu = 100.0 * cores_used / self.cores + self.bg_cpu
        if self.sc.noise.cpu > 0:
            cpu = cpu + self.sc.noise.cpu * self.rng_cpu.standard_normal(S)
        spike = self.cpu_until > t
        cpu = np.where(spike & ~np.isnan(self.cpu_set), self.cpu_set, cpu + np.where(spike, self.cpu_add, 0.0))
        cpu = np.clip(cpu, 0.0, 100.0)
        heap = self.heap_used.copy()
        if self.sc.noise.heap > 0:
            heap = heap + self.sc.noise.heap * self.rng_cpu.standard_normal(S)
        heap = np.clip(heap, 0.0, 100.0)
        bw_in = b_tin * 8.0 / 1000.0
        bw_out = (b_tout + cost.replication * b_tin) * 8.0 / 1000.0
        dm = cost.direct_memory_base_mb + cost.direct_memory_per_mib * (b_tin + b_tout) / MIB
        self._raw = (cpu * self.cores, heap * self.heap_mb / 100.0, dm, bw_in, bw_out)
        pct = np.column_stack([
            percent_usage_array(cpu * self.cores, 100.0 * self.cores),
            percent_usage_array(heap * self.heap_mb / 100.0, self.heap_mb),
            percent_usage_array(dm, self.dm_mb),
            percent_usage_array(bw_in, self.nic_kbps),
            percent_usage_array(bw_out, self.nic_kbps),
        ])
        return pct, np.column_stack([b_rin, b_rout, b_tin, b_tout]), nb

    def _weighted(self, pct, cfg=None) -> np.ndarray:
        w_cpu, w_dm, w_in, w_out = (cfg or self.cfg).weights
        return np.maximum.reduce([pct[:, 0] * w_cpu, pct[:, 2] * w_dm, pct[:, 3] * w_in, pct[:, 4] * w_out])

    # ------------------------------------------------------------------------------ reports
    def _reports(self, t, pct, rates, nb, r_in, r_out, t_in, t_out, top, ses):
        cfg = self.cfg
        cand = self.alive
        uw_cur = self._weighted(pct) / 100.0
        uw_old = self._weighted(self.rep_pct) / 100.0

        def pc(old, new):
            with np.errstate(divide="ignore", invalid="ignore"):
                r = np.where(old == 0, np.where(new == 0, 0.0, np.inf), 100.0 * np.abs((old - new) / np.where(old == 0, 1, old)))
            return r

        ch = np.maximum.reduce([
            pc(self.rep_rate[:, 0] + self.rep_rate[:, 1], rates[:, 0] + rates[:, 1]),
            pc(self.rep_rate[:, 2] + self.rep_rate[:, 3], rates[:, 2] + rates[:, 3]),
            pc(self.rep_nb.astype(float), nb.astype(float)),
            100.0 * np.abs(uw_old - uw_cur),
        ])
        due = (t - self.rep_time) >= cfg.loadBalancerReportUpdateMaxIntervalMinutes
        write = cand & (~self.has_rep | due | (ch > cfg.loadBalancerReportUpdateThresholdPercentage))
        writers = np.flatnonzero(write)
        if len(writers):
            ok = (self.owner >= 0) & self.b_active & (top > 0)
            ks = np.flatnonzero(ok)
            grp = np.argsort(self.owner[ks], kind="stable")
            ks = ks[grp]
            counts = np.bincount(self.owner[ks], minlength=self.S)
            starts = np.concatenate(([0], np.cumsum(counts)))
            stats = np.column_stack([t_in, t_out, r_in, r_out])
            for s in writers.tolist():
                lst = ks[starts[s]:starts[s + 1]]
                self.rep_list[s] = lst
                self.rep_stats[s] = stats[lst]
                self.rep_btop[s] = top[lst]
                self.rep_bses[s] = ses[lst]
            self.rep_rate[writers] = rates[writers]
            self.rep_pct[writers] = pct[writers]
            self.rep_nb[writers] = nb[writers]
            self.rep_ntop[writers] = np.array([int(self.rep_btop[s].sum()) for s in writers.tolist()])
            self.rep_time[writers] = t
            self.has_rep[writers] = True
            self._ent = None
        return write

    def _broker_reports(self, t, pct, rates, nb, wrote, r_in, r_out, t_in, t_out, top, ses) -> BrokerReports:
        """The minute's measurements of the running brokers, for a leader with an ``on_reports`` hook."""
        al = np.flatnonzero(self.alive)
        pos = np.full(self.S, -1, dtype=np.int64)
        pos[al] = np.arange(len(al))
        ks = np.flatnonzero(self.b_active & (self.owner >= 0) & (top > 0))
        ks = ks[pos[self.owner[ks]] >= 0]
        bpos = pos[self.owner[ks]]
        ntop = np.bincount(bpos, top[ks], len(al)).astype(np.int64) if len(ks) else np.zeros(len(al), dtype=np.int64)
        lim = (100.0 * self.cores, self.heap_mb, self.dm_mb, self.nic_kbps, self.nic_kbps)
        return BrokerReports(
            minute=t, now_ms=self.now_ms(t), brokers=[self.ids[s] for s in al.tolist()],
            usage=np.column_stack([np.broadcast_to(x, (self.S,)) for x in self._raw])[al],
            limit=np.column_stack(lim)[al], percent=pct[al], rates=rates[al], bundle_count=nb[al], topics=ntop,
            writes_report=np.asarray(wrote, dtype=bool)[al], bundle_broker=bpos,
            bundle_names=[self.names[k] for k in ks.tolist()],
            bundle_stats=np.column_stack([r_in[ks], t_in[ks], r_out[ks], t_out[ks]]),
            bundle_topics=top[ks], bundle_sessions=ses[ks], channel=self._channel)

    def _channel(self) -> dict:
        """The service-unit channel: bundle -> current owner (running brokers only)."""
        ks = np.flatnonzero(self.b_active & (self.owner >= 0))
        ids, names, own = self.ids, self.names, self.owner
        return {names[k]: ids[own[k]] for k in ks.tolist()}

    # ------------------------------------------------------------------------------ leader bundle data
    def _entries(self):
        """The leader's walk over the written reports: brokers in map order, each report's bundles.

        Returns ``(order, E_k, E_x, E_top, E_pos)``: broker slots, then per listing the bundle, its
        stats (thrIn, thrOut, rateIn, rateOut), topics and the broker's position in ``order``.
        Cached until a report changes.
        """
        if self._ent is not None:
            return self._ent
        order = self._alive_order()
        if len(order) == 0:
            z = np.zeros(0, dtype=np.int64)
            self._ent = (order, z, np.zeros((0, 4)), z, z)
            return self._ent
        ol = order.tolist()
        lists = [self.rep_list[s] for s in ol]
        E_k = np.concatenate(lists)
        E_x = np.concatenate([self.rep_stats[s] for s in ol])
        E_top = np.concatenate([self.rep_btop[s] for s in ol])
        E_pos = np.repeat(np.arange(len(ol)), [len(x) for x in lists])
        self._ent = (order, E_k, E_x, E_top, E_pos)
        return self._ent

    def _update_bundle_data(self, n_updates: int):
        """``n_updates`` leader ``updateBundleData()`` calls on the current written reports."""
        if n_updates <= 0:
            return
        order, E_k, E_x, E_top, _ = self._entries()
        K = self.K
        cnt = np.bincount(E_k, minlength=K)
        listed = cnt > 0
        new = listed & ~self.in_bd
        self.st_n[new] = 0
        self.lt_n[new] = 0
        single = cnt[E_k] == 1
        if single.all():
            ks, xs = E_k, E_x
        else:
            ks, xs = E_k[single], E_x[single]
        _advance(self.st, self.st_n, 10, ks, xs, n_updates)
        _advance(self.lt, self.lt_n, 1000, ks, xs, n_updates)
        if not single.all():  # a bundle in two reports (stale owner + new owner): one sample each
            dk, dx = E_k[~single], E_x[~single]
            for _ in range(n_updates):
                for k, x in zip(dk.tolist(), dx):
                    for arr, n_arr, mx in ((self.st, self.st_n, 10), (self.lt, self.lt_n, 1000)):
                        n = min(n_arr[k] + 1, mx)
                        n_arr[k] = n
                        arr[k] = ((n - 1) * arr[k] + x) / n
        self.bd_topics[E_k] = E_top
        self.in_bd = listed | self.keep_bd
        self.keep_bd[:] = False

    # ------------------------------------------------------------------------------ view
    def _view(self, t) -> LoadView:
        """The leader's LoadView: written reports (brokers in map order) + its bundle averages."""
        order, E_k, E_x, E_top, E_pos = self._entries()
        o = order
        nb = len(o)
        lt_rate = self.lt[:, 2] + self.lt[:, 3]
        ltr = np.bincount(E_pos, lt_rate[E_k], nb) if len(E_k) else np.zeros(nb)
        v = LoadView(
            now_ms=self.now_ms(t), brokers=[self.ids[s] for s in o.tolist()],
            cpu=self.rep_pct[o, 0], memory=self.rep_pct[o, 1], direct_memory=self.rep_pct[o, 2],
            bandwidth_in=self.rep_pct[o, 3], bandwidth_out=self.rep_pct[o, 4],
            msg_rate_in=self.rep_rate[o, 0], msg_rate_out=self.rep_rate[o, 1],
            msg_throughput_in=self.rep_rate[o, 2], msg_throughput_out=self.rep_rate[o, 3],
            long_term_msg_rate=ltr, num_topics=self.rep_ntop[o].copy(),
            last_update=EPOCH_MS + self.rep_time[o] * _MIN, bundles=list(self.names),
            st=self.st.copy(), lt=self.lt.copy(), st_samples=self.st_n.copy(), lt_samples=self.lt_n.copy(),
            topics=self.bd_topics.copy(), in_bundle_data=self.in_bd.copy(),
            owned=[self.rep_list[s] for s in o.tolist()], broker_info=[_INFO] * nb)
        _prime_view(v, self)
        return v

    # ------------------------------------------------------------------------------ split
    def _auto_split(self, t):
        cfg = self.cfg
        if not cfg.loadBalancerAutoBundleSplitEnabled or int((self.alive & self.has_rep).sum()) <= 1:
            return False
        order, E_k, E_x, E_top, E_pos = self._entries()
        if len(E_k) == 0:
            return False
        E_ses = np.concatenate([self.rep_bses[s] for s in order.tolist()])
        rate = (self.lt[:, 2] + self.lt[:, 3])[E_k] * self.in_bd[E_k]
        thr = (self.lt[:, 0] + self.lt[:, 1])[E_k] * self.in_bd[E_k]
        m_ses = cfg.loadBalancerNamespaceBundleMaxSessions
        hit = (E_top >= 2) & ((E_top > cfg.loadBalancerNamespaceBundleMaxTopics)
                              | ((m_ses > 0) & (E_ses > m_ses))
                              | (rate > cfg.loadBalancerNamespaceBundleMaxMsgRate)
                              | (thr > cfg.loadBalancerNamespaceBundleMaxBandwidthMbytes * MIB))
        if not hit.any():
            return False
        sel = np.flatnonzero(hit)
        counts = {self.ns_names[i]: len(self.ns_bundles[i]) for i in range(len(self.ns_names))}
        res = auto_split_from_config(cfg, [self.names[k] for k in E_k[sel].tolist()], E_top[sel].tolist(),
                                     E_ses[sel].tolist(), rate[sel].tolist(), thr[sel].tolist(), counts,
                                     brokers=[self.ids[s] for s in order[E_pos[sel]].tolist()])
        done = False
        for dec in res.decisions:
            if dec.label != "Split":
                continue
            k = self.bidx[dec.bundle]
            if not self.b_active[k]:
                continue
            done |= self._split(t, k, dec.reason)
        return done

    def _split(self, t, k, why) -> bool:
        cfg = self.cfg
        i = int(self.b_ns[k])
        lo, hi = int(self.b_lo[k]), int(self.b_hi[k])
        tsel = np.flatnonzero(self.t_bundle == k)
        tnames = [self.t_names[x] for x in tsel.tolist()]
        P = self.P[:, min(self._t, self.T - 1)]
        trate = self.t_rate[tsel] * P[self.t_w[tsel]]
        tthr = trate * self.w_size[self.t_w[tsel]] * (1 + self.w_subs[self.t_w[tsel]])
        trate = trate * (1 + self.w_subs[self.t_w[tsel]])
        res = split_from_config(cfg, self.ns_bounds[i], (lo, hi), topics=tnames, msg_rate=trate.tolist(),
                                throughput=tthr.tolist(), namespace=self.ns_names[i])
        if not res.ok:
            self._event(t, "split", bundle=self.names[k], broker=self._owner_id(k),
                        reason=f"{why}; split not done: {res.reason}")
            return False
        children = res.children
        n0 = self.K
        self._grow(len(children))
        src = int(self.owner[k])
        for j, (a, b) in enumerate(children):
            kk = n0 + j
            self.names.append(f"{self.ns_names[i]}/0x{a:08x}_0x{b:08x}")
            self.b_ns[kk], self.b_lo[kk], self.b_hi[kk] = i, a, b
            self.owner[kk] = src
        self.ns_bounds[i] = np.asarray(res.apply(self.ns_bounds[i]), dtype=np.int64)
        self.b_active[k] = False
        self.owner[k] = -1
        self.in_bd[k] = False
        self.ns_bundles[i] = sorted([x for x in self.ns_bundles[i] if x != k] + list(range(n0, self.K)),
                                    key=lambda x: int(self.b_lo[x]))
        if len(tsel):
            lows = np.array([a for a, _ in children], dtype=np.int64)
            pos = np.searchsorted(lows, self.t_hash[tsel], side="right") - 1
            self.t_bundle[tsel] = n0 + pos
        for s in range(self.S):  # Pulsar drops the parent from the owner's lastStats
            if len(self.rep_list[s]) and (self.rep_list[s] == k).any():
                keep = self.rep_list[s] != k
                self.rep_list[s] = self.rep_list[s][keep]
                self.rep_stats[s] = self.rep_stats[s][keep]
                self.rep_btop[s] = self.rep_btop[s][keep]
                self.rep_bses[s] = self.rep_bses[s][keep]
        self._ent = None
        self._rebuild_pairs()
        self._refresh_bundle_caches()
        unload = cfg.loadBalancerAutoUnloadSplitBundlesEnabled
        self._event(t, "split", bundle=self.names[k], broker=self.ids[src] if src >= 0 else None,
                    reason=f"{why}; {res.reason}" + ("; children unloaded" if unload else ""),
                    detail=", ".join(self.names[n0:]))
        if unload and src >= 0:
            for kk in range(n0, self.K):
                self.owner[kk] = -1
                self.lookup_reason[kk] = (f"split of {self.names[k]} (children unloaded)",
                                          self.sc.timing.unload_unavailable_seconds)
        return True

    def _owner_id(self, k):
        s = int(self.owner[k])
        return self.ids[s] if s >= 0 else None

    # ------------------------------------------------------------------------------ placement
    def _lookups(self, t) -> list:
        """Unowned bundles with a loaded topic: their clients' lookups reach the leader now."""
        top, _ = self._topics(t)
        ks = np.flatnonzero(self.b_active & (self.owner < 0) & (top > 0))
        if len(ks) == 0:
            return []
        first = "cluster start: first lookup" if t == 0 else "first lookup of one of its topics"
        items = [(k,) + self.lookup_reason.get(k, (first, 0.0)) for k in ks.tolist()]
        if len(items) > 1:  # lookups arrive in client order
            perm = self.rng_order.permutation(len(items))
            items = [items[i] for i in perm.tolist()]
        return items

    def _assign(self, t, items):
        usage = self.cur_usage
        avg = float(np.mean(usage[self.alive])) if self.alive.any() else np.nan
        for k, why, unav in items:
            dec = self.leader.assign(self.names[k])
            if dec.broker is None:
                continue  # retried at the next minute
            self.lookup_reason.pop(k, None)
            s = self.slot[dec.broker]
            self.owner[k] = s
            du = float(usage[s])
            self._event(t, "assign", bundle=self.names[k], destination=dec.broker, reason=why,
                        placement=dec.reason, random=bool(dec.random), from_plan=bool(dec.from_plan),
                        bad_placement=bool(du > avg), dest_usage=du, avg_usage=avg, unavailable_s=float(unav),
                        placement_scores=_js(dec.scores), score_unit=dec.score_unit)

    # ------------------------------------------------------------------------------ shedding
    def _shed(self, t):
        cyc = self.leader.shed(self.now_ms(t))
        self.cycle_no += 1
        sh = cyc.shedding
        scores = sh.scores if sh is not None else {}
        unit = sh.score_unit if sh is not None else ""
        if scores:
            self.score_unit = unit
            row = self.rec["score"][t]
            for b, v in scores.items():
                row[self.slot[b]] = v
        usage = self.cur_usage
        avg = float(np.mean(usage[self.alive])) if self.alive.any() else np.nan
        sj = _js(scores) if (cyc.unloads or cyc.skipped) else ""
        self._event(t, "check", reason=cyc.reason or "", cycle=self.cycle_no, score_unit=unit,
                    scores=_js(scores) if len(scores) <= 50 else "", detail=str(len(cyc.unloads)))
        unav = self.sc.timing.unload_unavailable_seconds
        for u in cyc.unloads:
            k = self.bidx[u.bundle]
            dec = u.placement
            if u.destination is None:  # released with no broker to go to: looked up again next minute
                self.owner[k] = -1
                self.lookup_reason[k] = (f"unloaded from {u.broker}, no destination", unav)
                self._event(t, "unload", broker=u.broker, bundle=u.bundle, reason=u.reason,
                            placement=dec.reason if dec else "", avg_usage=avg,
                            src_score=scores.get(u.broker, np.nan), score_unit=unit, msg_rate=u.msg_rate,
                            throughput=u.throughput, unavailable_s=float(unav), scores=sj, cycle=self.cycle_no)
                continue
            d = self.slot[u.destination]
            du = float(usage[d])
            self.owner[k] = d
            self._event(t, "unload", broker=u.broker, bundle=u.bundle, destination=u.destination, reason=u.reason,
                        placement=dec.reason if dec else "", random=bool(dec.random) if dec else False,
                        from_plan=bool(dec.from_plan) if dec else False, bad_placement=bool(du > avg),
                        dest_usage=du, avg_usage=avg, src_score=scores.get(u.broker, np.nan),
                        dst_score=scores.get(u.destination, np.nan), score_unit=unit, msg_rate=u.msg_rate,
                        throughput=u.throughput, unavailable_s=float(unav), scores=sj,
                        placement_scores=_js(dec.scores) if dec else "", cycle=self.cycle_no)
        for u in cyc.skipped:
            self._event(t, "unload-skipped", broker=u.broker, bundle=u.bundle, destination=u.destination,
                        reason=u.skipped or "", placement=u.placement.reason if u.placement else "",
                        score_unit=unit, msg_rate=u.msg_rate, throughput=u.throughput, cycle=self.cycle_no)

    # ------------------------------------------------------------------------------ main loop
    def run(self, progress: Callable | None = None, cancel=None) -> SimulationResult:
        t0 = _time.perf_counter()
        T = self.T
        every = max(1, T // 100)
        cancelled = False
        done = 0
        for t in range(T):
            self._t = t
            if _is_cancelled(cancel):
                cancelled = True
                break
            self._minute(t)
            done = t + 1
            if progress is not None and (done % every == 0 or done == T):
                progress(done, T)
        ev, br, cl, summary = build_tables(self, done)
        summary["cancelled"] = cancelled
        summary["elapsed_s"] = round(_time.perf_counter() - t0, 3)
        return SimulationResult(self.sc, self.cfg, self.seed, done, ev, br, cl, summary,
                                leader_state=_safe_state(self.leader), cancelled=cancelled,
                                elapsed_s=summary["elapsed_s"])

    def _minute(self, t):
        for s in np.flatnonzero((self.cpu_until >= 0) & (self.cpu_until <= t)).tolist():
            self.cpu_set[s], self.cpu_add[s], self.cpu_until[s] = np.nan, 0.0, -1
        changes = self._apply_events(t)
        if changes:
            self._elect(t)
        ready = self.leader_slot >= 0 and bool((self.alive & self.has_rep).any())
        if changes and ready:
            lookups = self._lookups(t)
            if lookups:
                # a departed broker's clients look their bundles up right away: the leader's
                # updateAll for the membership change, then selectBrokerForAssignment
                self._update_bundle_data(changes)
                changes = 0
                self.leader.observe(self._view(t))
                self._assign(t, lookups)
        top, ses = self._topics(t)
        r_in, r_out, t_in, t_out = self._traffic(t)
        pct, rates, nb = self._usage(t, r_in, r_out, t_in, t_out, top)
        self.cur_usage = self._weighted(pct)
        wrote = self._reports(t, pct, rates, nb, r_in, r_out, t_in, t_out, top, ses)
        feed = getattr(self.leader, "on_reports", None)
        if feed is not None:
            feed(self._broker_reports(t, pct, rates, nb, wrote, r_in, r_out, t_in, t_out, top, ses))
        cfg = self.cfg
        q = cfg.loadBalancerResourceQuotaUpdateIntervalMinutes
        n_upd = int(wrote.sum()) + changes + (1 if t > 0 and t % q == 0 else 0)
        self._update_bundle_data(n_upd)
        if self.leader_slot >= 0 and (self.alive & self.has_rep).any():
            if cfg.loadBalancerAutoBundleSplitEnabled:
                self._auto_split(t)
            lookups = self._lookups(t)
            check = (t - self.last_check) >= cfg.loadBalancerSheddingIntervalMinutes
            if lookups or check:
                self.leader.observe(self._view(t))
                if lookups:
                    self._assign(t, lookups)
            if check:
                self.last_check = t
                self._shed(t)
        # record
        a = self.alive
        self.rec_alive[t] = a
        r = self.rec
        r["cpu"][t], r["memory"][t], r["direct_memory"][t] = pct[:, 0], pct[:, 1], pct[:, 2]
        r["bandwidth_in"][t], r["bandwidth_out"][t] = pct[:, 3], pct[:, 4]
        r["usage"][t] = self.cur_usage
        r["reported_usage"][t] = self._weighted(self.rep_pct)
        r["msg_rate"][t] = rates[:, 0] + rates[:, 1]
        r["throughput"][t] = rates[:, 2] + rates[:, 3]
        r["bundles"][t] = nb
        r["wrote_report"][t] = wrote
        if self.ext:
            self.rec_target[t] = cfg.loadBalancerBrokerLoadTargetStd * 100.0


# ============================================================================================ helpers
def _advance(values, nsamp, mx, ks, xs, c):
    """``c`` identical samples ``xs`` into rows ``ks`` of a TimeAverageMessageData array (closed form).

    Pulsar's update is a running mean while ``numSamples < max`` and then an exponential average with
    weight ``1/max``; ``c`` samples of ``x`` give ``v' = x + (v − x)·a`` with
    ``a = n/(n + m)·(1 − 1/max)^(c − m)``, ``m = min(c, max − n)`` samples in the mean phase.
    Same values as ``c`` calls of the update, up to floating-point rounding.
    """
    if len(ks) == 0 or c <= 0:
        return
    n = nsamp[ks]
    m1 = np.minimum(c, np.maximum(mx - n, 0))
    n1 = n + m1
    a = n / np.maximum(n1, 1)
    rest = c - m1
    if rest.any():
        a = a * np.power(1.0 - 1.0 / mx, rest)
    v = values[ks]
    values[ks] = xs + (v - xs) * a[:, None]
    nsamp[ks] = np.minimum(n1, mx)


def _prime_view(v: LoadView, sim: Simulation) -> None:
    """Inject the per-bundle lookups the simulator keeps (they change only on splits) and the
    leader's bundleData membership into a freshly built view: ``LoadView`` caches these as
    ``cached_property`` values, so setting them in the instance dict is what computing them would
    store, without rebuilding a 10,000-entry dict every minute."""
    d = v.__dict__
    d["bundle_index"] = sim.bidx
    d["namespaces"] = sim.v_ns_sorted
    d["namespace_index"] = sim.v_ns_index
    d["bundle_namespace_id"] = sim.v_ns_id
    d["sheddable"] = v.in_bundle_data & ~sim.v_bad_ns


def _js(d) -> str:
    import json
    import math

    if not d:
        return ""
    return json.dumps({str(k): (round(float(x), 6) if isinstance(x, (int, float, np.floating)) and math.isfinite(x)
                                else None) for k, x in d.items()}, separators=(",", ":"))


def _is_cancelled(cancel) -> bool:
    if cancel is None:
        return False
    if hasattr(cancel, "is_set"):
        return bool(cancel.is_set())
    return bool(cancel())


def _safe_state(leader) -> dict:
    try:
        from .metrics import json_clean

        return json_clean(leader.state())
    except Exception:  # pragma: no cover - a plug-in leader without state
        return {}


def _extensible(cfg: LoadBalancerConfig) -> bool:
    """The shedding strategy runs in another load manager than the modular one (TransferShedder)."""
    from ..strategies import SHEDDING

    try:
        return bool(getattr(SHEDDING.get(shedding_name(cfg.loadBalancerLoadSheddingStrategy)),
                            "load_manager_class_name", None))
    except Exception:
        return False


def _check_config_events(cfg: LoadBalancerConfig, sc: Scenario, minutes: int) -> None:
    """Config events of the run must keep a valid strategy pair and the same load manager."""
    for e in sorted((e for e in sc.events if e.kind == "config" and e.at < minutes), key=lambda e: e.at):
        new = cfg.with_values(dict(e.get("set")), source=sc.source)
        _check_pair(new, sc.source)
        if _extensible(new) != _extensible(cfg):
            raise InputError("a config event cannot switch between the modular and the extensible load manager "
                             "(Pulsar needs a broker restart)", source=sc.source, field=f"events[{e.index}]")
        cfg = new


def _placement_class(cfg: LoadBalancerConfig):
    from ..strategies import PLACEMENT

    try:
        return PLACEMENT.get(placement_name(cfg.loadBalancerLoadPlacementStrategy))
    except Exception:
        return None


def _check_pair(cfg: LoadBalancerConfig, source):
    from ..strategies import PLACEMENT, SHEDDING

    try:
        s = shedding_name(cfg.loadBalancerLoadSheddingStrategy)
        p = placement_name(cfg.loadBalancerLoadPlacementStrategy)
    except Exception as exc:
        raise InputError(str(exc), source=source, field="config") from None
    if p == "AvgShedder" and s != "AvgShedder":
        raise InputError("loadBalancerLoadPlacementStrategy is AvgShedder but loadBalancerLoadSheddingStrategy is "
                         f"{s}: Pulsar 4.x refuses to start (both must be AvgShedder)", source=source,
                         field="loadBalancerLoadPlacementStrategy")
    s_ext = bool(getattr(SHEDDING.get(s), "load_manager_class_name", None))
    p_ext = bool(getattr(PLACEMENT.get(p), "extensible", False))
    if p_ext and not s_ext:
        raise InputError(f"{p} is a placement of the Extensible Load Manager but {s} runs in the modular load "
                         "manager: use TransferShedder with it, or a modular placement",
                         source=source, field="loadBalancerLoadPlacementStrategy")
    if s_ext and not p_ext and p != "RoundRobinBrokerSelector":
        raise InputError(f"{s} runs in the Extensible Load Manager, which places with "
                         f"ExtensibleLeastResourceUsageWithWeight (or RoundRobinBrokerSelector), not {p}",
                         source=source, field="loadBalancerLoadPlacementStrategy")
    if cfg.extensible and not s_ext:
        raise InputError(f"loadManagerClassName is ExtensibleLoadManagerImpl but {s} is a modular shedding "
                         "strategy: use TransferShedder", source=source, field="loadManagerClassName")


# ============================================================================================ API
def simulate(scenario: Scenario, config: LoadBalancerConfig | None = None, *, seed: int | None = None,
             minutes: int | None = None, leader=None, progress: Callable | None = None,
             cancel=None) -> SimulationResult:
    """Run ``scenario`` with ``config`` (default: the scenario's own config).

    Parameters
    ----------
    scenario : Scenario
    config : LoadBalancerConfig, optional
        The full load-balancer config (the scenario's ``preset``/``config`` are *not* applied on top).
    seed : int, optional
        Seed of everything random in the run (traffic noise, CPU noise, placement draws, lookup order);
        default the scenario's ``seed``. The scenario's layout (topic rate skew, diurnal phases) always
        uses the scenario's own seed.
    minutes : int, optional
        Override the scenario's length.
    leader : Leader or callable, optional
        A :class:`engine.simulator.leader.Leader`, or ``factory(config, seed=Generator)``; default
        :func:`engine.simulator.leader.make_leader`.
    progress : callable, optional
        ``progress(done_minutes, total_minutes)``, called about 100 times.
    cancel : callable or threading.Event, optional
        Checked every minute; when true the run stops and the partial result has ``cancelled=True``.

    Returns
    -------
    SimulationResult
    """
    cfg = config if config is not None else scenario.lb_config()
    # a scenario may name its own simulation (engine.simulator.from_snapshot: a snapshot as the start)
    cls = getattr(scenario, "simulation_class", None) or Simulation
    return cls(scenario, cfg, seed=seed, minutes=minutes, leader=leader).run(progress, cancel)


def run_scenario(scenario, *, strategy: str | None = None, placement: str | None = None,
                 set: dict | None = None, preset: str | None = None, config: LoadBalancerConfig | None = None,
                 minutes: int | None = None, seed: int | None = None, leader=None,
                 progress: Callable | None = None, cancel=None) -> SimulationResult:
    """Load (if needed) and run a scenario with optional overrides, as the command line does.

    ``scenario`` is a :class:`Scenario`, a file path, a shipped scenario name or a parsed mapping.
    The config is: ``config`` if given, else ``preset`` (else the scenario's preset, else Pulsar 4.x
    defaults) + the scenario's ``config`` keys; then ``set`` (broker.conf keys), then
    ``strategy``/``placement`` (AvgShedder shedding implies AvgShedder placement unless given;
    leaving AvgShedder shedding falls back to LeastLongTermMessageRate placement). ``TransferShedder``
    also sets ``loadManagerClassName`` to the Extensible Load Manager and, unless given or already
    extensible, the placement to ``ExtensibleLeastResourceUsageWithWeight``; a modular strategy on an
    extensible config sets the modular load manager back (and LeastLongTermMessageRate placement).
    Incompatible pairs raise :class:`~engine.errors.InputError` before the run starts.

    Examples
    --------
    >>> r = run_scenario("pip364-history-lag")          # doctest: +SKIP
    >>> r.summary["unloads"], r.events.query("kind == 'unload'").head()  # doctest: +SKIP
    """
    from ..config import PRESETS
    from ..strategies import SHEDDING, fqn

    if isinstance(scenario, Scenario):
        sc = scenario
    elif isinstance(scenario, dict):
        sc = parse_scenario(scenario)
    else:
        sc = load_scenario(scenario)
    if config is None:
        base = PRESETS[preset] if preset else None
        if preset and preset not in PRESETS:
            raise InputError(f"unknown preset {preset!r}; known: {', '.join(sorted(PRESETS))}", field="preset")
        cfg = sc.lb_config(base)
    else:
        cfg = config
    if set:
        cfg = cfg.with_values({str(k): (v if not isinstance(v, bool) else str(v).lower()) for k, v in set.items()},
                              source="--set")
    changes = {}
    if strategy:
        s = shedding_name(strategy)
        changes["loadBalancerLoadSheddingStrategy"] = fqn(s)
        lm_class = getattr(SHEDDING.get(s), "load_manager_class_name", None)
        configured = _placement_class(cfg)
        if lm_class:  # TransferShedder: the Extensible Load Manager and its own placement
            changes["loadManagerClassName"] = lm_class
            if not placement and not getattr(configured, "extensible", False):
                placement = SHEDDING[s].default_placement
        else:
            if cfg.extensible:  # back to the modular load manager
                changes["loadManagerClassName"] = LoadBalancerConfig().loadManagerClassName
            if not placement and s == "AvgShedder":
                placement = "AvgShedder"
            elif not placement and s != "AvgShedder" and (
                    cfg.placement_strategy == "AvgShedder" or getattr(configured, "extensible", False)):
                placement = "LeastLongTermMessageRate"
    if placement:
        changes["loadBalancerLoadPlacementStrategy"] = fqn(placement_name(placement))
    if changes:
        cfg = cfg.with_values(changes)
    return simulate(sc, cfg, seed=seed, minutes=minutes, leader=leader, progress=progress, cancel=cancel)
