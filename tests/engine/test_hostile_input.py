"""Hostile command-line input: every malformed input of ``tests/malformed_corpus.py`` gets
exit status 2 and one ``error:`` line on stderr (or 0 for the few harmless ones), never a traceback;
the limits are documented in ``docs/security.md`` exactly as :func:`engine.limits.limits_table`
prints them; the run-size limits refuse before the run and say how to raise them.

The corpus runs in-process through each command line's ``main`` (``python -m engine``,
``python -m dashboard.history``, ``python -m dashboard.collect``); two cases run as real
subprocesses (a device file and an endless standard input) to check the exit status and stderr as a
shell sees them.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import pytest

from engine.errors import InputError
from engine.limits import LIMITS, check_run_memory, fixed_ranges_table, limits_table
from tests.malformed_corpus import HARMLESS, ROOT, SAMPLE, SCENARIO, build_corpus

_DIR = Path(tempfile.mkdtemp(prefix="shedlab-corpus-"))
CASES = build_corpus(_DIR)
NAMED = [c for c in CASES if not c.kind.endswith(" fields")]
FIELD_KINDS = sorted({c.kind for c in CASES if c.kind.endswith(" fields")})


@pytest.fixture(scope="module", autouse=True)
def _cleanup():
    yield
    shutil.rmtree(_DIR, ignore_errors=True)


def _main(entry):
    if entry == "engine":
        from engine.cli import main
    elif entry == "history":
        from dashboard.history.cli import main
    else:
        from dashboard.collect.cli import main
    return main


def _run(case, monkeypatch, capsys):
    for k, v in case.env.items():
        monkeypatch.setenv(k, v)
    try:
        rc = _main(case.entry)(list(case.argv))
    except SystemExit as exc:  # argparse usage errors
        rc = exc.code
    out, err = capsys.readouterr()
    for k in case.env:
        monkeypatch.delenv(k, raising=False)
    return rc, out, err


@pytest.mark.parametrize("case", NAMED, ids=[f"{c.kind}:{c.label}" for c in NAMED])
def test_malformed_input_exits_2_with_one_line(case, monkeypatch, capsys):
    rc, out, err = _run(case, monkeypatch, capsys)
    assert "Traceback" not in err + out
    if case.label in HARMLESS:
        assert rc == 0, err
        return
    assert rc == 2, f"exit {rc}: {err[-500:]}"
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("warning:")]
    if case.argv and case.argv[-1] == "--bogus" or "usage:" in err:
        assert "error" in err  # argparse: usage lines, then the error
    else:
        assert len(lines) == 1 and lines[0].startswith("error: "), err


@pytest.mark.parametrize("kind", FIELD_KINDS)
def test_every_numeric_field_with_bad_values(kind, monkeypatch, capsys):
    """Every numeric field of a snapshot, load report, ELM snapshot, scenario, Pegasus snapshot and
    broker-stats topics file, set to each of ``BAD_VALUES``: a result or one error line naming the
    field, never a traceback; the out-of-range values are refused for the fields Shedlab reads."""
    outcomes = defaultdict(int)
    rc_of = {}
    for case in (c for c in CASES if c.kind == kind):
        rc, out, err = _run(case, monkeypatch, capsys)
        assert "Traceback" not in err + out, case.label
        assert rc in case.allowed, f"{case.label}: exit {rc}: {err[-300:]}"
        if rc == 2:
            assert err.startswith("error: ") and len(err.strip().splitlines()) == 1, (case.label, err)
        outcomes[rc] += 1
        rc_of[case.label] = rc
    assert outcomes[2] > 0  # the corpus does reach the checks
    # fields Shedlab reads: a time or count of 1e23, a negative number, a text or a list there is
    # refused; a rate, throughput or usage takes every finite double, as Pulsar's readers do
    for suffix in _MUST_REFUSE.get(kind, ()):
        rate = suffix in _RATES.get(kind, ())
        for bad in ('"x"', "[]", "-1e308") + (() if rate else ("1e23",)):
            hits = [rc for label, rc in rc_of.items() if label.startswith(bad + " at ") and label.endswith(suffix)]
            assert hits and all(rc == 2 for rc in hits), (kind, bad, suffix, hits)
        for good in ("1e23", "1e308") if rate else ():
            hits = [rc for label, rc in rc_of.items() if label.startswith(good + " at ") and label.endswith(suffix)]
            assert hits and all(rc == 0 for rc in hits), (kind, good, suffix, hits)


_MUST_REFUSE = {
    "snapshot fields": ("lastUpdate", "msgRateIn", "numTopics", "cpu.usage", "shortTermData.msgRateIn", "now"),
    # (a negative resource limit is Pulsar's NIC of unknown speed: counted as 0 %, so not in this list)
    "load report fields": ("lastUpdate", "msgThroughputIn", "numBundles", "bandwidthIn.usage", "consumerCount"),
    "extensible fields": ("updatedAt", "weightedMaxEMA", "bundleCount"),
    "scenario fields": ("minutes", "cores", "rate"),
    "broker-stats topics fields": ("-partition-0.msgRateIn",),
}
#: of those, the fields of Pulsar's formats holding a double (every finite value accepted)
_RATES = {
    "snapshot fields": ("msgRateIn", "cpu.usage", "shortTermData.msgRateIn"),
    "load report fields": ("msgThroughputIn", "bandwidthIn.usage"),
    "extensible fields": ("weightedMaxEMA",),
    "broker-stats topics fields": ("-partition-0.msgRateIn",),
}


def test_lowered_limits_name_their_variable(monkeypatch, capsys):
    big = _DIR / "big.json"
    big.write_text(SAMPLE.read_text() + " " * (2 << 20))
    from engine.cli import main

    monkeypatch.setenv("SHEDLAB_MAX_INPUT_MB", "1")
    assert main(["shed", str(big)]) == 2
    assert "SHEDLAB_MAX_INPUT_MB" in capsys.readouterr().err
    monkeypatch.delenv("SHEDLAB_MAX_INPUT_MB")
    assert main(["shed", str(big)]) == 0  # the same file under the default limit
    capsys.readouterr()
    monkeypatch.setenv("SHEDLAB_MAX_NESTING", "3")
    assert main(["shed", str(SAMPLE)]) == 2
    assert "SHEDLAB_MAX_NESTING" in capsys.readouterr().err


def test_run_size_limits_refuse_before_running_and_say_how_to_raise(monkeypatch, capsys):
    from engine.cli import main

    assert main(["shed", str(SAMPLE), "--cycles", "1000000000"]) == 2
    err = capsys.readouterr().err
    assert "--cycles" in err and "SHEDLAB_MAX_RUN_MB" in err and "4,096 MB limit" in err
    # the same run passes when the limit is raised far enough... and a small one runs normally
    assert main(["shed", str(SAMPLE), "--cycles", "3", "--json"]) == 0
    capsys.readouterr()
    monkeypatch.setenv("SHEDLAB_MAX_RUN_MB", "1")
    assert main(["simulate", str(SCENARIO), "--minutes", "5000"]) == 2
    err = capsys.readouterr().err
    assert "5,000 minutes" in err and "SHEDLAB_MAX_RUN_MB" in err
    monkeypatch.setenv("SHEDLAB_MAX_RUN_MB", "bogus")
    assert main(["shed", str(SAMPLE), "--cycles", "2"]) == 2
    assert "SHEDLAB_MAX_RUN_MB='bogus' is not a number" in capsys.readouterr().err


def test_a_simulation_too_big_to_run_is_refused_by_its_step_estimate(tmp_path, monkeypatch, capsys):
    """100,000 brokers × 65,536 bundles: refused by the run-size estimate with exit status 2, before the
    brokers are built (a bad later entry is not even reached); the placement term refuses a short run
    that would place every bundle by scoring every broker; raising the limit lets a run through."""
    from engine.cli import main

    huge = tmp_path / "huge.yaml"
    huge.write_text("name: huge\nminutes: 60\n"
                    "brokers:\n  - {id: 'b-{i}', count: 100000}\n  - {id: late, cores: -1}\n"
                    "namespaces:\n  - {name: t/ns, bundles: 65536}\n"
                    "workloads:\n  - {name: w, namespace: t/ns, topics: 65536, rate: 1000}\n")
    assert main(["simulate", str(huge)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "100,001 brokers for 60 minutes" in err and "SHEDLAB_MAX_SIM_STEPS" in err and "5,000,000" in err
    assert "cores" not in err  # refused before the entries are expanded and checked one by one
    placing = tmp_path / "placing.yaml"
    placing.write_text(huge.read_text().replace("count: 100000", "count: 2000").replace("minutes: 60", "minutes: 1")
                       .replace("cores: -1", "cores: 4"))
    assert main(["simulate", str(placing)]) == 2
    err = capsys.readouterr().err
    assert "placing 65,536 bundles" in err and f"{2001 * (1 + 65536):,} steps" in err
    small = tmp_path / "small.yaml"
    small.write_text(placing.read_text().replace("count: 2000", "count: 3").replace("bundles: 65536", "bundles: 8")
                     .replace("topics: 65536", "topics: 8"))
    monkeypatch.setenv("SHEDLAB_MAX_SIM_STEPS", "10")
    assert main(["simulate", str(small)]) == 2
    assert "over the 10 limit" in capsys.readouterr().err
    monkeypatch.setenv("SHEDLAB_MAX_SIM_STEPS", "100")
    assert main(["simulate", str(small), "--json"]) == 0


def test_check_run_memory_message():
    with pytest.raises(InputError, match=r"about 8,192 MB of memory, over the 4,096 MB limit "
                                         r"\(set SHEDLAB_MAX_RUN_MB to raise it\)"):
        check_run_memory(8 << 30, "this")
    check_run_memory(1 << 20, "that")  # under the limit: nothing


def test_security_doc_lists_every_limit_as_limits_table():
    doc = (ROOT / "docs" / "security.md").read_text()
    assert "## Input limits" in doc
    start = doc.index("<!-- limits-table: generated by engine.limits.limits_table() -->")
    end = doc.index("<!-- /limits-table -->")
    table = doc[start:end].split("\n", 1)[1].strip()
    assert table == limits_table()
    for env in LIMITS:
        assert f"`{env}`" in table
    assert fixed_ranges_table() in doc


def _env(**extra):
    env = dict(os.environ, PYTHONPATH=str(ROOT), **extra)
    env.pop("COVERAGE_PROCESS_START", None)
    return env


def test_device_file_in_a_real_process():
    r = subprocess.run([sys.executable, "-m", "engine", "shed", "/dev/zero"], cwd=ROOT, capture_output=True,
                       text=True, timeout=60, env=_env(SHEDLAB_MAX_INPUT_MB="2"))
    assert r.returncode == 2
    assert r.stderr.strip() == ("error: /dev/zero: larger than the 2.0 MB limit (more than 2.0 MB; set "
                                "SHEDLAB_MAX_INPUT_MB to raise it)")


def test_endless_stdin_is_read_to_the_limit_only():
    with open("/dev/zero", "rb") as zero:
        r = subprocess.run([sys.executable, "-m", "engine", "shed", "-"], cwd=ROOT, stdin=zero, capture_output=True,
                           text=True, timeout=60, env=_env(SHEDLAB_MAX_INPUT_MB="1"))
    assert r.returncode == 2 and "<stdin>" in r.stderr and "Traceback" not in r.stderr
    with open(SAMPLE, "rb") as f:  # a real snapshot on stdin works
        r = subprocess.run([sys.executable, "-m", "engine", "shed", "-", "--json"], cwd=ROOT, stdin=f,
                           capture_output=True, text=True, timeout=60, env=_env())
    assert r.returncode == 0, r.stderr


# ------------------------------------------------------------------------------------------ option fuzz
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_SAMPLES = ROOT / "samples"
_POSITIONAL = {"shed": _SAMPLES / "snapshots" / "yahoo-japan-3-brokers.json",
               "place": _SAMPLES / "snapshots" / "yahoo-japan-3-brokers.json",
               "replay": _SAMPLES / "snapshots", "simulate": _SAMPLES / "scenarios" / "hot-bundle.yaml",
               "bundles": _SAMPLES / "topics" / "topics-list.txt", "pegasus": _SAMPLES / "pegasus" / "unbalanced.txt"}
_VALUES = ["-1", "0", "1", "2", str(2**63), str(10**30), "1e9", "nan", "inf", "", " ", "x", "a=b", "=", "/dev/zero",
           "/nonexistent", "/tmp", "\x00", "1,2,3", ",,", "0x00000000_0x40000000", "public/default/0x00000000_0x40000000",
           "persistent://a/b/t=3", "AvgShedder", "ThresholdShedder", "TransferShedder", "LeastLongTermMessageRate",
           "loadBalancerBrokerOverloadedThresholdPercentage=1e400", "loadBalancerLoadSheddingStrategy=x", "é" * 300]


def _options(cmd):
    import argparse

    from engine.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return [a for a in sub.choices[cmd]._actions
            if a.option_strings and a.dest not in ("help", "out") and "--out" not in a.option_strings]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(cmd=st.sampled_from(sorted(_POSITIONAL)), data=st.data())
def test_any_options_exit_0_or_2(cmd, data, monkeypatch, capsys):
    """Random options and values on every sub-command (the way two tracebacks were found: a negative
    ``--seed``, a NUL byte in a file name): exit 0 or 2, never a traceback."""
    from engine.cli import main

    monkeypatch.setenv("SHEDLAB_MAX_INPUT_MB", "5")
    opts = _options(cmd)
    argv = [cmd, str(_POSITIONAL[cmd]) if data.draw(st.booleans()) or cmd == "replay" else data.draw(
        st.sampled_from(_VALUES))]
    for a in data.draw(st.lists(st.sampled_from(opts), min_size=1, max_size=3, unique_by=lambda a: a.dest)):
        argv.append(a.option_strings[-1])
        if a.nargs != 0:
            argv.append(data.draw(st.sampled_from(list(a.choices) + _VALUES[:4] if a.choices else _VALUES)))
    if cmd == "place" and "--bundle" not in argv:
        argv += ["--bundle", "public/default/0x00000000_0x40000000"]
    if cmd == "simulate" and "--minutes" not in argv:
        argv += ["--minutes", "3"]
    if cmd == "bundles" and "--trials" in argv:
        i = argv.index("--trials")  # a legal but slow 100,000-trial Monte Carlo is not the point here
        argv[i + 1] = argv[i + 1] if argv[i + 1] in ("-1", "0", "1", "2", "", "x") else "2"
    try:
        rc = main(argv)
    except SystemExit as exc:
        rc = exc.code
    out, err = capsys.readouterr()
    assert rc in (0, 2), (argv, err[-400:])
    assert "Traceback" not in err + out
