"""A shedding strategy from a plug-in module, for the Simulator page's registry tests (not shipped).

Registered through ``SHEDLAB_STRATEGY_MODULES=tests.callbacks.plugin_shedder``: the page must offer it,
its keys and its sweep grid with no edit to the page.
"""
from __future__ import annotations

from dataclasses import dataclass

from engine.strategies.spec import StrategySpec


@dataclass(frozen=True)
class NoState:
    def to_json(self) -> dict:
        return {}

    @classmethod
    def from_json(cls, data) -> "NoState":
        return cls()


class PagePluginShedder:
    """Unloads nothing (the page tests never run it)."""

    name = "PagePluginShedder"


SPEC = StrategySpec(
    name="PagePluginShedder", fqn="org.example.shedlab.PagePluginShedder", roles=frozenset({"shedding"}),
    load_manager="modular", config_keys=("maxUnloadPercentage", "loadBalancerBrokerOverloadedThresholdPercentage"),
    requires_placement=None,
    sweep_grid=(("maxUnloadPercentage", (0.1, 0.2, 0.3, 0.4, 0.5)),
                ("loadBalancerBrokerOverloadedThresholdPercentage", (70, 75, 80, 85, 90, 95))),
    state_type=NoState, factory=PagePluginShedder, explains=frozenset(), title="a plug-in for the page tests")
