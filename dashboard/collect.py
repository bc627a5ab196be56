"""The live-cluster collector: ask Pulsar's admin REST API for a LoadData snapshot (or a timeline).

::

    python -m dashboard.collect --admin-url http://pulsar-admin:8080 [--token T | --token-file F]
        [--cluster NAME] [--every 60s --count N] --out PATH

Requests (Pulsar admin API v2, field names exactly Pulsar's):

1. ``GET /admin/v2/clusters`` — the cluster names (``--cluster`` picks one when there are several);
2. ``GET /admin/v2/brokers/{cluster}`` — the active brokers, ids ``host:webServicePort``;
3. on **each broker's** web service: ``GET /admin/v2/broker-stats/load-report`` — that broker's
   ``LocalBrokerData`` (the modular load manager's load report), and
   ``GET /admin/v2/broker-stats/topics`` — ``{namespace: {bundle range: {"persistent" |
   "non-persistent": {topic: stats}}}}``, giving the topics of each bundle.

The result is LoadData JSON (``brokers``, ``bundleTopics``, ``now``): bundle data and time averages
are derived from the reports the way Pulsar's leader does when the snapshot is read. With
``--count N`` (N > 1) ``PATH`` is a directory receiving one snapshot per round
(``snapshot-0001-<UTC time>.json`` …), which ``load_timeline`` and the dashboard read in order.

A token is sent as ``Authorization: Bearer <token>``; it is never written anywhere. Exit status 0 on
success, 2 on a problem, with one line naming the URL and what went wrong.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

from engine.errors import ShedlabError

__all__ = ["CollectError", "Collector", "collect_snapshot", "collect_timeline", "parse_every", "main"]

_BROKER_ID = re.compile(r"^[A-Za-z0-9._\-\[\]:]+:\d{1,5}$")
MAX_RESPONSE = 64 * 1024 * 1024


class CollectError(ShedlabError):
    """A request failed or returned something that is not what Pulsar returns (one line)."""


class Collector:
    """One admin endpoint (and the brokers it lists), with an optional bearer token."""

    def __init__(self, admin_url: str, token: str | None = None, *, timeout: float = 10.0,
                 broker_scheme: str | None = None):
        u = urllib.parse.urlsplit((admin_url or "").strip())
        if u.scheme not in ("http", "https") or not u.netloc:
            raise CollectError(f"admin URL must be http(s)://host:port, got {admin_url!r}")
        self.base = f"{u.scheme}://{u.netloc}{u.path.rstrip('/')}"
        self.scheme = broker_scheme or u.scheme
        self.token = (token or "").strip() or None
        self.timeout = timeout
        self.requests = 0

    # ------------------------------------------------------------------ http
    def get_json(self, url: str):
        req = urllib.request.Request(url, headers={"Accept": "application/json", "User-Agent": "shedlab-collect"})
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        self.requests += 1
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:  # noqa: S310 - http(s) only (checked)
                raw = resp.read(MAX_RESPONSE + 1)
        except urllib.error.HTTPError as exc:
            reason = _pulsar_reason(exc)
            hint = " (check --token)" if exc.code in (401, 403) else ""
            raise CollectError(f"{url}: HTTP {exc.code} {exc.reason}{': ' + reason if reason else ''}{hint}") from None
        except urllib.error.URLError as exc:
            raise CollectError(f"{url}: cannot connect ({exc.reason})") from None
        except (TimeoutError, OSError) as exc:
            raise CollectError(f"{url}: {type(exc).__name__}: {exc}") from None
        if len(raw) > MAX_RESPONSE:
            raise CollectError(f"{url}: response larger than {MAX_RESPONSE // 1048576} MB")
        try:
            return json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise CollectError(f"{url}: not JSON ({exc})") from None

    def broker_url(self, broker_id: str) -> str:
        if not _BROKER_ID.match(broker_id):
            raise CollectError(f"{self.base}: unexpected broker id {broker_id[:80]!r}")
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
            raise CollectError(f"{url}: not a LocalBrokerData load report (the extensible load manager has none)")
        return got

    def topics(self, broker_id: str) -> dict:
        url = f"{self.broker_url(broker_id)}/admin/v2/broker-stats/topics"
        got = self.get_json(url)
        if not isinstance(got, dict):
            raise CollectError(f"{url}: expected {{namespace: {{bundle: {{persistent: {{topic: stats}}}}}}}}")
        return got

    def pick_cluster(self, cluster: str | None) -> str:
        names = self.clusters()
        if cluster:
            if cluster not in names:
                raise CollectError(f"{self.base}: cluster {cluster!r} not in {names}")
            return cluster
        if len(names) == 1:
            return names[0]
        if not names:
            raise CollectError(f"{self.base}/admin/v2/clusters: no clusters")
        raise CollectError(f"{self.base}: several clusters ({', '.join(names)}): choose one with --cluster")

    def snapshot(self, cluster: str | None = None, progress=None) -> dict:
        """One LoadData JSON snapshot of the cluster."""
        name = self.pick_cluster(cluster)
        ids = self.brokers(name)
        if not ids:
            raise CollectError(f"{self.base}/admin/v2/brokers/{name}: no active brokers")
        brokers, bundle_topics = {}, {}
        for i, bid in enumerate(ids):
            if progress:
                progress(i, len(ids), bid)
            rep = self.load_report(bid)
            brokers[bid] = rep
            for ns, by_bundle in (self.topics(bid) or {}).items():
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
        now = max([int(r.get("lastUpdate") or 0) for r in brokers.values()] + [int(time.time() * 1000)])
        return {"brokers": brokers, "bundleTopics": bundle_topics, "now": now,
                "shedlabCollected": {"adminUrl": self.base, "cluster": name, "brokers": len(ids),
                                     "at": datetime.now(timezone.utc).isoformat(timespec="seconds")}}


def _pulsar_reason(exc: urllib.error.HTTPError) -> str:
    try:
        body = exc.read(4096).decode("utf-8", "replace")
        obj = json.loads(body)
        if isinstance(obj, dict) and isinstance(obj.get("reason"), str):
            return obj["reason"][:200]
    except Exception:  # noqa: BLE001 - the body is only a hint
        pass
    return ""


def collect_snapshot(admin_url: str, token: str | None = None, cluster: str | None = None, *,
                     timeout: float = 10.0, progress=None) -> dict:
    """One LoadData JSON snapshot (see the module docstring)."""
    return Collector(admin_url, token, timeout=timeout).snapshot(cluster, progress=progress)


def collect_timeline(admin_url: str, out_dir, *, token=None, cluster=None, every: float = 60.0, count: int = 2,
                     timeout: float = 10.0, sleep=time.sleep, log=None) -> list[Path]:
    """``count`` snapshots ``every`` seconds apart, written to ``out_dir`` in name order."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    col = Collector(admin_url, token, timeout=timeout)
    paths = []
    for i in range(count):
        t0 = time.monotonic()
        snap = col.snapshot(cluster)
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        p = out / f"snapshot-{i + 1:04d}-{stamp}.json"
        p.write_text(json.dumps(snap, indent=1))
        paths.append(p)
        if log:
            log(f"{p} ({len(snap['brokers'])} brokers)")
        if i + 1 < count:
            sleep(max(0.0, every - (time.monotonic() - t0)))
    return paths


