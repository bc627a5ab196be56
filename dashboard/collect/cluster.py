"""The collector proper: Pulsar admin REST calls → one LoadData snapshot (or a timeline of them).

Requests (Pulsar admin API v2, field names exactly Pulsar's):

1. ``GET /admin/v2/clusters`` — the cluster names (``cluster`` picks one when there are several);
2. ``GET /admin/v2/brokers/{cluster}`` — the active brokers, ids ``host:webServicePort``;
3. on **each broker's** web service, at most ``parallel`` brokers at a time:
   ``GET /admin/v2/broker-stats/load-report`` — that broker's ``LocalBrokerData`` (the modular load manager's
   report) and ``GET /admin/v2/broker-stats/topics`` — ``{namespace: {bundle range: {"persistent" |
   "non-persistent": {topic: stats}}}}``, the topics of each bundle.

A broker that fails (after the retries) does not abort the snapshot: it is left out and named in
``shedlabMissingBrokers`` (``{broker id: reason}``) — the snapshot is written when at least one broker answered.

**Extensible Load Manager.** ``ExtensibleLoadManagerWrapper.generateLoadReport`` throws, so ``load-report``
answers HTTP 500 on every broker. When that happens the collector reads ``loadManagerClassName`` from
``GET /admin/v2/brokers/configuration/runtime`` (super-user only) and, for ``ExtensibleLoadManagerImpl`` (or when
every broker answered 500 and the configuration cannot be read), stops with :data:`ELM_HELP`: how to take the
ELM's load data from its system topics with ``pulsar-client consume``.
"""
from __future__ import annotations

import base64
import json
import re
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

from .net import CollectError, Http, HttpStatusError, origin_of, redact

__all__ = ["Collector", "ElmCluster", "ELM_HELP", "ELM_CLASS", "collect_snapshot", "collect_timeline",
           "parse_every"]

_BROKER_ID = re.compile(r"[A-Za-z0-9._\-\[\]:]+:\d{1,5}")
ELM_CLASS = "org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl"
ELM_HELP = ("the Extensible Load Manager has no REST endpoint for its load data. Take it from its system topics "
            "(stop each with Ctrl-C after one report interval) and upload both files, or a zip of them:\n"
            "  bin/pulsar-client consume -n 0 -s shedlab non-persistent://pulsar/system/"
            "loadbalancer-broker-load-data > broker-load-data.txt\n"
            "  bin/pulsar-client consume -n 0 -s shedlab non-persistent://pulsar/system/"
            "loadbalancer-top-bundles-load-data > top-bundles-load-data.txt")


class ElmCluster(CollectError):
    """The cluster runs the Extensible Load Manager: no load reports over REST (message says what to do)."""


class _Basic:
    def __init__(self, user: str, password: str):
        raw = f"{urllib.parse.unquote(user)}:{urllib.parse.unquote(password)}".encode()
        self.value = "Basic " + base64.b64encode(raw).decode()

    def headers(self) -> dict:
        return {"Authorization": self.value}

    def invalidate(self):
        pass


