"""The collector against secured clusters, all on 127.0.0.1: TLS with a test CA and client-certificate
verification (mTLS), OAuth2 client credentials (``AuthenticationOAuth2``) with a refresh after expiry, token auth
from Pulsar's ``client.conf``, retries, ELM detection, credentials kept to their hosts, the web form's allow-list.

The ``client.conf`` files use Pulsar's key names (``conf/client.conf``: ``webServiceUrl``, ``authPlugin``,
``authParams``, ``tlsTrustCertsFilePath``, ``tlsCertificateFilePath``, ``tlsKeyFilePath``); the OAuth2
``authParams`` are ``ClientCredentialsFlow``'s (``issuerUrl``, ``privateKey``, ``audience``) and the key file is
``KeyFile`` JSON (``client_id``, ``client_secret``).
"""
import json
import socket
import time

import pytest

from dashboard import collect
from dashboard.collect import CollectError, Collector, ElmCluster, collect_snapshot, redact
from dashboard.collect.auth import OAuth2ClientCredentials, parse_properties
from dashboard.collect.net import Policy
from dashboard.collect.web import collect_enabled, form_collector

from .pulsar_replay import OAuthServer, PulsarReplay, Recorder, make_pki

FAST = {"timeout": 3.0, "backoff": 0.01}


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"))


def _conf(path, **kv) -> str:
    path.write_text("# Pulsar client.conf (keys of conf/client.conf)\n" + "".join(f"{k}={v}\n" for k, v in kv.items()))
    return str(path)


def test_secure001_mtls_with_test_ca_via_client_conf(tmp_path, pki, capsys):
    with PulsarReplay(token="t0k", tls=pki["server_context"]()) as p:
        (tmp_path / "token").write_text("t0k\n")
        conf = _conf(tmp_path / "client.conf", webServiceUrl=p.admin_url,
                     authPlugin="org.apache.pulsar.client.impl.auth.AuthenticationToken",
                     authParams=f"file://{tmp_path / 'token'}", tlsTrustCertsFilePath=pki["ca"],
                     tlsCertificateFilePath=pki["client_cert"], tlsKeyFilePath=pki["client_key"])
        assert collect.main(["--client-conf", conf, "--out", str(tmp_path / "snap.json")]) == 0
        snap = json.loads((tmp_path / "snap.json").read_text())
        assert len(snap["brokers"]) == 3 and "shedlabMissingBrokers" not in snap
        assert all(auth == "Bearer t0k" for _, _, auth in p.requests)
        n_ok = len(p.requests)
        # without a client certificate the server refuses the handshake: nothing reaches the admin API
        with pytest.raises(CollectError):
            collect_snapshot(p.admin_url, "t0k", verify=collect.ssl_context(pki["ca"]), retries=0, **FAST)
        # a client certificate from another CA is refused too
        with pytest.raises(CollectError):
            collect_snapshot(p.admin_url, "t0k", retries=0, verify=collect.ssl_context(
                pki["ca"], pki["rogue_cert"], pki["rogue_key"]), **FAST)
        # without the test CA the server's certificate is not trusted
        with pytest.raises(CollectError, match="TLS|certificate"):
            collect_snapshot(p.admin_url, "t0k", retries=0, verify=collect.ssl_context(
                None, pki["client_cert"], pki["client_key"]), **FAST)
        assert len(p.requests) == n_ok


