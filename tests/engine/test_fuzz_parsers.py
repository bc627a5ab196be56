"""Property-based tests (hypothesis) over every parser: arbitrary bytes, arbitrary nested
JSON and mutated real inputs give either a parsed result or an :class:`engine.errors.InputError`
(``ShedlabError``) — never ``RecursionError``, ``OverflowError``, ``BadZipFile``, ``KeyError``, ...

The real inputs mutated here are the shipped samples (LoadData JSON in the shape of Pulsar's
``ModularLoadManagerImpl`` / ``pulsar-admin broker-stats load-report``, a ZooKeeper ``/loadbalance``
dump zip, ``pulsar-admin broker-stats topics``, a scenario, a Pegasus snapshot). Example counts stay
modest (``max_examples`` ≤ 60) so that the whole module runs in seconds.
"""
from __future__ import annotations

import io
import json
import os
import tempfile
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from engine.bounded import json_depth, loads_json, loads_yaml, read_bytes_bounded, read_zip
from engine.errors import InputError, ShedlabError

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT = json.loads((ROOT / "samples" / "snapshots" / "yahoo-japan-3-brokers.json").read_text())
EXTENSIBLE = json.loads((ROOT / "samples" / "extensible" / "transfer-shedder-5-brokers.json").read_text())
BROKER_STATS = (ROOT / "samples" / "topics" / "broker-stats-topics.json").read_text()
SCENARIO = (ROOT / "samples" / "scenarios" / "hot-bundle.yaml").read_text()
PEGASUS = (ROOT / "samples" / "pegasus" / "dead-node-two-disks.json").read_text()

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FEW = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# text with every character that matters to a bracket scan: brackets, quotes, backslashes
_TRICKY = st.text(alphabet=st.sampled_from(list('[]{}"\\ab:,\n\t\u00e9\u4e2d\U0001f600')), max_size=12)
_SCALARS = (st.none() | st.booleans() | st.integers(-(2**70), 2**70)
            | st.floats(allow_nan=False, allow_infinity=False) | _TRICKY | st.text(max_size=8))
JSON_VALUES = st.recursive(_SCALARS, lambda kids: st.lists(kids, max_size=4)
                           | st.dictionaries(_TRICKY | st.text(max_size=6), kids, max_size=4), max_leaves=30)


def _depth(v) -> int:
    stack, best = [(v, 1 if isinstance(v, (list, dict)) else 0)], 0
    while stack:
        x, d = stack.pop()
        best = max(best, d)
        children = x.values() if isinstance(x, dict) else x if isinstance(x, list) else ()
        for c in children:
            stack.append((c, d + 1 if isinstance(c, (list, dict)) else d))
    return best


def _is_result_or_input_error(fn, *args, **kw):
    try:
        return fn(*args, **kw)
    except ShedlabError:
        return None


# ------------------------------------------------------------------------------------------ JSON
@FUZZ
@given(JSON_VALUES, st.booleans(), st.integers(1, 5))
def test_json_depth_is_the_real_depth(value, ascii_only, chunk_kb):
    text = json.dumps(value, ensure_ascii=ascii_only)
    assert json_depth(text) == _depth(value)
    assert json_depth(text.encode()) == _depth(value)


@FUZZ
@given(st.integers(0, 300), st.sampled_from(["[", '{"k":']), _TRICKY)
def test_nesting_over_the_limit_is_refused_before_parsing(n, opener, leaf):
    closer = "]" if opener == "[" else "}"
    text = opener * n + json.dumps(leaf) + closer * n
    if n <= 64:
        assert loads_json(text, "t") is not None
    else:
        with pytest.raises(InputError, match="nested more than 64 levels deep"):
            loads_json(text, "t")


@FUZZ
@given(JSON_VALUES)
def test_json_round_trips_within_the_limits(value):
    assume(_depth(value) <= 64)
    assert loads_json(json.dumps(value).encode(), "t") == json.loads(json.dumps(value))


@FUZZ
@given(st.binary(max_size=400) | st.text(max_size=200).map(str.encode))
def test_json_arbitrary_bytes(raw):
    _is_result_or_input_error(loads_json, raw, "t")


