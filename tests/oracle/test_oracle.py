"""The engine against Pulsar's own classes, line by line (see docs/fidelity.md).

Each line's released pulsar-broker runs in one JVM (`make oracle-build` builds it; `make test` does that first);
a fixed-seed sample of generated inputs goes through it and through the engine (each input generated once and
fed to every line's JVM side by side while a pool of worker processes, one per core, decides it on each line
as the engine), and any disagreement that is not a listed departure fails, printed as
the smallest input the shrinker finds. ``SHEDLAB_ORACLE_N`` sets the sample size (2,000 inputs per strategy per
line by default; the filters kind runs a quarter of it, ``SHEDLAB_ORACLE_FILTERS_N`` to change).
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oracle import compare, fidelity, gen
from oracle.departures import DEPARTURES
from oracle.jvm import Oracle, OracleError
from oracle.lines import LINES, UNAVAILABLE, available, classpath

#: inputs per strategy per line (the campaign docs/fidelity.md reports runs more)
N = int(os.environ.get("SHEDLAB_ORACLE_N", "2000"))
#: inputs per line of the filters kind: a quarter of N (each builds a load manager on both sides and places up to
#: six bundles, ~18 ms of CPU per input and line; the campaign in docs/fidelity.md runs the full count)
FILTERS_N = int(os.environ.get("SHEDLAB_ORACLE_FILTERS_N", str(max(1, N // 4))))


def _n(strategy: str) -> int:
    return FILTERS_N if strategy == gen.FILTERS else N


ROOT = Path(__file__).resolve().parents[2]


def _needs(version: str):
    if classpath(version) is not None:
        return
    if version.startswith("5.") and subprocess.run([str(ROOT / "oracle" / "java21.sh")],
                                                   capture_output=True).returncode != 0:
        pytest.skip(f"pulsar-broker {version} needs a JDK 21+ and this machine has none (oracle/java21.sh)")
    pytest.fail(f"the oracle for pulsar-broker {version} is not built: run `make oracle-build`")


@pytest.fixture(scope="module")
def oracles():
    got = {}
    yield got
    for o in got.values():
        o.close()


def _oracle(oracles, version):
    _needs(version)
    if version not in oracles:
        oracles[version] = Oracle(version)
    return oracles[version]


@pytest.fixture(scope="module")
def sample(oracles):
    """The fixed-seed sample on every line whose oracle is built, in one pass: each input generated once and
    fed to every line's JVM side by side (compare.run_lines)."""
    lines = {}
    for line in sorted(available()):
        version = LINES[line]
        if classpath(version) is None:
            continue  # the line's own test says why
        try:
            if version not in oracles:
                oracles[version] = Oracle(version)
        except OracleError:
            continue
        lines[line] = version
    return compare.run_lines(lines, gen.STRATEGIES, N, oracles, seed=0, counts={gen.FILTERS: FILTERS_N})


@pytest.mark.parametrize("line", sorted(available()))
def test_engine_agrees_with_pulsar(line, oracles, sample):
    version = LINES[line]
    o = _oracle(oracles, version)
    tallies = sample[line]
    assert sorted(tallies) == sorted(gen.STRATEGIES)
    problems = []
    for s, t in tallies.items():
        assert t.tried == _n(s)
        if t.unexplained_count:
            _, case, _, _ = t.unexplained[0]
            small = compare.shrink(case, o, line, version)
            problems.append(f"{s}: {t.unexplained_count} of {t.tried} disagree; smallest input:\n"
                            f"{json.dumps(small)}\nPulsar {version}: {json.dumps(o.ask([small])[0])}\n"
                            f"engine: {json.dumps(compare.engine_side.answer(small, version))}")
    assert not problems, "\n\n".join(problems)


def test_every_line_has_a_version_or_a_reason():
    for line, version in LINES.items():
        assert version or line in UNAVAILABLE


def test_samples_read_by_pulsars_mapping(oracles):
    """Our sample snapshots, as LoadData JSON, are read by Pulsar's own Jackson mapping and every shedder runs."""
    o = _oracle(oracles, LINES["4.2"])
    cases = []
    for p in sorted((ROOT / "samples" / "snapshots").glob("*.json")):
        data = json.loads(p.read_text())
        for s in gen.SHEDDERS:
            cases.append({"id": f"{p.name}/{s}", "kind": "shed", "strategy": s, "conf": {}, "cycles": [data]})
    answers = o.ask(cases)
    assert len(answers) == len(cases) >= 6 * len(gen.SHEDDERS)
    assert [a for a in answers if "error" in a] == []
    assert any(cyc for a in answers for cyc in a["cycles"])  # something is unloaded somewhere


def test_fidelity_doc_is_current():
    """docs/fidelity.md is what the committed campaign renders, and lists exactly the departures of
    oracle/departures.py (a departure added or changed without a campaign fails here)."""
    campaign = json.loads(fidelity.CAMPAIGN.read_text())
    doc = fidelity.DOC.read_text()
    assert doc == fidelity.render(campaign), "regenerate: python -m oracle docs"
    seen = {name for e in campaign["lines"].values() for st_ in e.get("strategies", {}).values()
            for name in st_["departures"]}
    names = {d.name for d in DEPARTURES}
    assert seen <= names, f"the campaign saw departures no longer listed: {sorted(seen - names)}"
    for d in DEPARTURES:
        assert f"### {d.name}\n" in doc and d.reason in doc


_SETTINGS = settings(max_examples=int(os.environ.get("SHEDLAB_ORACLE_HYPOTHESIS", "25")), derandomize=True,
                     deadline=None, database=None, suppress_health_check=list(HealthCheck))


@pytest.mark.parametrize("strategy", gen.STRATEGIES)
def test_hypothesis_explores_and_shrinks(strategy, oracles):
    """hypothesis draws the inputs (and would shrink a disagreement to a minimal one)."""
    version = LINES["4.2"]
    o = _oracle(oracles, version)

    # a filters input is a whole cluster with its policies (hundreds of draws): a quarter of the examples
    examples = _SETTINGS.max_examples if strategy != gen.FILTERS else max(5, _SETTINGS.max_examples // 4)

    @settings(_SETTINGS, max_examples=examples)
    @given(st.data())
    def check(data):
        case = gen.case(gen.HypothesisDraw(data), strategy, "h")
        a, e = o.ask([case])[0], compare.engine_side.answer(case, version)
        assert compare.agree(case, a, e) or compare.explain("4.2", case, a, e), (json.dumps(case), a, e)

    check()