def test_secure002_oauth2_client_credentials_and_refresh(tmp_path, pki):
    with OAuthServer("shedlab-client", "s3cr3t-value", expires_in=1, audience="urn:pulsar:test",
                     tls=pki["server_context"](client_cert=False)) as idp, \
            PulsarReplay(tls=pki["server_context"](), check_auth=None) as p:
        p.check_auth = idp.valid
        key = tmp_path / "key.json"  # KeyFile
        key.write_text(json.dumps({"type": "client_credentials", "client_id": "shedlab-client",
                                   "client_secret": "s3cr3t-value", "issuer_url": idp.issuer_url}))
        params = json.dumps({"type": "client_credentials", "issuerUrl": idp.issuer_url,
                             "privateKey": f"file://{key}", "audience": "urn:pulsar:test",
                             "trustCertsFilePath": pki["ca"]})  # FlowBase: the identity provider's CA
        conf = _conf(tmp_path / "client.conf", webServiceUrl=p.admin_url,
                     authPlugin="org.apache.pulsar.client.impl.auth.oauth2.AuthenticationOAuth2",
                     authParams=params, tlsTrustCertsFilePath=pki["ca"],
                     tlsCertificateFilePath=pki["client_cert"], tlsKeyFilePath=pki["client_key"])
        args = collect.cli._parser().parse_args(["--client-conf", conf, "--out", "x"])
        url, kw = collect.cli.build_settings(args, env={})
        assert isinstance(kw["auth"], OAuth2ClientCredentials)
        with Collector(url, **kw) as col:
            s1 = col.snapshot()
            assert kw["auth"].fetches == 1 and len(s1["brokers"]) == 3
            post = idp.posts[0]
            assert post == {"grant_type": "client_credentials", "client_id": "shedlab-client",
                            "client_secret": "s3cr3t-value", "audience": "urn:pulsar:test"}
            n1 = len(p.requests)
            time.sleep(1.1)  # the first token has expired: the admin server would answer 401 to it
            s2 = col.snapshot()
            n2 = len(p.requests)
            assert kw["auth"].fetches == 2 and len(s2["brokers"]) == 3
            kw["auth"].clock = lambda: 0.0  # the collector believes its token fresh, the server revoked it
            revoked = set(idp.issued)
            for t in revoked:
                idp.issued[t] = 0.0
            assert col.clusters() == ["standalone"]  # 401 -> a new token -> the same request again
            assert kw["auth"].fetches == 3 and [r[2] is not None for r in p.requests[n2:]] == [True, True]
        p.requests[:] = p.requests[:n2]
        t1 = {a for _, _, a in p.requests[:n1]}
        t2 = {a for _, _, a in p.requests[n1:]}
        assert len(t1) == 1 and len(t2) == 1 and t1 != t2  # one token per snapshot, the second one fresh
        assert len(idp.issued) == 3 and all(a and a.startswith("Bearer ") for _, _, a in p.requests)
        # a wrong secret: a clear error naming the OAuth2 error code, never the secret
        key.write_text(json.dumps({"client_id": "shedlab-client", "client_secret": "wrong"}))
        kw["auth"].invalidate()
        with pytest.raises(CollectError) as e:
            Collector(url, **kw).snapshot()
        assert "invalid_client" in str(e.value) and "wrong" not in str(e.value)


def test_secure003_client_conf_token_formats(tmp_path, monkeypatch):
    from dashboard.collect.auth import TokenAuth, make_auth
    (tmp_path / "t").write_text("abc\n")
    monkeypatch.setenv("MY_PULSAR_TOKEN", "from-env")
    assert TokenAuth.from_params("token:xyz").token == "xyz"
    assert TokenAuth.from_params(f"file://{tmp_path / 't'}").token == "abc"
    assert TokenAuth.from_params("env:MY_PULSAR_TOKEN").token == "from-env"
    assert TokenAuth.from_params("bare").token == "bare"
    with pytest.raises(CollectError, match="not supported"):
        make_auth("com.example.Kerberos", "")
    assert parse_properties("# c\nwebServiceUrl=https://a:8443/\nauthParams: token:x=y\n") == {
        "webServiceUrl": "https://a:8443/", "authParams": "token:x=y"}
    conf = collect.ClientConf()
    assert make_auth("org.apache.pulsar.client.impl.auth.AuthenticationTls",
                     "tlsCertFile:/c.pem,tlsKeyFile:/k.pem", conf=conf) is None
    assert (conf.cert_file, conf.key_file) == ("/c.pem", "/k.pem")


def test_secure004_retries_on_5xx_and_timeouts_then_succeeds():
    flaky = {(1, "/admin/v2/broker-stats/topics"): 2, "/admin/v2/clusters": 1}
    slow = {(2, "/admin/v2/broker-stats/load-report"): (1, 1.0)}  # first answer after the 0.3 s timeout
    with PulsarReplay(flaky=flaky, slow=slow) as p:
        snap = collect_snapshot(p.admin_url, retries=2, timeout=0.3, backoff=0.01)
    assert len(snap["brokers"]) == 3 and "shedlabMissingBrokers" not in snap
    assert sum(1 for i, path, _ in p.requests if (i, path) == (1, "/admin/v2/broker-stats/topics")) == 3
    assert sum(1 for i, path, _ in p.requests if (i, path) == (2, "/admin/v2/broker-stats/load-report")) == 2
    # retries exhausted: that broker is missing, the snapshot still made
    with PulsarReplay(flaky={(1, "/admin/v2/broker-stats/topics"): 5}) as p:
        snap = collect_snapshot(p.admin_url, retries=2, **FAST)
    assert list(snap["shedlabMissingBrokers"]) == [p.addr[1]] and "HTTP 503" in snap["shedlabMissingBrokers"][p.addr[1]]