def test_json_depth_across_scan_pieces():
    # a string with brackets that straddles the 4 MB boundary of the vectorised scan, and escapes
    pad = "x" * ((4 << 20) - 7)
    text = json.dumps([pad + '[[[{\\"\\\\', [[1]]])
    assert json_depth(text) == 3
    assert json_depth(text + " " * 100) == 3


# ------------------------------------------------------------------------------------------ YAML
@FUZZ
@given(st.text(max_size=300))
def test_yaml_arbitrary_text(text):
    _is_result_or_input_error(loads_yaml, text, "t.yaml")


@FUZZ
@given(JSON_VALUES)
def test_yaml_of_json_values(value):
    import yaml

    try:
        text = yaml.safe_dump(value)
    except yaml.YAMLError:
        return
    got = _is_result_or_input_error(loads_yaml, text, "t.yaml")
    if _depth(value) <= 64 and got is not None:
        assert got == yaml.safe_load(text)


@FEW
@given(st.integers(2, 12), st.integers(2, 12))
def test_yaml_aliases_are_counted_expanded(width, levels):
    lines = ["l0: &l0 [" + ", ".join(["x"] * width) + "]"]
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * width) + "]")
    text = "\n".join(lines) + "\n"
    expanded = sum(width ** k for k in range(1, levels + 1))
    if expanded > 1_000_000 * 1.2:
        with pytest.raises(InputError, match="SHEDLAB_MAX_YAML_NODES"):
            loads_yaml(text, "laughs.yaml")
    elif expanded < 1_000_000 / 2:
        assert loads_yaml(text, "laughs.yaml")["l0"] == ["x"] * width


# ------------------------------------------------------------------------------------------ zip
def _zk_zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for bid, rep in SNAPSHOT["brokers"].items():
            z.writestr(f"loadbalance/brokers/{bid}", json.dumps(rep))
        for b, d in SNAPSHOT.get("bundleData", {}).items():
            z.writestr(f"loadbalance/bundle-data/{b}", json.dumps(d))
    return buf.getvalue()


ZK_ZIP = _zk_zip()


@FUZZ
@given(st.lists(st.tuples(st.integers(0, len(ZK_ZIP) - 1), st.integers(0, 255)), min_size=1, max_size=6))
def test_zip_with_flipped_bytes(flips):
    from engine.io import load_snapshot_bytes

    raw = bytearray(ZK_ZIP)
    for pos, val in flips:
        raw[pos] = val
    _is_result_or_input_error(read_zip, bytes(raw), "z.zip")
    _is_result_or_input_error(load_snapshot_bytes, bytes(raw), "z.zip")


@FUZZ
@given(st.binary(max_size=300))
def test_zip_arbitrary_bytes(raw):
    _is_result_or_input_error(read_zip, b"PK\x03\x04" + raw, "z.zip")
    _is_result_or_input_error(read_zip, raw + b"PK\x05\x06" + bytes(18), "z.zip")


@FEW
@given(st.integers(1, 50), st.integers(0, 3000))
def test_zip_truncated(keep_from_end, cut):
    from engine.io import load_snapshot_bytes

    raw = ZK_ZIP[: max(2, len(ZK_ZIP) - cut)] if cut else ZK_ZIP[: -keep_from_end]
    _is_result_or_input_error(load_snapshot_bytes, raw, "z.zip")


# ------------------------------------------------------------------------------------------ snapshots
def _paths(obj, path=()):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield path + (k,)
            yield from _paths(v, path + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:3]):
            yield path + (i,)
            yield from _paths(v, path + (i,))


def _set(obj, path, value):
    o = json.loads(json.dumps(obj))
    cur = o
    for k in path[:-1]:
        cur = cur[k]
    cur[path[-1]] = value
    return o


SNAP_PATHS = list(_paths(SNAPSHOT))
EXT_PATHS = list(_paths(EXTENSIBLE))


@FUZZ
@given(st.sampled_from(SNAP_PATHS), JSON_VALUES)
def test_snapshot_with_any_value_anywhere(path, value):
    from engine.io import load_data_from_json, load_snapshot_bytes

    obj = _set(SNAPSHOT, path, value)
    ld = _is_result_or_input_error(load_data_from_json, obj, "s.json")
    if ld is not None:  # a snapshot that loads also runs a cycle
        from engine.config import LoadBalancerConfig
        from engine.load_manager import ModularLoadManager

        _is_result_or_input_error(lambda: ModularLoadManager(ld, LoadBalancerConfig()).run_cycles(1))
    _is_result_or_input_error(load_snapshot_bytes, json.dumps(obj).encode(), "s.json")


