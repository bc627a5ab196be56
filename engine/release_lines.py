"""The table of Pulsar release lines: which load-balancer behaviour each release runs.

:mod:`engine.releases` is the public face (with the defaults and the reading of versions from data);
this module holds the table alone, so that :mod:`engine.config` can read it.

Operators run 3.0 LTS, 3.3, 4.0 LTS, 4.1, 4.2 and 5.0, and the load manager decides differently
across them (and within a line, where a fix landed in a patch release: 4.0.7 and 4.0.8 are different
machines). A :class:`Release` is one such version; each behaviour that differs is one
:class:`Behaviour` row of :data:`BEHAVIOURS`, naming the upstream change and the first release of
each line that has it. The engine asks ``release.has("avg_shedder_double_comparator")`` in exactly
one place per behaviour; nothing else in the engine knows version numbers.

The release rides on the config (:attr:`engine.config.LoadBalancerConfig.pulsarVersion`), so it
reaches every strategy, the simulator, the backtests and the pages the way every other setting does.
:func:`defaults_for` gives a line's ``broker.conf`` defaults together with its version.

Examples
--------
>>> r = release("4.0.7")
>>> r.line, r.has("avg_shedder_double_comparator"), release("4.0.8").has("avg_shedder_double_comparator")
('4.0', False, True)
>>> release("3.0").version            # a line alone means its latest patch
'3.0.17'
>>> release("4.1").has("uniform_without_delta"), release("4.0").has("uniform_without_delta")
(True, False)
>>> release("2.11.0")
Traceback (most recent call last):
...
engine.errors.InputError: field pulsarVersion: release line 2.11 is not modelled; Shedlab decides for Pulsar 3.0, 3.3, 4.0, 4.1, 4.2, 5.0

Notes
-----
Rows were read from upstream's release branches and the release jars' sources (3.0.7, 3.3.6, 4.0.7,
4.0.8, 4.2.4); changes newer than those sources (plans keyed by bundle name, the start-up refusal of a
bad strategy pair) come from the pull requests and release notes. ``docs/releases.md`` is generated from
this table (``python -m engine releases --markdown``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from .errors import InputError

__all__ = ["LINES", "LATEST", "DEFAULT_VERSION", "LINE_DEFAULTS", "Behaviour", "BEHAVIOURS", "Release", "release",
           "parse_version", "version_key", "modular_startup"]

#: the release lines Shedlab decides for, oldest first
LINES = ("3.0", "3.3", "4.0", "4.1", "4.2", "5.0")

#: the newest patch of each line (a line named without a patch means this one)
LATEST = {"3.0": "3.0.17", "3.3": "3.3.9", "4.0": "4.0.14", "4.1": "4.1.3", "4.2": "4.2.5", "5.0": "5.0.1"}

#: the release decided for when neither the user nor the data names one: the newest 4.2 release whose
#: released code the engine is checked against (its jar is on Maven Central; 4.2.5 differs only in
#: AvgShedder's plans, see ``avg_shedder_plans_by_name``)
DEFAULT_VERSION = "4.2.4"

ALL = "all"  # the line started with it
NONE = None  # no release of the line has it


@dataclass(frozen=True)
class Behaviour:
    """One behaviour that differs between releases.

    ``since`` maps each line to the first release of that line that has the behaviour (``"all"``: the
    line started with it; ``None``: no release of the line has it). ``what`` says what the behaviour is
    (with it), ``before`` what the releases without it do, ``pr`` the upstream change,
    ``where`` the strategy it touches, ``example`` a small input on which the decision differs.
    """

    name: str
    what: str
    before: str
    pr: str
    where: str
    since: dict
    example: str = ""
    #: False where Shedlab decides as the releases *without* the behaviour even on a release that has it
    #: (said in every result it touches; ``docs/releases.md`` lists it as a departure)
    modelled: bool = True

    def in_release(self, line: str, patch: int) -> bool:
        first = self.since.get(line)
        if first is None:
            return False
        if first == ALL:
            return True
        return patch >= int(first.rsplit(".", 1)[1])

    def releases_text(self) -> str:
        """``3.0: —, 3.3: 3.3.3, 4.0: all, ...`` for the docs."""
        return ", ".join(f"{ln}: {self.since.get(ln) or '—'}" for ln in LINES)


def _since(v30=NONE, v33=NONE, v40=NONE, v41=NONE, v42=NONE, v50=NONE) -> dict:
    return {"3.0": v30, "3.3": v33, "4.0": v40, "4.1": v41, "4.2": v42, "5.0": v50}


BEHAVIOURS: tuple[Behaviour, ...] = (
    Behaviour(
        "avg_shedder_available",
        "AvgShedder exists (shedding and placement in one instance).",
        "The class does not exist: the broker cannot create the strategy.",
        "#22949 (PIP-364)", "AvgShedder", _since("3.0.6", "3.3.1", ALL, ALL, ALL, ALL),
        "loadBalancerLoadSheddingStrategy=...AvgShedder on 3.0.5: no such class"),
    Behaviour(
        "avg_shedder_pairing_check",
        "The AvgShedder pairing check reads loadBalancerLoadPlacementStrategy.",
        "The check compares the shedding class with the deprecated loadBalancerPlacementStrategy "
        "(leastLoadedServer): a correct AvgShedder pair fails to start the modular load manager.",
        "#23156", "AvgShedder (start-up)", _since("3.0.8", "3.3.3", ALL, ALL, ALL, ALL),
        "AvgShedder + AvgShedder on 3.0.7: the check throws"),
    Behaviour(
        "bad_pair_refused",
        "A load manager that throws at start-up stops the broker (it refuses to start).",
        "The broker catches the error and runs SimpleLoadManagerImpl instead, a different balancer.",
        "#26031", "start-up", _since(NONE, NONE, "4.0.12", NONE, "4.2.3", ALL),
        "AvgShedder placement with ThresholdShedder on 4.0.11: SimpleLoadManagerImpl runs"),
    Behaviour(
        "avg_placement_falls_back",
        "An AvgShedder placement with another shedding strategy falls back to LeastLongTermMessageRate "
        "with a warning.",
        "The pair is refused (an IllegalArgumentException at start-up).",
        "#26609", "AvgShedder (start-up)", _since(v50=ALL),
        "AvgShedder placement with ThresholdShedder on 5.0: LeastLongTermMessageRate places"),
    Behaviour(
        "avg_shedder_double_comparator",
        "AvgShedder sorts brokers by score with a double comparison.",
        "It sorts with (int)(a - b): scores less than 1 apart compare equal (their order then comes from "
        "the HashMap), and with 32 brokers or more the sort can throw 'Comparison method violates its "
        "general contract!', which fails the cycle.",
        "#24954", "AvgShedder", _since(NONE, NONE, "4.0.8", "4.1.2", ALL, ALL),
        "scores b1 10.0, b2 30.2, b3 30.9, b4 50.0, b5 70.5, b6 90.0 (high threshold 40): b5 pairs with b2 "
        "(gap 40.3, a high hit) with the fix, with b3 (gap 39.6, a low hit) without it when b3 iterates first"),
    Behaviour(
        "avg_shedder_plans_by_name",
        "AvgShedder's planned destinations are keyed by bundle name and dropped after one unload attempt.",
        "Plans are keyed by the bundle's BundleData value and never pruned: a bundle whose data changed "
        "loses its plan, and bundles with identical data share one.",
        "#26246", "AvgShedder", _since(NONE, NONE, "4.0.14", NONE, "4.2.5", ALL),
        "a planned bundle whose BundleData changes before placement: by name it still goes to the plan",
        modelled=False),
    Behaviour(
        "weighted_overload",
        "OverloadShedder, LeastLongTermMessageRate's overload test and selectBroker's overload retry use "
        "the weighted maximum usage (PIP-358).",
        "They use the unweighted maximum of cpu, direct memory and NIC in/out (float32), whatever the "
        "weights.",
        "#22888 (PIP-358)", "OverloadShedder, LeastLongTermMessageRate, selectBroker",
        _since(NONE, NONE, ALL, ALL, ALL, ALL),
        "OverloadShedder, cpu 50 %, direct memory 90 %: 3.x sheds (0.90 >= 0.85), 4.x does not (direct weight 0)"),
    Behaviour(
        "uniform_without_delta",
        "UniformLoadShedder takes a bundle when its rate (throughput) fits the amount left.",
        "A bundle fits when its rate (throughput) is at most the amount left + 1000.",
        "#21906", "UniformLoadShedder", _since(NONE, NONE, NONE, ALL, ALL, ALL),
        "min 1,000 msg/s, max 11,000 msg/s with bundles 3,000/3,000/2,500/2,500, 20 %: the old rule moves "
        "one 3,000 bundle, the new one nothing"),
    Behaviour(
        "pip357_keys",
        "The correctly spelled loadBalancerBandwidthIn/OutResourceWeight keys are read (PIP-357; the "
        "new key wins when it is not 1.0, else the old spelling).",
        "Only the loadBalancerBandwithIn/OutResourceWeight spellings exist; the new keys are ignored.",
        "#22824 (PIP-357)", "every weighted score", _since(NONE, NONE, ALL, ALL, ALL, ALL),
        "loadBalancerBandwidthOutResourceWeight=0 on 3.x: ignored, NIC-out still counts"),
    Behaviour(
        "excluded_namespaces",
        "loadBalancerSheddingExcludedNamespaces is read: listed namespaces are never shed and their "
        "bundles are placed round robin (PIP-380).",
        "The key does not exist: every namespace may be shed and placed by the strategy.",
        "#23549 (PIP-380)", "every shedder, placement", _since(NONE, NONE, "4.0.11", ALL, ALL, ALL),
        "the hot broker's biggest bundle in an excluded namespace: shed before 4.0.11"),
    Behaviour(
        "isolation_broker_id",
        "Namespace isolation regexes that contain a ':' are also matched against the broker id (host:port), "
        "for primaries, secondaries and shared brokers alike.",
        "Isolation regexes are matched against the broker's host only: a regex naming a port never matches.",
        "upstream broker-id matching of isolation policies (5.0)", "selectBroker",
        _since(NONE, NONE, NONE, NONE, NONE, ALL),
        "primary regex 'b1:8080' with broker b1:8080: its primary from 5.0, not before"),
    Behaviour(
        "system_namespace_spread",
        "Bundles of pulsar/system are spread evenly even with loadBalancerDistributeBundlesEvenlyEnabled=false.",
        "pulsar/system follows loadBalancerDistributeBundlesEvenlyEnabled like any namespace.",
        "#22953", "selectBroker", _since("3.0.6", "3.3.1", ALL, ALL, ALL, ALL),
        "evenly=false, placing pulsar/system bundles: they may pile up before the fix"),
    Behaviour(
        "transfer_underload_by_throughput",
        "TransferShedder counts a broker as underloaded when its throughput EMA is below the max broker's "
        "throughput EMA x the underload multiplier (or its weighted load below the average x it).",
        "A broker is underloaded when its throughput EMA is below 1 B/s (or its weighted load below the "
        "average x the multiplier).",
        "#22321", "TransferShedder", _since("3.0.5", ALL, ALL, ALL, ALL, ALL),
        "loads 0.50/0.45/0.40, throughput EMA 200/150/10 MB/s: underloaded (and transferred to) from 3.0.5"),
    Behaviour(
        "transfer_skip_zero_throughput",
        "Bundles with no throughput are left out of the top-K report and TransferShedder skips them.",
        "An idle bundle fits any budget and is transferred (a move that changes nothing).",
        "#23626", "TransferShedder", _since(NONE, "3.3.3", "4.0.1", ALL, ALL, ALL),
        "the hot broker's smallest top-K entry is idle: moved before the fix"),
    Behaviour(
        "topk_rounding_compare",
        "Bundle stats compare by rounding each quantity to its resolution (a total order).",
        "Bundle stats compare 'equal' when they are within the resolution (100 KB/s, 100 msg/s), which is "
        "not transitive and decides the top-K order differently.",
        "#24772", "TransferShedder (top-K)", _since("3.0.14", "3.3.9", "4.0.7", "4.1.1", ALL, ALL),
        "in 1,000,000/out 5,000,000 B/s against in 1,090,000/out 0: the first is on top by threshold, the "
        "second by rounding"),
    Behaviour(
        "version_filter_build_metadata",
        "The extensible BrokerVersionFilter (preferLaterVersions) keeps only the brokers whose version equals the "
        "latest including its build metadata (java-semver 0.10): 4.0.0 and 4.0.0+b1 are different versions, the "
        "one with build metadata the later.",
        "Build metadata is ignored when a version is compared with the latest (java-semver 0.9): 4.0.0 and "
        "4.0.0+b1 are both kept.",
        "java-semver 0.9.0 -> 0.10.2 in pulsar-broker's dependencies", "BrokerVersionFilter (extensible)",
        _since(NONE, NONE, NONE, NONE, NONE, ALL),
        "preferLaterVersions=true, brokers at 4.0.0 and 4.0.0+b1: both candidates before 5.0, only 4.0.0+b1 on 5.0"),
    Behaviour(
        "split_skips_stale_bundles",
        "The bundle-split check skips bundle data of bundles the namespace no longer has.",
        "Stale bundle data (left from an earlier split) is split again, and the attempt fails.",
        "#25031", "bundle split", _since(NONE, NONE, "4.0.9", "4.1.3", ALL, ALL),
        "bundle data still lists a range that was split: tried again before the fix"),
)

_BY_NAME = {b.name: b for b in BEHAVIOURS}

#: ``broker.conf`` defaults that differ by line (every other key is the same in every line)
LINE_DEFAULTS = {
    "3.0": {"loadBalancerMemoryResourceWeight": 1.0, "loadBalancerDirectMemoryResourceWeight": 1.0},
    "3.3": {"loadBalancerMemoryResourceWeight": 1.0},
    "4.0": {}, "4.1": {}, "4.2": {},
    "5.0": {"loadBalancerLoadSheddingStrategy": "org.apache.pulsar.broker.loadbalance.impl.AvgShedder",
            "loadBalancerLoadPlacementStrategy": "org.apache.pulsar.broker.loadbalance.impl.AvgShedder",
            "loadBalancerDistributeBundlesEvenlyEnabled": False, "maxUnloadPercentage": 0.5,
            "defaultNumberOfNamespaceBundles": 32},
}

_VERSION = re.compile(r"^\s*v?(\d{1,3})\.(\d{1,3})(?:\.(\d{1,4}))?(?:[-+.][0-9A-Za-z.+-]{0,64})?\s*$")


def parse_version(text) -> tuple[str, int | None]:
    """``"4.0.8"`` → ``("4.0", 8)``; ``"4.0"`` → ``("4.0", None)``; a suffix (``-SNAPSHOT``, a build) is
    ignored. Raises :class:`InputError` for text that is no version or a line Shedlab does not model."""
    if not isinstance(text, str) or len(text) > 80:
        raise InputError(f"not a Pulsar version: {text!r}", field="pulsarVersion")
    m = _VERSION.match(text)
    if not m:
        raise InputError(f"not a Pulsar version: {text!r} (expected X.Y or X.Y.Z, e.g. 4.0.8)",
                         field="pulsarVersion")
    line = f"{int(m.group(1))}.{int(m.group(2))}"
    if line not in LATEST:
        raise InputError(f"release line {line} is not modelled; Shedlab decides for Pulsar {', '.join(LINES)}",
                         field="pulsarVersion")
    return line, (int(m.group(3)) if m.group(3) is not None else None)


@dataclass(frozen=True)
class Release:
    """One Pulsar release (line and patch) and the behaviours it has."""

    line: str
    patch: int

    @property
    def version(self) -> str:
        return f"{self.line}.{self.patch}"

    def has(self, behaviour: str) -> bool:
        """Whether this release has ``behaviour`` (a name of :data:`BEHAVIOURS`)."""
        return _has(self.line, self.patch, behaviour)

    def behaviours(self) -> dict:
        """``{name: bool}`` for every behaviour."""
        return {b.name: b.in_release(self.line, self.patch) for b in BEHAVIOURS}

    def differences(self, other: "Release") -> list:
        """The behaviours in which ``other`` differs from this release: ``[(Behaviour, here, there)]``."""
        out = []
        for b in BEHAVIOURS:
            x, y = b.in_release(self.line, self.patch), b.in_release(other.line, other.patch)
            if x != y:
                out.append((b, x, y))
        return out

    def __str__(self) -> str:
        return self.version


@lru_cache(maxsize=256)
def _has(line: str, patch: int, behaviour: str) -> bool:
    b = _BY_NAME.get(behaviour)
    if b is None:
        raise KeyError(f"unknown release behaviour {behaviour!r}")
    return b.in_release(line, patch)


@lru_cache(maxsize=256)
def release(version: str | None = None) -> Release:
    """The :class:`Release` of ``version`` (``X.Y`` means the line's latest patch; ``None`` or ``""``
    means :data:`DEFAULT_VERSION`). A patch newer than the newest known one decides as the newest."""
    line, patch = parse_version(version or DEFAULT_VERSION)
    latest = int(LATEST[line].rsplit(".", 1)[1])
    return Release(line, latest if patch is None else patch)




def version_key(version: str) -> tuple:
    """A sort key: ``"4.0.8"`` → ``(4, 0, 8)``."""
    line, patch = parse_version(version)
    major, minor = line.split(".")
    return int(major), int(minor), patch or 0


SIMPLE_LOAD_MANAGER = ("the broker catches the error and runs SimpleLoadManagerImpl instead, a different load "
                       "balancer that Shedlab does not model")


def modular_startup(shedding: str, placement: str, rel: "Release") -> tuple[str, str, str | None]:
    """What ``ModularLoadManagerImpl.initialize`` does with a strategy pair on release ``rel``:
    ``(shedding that runs, placement that runs, note or None)``.

    Raises :class:`InputError` (field ``loadBalancerLoadPlacementStrategy``) where the broker would not
    run the modular load manager with these strategies: it refuses to start, or it falls back to
    SimpleLoadManagerImpl. A shedding class that cannot be created becomes OverloadShedder before 4.0.
    """
    v = rel.version
    field = "loadBalancerLoadPlacementStrategy"
    avg = "AvgShedder"
    if placement == avg and not rel.has("avg_shedder_available"):
        raise InputError(f"Pulsar {v} has no AvgShedder (it came in 3.0.6 and 3.3.1): creating the placement "
                         f"strategy throws and {SIMPLE_LOAD_MANAGER}", field=field)
    if placement == avg and shedding != avg:
        if rel.has("avg_placement_falls_back"):
            return shedding, "LeastLongTermMessageRate", (
                f"Pulsar {v}: an AvgShedder placement with {shedding} falls back to LeastLongTermMessageRate "
                f"(with a warning in the broker's log)")
        if rel.has("bad_pair_refused"):
            raise InputError(f"loadBalancerLoadPlacementStrategy is AvgShedder but loadBalancerLoadSheddingStrategy "
                             f"is {shedding}: Pulsar {v} refuses to start (both must be AvgShedder)", field=field)
        raise InputError(f"loadBalancerLoadPlacementStrategy is AvgShedder but loadBalancerLoadSheddingStrategy is "
                         f"{shedding}: on Pulsar {v} the pairing check throws and {SIMPLE_LOAD_MANAGER} (from "
                         f"4.0.12 / 4.2.3 the broker refuses to start instead)", field=field)
    if placement == avg and not rel.has("avg_shedder_pairing_check"):
        raise InputError(f"on Pulsar {v} AvgShedder's pairing check compares the shedding class with the deprecated "
                         f"loadBalancerPlacementStrategy (leastLoadedServer) and throws, so {SIMPLE_LOAD_MANAGER} "
                         f"(fixed in 3.0.8 / 3.3.3; setting loadBalancerPlacementStrategy to the AvgShedder class is "
                         f"the known workaround)", field=field)
    if shedding == avg and not rel.has("avg_shedder_available"):
        return "OverloadShedder", placement, (f"Pulsar {v} has no AvgShedder (it came in 3.0.6 and 3.3.1): the "
                                              f"shedding strategy cannot be created and the broker uses "
                                              f"OverloadShedder instead")
    return shedding, placement, None