def test_secure004b_module_entry_point(tmp_path):
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-m", "dashboard.collect", "--admin-url", "nope", "--out", str(tmp_path / "x")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.startswith("error: admin URL must be http(s)://host:port")


def test_secure005_elm_cluster_says_how_to_get_the_data(tmp_path, capsys):
    with PulsarReplay(elm=True) as p:
        with pytest.raises(ElmCluster) as e:
            collect_snapshot(p.admin_url, retries=0, **FAST)
        rc = collect.main(["--admin-url", p.admin_url, "--retries", "0", "--out", str(tmp_path / "x.json")])
    msg = str(e.value)
    assert "Extensible Load Manager" in msg and "ExtensibleLoadManagerImpl" in msg
    assert "pulsar-client consume -n 0 -s" in msg
    assert "non-persistent://pulsar/system/loadbalancer-broker-load-data" in msg
    assert "non-persistent://pulsar/system/loadbalancer-top-bundles-load-data" in msg
    assert rc == 2 and "Extensible Load Manager" in capsys.readouterr().err and not (tmp_path / "x.json").exists()


def test_secure006_redirect_to_another_host_carries_no_credentials():
    with Recorder() as rec:
        # broker 2 answers its topics with a redirect to another host name (localhost, not 127.0.0.1)
        where = f"http://localhost:{rec.port}/elsewhere"
        with PulsarReplay(token="s3cret", redirect={(1, "/admin/v2/broker-stats/topics"): where}) as p:
            snap = collect_snapshot(p.admin_url, "s3cret", **FAST)
            # the same for an OAuth2 token and for user:password@ in the admin URL
            basic = p.admin_url.replace("http://", "http://ops:pa55word@")
            p.token = None
            collect_snapshot(basic, **FAST)
    assert len(snap["brokers"]) == 3 and rec.seen
    for path, headers in rec.seen:
        assert path == "/elsewhere"
        assert not any(k.lower() in ("authorization", "cookie") for k in headers)
    assert "s3cret" not in json.dumps(snap)


def test_secure007_password_in_url_is_never_echoed(tmp_path, capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    url = f"http://admin:hunter2@127.0.0.1:{port}"
    with pytest.raises(CollectError) as e:
        collect_snapshot(url, retries=0, **FAST)
    assert "hunter2" not in str(e.value) and "admin:" not in str(e.value)
    assert collect.main(["--admin-url", url, "--retries", "0", "--timeout", "2", "--out", str(tmp_path / "x")]) == 2
    with pytest.raises(CollectError) as e:
        Collector("ftp://u:hunter2@x")
    assert "hunter2" not in str(e.value)
    assert "hunter2" not in capsys.readouterr().err
    assert redact("see https://u:p@h:1/x and http://a@b") == "see https://h:1/x and http://b"


def test_secure008_token_on_the_command_line_warns(tmp_path, capsys):
    with PulsarReplay(token="t") as p:
        assert collect.main(["--admin-url", p.admin_url, "--token", "t", "--out", str(tmp_path / "s.json")]) == 0
    err = capsys.readouterr().err
    assert "--token is visible" in err and "ps" in err and "t\n" not in err


def test_secure009_allow_list(monkeypatch):
    # the metadata address: refused before any DNS or network traffic
    def no_network(*a, **k):
        raise AssertionError("network used")
    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    pol = Policy.parse("10.0.0.0/8, pulsar.example.com")
    for host in ("169.254.169.254", "127.0.0.1", "::1", "0.0.0.0", "192.168.1.1"):
        with pytest.raises(collect.NotAllowed, match="^not allowed$"):
            pol.resolve(host, 80)
    assert pol.resolve("10.1.2.3", 8080) == "10.1.2.3"
    with pytest.raises(collect.NotAllowed):  # an unlisted name (no CIDR listed) is refused without a DNS lookup
        Policy.parse("pulsar.example.com").resolve("internal.example.org", 80)
    env = {"SHEDLAB_COLLECT": "1", "SHEDLAB_COLLECT_ALLOW": "pulsar.example.com"}
    col = form_collector("http://169.254.169.254/latest/meta-data", None, env=env)
    with pytest.raises(CollectError) as e:
        col.clusters()
    assert str(e.value).endswith(": not allowed") and col.requests == 0
    monkeypatch.undo()
    # a listed name that resolves to loopback is still refused; a listed CIDR allows it
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: [(2, 1, 6, "", ("127.0.0.1", 80))])
    with pytest.raises(collect.NotAllowed):
        pol.resolve("pulsar.example.com", 80)
    assert Policy.parse("pulsar.example.com 127.0.0.0/8").resolve("pulsar.example.com", 80) == "127.0.0.1"


