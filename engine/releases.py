"""Pulsar release lines: choose the release Shedlab decides as, its defaults, and read it from data.

The behaviours that differ between releases and the first release of each line that has them are one
table, :data:`engine.release_lines.BEHAVIOURS` (re-exported here). A config carries its release in
``pulsarVersion`` (:class:`engine.config.LoadBalancerConfig`); :func:`defaults_for` gives a line's
``broker.conf`` defaults with the version set; :func:`version_from_reports` reads the version the
brokers report (``brokerVersionString``), and says when they differ (a rolling upgrade).

Examples
--------
>>> defaults_for("3.0").loadBalancerDirectMemoryResourceWeight, defaults_for("3.0").pulsarVersion
(1.0, '3.0.17')
>>> defaults_for("5.0").shedding_strategy
'AvgShedder'
>>> r = version_from_reports({"b1": "4.0.7", "b2": "4.0.8", "b3": "4.0.8"}, leader="b2")
>>> r.chosen, r.mixed
('4.0.8', True)
>>> version_from_reports({"b1": "4.0.7", "b2": "4.0.8"}).chosen is None      # ask which
True
"""
from __future__ import annotations

from dataclasses import dataclass

from .config import LoadBalancerConfig, release_defaults
from .errors import InputError
from .release_lines import (BEHAVIOURS, DEFAULT_VERSION, LATEST, LINE_DEFAULTS, LINES, Behaviour, Release,
                            modular_startup, parse_version, release, version_key)

__all__ = ["LINES", "LATEST", "DEFAULT_VERSION", "Behaviour", "BEHAVIOURS", "Release", "release", "parse_version",
           "defaults_for", "line_defaults", "version_from_reports", "VersionReading", "version_key", "broker_versions",
           "modular_startup"]


def line_defaults(version: str | None = None) -> dict:
    """The ``broker.conf`` keys whose defaults differ from the 4.x defaults in ``version``'s line."""
    return dict(LINE_DEFAULTS[release(version).line])


def defaults_for(version: str | None = None) -> LoadBalancerConfig:
    """The load-balancer config with ``version``'s defaults and ``pulsarVersion`` set to it."""
    return release_defaults(release(version).version)


@dataclass(frozen=True)
class VersionReading:
    """What a snapshot says about the versions its brokers run.

    ``by_version``: version → brokers (sorted) reporting it; ``unknown``: brokers without a (modelled)
    version; ``leader``: the leader's version when the leader is known; ``chosen``: the version to decide
    as (the leader's, else the only one, else ``None``: ask); ``note``: one sentence for the user.
    """

    by_version: dict
    unknown: tuple
    leader: str | None
    chosen: str | None
    note: str

    @property
    def mixed(self) -> bool:
        return len(self.by_version) > 1


def _release_or_none(text):
    try:
        return release(text) if text else None
    except InputError:
        return None


def version_from_reports(versions: dict, leader: str | None = None) -> VersionReading:
    """Read the release from each broker's ``brokerVersionString`` (``{broker: text or None}``).

    One version: decide as it. Several (a rolling upgrade): decide as the leader's when ``leader`` is
    given and reports one, else ``chosen`` is ``None`` and the note asks which. Versions of lines
    Shedlab does not model count as unknown.
    """
    by: dict = {}
    unknown = []
    read: dict = {}  # each distinct text parsed once (thousands of brokers, a few versions)
    for b, text in sorted(versions.items()):
        try:
            r = read[text]
        except KeyError:
            r = read[text] = _release_or_none(text)
        except TypeError:  # not a text
            r = _release_or_none(text)
        if r is None:
            unknown.append(b)
        else:
            by.setdefault(r.version, []).append(b)
    by = {v: tuple(bs) for v, bs in sorted(by.items(), key=lambda kv: version_key(kv[0]))}
    lead_v = None
    if leader is not None:
        for v, bs in by.items():
            if leader in bs:
                lead_v = v
    if not by:
        return VersionReading(by, tuple(unknown), None, None, "the brokers report no Pulsar version Shedlab models")
    if len(by) == 1:
        v = next(iter(by))
        return VersionReading(by, tuple(unknown), lead_v, v, f"every broker reports Pulsar {v}")
    parts = "; ".join(f"{v}: {', '.join(bs)}" for v, bs in by.items())
    if lead_v:
        return VersionReading(by, tuple(unknown), lead_v, lead_v,
                              f"mixed versions (a rolling upgrade?) — {parts}; deciding as the leader "
                              f"{leader} runs, Pulsar {lead_v}")
    return VersionReading(by, tuple(unknown), None, None,
                          f"mixed versions (a rolling upgrade?) — {parts}; the leader decides as its own "
                          f"version: name it (--pulsar-version)")



def broker_versions(data) -> dict:
    """``{broker: brokerVersionString or None}`` of a snapshot: a modular ``LoadData`` (each load report's
    ``brokerVersionString``) or the Extensible Load Manager's data (each ``BrokerLookupData``'s
    ``brokerVersion``)."""
    reports = getattr(data, "broker_reports", None)  # engine.fastload: no lastStats objects built for this
    brokers = reports() if callable(reports) else getattr(data, "brokers", None)
    if isinstance(brokers, dict):
        return {bid: getattr(getattr(bd, "local", None), "broker_version_string", None) for bid, bd in brokers.items()}
    lookup = getattr(data, "lookup", None)
    if isinstance(lookup, dict):
        return {bid: getattr(look, "broker_version", None) for bid, look in lookup.items()}
    return {}
