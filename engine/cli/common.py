"""Options shared by the Pulsar sub-commands (config, strategies, seed, output)."""
from __future__ import annotations

import argparse

from ..config import LoadBalancerConfig, PRESETS, parse_broker_conf
from ..errors import UsageError
from ..io import read_input_text
from ..strategies import PLACEMENT, SHEDDING, fqn, placement_name, shedding_name

__all__ = ["add_config_args", "build_config", "read_conf_file"]


def add_config_args(p: argparse.ArgumentParser, strategies: bool = True) -> None:
    if strategies:
        p.add_argument("--strategy", metavar="NAME",
                       help="shedding strategy (short or fully qualified Pulsar class name)")
        p.add_argument("--placement", metavar="NAME",
                       help="placement strategy (AvgShedder shedding defaults to AvgShedder placement)")
    p.add_argument("--conf", metavar="broker.conf", help="read load-balancer keys from a broker.conf")
    p.add_argument("--preset", choices=sorted(PRESETS), help="start from a preset (default pulsar-4)")
    p.add_argument("--set", metavar="KEY=VALUE", action="append", default=[],
                   help="set a broker.conf key (repeatable)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random placement draws (default 0)")
    p.add_argument("--json", action="store_true", help="print JSON (the stable contract for scripts)")


def read_conf_file(path: str) -> LoadBalancerConfig:
    return parse_broker_conf(read_input_text(path), source=path).config


def build_config(args) -> LoadBalancerConfig:
    """Preset → ``--conf`` → ``--set`` → ``--strategy``/``--placement``, in that order.

    A strategy of another load manager (``--strategy TransferShedder``, or an extensible placement)
    also sets ``loadManagerClassName`` to it; TransferShedder without ``--placement`` gets its default
    placement (the extensible LeastResourceUsageWithWeight) unless the configured one is extensible.
    """
    seed = getattr(args, "seed", None)
    if isinstance(seed, int) and seed < 0:  # numpy's generators take non-negative seeds only
        raise UsageError(f"--seed must not be negative, got {seed}")
    cfg = PRESETS[args.preset] if getattr(args, "preset", None) else LoadBalancerConfig()
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
        cls = SHEDDING.get(s)
        lm_class = getattr(cls, "load_manager_class_name", None)
        if lm_class:  # e.g. TransferShedder: the extensible load manager and its own placement
            if lm_class != cfg.loadManagerClassName:
                changes["loadManagerClassName"] = lm_class
            if not placement and not getattr(PLACEMENT.get(_placement_or_none(cfg)), "extensible", False):
                placement = cls.default_placement
        elif not placement and s == "AvgShedder":
            placement = "AvgShedder"
        elif not placement and cfg.placement_strategy == "AvgShedder" and s != "AvgShedder":
            placement = "LeastLongTermMessageRate"
    if placement:
        pn = placement_name(placement)
        changes["loadBalancerLoadPlacementStrategy"] = fqn(pn)
        lm_class = getattr(PLACEMENT.get(pn), "load_manager_class_name", None)
        if lm_class and lm_class != cfg.loadManagerClassName:  # an extensible placement
            changes["loadManagerClassName"] = lm_class
    if changes:
        cfg = cfg.with_values(changes)
    return cfg


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
