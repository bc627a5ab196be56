"""The Tuner's release picker and its upgrade diff: the same snapshot and settings decided by two Pulsar
releases side by side ("on 4.0.7 broker-3 sheds, on 4.0.8 broker-5").

:func:`release_options` lists what the picker offers (the data's own version first, then each line and
the patches where a behaviour changed); :func:`release_diff` runs the Tuner's analysis for the page's
state and for the same state on another release and says what differs: the decision, and the behaviours
behind it (:meth:`engine.release_lines.Release.differences`).
"""
from __future__ import annotations

from dataclasses import replace

from engine.errors import InputError
from engine.releases import BEHAVIOURS, LATEST, LINES, release

__all__ = ["release_options", "release_diff", "patch_versions"]


def patch_versions() -> list[str]:
    """Every release on either side of a behaviour change, plus each line's latest, oldest first."""
    out = set(LATEST.values())
    for b in BEHAVIOURS:
        for ln, first in b.since.items():
            if first not in (None, "all"):
                p = int(first.rsplit(".", 1)[1])
                out.add(first)
                if p > 0:
                    out.add(f"{ln}.{p - 1}")
    return sorted(out, key=lambda v: tuple(int(x) for x in v.split(".")))


def release_options(auto_label: str = "from the data (brokerVersionString)") -> list[dict]:
    """Dropdown options: ``""`` (read from the data) and every release of :func:`patch_versions`."""
    opts = [{"label": auto_label, "value": ""}]
    for v in patch_versions():
        line = v.rsplit(".", 1)[0]
        latest = " (latest of " + line + ")" if LATEST[line] == v else ""
        opts.append({"label": f"Pulsar {v}{latest}", "value": v})
    return opts


def _decision(a) -> tuple[str, tuple]:
    c = a.cycle
    moves = tuple((u.broker, u.bundle, u.destination) for u in c.unloads)
    res = a.result
    if moves:
        by = {}
        for b, bundle, dst in moves:
            by.setdefault(b, []).append(f"{bundle} → {dst or 'placement'}")
        text = "; ".join(f"{b} sheds {', '.join(x)}" for b, x in by.items())
    else:
        text = f"nothing moves ({res.label}: {res.reason})"
    return text, moves


def release_diff(state, other: str) -> dict:
    """The page's decision on the state's release and on ``other``: ``{"a", "b", "a_text", "b_text",
    "same", "behaviours": [(name, pr, text)]}``. Raises :class:`InputError` for an unknown release."""
    from .service import tune

    b_ver = release(other).version
    got_a = tune(state)
    a_ver = got_a.config.pulsarVersion
    values = dict(state.value_dict)
    values["pulsarVersion"] = b_ver
    got_b = tune(replace(state, values=tuple(sorted(values.items()))))
    a_text, a_moves = _decision(got_a.analysis)
    b_text, b_moves = _decision(got_b.analysis)
    ra, rb = release(a_ver), release(b_ver)
    behaviours = []
    for beh, x, _y in ra.differences(rb):
        has = a_ver if x else b_ver
        behaviours.append((beh.name, beh.pr, f"{has} — {beh.what}"))
    return {"a": a_ver, "b": b_ver, "a_text": a_text, "b_text": b_text,
            "same": a_moves == b_moves and got_a.analysis.result.label == got_b.analysis.result.label,
            "behaviours": behaviours}


def check_release(text: str) -> str:
    """A picker value as a release (``""`` stays ``""``: read from the data)."""
    if not text:
        return ""
    try:
        return release(text).version
    except InputError:
        return ""
