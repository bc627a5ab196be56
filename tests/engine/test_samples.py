"""Shipped samples: the JSON files match their builders, and each reproduces its finding."""
import json

import pytest

from engine.io import load_snapshot
from engine.samples import SAMPLES, SAMPLES_DIR, load_sample, sample_config, sample_json


@pytest.mark.parametrize("name", [n for n, s in SAMPLES.items() if s.ship_json])
def test_shipped_json_in_sync(name):
    on_disk = json.loads((SAMPLES_DIR / f"{name}.json").read_text())
    assert on_disk == json.loads(json.dumps(sample_json(name))), "run scripts/make_samples.py"
    ld = load_snapshot(SAMPLES_DIR / f"{name}.json")
    assert set(ld.brokers) == set(load_sample(name).brokers)


@pytest.mark.parametrize("name", list(SAMPLES))
def test_every_sample_has_a_config_and_builds(name):
    ld = load_sample(name)
    assert ld.brokers and SAMPLES[name].description
    sample_config(name)


def test_isolation_sample_differs_from_the_policy_free_answer():
    """The isolation-groups sample: the shipped JSON carries the policies; with them the shed
    bundles of acme/payments-a stay on the payments primaries and avoid broker-1 (anti-affinity), without
    them they go to the coldest broker."""
    ld = load_snapshot(SAMPLES_DIR / "isolation-groups.json")
    cfg = sample_config("isolation-groups")
    assert set(ld.cluster_policies.isolation) == {"payments", "analytics"}
    from engine.load_manager import ModularLoadManager

    with_pol = ModularLoadManager(ld, cfg).do_load_shedding()
    del ld.cluster_policies
    without = ModularLoadManager(ld, cfg).do_load_shedding()
    assert {u.destination for u in without.unloads} == {"broker-7:8080"}
    assert {u.destination for u in with_pol.unloads} == {"broker-3:8080"}
    steps = with_pol.unloads[0].placement.filters
    assert "isolated by policy `payments`" in steps[0].reasons["broker-7:8080"]
    assert "anti-affinity group `payments-ha`" in steps[1].reasons["broker-1:8080"]
