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
