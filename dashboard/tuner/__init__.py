"""The Tuner page's services, one concept per module.

* :mod:`.state` — the page's whole state as one small value (source, strategies, changed keys, seed)
  and the engine config built from it;
* :mod:`.analysis` — one shedding cycle (or N) on a snapshot, with what the page draws;
* :mod:`.transfer` — what TransferShedder (the Extensible Load Manager) decided, as the page shows it;
* :mod:`.whynot` — "why not?" for a broker or a bundle;
* :mod:`.service` — one call per user action (:func:`~.service.tune`, :func:`~.service.cycles`,
  :func:`~.service.why_not`), so the callbacks are parse → one service call → figure builders.
"""
from .analysis import Analysis, analyze, build_manager, revision, run_cycles
from .service import CyclesRun, Loaded, Tuned, cycles, load, revisions, tune, why_not
from .state import TunerState, build_config, coerce_state

__all__ = ["Analysis", "analyze", "build_manager", "revision", "run_cycles", "CyclesRun", "Loaded", "Tuned",
           "cycles", "load", "revisions", "tune", "why_not", "TunerState", "build_config", "coerce_state"]
