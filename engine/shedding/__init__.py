"""Shedding strategies of the modular load manager (one module each)."""
from .avg_shedder import AvgShedder
from .base import SheddingStrategy
from .overload_shedder import OverloadShedder
from .threshold_shedder import ThresholdShedder
from .uniform_load_shedder import UniformLoadShedder

__all__ = ["SheddingStrategy", "OverloadShedder", "ThresholdShedder", "UniformLoadShedder", "AvgShedder"]
