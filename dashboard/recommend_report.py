"""A recommendation for people: the page's pieces that are not figures (links to the Tuner and the
Simulator, the broker.conf lines, the measures side by side) and the self-contained HTML report."""
from __future__ import annotations

from datetime import datetime, timezone
from urllib.parse import urlencode

__all__ = ["tuner_href", "simulator_href", "conf_text", "side_by_side", "build_recommend_report"]


def _values(res: dict, which: str) -> dict:
    """The keys of a setting: the current setting's changed keys, with the recommendation's on top."""
    from engine.config import parse_broker_conf, to_broker_conf

    base = parse_broker_conf(res["current"].get("broker_conf") or "", source="current").config
    vals = dict(line.split("=", 1) for line in to_broker_conf(base).splitlines() if "=" in line)
    if which == "recommended" and res.get("recommended"):
        vals.update(res["recommended"]["values"])
    return vals


_STRATEGY_KEYS = ("loadBalancerLoadSheddingStrategy", "loadBalancerLoadPlacementStrategy", "loadManagerClassName")


def _strategy(res: dict, which: str) -> str:
    """The setting's shedding strategy (the strategy searched too: the current and the recommended may differ)."""
    side = res.get("recommended") if which == "recommended" else res.get("current")
    return (side or {}).get("strategy") or res["current"].get("strategy") or res["strategy"]


def tuner_href(res: dict, which: str = "recommended") -> str:
    """``/tuner?...``: the strategy and the setting's keys (the Tuner's permalink)."""
    from engine.strategies.registry import default_placement
    from dashboard.permalink import encode
    from dashboard.tuner.state import TunerState

    shed = _strategy(res, which)
    vals = {k: v for k, v in _values(res, which).items() if k not in _STRATEGY_KEYS}
    state = TunerState(shed=shed, place=default_placement(shed)).with_values(vals)
    return "/tuner?" + encode(state)


def simulator_href(res: dict) -> str:
    """``/simulator?...``: A = the current setting, B = the recommended one, on the recommendation's scenario
    (a History recommendation: the Simulator's default scenario)."""
    from engine.strategies.registry import default_placement
    from dashboard.simulator.scenarios import DEFAULT_SCENARIO

    items = [("scenario", res.get("scenario_id") or res.get("scenario") or DEFAULT_SCENARIO), ("seed", "0")]
    if res.get("minutes"):
        items.append(("minutes", str(int(res["minutes"]))))
    for side, which in (("a", "current"), ("b", "recommended")):
        shed = _strategy(res, which)
        items += [(f"{side}.shed", shed), (f"{side}.place", default_placement(shed))]
        items += sorted((f"{side}.{k}", v) for k, v in _values(res, which).items() if k not in _STRATEGY_KEYS)
    return "/simulator?" + urlencode(items, safe=":/,")


def conf_text(res: dict) -> str:
    """The changed keys as ``broker.conf`` lines, with a comment saying what they buy."""
    rec = res.get("recommended")
    if not rec or not rec.get("broker_conf"):
        return "# no change recommended: keep the current setting\n"
    head = [f"# Shedlab recommendation for {res['strategy']}: {res['objective']['text']}",
            f"# fit on {res.get('fit_label', '')}; held out: {(res.get('holdout') or {}).get('label') or 'none'}"
            f" ({res['verdict']})"]
    return "\n".join(head + [rec["broker_conf"]]) + "\n"


def side_by_side(res: dict) -> list[dict]:
    """Rows ``{measure, data, current, recommended}`` for every measure of the objective."""
    keys = [g["measure"] for g in res["objective"]["goals"]] + [c["measure"] for c in res["objective"]["constraints"]]
    rec = res.get("recommended") or {}
    out = []
    for data, label in (("fit", res.get("fit_label", "")), ("holdout", (res.get("holdout") or {}).get("label", ""))):
        cur = res["current"].get(data)
        if not cur:
            continue
        for k in keys:
            new = (rec.get(data) or {}).get(k) if rec else None
            out.append({"measure": k, "data": f"{'fit' if data == 'fit' else 'held out'} ({label})",
                        "current": cur[k], "recommended": new})
    return out


def _e(x) -> str:
    import html

    return html.escape(str(x), quote=True)


def build_recommend_report(res: dict, figs: list | None = None) -> str:
    """The self-contained HTML report: objective, verdict and explanation, the measures side by side, the
    broker.conf lines, every trial, and the figures (Plotly inlined) when given."""
    from dashboard.export import _CSS

    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    where = res.get("dataset_name") or res.get("scenario") or ""
    parts = ["<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
             f"<title>Shedlab recommendation — {_e(where)}</title>", f"<style>{_CSS}</style>"]
    if figs:
        from plotly.offline import get_plotlyjs

        parts.append(f"<script type='text/javascript'>{get_plotlyjs()}</script>")
    parts += ["</head><body><header class='r'><h1>Shedlab report — recommended setting</h1>",
              f"<div class='sub'>{_e(where)} · {_e(res['strategy'])} · generated {now}</div></header><main>",
              f"<section><h2>Objective</h2><p><code>{_e(res['objective']['text'])}</code></p>"
              f"<p>{_e(res['objective']['words'])}</p></section>",
              "<section><h2>Recommendation</h2>"]
    parts += [f"<p>{_e(s)}</p>" for s in res["explanation"]]
    parts.append(f"<pre>{_e(conf_text(res))}</pre></section>")
    rows = "".join(f"<tr><td>{_e(r['measure'])}</td><td>{_e(r['data'])}</td><td>{r['current']:,.3g}</td>"
                   f"<td>{'' if r['recommended'] is None else format(r['recommended'], ',.3g')}</td></tr>"
                   for r in side_by_side(res))
    parts.append("<section><h2>Current and recommended, side by side</h2><table><tr><th>measure</th><th>data</th>"
                 f"<th>current</th><th>recommended</th></tr>{rows}</table></section>")
    for fig in figs or []:
        parts.append("<section>" + fig.to_html(full_html=False, include_plotlyjs=False) + "</section>")
    st = res["study"]
    keys = [k["key"] for k in res["space"]]
    meas = list(res["current"]["fit"].keys())
    head = "".join(f"<th>{_e(k)}</th>" for k in ["trial"] + keys + meas + ["meets constraints"])
    body = "".join("<tr>" + "".join(f"<td>{_e(x)}</td>" for x in [t["number"]] + [t["values"].get(k) for k in keys]
                                    + [f"{t['measures'].get(m, float('nan')):,.3g}" for m in meas]
                                    + ["yes" if t["feasible"] else "no"]) + "</tr>" for t in res["trials"])
    parts.append(f"<section><h2>Every trial ({st['trials']}; study {_e(st['name'])})</h2>"
                 f"<table><tr>{head}</tr>{body}</table></section>")
    parts.append("<p class='muted'>Made with Shedlab: each trial is the engine's replay of the strategy over the fit "
                 "data (a History backtest does not move load) or a simulation of the scenario; the held-out "
                 "data was not used to choose.</p></main></body></html>")
    return "".join(parts)