def parse_every(text: str) -> float:
    """``"60s"``, ``"5m"``, ``"1h"`` or seconds → seconds."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", text or "")
    if not m:
        raise CollectError(f"--every expects e.g. 60s, 5m or 1h, got {text!r}")
    return float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m dashboard.collect",
                                description="Collect a LoadData snapshot (or a timeline) from a Pulsar cluster.")
    p.add_argument("--admin-url", required=True, help="a broker's (or the proxy's) admin URL, http(s)://host:port")
    p.add_argument("--token", help="bearer token (prefer --token-file or PULSAR_AUTH_TOKEN: argv is visible)")
    p.add_argument("--token-file", help="file holding the bearer token")
    p.add_argument("--cluster", help="cluster name (needed when the admin API lists several)")
    p.add_argument("--every", default="60s", help="interval between snapshots with --count (default 60s)")
    p.add_argument("--count", type=int, default=1, help="number of snapshots (>1 writes a timeline directory)")
    p.add_argument("--timeout", type=float, default=10.0, help="per-request timeout in seconds")
    p.add_argument("--out", required=True, help="output file (one snapshot) or directory (timeline)")
    args = p.parse_args(argv)
    try:
        token = args.token
        if args.token_file:
            token = Path(args.token_file).read_text().strip()
        token = token or os.getenv("PULSAR_AUTH_TOKEN")
        if args.count < 1:
            raise CollectError("--count must be >= 1")
        if args.count == 1:
            snap = collect_snapshot(args.admin_url, token, args.cluster, timeout=args.timeout)
            out = Path(args.out)
            if out.is_dir():
                out = out / f"snapshot-{datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%SZ')}.json"
            out.write_text(json.dumps(snap, indent=1))
            print(f"{out}: {len(snap['brokers'])} brokers, {sum(len(v) for v in snap['bundleTopics'].values())} "
                  f"topics in {len(snap['bundleTopics'])} bundles")
        else:
            paths = collect_timeline(args.admin_url, args.out, token=token, cluster=args.cluster,
                                     every=parse_every(args.every), count=args.count, timeout=args.timeout,
                                     log=print)
            print(f"{args.out}: timeline of {len(paths)} snapshots")
        return 0
    except (CollectError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
