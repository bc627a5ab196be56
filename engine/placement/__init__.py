"""Placement strategies of the modular load manager (one module each)."""
from .base import PlacementContext, PlacementStrategy
from .least_long_term_message_rate import LeastLongTermMessageRate
from .least_resource_usage_with_weight import LeastResourceUsageWithWeight
from .round_robin import RoundRobinBrokerSelector

__all__ = ["PlacementStrategy", "PlacementContext", "LeastLongTermMessageRate", "LeastResourceUsageWithWeight",
           "RoundRobinBrokerSelector"]
