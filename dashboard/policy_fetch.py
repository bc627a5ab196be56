"""Fetch the cluster's placement policies through the admin REST API, for the collector.

What ``pulsar-admin`` calls, and where the answers go (the bundle shape of :mod:`engine.policies`,
stored under ``"shedlabPolicies"`` in the collected LoadData JSON):

* ``GET /admin/v2/clusters/{cluster}/namespaceIsolationPolicies`` (``ns-isolation-policy list``):
  ``{name: NamespaceIsolationDataImpl}`` → ``namespaceIsolationPolicies``;
* ``GET /admin/v2/clusters/{cluster}/failureDomains`` (``clusters list-failure-domains``):
  ``{domain: FailureDomainImpl}`` → ``failureDomains``;
* ``GET /admin/v2/namespaces/{tenant}/{namespace}/antiAffinity`` (``namespaces get-anti-affinity-group``),
  one per namespace of the snapshot's bundles (at most :data:`MAX_NAMESPACES`): the group as a bare string
  (empty when none) → ``antiAffinityGroups``.

All three need admin rights (the first two superuser): an HTTP error or an answer of the wrong shape
drops that part with a note, it never fails the snapshot. The HTTP calls are the caller's (the
collector's client: its credentials, retries and allow-list).
"""
from __future__ import annotations

import json
import urllib.parse

from engine.errors import InputError
from engine.policies import read_policies_json

__all__ = ["MAX_NAMESPACES", "fetch_policies", "parse_group"]

#: anti-affinity look-ups per snapshot (one request each)
MAX_NAMESPACES = 300


def parse_group(text) -> str | None:
    """The body of ``GET .../antiAffinity``: the bare group name (or a JSON string); ``None`` when blank."""
    if text is None:
        return None
    s = text.decode("utf-8", "replace") if isinstance(text, (bytes, bytearray)) else str(text)
    s = s.strip()
    if s.startswith('"'):
        try:
            s = json.loads(s)
        except ValueError:
            pass
    s = str(s).strip()
    return s[:500] or None


def _q(x: str) -> str:
    return urllib.parse.quote(x, safe="")


def fetch_policies(get_json, base: str, cluster: str, namespaces, *, get_text=None, notes: list | None = None,
                   errors=(Exception,), parallel: int = 1) -> dict | None:
    """The policies bundle for ``cluster`` (``None`` when nothing could be read).

    ``get_json(url)`` / ``get_text(url)`` do the requests (``get_text`` may be ``None``: no anti-affinity
    look-ups; with ``parallel`` > 1 they run on that many threads); ``errors`` are the exceptions they
    raise for an HTTP or transport failure; ``notes`` collects one line per part left out.
    """
    notes = notes if notes is not None else []
    out: dict = {}
    c = _q(cluster)
    for key, path, what in (("namespaceIsolationPolicies", f"/admin/v2/clusters/{c}/namespaceIsolationPolicies",
                             "namespace isolation policies"),
                            ("failureDomains", f"/admin/v2/clusters/{c}/failureDomains", "failure domains")):
        try:
            got = get_json(base + path)
        except errors as exc:
            notes.append(f"{what} not read ({str(exc)[:200]})")
            continue
        try:
            read_policies_json({key: got}, base + path, "bundle")
        except InputError as exc:
            notes.append(f"{what} not read: {exc}")
            continue
        if got:
            out[key] = got
    if get_text is not None:
        nss = sorted({n for n in namespaces if isinstance(n, str) and n.count("/") == 1})
        if len(nss) > MAX_NAMESPACES:
            notes.append(f"anti-affinity groups read for the first {MAX_NAMESPACES} of {len(nss)} namespaces")
            nss = nss[:MAX_NAMESPACES]

        def one(ns):
            tenant, name = ns.split("/")
            try:
                return ns, parse_group(get_text(f"{base}/admin/v2/namespaces/{_q(tenant)}/{_q(name)}/antiAffinity"))
            except errors:
                return ns, False

        if parallel > 1 and len(nss) > 1:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(max_workers=min(parallel, len(nss))) as pool:
                answers = list(pool.map(one, nss))
        else:
            answers = [one(ns) for ns in nss]
        failed = sum(1 for _, g in answers if g is False)
        groups = {ns: g for ns, g in answers if g}
        if failed:
            notes.append(f"anti-affinity group not read for {failed} of {len(nss)} namespace(s)")
        if groups:
            out["antiAffinityGroups"] = groups
    return out or None
