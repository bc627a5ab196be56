"""The cluster's policies with Extensible Load Manager data: read beside the ELM's files, inside
their zip (loose policy JSON or ZooKeeper ``admin/...`` nodes) or under ``shedlabPolicies`` in the ELM
container, so TransferShedder (``isTransferable`` with ``loadBalancerSheddingBundlesWithPoliciesEnabled``)
and the ELM placement (``BrokerIsolationPoliciesFilter``, ``AntiAffinityGroupPolicyFilter``) honour them;
``shed`` / ``replay`` take ``--policies FILE`` like ``place``.

ELM data: ``tests/engine/extensible/data`` (``pulsar-client consume`` output of the two load-data topics,
as ``CmdConsume`` prints it). Policy shapes: ``ns-isolation-policy list`` (``NamespaceIsolationDataImpl``),
``clusters list-failure-domains`` (``FailureDomainImpl``, also the ZooKeeper node
``/admin/clusters/<c>/failureDomain/<d>``), ``{"tenant/ns": group}`` (``namespaces get-anti-affinity-group``).
"""
import io
import json
import zipfile
from pathlib import Path

import pytest

from engine.config import LoadBalancerConfig
from engine.errors import InputError
from engine.extensible import ExtensibleLoadManager
from engine.extensible.snapshot import derive_extensible, extensible_from_json
from engine.io import load_snapshot_bytes
from engine.policies import policies_of
from engine.samples import ISOLATION_SAMPLE_POLICIES, load_sample

DATA = Path(__file__).resolve().parent / "extensible" / "data"
BLD = (DATA / "broker-load-data.consume.txt").read_bytes()
TOP = (DATA / "top-bundles-load-data.consume.txt").read_bytes()
#: public/default (broker-1's three bundles, broker-3's one) isolated to broker-1 and broker-2
ISO = {"pin": {"namespaces": ["public/default"], "primary": ["broker-[12]"], "secondary": [],
               "auto_failover_policy": {"policy_type": "min_available",
                                        "parameters": {"min_limit": "1", "usage_threshold": "80"}}}}


def _cfg(on):
    return LoadBalancerConfig().with_values({"loadBalancerSheddingBundlesWithPoliciesEnabled": on,
                                             "loadBalancerSheddingConditionHitCountThreshold": 0})


def _zip(*extra) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("broker-load-data.txt", BLD)
        zf.writestr("top-bundles-load-data.txt", TOP)
        for name, raw in extra:
            zf.writestr(name, raw)
    return buf.getvalue()


def test_zip_with_policy_files_gives_the_elm_snapshot_its_policies():
    """Loose ``ns-isolation-policy list`` JSON and a ZooKeeper failure-domain node inside the ELM zip."""
    dom = json.dumps({"brokers": ["broker-1:8080"]}).encode()
    ext = load_snapshot_bytes(_zip(("isolation.json", json.dumps(ISO).encode()),
                                   ("admin/clusters/c1/failureDomain/zone-a", dom)), "elm.zip")
    assert getattr(ext, "extensible", False)
    cp = policies_of(ext)
    assert cp.policy_for("public/default").name == "pin" and cp.failure_domains == {"zone-a": ["broker-1:8080"]}
    # a policy file first in name order does not hide the ELM data
    first = load_snapshot_bytes(_zip(("0-isolation.json", json.dumps(ISO).encode())), "elm.zip")
    assert first.extensible and policies_of(first).isolation
    # a bad policy file in the zip names the member and field
    bad = {"pin": dict(ISO["pin"], primary=["broker-[1"])}
    with pytest.raises(InputError) as ei:
        load_snapshot_bytes(_zip(("isolation.json", json.dumps(bad).encode())), "elm.zip")
    assert "isolation.json" in str(ei.value) and "invalid regex" in str(ei.value)


def test_transfer_shedder_and_placement_honour_the_policies_on_elm_data():
    """TransferShedderTest.testBundlesWithIsolationPolicies on the consume data: without policies the max
    broker broker-1 sends public/default bundles to the min broker broker-3; with public/default isolated
    to broker-1/2 none may go to broker-3 — flag off: not transferable at all; flag on: not to broker-3."""
    plain = load_snapshot_bytes(_zip(), "elm.zip")
    cyc = ExtensibleLoadManager(plain, _cfg(False), seed=0).do_load_shedding()
    assert ("public/default/0x80000000_0xc0000000", "broker-3:8080") in {(u.bundle, u.destination) for u in cyc.unloads}
    ext = load_snapshot_bytes(_zip(("isolation.json", json.dumps(ISO).encode())), "elm.zip")
    for on in (False, True):
        cyc = ExtensibleLoadManager(ext, _cfg(on), seed=0).do_load_shedding()
        moved = [(u.bundle, u.destination) for u in cyc.unloads if u.bundle.startswith("public/default/")]
        assert all(d in ("broker-1:8080", "broker-2:8080") for _, d in moved), moved
    dec = ExtensibleLoadManager(ext, _cfg(False), seed=0).select_broker("public/default/0x00000000_0x40000000")
    assert dec.broker in ("broker-1:8080", "broker-2:8080")
    step = [f for f in dec.filters if f.name.startswith("BrokerIsolationPoliciesFilter")][0]
    assert "primary brokers `broker-[12]`" in step.reasons["broker-3:8080"]


