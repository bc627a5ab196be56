"""One simulated minute as the phases see it: what each phase computed for the next ones.

:class:`~engine.simulator.run.Simulation` folds its phases over the minutes; each phase reads the
cluster (the simulation's arrays) and this record, and fills its own fields. The record lives for
one minute only: what must survive the minute is cluster state, not a field here.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Minute"]


@dataclass
class Minute:
    """The values of minute ``t`` passed from phase to phase (in phase order).

    Attributes
    ----------
    t : int
    changes : int
        Membership changes of the minute (brokers joined or left) whose leader ``updateAll`` calls are
        still due (0 once the departed brokers' lookups ran them). Set by the events phase.
    top, ses : ndarray (K,)
        Loaded topics and sessions per bundle. Load phase.
    r_in, r_out, t_in, t_out : ndarray (K,)
        Per bundle msg/s and bytes/s in and out. Load phase.
    pct : ndarray (S, 5)
        Per broker cpu, memory, direct memory, bandwidth in and out (%). Load phase.
    rates : ndarray (S, 4)
        Per broker msgRateIn, msgRateOut, msgThroughputIn, msgThroughputOut. Load phase.
    nb : ndarray (S,)
        Bundles with loaded topics per broker. Load phase.
    wrote : ndarray (S,) of bool
        The broker wrote its load report this minute. Reports phase.
    """

    t: int
    changes: int = 0
    top: np.ndarray = None
    ses: np.ndarray = None
    r_in: np.ndarray = None
    r_out: np.ndarray = None
    t_in: np.ndarray = None
    t_out: np.ndarray = None
    pct: np.ndarray = None
    rates: np.ndarray = None
    nb: np.ndarray = None
    wrote: np.ndarray = None

    @property
    def traffic(self) -> tuple:
        """``(r_in, r_out, t_in, t_out)``."""
        return self.r_in, self.r_out, self.t_in, self.t_out
