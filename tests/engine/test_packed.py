"""Long name lists pickled as one text (engine.packed) come back as the same lists, in the objects that
hold them: a broker's report, the view, a snapshot read as columns."""
from __future__ import annotations

import copy
import json
import pickle
from dataclasses import fields

import numpy as np

from engine.fastload import ColumnarLoadData, load_bytes_typed
from engine.io import load_data_from_json
from engine.model import LocalBrokerData, ResourceUsage
from engine.packed import PackedNames, pack_names, unpack_names
from engine.synth import random_snapshot
from engine.view import LoadView


def _names(n, extra=()):
    return [f"tenant/ns{i % 7}/0x{i:08x}_0x{i + 1:08x}" for i in range(n)] + list(extra)


def test_round_trip_and_what_stays_a_list():
    odd = ["", "ünïcödé/ns/0x0_0x1", "a" * 300, "x/y/z"]
    for items in (_names(100), _names(40, odd), odd * 10):
        packed = pack_names(items)
        assert isinstance(packed, PackedNames)  # packed: one text
        back = unpack_names(pickle.loads(pickle.dumps(packed)))
        assert back == items and type(back) is list
    # left as they are: short lists, a name holding the separator, items that are not strings, not a list
    for items in (_names(5), _names(50, ["bad\x00name"]), _names(50) + [7], tuple(_names(50))):
        assert pack_names(items) is items and unpack_names(items) is items


def test_broker_report_pickles_every_field():
    rep = LocalBrokerData("b1:8080", cpu=ResourceUsage(12.5, 100.0), msg_rate_in=3.25, last_update=17,
                          bundles=_names(64), last_bundle_gains=["g"], broker_version_string="3.0.7",
                          extra={"webServiceUrl": "http://b1:8080"})
    back = pickle.loads(pickle.dumps(rep))
    assert back == rep and type(back.bundles) is list
    assert copy.copy(rep).bundles is rep.bundles and copy.copy(rep) == rep  # a shallow copy still shares
    assert copy.deepcopy(rep) == rep and copy.deepcopy(rep).bundles is not rep.bundles
    back.bundles.append("more")  # an ordinary list again
    assert rep.bundles[-1] != "more"
    nul = LocalBrokerData("b2:8080", bundles=_names(64, ["bad\x00name"]))
    assert pickle.loads(pickle.dumps(nul)) == nul
    # a report stored by an earlier release (the default state of a slots class: (None, {slot: value}))
    old = LocalBrokerData.__new__(LocalBrokerData)
    old.__setstate__((None, {f.name: getattr(rep, f.name) for f in fields(LocalBrokerData)}))
    assert old == rep


def test_view_and_columnar_snapshot_keep_one_names_list():
    obj = random_snapshot(40, 60, seed=4, namespaces=4).to_json()
    raw = json.dumps(obj).encode()
    ld = load_bytes_typed(raw, "big.json")
    assert isinstance(ld, ColumnarLoadData)
    data = pickle.dumps(ld)
    back = pickle.loads(data)
    # one list, as when read: the columns' names are the view's bundles
    assert back._cols["names"] is back._view.bundles and back._cols["names"] == ld._cols["names"]
    # pickled as texts: the view's names once (the columns point at them), each broker's list as one text
    state = ld.__getstate__()
    assert state["_cols"]["names"] is None and isinstance(state["_view"].__getstate__()["bundles"], PackedNames)
    assert ld._cols["names"] is ld._view.bundles  # the snapshot itself is left as it was
    assert any(isinstance(x, PackedNames) for x in next(iter(ld.brokers.values())).local.__getstate__())
    old = load_data_from_json(obj, "big.json")
    v, w = LoadView.from_load_data(back), LoadView.from_load_data(old)
    assert v.bundles == w.bundles and all(np.array_equal(a, b) for a, b in zip(v.owned, w.owned))
    assert {b: d.local.bundles for b, d in back.brokers.items()} == {b: d.local.bundles for b, d in old.brokers.items()}
    # a plain view pickles alone too
    again = pickle.loads(pickle.dumps(w))
    assert again.bundles == w.bundles and np.array_equal(again.st, w.st)
    assert copy.copy(w).bundles is w.bundles and copy.copy(w).st is w.st  # a shallow copy shares
