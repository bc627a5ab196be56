"""``python -m dashboard.collect``: a LoadData snapshot (or a timeline) from a live cluster.

::

    python -m dashboard.collect [--client-conf conf/client.conf] [--admin-url https://pulsar:8443]
        [--token-file F | --token T] [--tls-trust-certs CA.pem] [--tls-cert C.pem --tls-key K.pem]
        [--cluster NAME] [--parallel 8] [--retries 2] [--every 60s --count N] --out PATH

Settings come from Pulsar's ``client.conf`` (as ``pulsar-admin`` reads it, see :mod:`dashboard.collect.auth`);
options override it. Without a ``client.conf`` auth plugin, the token comes from ``--token-file``, ``--token``
(warned: visible in ``ps``) or ``PULSAR_AUTH_TOKEN``. The command line has no allow-list (the operator's own
tool). Exit status 0 when a snapshot was written (brokers that failed are listed on stderr and in
``shedlabMissingBrokers``), 2 on a problem, with one line naming what went wrong.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import datetime, timezone
from pathlib import Path

from .auth import ClientConf, TokenAuth, make_auth, read_client_conf, ssl_context
from .cluster import collect_snapshot, collect_timeline, parse_every
from .net import CollectError, redact

__all__ = ["main", "build_settings"]

TOKEN_ARGV_WARNING = ("warning: --token is visible to other users of this host (ps, /proc); "
                      "prefer --token-file, PULSAR_AUTH_TOKEN or authParams in client.conf")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m dashboard.collect",
                                description="Collect a LoadData snapshot (or a timeline) from a Pulsar cluster.")
    p.add_argument("--client-conf", help="Pulsar client.conf (webServiceUrl, authPlugin/authParams, tls*)")
    p.add_argument("--admin-url", help="a broker's (or the proxy's) admin URL, http(s)://host:port "
                                       "(default: webServiceUrl of --client-conf)")
    p.add_argument("--token", help="bearer token (visible in ps: prefer --token-file or PULSAR_AUTH_TOKEN)")
    p.add_argument("--token-file", help="file holding the bearer token")
    p.add_argument("--tls-trust-certs", help="CA bundle (PEM) for the brokers' certificates (tlsTrustCertsFilePath)")
    p.add_argument("--tls-cert", help="client certificate (PEM) for mTLS (tlsCertificateFilePath)")
    p.add_argument("--tls-key", help="client private key (PEM) for mTLS (tlsKeyFilePath)")
    p.add_argument("--tls-allow-insecure", action="store_true",
                   help="do not verify the brokers' certificates (tlsAllowInsecureConnection)")
    p.add_argument("--broker-port", type=int, help="port of each broker's admin API when it differs from the port "
                                                   "in its broker id (e.g. the TLS port 8443)")
    p.add_argument("--cluster", help="cluster name (needed when the admin API lists several)")
    p.add_argument("--parallel", type=int, default=8, help="brokers asked at the same time (default 8, max 64)")
    p.add_argument("--retries", type=int, default=2, help="extra attempts on 5xx and timeouts (default 2)")
    p.add_argument("--every", default="60s", help="interval between snapshots with --count (default 60s)")
    p.add_argument("--count", type=int, default=1, help="number of snapshots (>1 writes a timeline directory)")
    p.add_argument("--timeout", type=float, default=10.0, help="per-request timeout in seconds")
    p.add_argument("--out", required=True, help="output file (one snapshot) or directory (timeline)")
    return p


def build_settings(args, env=None, warn=None) -> tuple[str, dict]:
    """(admin URL, keyword arguments for :class:`~dashboard.collect.cluster.Collector`) from the options."""
    env = os.environ if env is None else env
    conf = read_client_conf(args.client_conf) if args.client_conf else ClientConf()
    url = args.admin_url or conf.web_service_url
    if not url:
        raise CollectError("give --admin-url or a --client-conf with webServiceUrl")
    conf.trust_certs = args.tls_trust_certs or conf.trust_certs
    conf.cert_file = args.tls_cert or conf.cert_file
    conf.key_file = args.tls_key or conf.key_file
    conf.allow_insecure = args.tls_allow_insecure or conf.allow_insecure
    if not (0 < args.timeout <= 600):
        raise CollectError("--timeout must be in (0, 600] seconds")
    if not (1 <= args.parallel <= 64):
        raise CollectError("--parallel must be 1..64")
    if not (0 <= args.retries <= 10):
        raise CollectError("--retries must be 0..10")
    oauth_verify = ssl_context(conf.trust_certs)  # the identity provider gets no client certificate
    auth = None
    if args.token_file:
        auth = TokenAuth.from_params("file:" + str(Path(args.token_file).expanduser().resolve()))
    elif args.token:
        if warn:
            warn(TOKEN_ARGV_WARNING)
        auth = TokenAuth(args.token)
    else:
        auth = make_auth(conf.auth_plugin, conf.auth_params, verify=oauth_verify, timeout=args.timeout, conf=conf)
        if auth is None and env.get("PULSAR_AUTH_TOKEN"):
            auth = TokenAuth(env["PULSAR_AUTH_TOKEN"])
    verify = ssl_context(conf.trust_certs, conf.cert_file, conf.key_file, allow_insecure=conf.allow_insecure,
                         hostname_verification=conf.hostname_verification)
    return url, {"auth": auth, "verify": verify, "broker_port": args.broker_port, "parallel": args.parallel,
                 "retries": args.retries, "timeout": args.timeout}


def _warn_missing(snap: dict):
    miss = snap.get("shedlabMissingBrokers") or {}
    if miss:
        print(f"warning: {len(miss)} of {snap['shedlabCollected']['brokers']} brokers missing from the snapshot "
              "(shedlabMissingBrokers):", file=sys.stderr)
        for bid, why in miss.items():
            print(f"  {bid}: {why}", file=sys.stderr)


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    warn = lambda m: print(m, file=sys.stderr)  # noqa: E731
    try:
        url, kw = build_settings(args, warn=warn)
        if args.count < 1 or args.count > 100000:
            raise CollectError("--count must be 1..100000")
        if args.count == 1:
            snap = collect_snapshot(url, None, args.cluster, **kw)
            out = Path(args.out)
            if out.is_dir():
                out = out / f"snapshot-{datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%SZ')}.json"
            out.write_text(json.dumps(snap, indent=1))
            print(f"{out}: {len(snap['brokers'])} brokers, {sum(len(v) for v in snap['bundleTopics'].values())} "
                  f"topics in {len(snap['bundleTopics'])} bundles")
            _warn_missing(snap)
        else:
            paths = collect_timeline(url, args.out, cluster=args.cluster, every=parse_every(args.every),
                                     count=args.count, log=print, **kw)
            print(f"{args.out}: timeline of {len(paths)} snapshots")
        return 0
    except CollectError as exc:
        print(f"error: {redact(exc)}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: {redact(exc.filename or '')}: {exc.strerror or type(exc).__name__}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