class Collector:
    """One admin endpoint and the brokers it lists.

    ``auth`` is a :class:`~dashboard.collect.auth.TokenAuth` / ``OAuth2ClientCredentials`` (or ``token`` a bare
    bearer token); ``verify`` the TLS context; ``policy`` the web form's allow-list; ``quiet`` makes failures
    say only "no answer" / "not allowed" / the HTTP status. Credentials go to the admin URL's origin and to the
    origins of the brokers it lists, never elsewhere (see :mod:`dashboard.collect.net`).
    """

    def __init__(self, admin_url: str, token: str | None = None, *, auth=None, verify=True, timeout: float = 10.0,
                 broker_scheme: str | None = None, broker_port: int | None = None, policy=None, parallel: int = 8,
                 retries: int = 2, backoff: float = 0.25, quiet: bool = False, sleep=time.sleep):
        raw = (admin_url or "").strip()
        u = urllib.parse.urlsplit(raw)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise CollectError(f"admin URL must be http(s)://host:port, got {redact(raw)[:200]!r}")
        netloc = u.netloc.rsplit("@", 1)[-1]
        try:
            u.port
        except ValueError:
            raise CollectError(f"admin URL has a bad port: {redact(raw)[:200]!r}") from None
        self.base = f"{u.scheme}://{netloc}{u.path.rstrip('/')}"
        self.scheme = broker_scheme or u.scheme
        self.broker_port = broker_port
        if auth is None and token and token.strip():
            from .auth import TokenAuth
            auth = TokenAuth(token)
        if auth is None and u.username:
            auth = _Basic(u.username, u.password or "")
        self.auth = auth
        self.quiet = quiet
        self.parallel = max(1, min(int(parallel), 64))
        self.cred_origins = {origin_of(self.base)}
        self._lock = threading.Lock()
        self.http = Http(verify=verify, timeout=timeout, retries=retries, backoff=backoff, policy=policy,
                         auth_for=self._auth_for, on_unauthorized=self._unauthorized, parallel=self.parallel,
                         sleep=sleep)

    @property
    def requests(self) -> int:
        return self.http.requests

    def close(self):
        self.http.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _auth_for(self, origin) -> dict:
        if self.auth is None or origin not in self.cred_origins:
            return {}
        return self.auth.headers()

    def _unauthorized(self) -> bool:
        if self.auth is None:
            return False
        return bool(self.auth.invalidate())

    def get_json(self, url: str):
        return self.http.get_json(url, quiet=self.quiet)

    def get_text(self, url: str) -> str:
        return self.http.get_json(url, quiet=self.quiet, text=True)

    def policies(self, cluster: str, namespaces, notes: list | None = None) -> dict | None:
        """The cluster's isolation policies, failure domains and the anti-affinity groups of ``namespaces``
        (:mod:`dashboard.policy_fetch`; a part that cannot be read is left out with a line in ``notes``)."""
        from ..policy_fetch import fetch_policies

        return fetch_policies(self.get_json, self.base, cluster, namespaces, get_text=self.get_text, notes=notes,
                              errors=(CollectError,), parallel=self.parallel)

    def broker_url(self, broker_id: str) -> str:
        if not _BROKER_ID.fullmatch(broker_id or ""):
            raise CollectError(f"{self.base}: unexpected broker id {str(broker_id)[:80]!r}")
        if self.broker_port:
            broker_id = f"{broker_id.rsplit(':', 1)[0]}:{self.broker_port}"
        return f"{self.scheme}://{broker_id}"

    # ------------------------------------------------------------------ pulsar calls
    def clusters(self) -> list[str]:
        got = self.get_json(f"{self.base}/admin/v2/clusters")
        if not isinstance(got, list) or not all(isinstance(x, str) for x in got):
            raise CollectError(f"{self.base}/admin/v2/clusters: expected a list of cluster names")
        return got

    def brokers(self, cluster: str) -> list[str]:
        url = f"{self.base}/admin/v2/brokers/{urllib.parse.quote(cluster, safe='')}"
        got = self.get_json(url)
        if not isinstance(got, list) or not all(isinstance(x, str) for x in got):
            raise CollectError(f"{url}: expected a list of broker ids")
        return got

    def load_report(self, broker_id: str) -> dict:
        url = f"{self.broker_url(broker_id)}/admin/v2/broker-stats/load-report"
        got = self.get_json(url)
        if not isinstance(got, dict) or not ("cpu" in got or "lastStats" in got or "brokerId" in got):
            raise CollectError(f"{url}: not a LocalBrokerData load report")
        return got

    def topics(self, broker_id: str) -> dict:
        url = f"{self.broker_url(broker_id)}/admin/v2/broker-stats/topics"
        got = self.get_json(url)
        if not isinstance(got, dict):
            raise CollectError(f"{url}: expected {{namespace: {{bundle: {{persistent: {{topic: stats}}}}}}}}")
        return got

    def load_manager_class(self) -> str | None:
        """``loadManagerClassName`` from the runtime configuration, ``None`` when it cannot be read."""
        try:
            got = self.get_json(f"{self.base}/admin/v2/brokers/configuration/runtime")
        except CollectError:
            return None
        v = got.get("loadManagerClassName") if isinstance(got, dict) else None
        return v if isinstance(v, str) else None

    def pick_cluster(self, cluster: str | None) -> str:
        names = self.clusters()
        if cluster:
            if cluster not in names:
                raise CollectError(f"{self.base}: cluster {cluster[:80]!r} not in {names}")
            return cluster
        if len(names) == 1:
            return names[0]
        if not names:
            raise CollectError(f"{self.base}/admin/v2/clusters: no clusters")
        raise CollectError(f"{self.base}: several clusters ({', '.join(names)}): choose one with --cluster")

    def _one_broker(self, bid: str):
        rep = self.load_report(bid)
        return rep, self.topics(bid)

    def snapshot(self, cluster: str | None = None, progress=None) -> dict:
        """One LoadData JSON snapshot of the cluster (``shedlabMissingBrokers`` names brokers that failed)."""
        name = self.pick_cluster(cluster)
        ids = self.brokers(name)
        if not ids:
            raise CollectError(f"{self.base}/admin/v2/brokers/{name}: no active brokers")
        good = [b for b in ids if _BROKER_ID.fullmatch(b)]
        with self._lock:  # the cluster's own broker list is where the credentials may go
            self.cred_origins = {origin_of(self.base)} | {origin_of(self.broker_url(b)) for b in good}
        results, missing, statuses = {}, {}, {}
        done = [0]

        def run(bid):
            try:
                if bid not in good:
                    raise CollectError(f"{self.base}: unexpected broker id {bid[:80]!r}")
                results[bid] = self._one_broker(bid)
            except HttpStatusError as exc:
                missing[bid], statuses[bid] = str(exc), exc.status
            except CollectError as exc:
                missing[bid] = str(exc)
            finally:
                done[0] += 1
                if progress:
                    progress(done[0], len(ids), bid)

        with ThreadPoolExecutor(max_workers=min(self.parallel, len(ids))) as pool:
            list(pool.map(run, ids))
        if any(s == 500 for s in statuses.values()):
            lm = self.load_manager_class()
            if (lm and "ExtensibleLoadManager" in lm) or (lm is None and not results and
                                                           all(s == 500 for s in statuses.values())):
                how = f"loadManagerClassName={lm}" if lm else "every broker answers HTTP 500 on load-report"
                raise ElmCluster(f"{self.base}: this cluster runs the Extensible Load Manager ({how}): {ELM_HELP}")
        if not results:
            first = next(iter(missing.values()), "no answer")
            raise CollectError(f"no broker answered ({len(missing)} tried); first: {first}")
        brokers, bundle_topics = {}, {}
        for bid in ids:  # the cluster's order, whatever order the answers came in
            if bid not in results:
                continue
            rep, tops = results[bid]
            brokers[bid] = rep
            for ns, by_bundle in (tops or {}).items():
                if not isinstance(by_bundle, dict):
                    continue
                for rng, kinds in by_bundle.items():
                    names = []
                    if isinstance(kinds, dict):
                        for kind in ("persistent", "non-persistent"):
                            t = kinds.get(kind)
                            if isinstance(t, dict):
                                names.extend(sorted(t))
                    if names:
                        bundle_topics.setdefault(f"{ns}/{rng}", []).extend(names)
        now = max([_ms(r.get("lastUpdate")) for r in brokers.values()] + [int(time.time() * 1000)])
        snap = {"brokers": brokers, "bundleTopics": bundle_topics, "now": now,
                "shedlabCollected": {"adminUrl": self.base, "cluster": name, "brokers": len(ids),
                                     "missing": len(missing),
                                     "at": datetime.now(timezone.utc).isoformat(timespec="seconds")}}
        if missing:
            snap["shedlabMissingBrokers"] = {b: missing[b] for b in ids if b in missing}
        notes: list = []  # the cluster's policies: namespace isolation, failure domains, anti-affinity groups
        namespaces = {b.rsplit("/", 1)[0] for r in brokers.values()
                      for b in list(r.get("bundles") or []) + list(r.get("lastStats") or {})
                      if isinstance(b, str) and "/" in b}
        pol = self.policies(name, namespaces, notes)
        if pol:
            snap["shedlabPolicies"] = pol
        if notes:
            snap["shedlabCollected"]["policyNotes"] = notes[:10]
        return snap