@FUZZ
@given(st.sampled_from(EXT_PATHS), JSON_VALUES)
def test_extensible_snapshot_with_any_value_anywhere(path, value):
    from engine.io import load_data_from_json

    _is_result_or_input_error(load_data_from_json, _set(EXTENSIBLE, path, value), "e.json")


@FUZZ
@given(JSON_VALUES)
def test_snapshot_arbitrary_json(value):
    from engine.io import load_data_from_json

    _is_result_or_input_error(load_data_from_json, value, "s.json")
    _is_result_or_input_error(load_data_from_json, {"brokers": {"b:8080": value}}, "s.json")


@FUZZ
@given(st.binary(max_size=300))
def test_snapshot_and_elm_arbitrary_bytes(raw):
    from engine.io import load_snapshot_bytes

    _is_result_or_input_error(load_snapshot_bytes, raw, "s.json")
    _is_result_or_input_error(load_snapshot_bytes, b"{" + raw, "s.json")


# ------------------------------------------------------------------------------------------ other readers
@FUZZ
@given(st.text(max_size=300) | st.sampled_from([BROKER_STATS]).flatmap(
    lambda t: st.integers(0, len(t)).map(lambda i: t[:i])))
def test_topic_readers(text):
    from engine.topics_input import read_topics_text

    _is_result_or_input_error(read_topics_text, text, source="t.txt")


@FUZZ
@given(JSON_VALUES)
def test_topic_readers_json(value):
    from engine.topics_input import read_topics_text

    _is_result_or_input_error(read_topics_text, json.dumps(value), source="t.json")


@FUZZ
@given(st.text(max_size=300) | st.integers(0, len(SCENARIO)).map(lambda i: SCENARIO[:i] + "\n[{"))
def test_scenario_text(text):
    from engine.simulator.scenario import parse_scenario_text

    _is_result_or_input_error(parse_scenario_text, text, source="s.yaml")


@FUZZ
@given(st.sampled_from(list(_paths(__import__("yaml").safe_load(SCENARIO)))), JSON_VALUES)
def test_scenario_with_any_value_anywhere(path, value):
    import yaml

    from engine.simulator.scenario import parse_scenario

    _is_result_or_input_error(parse_scenario, _set(yaml.safe_load(SCENARIO), path, value), source="s.yaml")


@FUZZ
@given(st.binary(max_size=300) | st.integers(0, len(PEGASUS)).map(lambda i: PEGASUS[:i].encode()))
def test_pegasus_snapshot(raw):
    from engine.pegasus.parse import parse_snapshot

    _is_result_or_input_error(parse_snapshot, raw, "p.json")


@FUZZ
@given(st.sampled_from(list(_paths(json.loads(PEGASUS)))), JSON_VALUES)
def test_pegasus_with_any_value_anywhere(path, value):
    from engine.pegasus.parse import parse_snapshot_json

    _is_result_or_input_error(parse_snapshot_json, _set(json.loads(PEGASUS), path, value), "p.json")


@FUZZ
@given(st.text(max_size=300))
def test_broker_conf(text):
    from engine.config import parse_broker_conf

    _is_result_or_input_error(parse_broker_conf, text, source="broker.conf")


@FEW
@given(st.integers(0, 3000), st.integers(1, 2))
def test_bounded_read_stops_at_the_limit(extra, mb):
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "f"
        p.write_bytes(b"x" * (mb * 1048576 + extra))
        old = os.environ.get("SHEDLAB_MAX_INPUT_MB")
        os.environ["SHEDLAB_MAX_INPUT_MB"] = str(mb)
        try:
            if extra:
                with pytest.raises(InputError, match="SHEDLAB_MAX_INPUT_MB"):
                    read_bytes_bounded(p)
            else:
                assert len(read_bytes_bounded(p)) == mb * 1048576
        finally:
            if old is None:
                os.environ.pop("SHEDLAB_MAX_INPUT_MB")
            else:
                os.environ["SHEDLAB_MAX_INPUT_MB"] = old