def test_secure010_form_loopback_refused_unless_listed_and_brokers_checked():
    with PulsarReplay(token="t") as p:
        env = {"SHEDLAB_COLLECT": "1", "SHEDLAB_COLLECT_ALLOW": "10.0.0.0/8"}
        with form_collector(p.admin_url, "t", env=env) as col:
            with pytest.raises(CollectError) as e:
                col.snapshot()
        assert str(e.value) == f"{p.admin_url}/admin/v2/clusters: not allowed" and not p.requests
        env["SHEDLAB_COLLECT_ALLOW"] = "127.0.0.1/32"
        with form_collector(p.admin_url, "t", env=env) as col:
            snap = col.snapshot()
        assert len(snap["brokers"]) == 3
        # a redirect to a refused host is checked again: not allowed, nothing more
        p.redirect = {"/admin/v2/clusters": "http://169.254.169.254/latest/meta-data"}
        with form_collector(p.admin_url, "t", env=env) as col:
            with pytest.raises(CollectError, match="not allowed$"):
                col.snapshot()
    # a closed port under the form: "no answer", no exception text
    with form_collector(p.admin_url, None, env=env, retries=0, timeout=2) as col:
        with pytest.raises(CollectError) as e:
            col.clusters()
    assert str(e.value).endswith(": no answer")


def test_secure011_form_off_by_default():
    assert not collect_enabled({})
    assert collect_enabled({"SHEDLAB_COLLECT": "1"})
    assert not collect_enabled({"SHEDLAB_COLLECT": "1", "SHEDLAB_DISABLE_COLLECT": "1"})
    with pytest.raises(CollectError, match="off on this server"):
        form_collector("http://127.0.0.1:1", None, env={})
    with pytest.raises(CollectError, match="SHEDLAB_COLLECT_ALLOW"):
        form_collector("http://127.0.0.1:1", None, env={"SHEDLAB_COLLECT": "1"})


def test_secure012_form_checks_every_listed_broker_and_pins_tls(pki):
    # the cluster lists a broker at the metadata address: refused (no traffic), named missing, the rest kept
    with PulsarReplay(token="t", extra_brokers=["169.254.169.254:8080"]) as p:
        env = {"SHEDLAB_COLLECT": "1", "SHEDLAB_COLLECT_ALLOW": "127.0.0.1/32"}
        with form_collector(p.admin_url, "t", env=env) as col:
            snap = col.snapshot()
    assert len(snap["brokers"]) == 3
    assert snap["shedlabMissingBrokers"] == {"169.254.169.254:8080":
                                             "http://169.254.169.254:8080/admin/v2/broker-stats/load-report: "
                                             "not allowed"}
    # HTTPS under the allow-list: the connection goes to the checked address, the certificate is checked
    # against the name (SNI localhost), the private CA comes from SHEDLAB_COLLECT_CA
    ctx = pki["server_context"](client_cert=False)  # the form has no client certificate
    with PulsarReplay(token="t", tls=ctx, host="localhost") as p:
        assert p.admin_url.startswith("https://localhost:")
        env = {"SHEDLAB_COLLECT": "1", "SHEDLAB_COLLECT_ALLOW": "localhost 127.0.0.0/8",
               "SHEDLAB_COLLECT_CA": pki["ca"]}
        with form_collector(p.admin_url, "t", env=env) as col:
            snap = col.snapshot()
        assert len(snap["brokers"]) == 3 and all(a == "Bearer t" for _, _, a in p.requests)
        env.pop("SHEDLAB_COLLECT_CA")  # without the private CA: refused by certificate, said briefly
        with form_collector(p.admin_url, "t", env=env, retries=0) as col:
            with pytest.raises(CollectError, match="no answer$"):
                col.clusters()