def _ms(v) -> int:
    try:
        x = int(v or 0)
    except (TypeError, ValueError, OverflowError):
        return 0
    return x if 0 <= x < 10 ** 15 else 0


def collect_snapshot(admin_url: str, token: str | None = None, cluster: str | None = None, *,
                     timeout: float = 10.0, progress=None, **kw) -> dict:
    """One LoadData JSON snapshot (see the module docstring); ``kw`` goes to :class:`Collector`."""
    with Collector(admin_url, token, timeout=timeout, **kw) as col:
        return col.snapshot(cluster, progress=progress)


def collect_timeline(admin_url: str, out_dir, *, token=None, cluster=None, every: float = 60.0, count: int = 2,
                     timeout: float = 10.0, sleep=time.sleep, log=None, **kw) -> list[Path]:
    """``count`` snapshots ``every`` seconds apart, written to ``out_dir`` in name order."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    with Collector(admin_url, token, timeout=timeout, **kw) as col:
        for i in range(count):
            t0 = time.monotonic()
            snap = col.snapshot(cluster)
            stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
            p = out / f"snapshot-{i + 1:04d}-{stamp}.json"
            p.write_text(json.dumps(snap, indent=1))
            paths.append(p)
            if log:
                miss = snap.get("shedlabMissingBrokers") or {}
                log(f"{p} ({len(snap['brokers'])} brokers" + (f", {len(miss)} missing: {', '.join(miss)}"
                                                               if miss else "") + ")")
            if i + 1 < count:
                sleep(max(0.0, every - (time.monotonic() - t0)))
    return paths


def parse_every(text: str) -> float:
    """``"60s"``, ``"5m"``, ``"1h"`` or seconds → seconds."""
    m = re.fullmatch(r"\s*(\d{1,9}(?:\.\d{1,6})?)\s*([smh]?)\s*", text or "")
    if not m:
        raise CollectError(f"--every expects e.g. 60s, 5m or 1h, got {str(text)[:40]!r}")
    return float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]