def test_container_shedlab_policies_round_trip():
    """The ELM container carries the policies under ``shedlabPolicies`` (written and read back); on the
    isolation-groups sample TransferShedder then leaves the isolated payments bundles alone and places an
    acme/payments-a bundle inside its group, as on the modular form."""
    obj = derive_extensible(load_sample("isolation-groups")).to_json()
    free = extensible_from_json(obj, "c.json")
    assert policies_of(free) is None
    assert ExtensibleLoadManager(free, _cfg(False), seed=0).do_load_shedding().unloads  # policy-free: moves
    ext = extensible_from_json({**obj, "shedlabPolicies": ISOLATION_SAMPLE_POLICIES}, "c.json")
    assert ext.to_json()["shedlabPolicies"]["antiAffinityGroups"] == ISOLATION_SAMPLE_POLICIES["antiAffinityGroups"]
    assert policies_of(extensible_from_json(ext.to_json(), "again.json")).summary() == policies_of(ext).summary()
    for on in (False, True):
        assert not ExtensibleLoadManager(ext, _cfg(on), seed=0).do_load_shedding().unloads
    dec = ExtensibleLoadManager(ext, LoadBalancerConfig(), seed=0).select_broker("acme/payments-a/0x00000000_0x10000000")
    assert dec.broker == "broker-3:8080"
    assert any(f.name.startswith("AntiAffinityGroupPolicyFilter") for f in dec.filters)
    with pytest.raises(InputError) as ei:
        extensible_from_json({**obj, "shedlabPolicies": {"namespaceIsolationPolicies": {"p": {"namespaces": []}}}},
                             "c.json")
    assert "shedlabPolicies" in str(ei.value)


def test_shed_and_replay_take_policy_files(tmp_path, capsys):
    """`shed SNAPSHOT --policies FILE` on the ELM's consume output and `replay TIMELINE --policies FILE`;
    a bad policy file exits 2 naming it."""
    from engine.cli import main
    from engine.io import save_snapshot

    elm = tmp_path / "elm.zip"
    elm.write_bytes(_zip())
    iso = tmp_path / "isolation.json"
    iso.write_text(json.dumps(ISO))
    args = ["shed", str(elm), "--json", "--set", "loadBalancerSheddingConditionHitCountThreshold=0"]
    assert main(args) == 0
    free = json.loads(capsys.readouterr().out)["cycles"][0]["unloads"]
    assert any(u["destination"] == "broker-3:8080" and u["bundle"].startswith("public/default/") for u in free)
    assert main(args + ["--policies", str(iso)]) == 0
    pinned = json.loads(capsys.readouterr().out)["cycles"][0]["unloads"]
    assert not any(u["destination"] == "broker-3:8080" and u["bundle"].startswith("public/default/") for u in pinned)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"pin": dict(ISO["pin"], primary=[])}))
    assert main(["shed", str(elm), "--policies", str(bad)]) == 2
    assert "bad.json: field pin.primary: no primary brokers" in capsys.readouterr().err
    # replay: every snapshot of the timeline carries the policies (the isolation-groups sample twice)
    ld = load_sample("isolation-groups")
    d = tmp_path / "tl"
    d.mkdir()
    for i in range(2):
        ld.cluster_policies = None
        save_snapshot(ld, d / f"{i}.json")
    pol = tmp_path / "groups.json"
    pol.write_text(json.dumps(ISOLATION_SAMPLE_POLICIES))
    runs = {}
    for extra in ([], ["--policies", str(pol)]):
        assert main(["replay", str(d), "--json", "--strategy", "ThresholdShedder"] + extra) == 0
        runs[bool(extra)] = [u["destination"] for c in json.loads(capsys.readouterr().out)["cycles"] for u in c["unloads"]]
    assert "broker-7:8080" in runs[False] and runs[True] and "broker-7:8080" not in runs[True]
    assert main(["replay", str(d), "--policies", str(bad)]) == 2
    assert "bad.json: field pin.primary: no primary brokers" in capsys.readouterr().err
