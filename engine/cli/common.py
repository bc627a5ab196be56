"""Options shared by the Pulsar sub-commands (config, strategies, seed, output)."""
from __future__ import annotations

import argparse

from ..config import PRESETS, PULSAR_4_DEFAULTS, LoadBalancerConfig, changed_keys, parse_broker_conf
from ..errors import InputError, UsageError
from ..io import read_input_text
from ..managers import LOAD_MANAGER_CLASS
from ..strategies import fqn, placement_name, registry, shedding_name
from ..strategies.spec import MODULAR
from ..releases import DEFAULT_VERSION, broker_versions, defaults_for, release, version_from_reports

__all__ = ["add_config_args", "build_config", "read_conf_file", "check_out_dir", "release_of"]


def check_out_dir(out: str, option: str = "--out") -> None:
    """``option DIR`` must be (or become) a writable directory: checked before the work starts, so a
    path that cannot be a directory (``/proc/x``, a file, a read-only place) is a ``UsageError`` naming
    the option and the reason (exit status 2), not an ``OSError`` at the end."""
    import os
    from pathlib import Path

    p = Path(out)
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{option} {out}: cannot create the directory: {exc.strerror or exc}") from None
    if not p.is_dir() or not os.access(p, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {out}: not a writable directory")


def add_config_args(p: argparse.ArgumentParser, strategies: bool = True) -> None:
    if strategies:
        p.add_argument("--strategy", metavar="NAME",
                       help="shedding strategy (short or fully qualified Pulsar class name)")
        p.add_argument("--placement", metavar="NAME",
                       help="placement strategy (default: the one --strategy is paired with, e.g. AvgShedder "
                            "with AvgShedder, else the configured one)")
    p.add_argument("--conf", metavar="broker.conf", help="read load-balancer keys from a broker.conf")
    p.add_argument("--preset", choices=sorted(PRESETS), help="start from a preset (default pulsar-4; pulsar-5 is the "
                                                             "5.0 line, its defaults and its behaviour)")
    p.add_argument("--pulsar-version", metavar="X.Y[.Z]", dest="pulsar_version",
                   help=f"decide as this Pulsar release decides (3.0, 3.3, 4.0, 4.1, 4.2, 5.0, or a patch such as "
                        f"4.0.7; X.Y is the line's latest patch) with its defaults; default: the version the "
                        f"brokers report (brokerVersionString), else {DEFAULT_VERSION}")
    p.add_argument("--leader", metavar="BROKER",
                   help="the leader broker: during a rolling upgrade (brokers on several versions) decide as "
                        "its version")
    p.add_argument("--set", metavar="KEY=VALUE", action="append", default=[],
                   help="set a broker.conf key (repeatable)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random placement draws (default 0)")
    p.add_argument("--json", action="store_true", help="print JSON (the stable contract for scripts)")


def read_conf_file(path: str) -> LoadBalancerConfig:
    return parse_broker_conf(read_input_text(path), source=path).config


def build_config(args, data=None) -> LoadBalancerConfig:
    """Release defaults → preset → ``--conf`` → ``--set`` → ``--strategy``/``--placement``, in that order.

    The release (``pulsarVersion``) is ``--pulsar-version``, else ``--set pulsarVersion=...``, else the
    ``pulsar-5`` preset's 5.0, else what the brokers of ``data`` (snapshots) report — the leader's
    version (``--leader``) when they report several — else the default; its defaults are the base the
    other options apply to. ``args.release_note`` says which and why.

    A strategy of another load manager (``--strategy TransferShedder``, or an extensible placement)
    also sets ``loadManagerClassName`` to it. ``--strategy`` without ``--placement`` brings the
    placement the registry pairs it with (:func:`engine.strategies.registry.placement_for`), or
    replaces a configured placement that cannot run with it.
    """
    seed = getattr(args, "seed", None)
    if isinstance(seed, int) and seed < 0:  # numpy's generators take non-negative seeds only
        raise UsageError(f"--seed must not be negative, got {seed}")
    version, args.release_note = release_of(args, data)
    cfg = defaults_for(version)
    preset = getattr(args, "preset", None)
    if preset:
        keys = {k: v for k, (_old, v) in changed_keys(PRESETS[preset], PULSAR_4_DEFAULTS).items()
                if k != "pulsarVersion"}
        if keys:
            cfg = cfg.with_values(keys)
    if getattr(args, "conf", None):
        cfg = parse_broker_conf(read_input_text(args.conf), base=cfg, source=args.conf).config
    values = {}
    for item in getattr(args, "set", []) or []:
        if "=" not in item:
            raise UsageError(f"--set expects KEY=VALUE, got {item!r}")
        k, v = item.split("=", 1)
        values[k.strip()] = v.strip()
    if values:
        cfg = cfg.with_values(values, source="--set")
    changes = {}
    strategy = getattr(args, "strategy", None)
    placement = getattr(args, "placement", None)
    if strategy:
        s = shedding_name(strategy)
        changes["loadBalancerLoadSheddingStrategy"] = fqn(s)
        spec = registry.spec(s)
        if spec.load_manager != MODULAR:  # e.g. TransferShedder: the extensible load manager
            lm_class = LOAD_MANAGER_CLASS[spec.load_manager]
            if lm_class != cfg.loadManagerClassName:
                changes["loadManagerClassName"] = lm_class
        if not placement:
            placement = _placement_with(s, _placement_or_none(cfg))
    if placement:
        pn = placement_name(placement)
        changes["loadBalancerLoadPlacementStrategy"] = fqn(pn)
        p_manager = registry.spec(pn).load_manager
        if p_manager != MODULAR and LOAD_MANAGER_CLASS[p_manager] != cfg.loadManagerClassName:  # an extensible one
            changes["loadManagerClassName"] = LOAD_MANAGER_CLASS[p_manager]
    if changes:
        cfg = cfg.with_values(changes)
    return cfg


def release_of(args, data=None) -> tuple[str, str]:
    """``(version, note)``: the release to decide as, and a sentence saying where it comes from (see
    :func:`build_config`); a usage error when the brokers run several versions and the leader's is not
    known."""
    explicit = getattr(args, "pulsar_version", None)
    if explicit:
        try:
            r = release(explicit)
        except InputError as exc:
            raise UsageError(f"--pulsar-version: {exc.message if hasattr(exc, 'message') else exc}") from None
        return r.version, f"deciding as Pulsar {r.version} (--pulsar-version)"
    for item in getattr(args, "set", []) or []:
        k, _, v = item.partition("=")
        if k.strip() == "pulsarVersion" and v.strip():
            r = release(v.strip())
            return r.version, f"deciding as Pulsar {r.version} (--set pulsarVersion)"
    preset = getattr(args, "preset", None)
    if preset and PRESETS[preset].pulsarVersion != PULSAR_4_DEFAULTS.pulsarVersion:
        v = PRESETS[preset].pulsarVersion
        return v, f"deciding as Pulsar {v} (preset {preset})"
    versions = {}
    for ld in data or ():
        for bid, text in broker_versions(ld).items():
            versions.setdefault(bid, text)
    reading = version_from_reports(versions, leader=getattr(args, "leader", None)) if versions else None
    if reading is None or not reading.by_version:
        return DEFAULT_VERSION, f"deciding as Pulsar {DEFAULT_VERSION} (the brokers report no version; "\
                                f"--pulsar-version names one)"
    if reading.chosen is None:
        raise UsageError(f"{reading.note}, or --leader BROKER")
    how = "the leader's brokerVersionString" if reading.mixed else "the brokers' brokerVersionString"
    return reading.chosen, f"deciding as Pulsar {reading.chosen} ({how}; {reading.note})"


def _placement_with(shedding: str, configured: str | None) -> str | None:
    """The placement ``--strategy`` brings when ``--placement`` is not given: the one it is paired with
    (the registry's rule), else a replacement for a configured placement that cannot run with it
    because it is itself another shedding strategy (AvgShedder); ``None`` keeps the configured one."""
    paired = registry.placement_for(shedding)
    if paired is not None:
        return paired
    if configured is not None and registry.spec(configured).is_shedding and configured not in \
            registry.placements_allowed(shedding):
        return registry.default_placement(shedding)
    return None


def _placement_or_none(cfg):
    try:
        return placement_name(cfg.loadBalancerLoadPlacementStrategy)
    except UsageError:
        return None



def add_policies_args(p: argparse.ArgumentParser) -> None:
    """``--policies FILE`` (repeatable): the cluster's isolation / anti-affinity / failure-domain policy
    files (:mod:`engine.policies`), given to every snapshot read."""
    p.add_argument("--policies", metavar="FILE", action="append", default=[],
                   help="the cluster's policies: `ns-isolation-policy list`, anti-affinity groups "
                        "({\"tenant/ns\": \"group\"}) or `clusters list-failure-domains` JSON (repeatable)")


def attach_policy_files(args, snapshots) -> None:
    """Read ``args.policies`` once and attach them to each snapshot (modular or ELM); a bad file raises
    :class:`~engine.errors.InputError` naming it (exit status 2)."""
    paths = getattr(args, "policies", None) or []
    if not paths:
        return
    from ..policies import attach, read_policy_file

    got = None
    for path in paths:
        one = read_policy_file(path)
        got = one if got is None else got.merge(one)
    for ld in snapshots:
        attach(ld, got)
