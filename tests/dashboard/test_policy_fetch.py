"""The collector's policy look-ups against a local server answering as Pulsar's admin REST API does
(ClustersBase: namespaceIsolationPolicies → Map<String, NamespaceIsolationDataImpl>, failureDomains →
Map<String, FailureDomainImpl>; Namespaces v2: {tenant}/{namespace}/antiAffinity → the bare group string)."""
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from dashboard.policy_fetch import fetch_policies, parse_group
from engine.policies import read_policies_json
from engine.samples import ISOLATION_SAMPLE_POLICIES

ROUTES = {
    "/admin/v2/clusters/c1/namespaceIsolationPolicies": (200, json.dumps(
        ISOLATION_SAMPLE_POLICIES["namespaceIsolationPolicies"]), "application/json"),
    "/admin/v2/clusters/c1/failureDomains": (403, json.dumps({"reason": "Don't have admin permission"}),
                                             "application/json"),
    "/admin/v2/namespaces/acme/payments-a/antiAffinity": (200, "payments-ha", "application/json"),
    "/admin/v2/namespaces/acme/payments-b/antiAffinity": (200, "payments-ha", "application/json"),
    "/admin/v2/namespaces/acme/web/antiAffinity": (200, "", "application/json"),
}


class _H(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_GET(self):
        code, body, ctype = ROUTES.get(self.path, (404, json.dumps({"reason": "not found"}), "application/json"))
        raw = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


@pytest.fixture()
def server():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _H)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()


def test_fetch_policies_from_the_admin_api(server):
    with httpx.Client(trust_env=False) as c:
        def get(url):
            r = c.get(url)
            r.raise_for_status()
            return r

        notes = []
        got = fetch_policies(lambda u: get(u).json(), server, "c1", ["acme/payments-a", "acme/payments-b", "acme/web"],
                             get_text=lambda u: get(u).text, notes=notes, errors=(httpx.HTTPError,))
    assert set(got) == {"namespaceIsolationPolicies", "antiAffinityGroups"}
    assert got["antiAffinityGroups"] == {"acme/payments-a": "payments-ha", "acme/payments-b": "payments-ha"}
    assert any("failure domains not read" in n and "403" in n for n in notes)
    cp = read_policies_json(got, "collected", "bundle")
    assert cp.policy_for("acme/payments-c").name == "payments"


def test_parse_group():
    assert parse_group("payments-ha\n") == "payments-ha" and parse_group('"g"') == "g"
    assert parse_group("") is None and parse_group(b"  ") is None


def test_collector_reads_the_policies(server):
    """The collector's own client (credentials, retries, text answers) on the policy endpoints."""
    from dashboard.collect.cluster import Collector

    notes = []
    with Collector(server, retries=0) as col:
        got = col.policies("c1", ["acme/payments-a", "acme/web"], notes)
    assert set(got["namespaceIsolationPolicies"]) == {"payments", "analytics"}
    assert got["antiAffinityGroups"] == {"acme/payments-a": "payments-ha"}
    assert any("failure domains not read" in n and "HTTP 403" in n for n in notes)


def test_snapshot_without_policy_endpoints_still_collects():
    """A cluster whose admin API answers 404 on the policy endpoints (the replay knows none): the snapshot
    is the same, with a note per part left out, and the engine reads it."""
    from dashboard.collect.cluster import collect_snapshot
    from engine.io import load_data_from_json

    from .pulsar_replay import PulsarReplay

    with PulsarReplay(token="s3cret") as p:
        snap = collect_snapshot(p.admin_url, "s3cret")
        asked = {path for _, path, _ in p.requests}
    assert "/admin/v2/clusters/standalone/namespaceIsolationPolicies" in asked
    assert any(x.endswith("/antiAffinity") for x in asked)
    assert "shedlabPolicies" not in snap and snap["shedlabCollected"]["policyNotes"]
    ld = load_data_from_json(snap, "live")
    assert len(ld.brokers) == 3 and getattr(ld, "cluster_policies", None) is None
