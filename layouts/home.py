"""Home: what Shedlab is, the worked examples (each opens the Tuner on its own settings), the pages."""
from __future__ import annotations

import importlib

from dash import dcc, html

from dashboard import permalink
from dashboard.tuner.state import DEFAULT_PLACE, DEFAULT_SHED, coerce_state
from engine.samples import SAMPLES


def _sample_link(name: str) -> str:
    s = SAMPLES[name]
    state, _ = coerce_state({"src": f"sample:{name}", "values": dict(s.config)})
    return "/tuner?" + permalink.encode(state)


def _pages() -> list:
    from layouts import PAGES

    out = []
    for mod, path, title in PAGES:
        if mod == "home":
            continue
        try:
            doc = (importlib.import_module(f"layouts.{mod}").__doc__ or "").strip().split("\n")[0]
        except ImportError:
            doc = ""
        doc = doc.split(":", 1)[1].strip() if doc.lower().startswith(f"{title.lower()} page:") else doc
        out.append(dcc.Link([html.Div(title, className="page-card-title"), html.Div(doc, className="page-card-doc")],
                            href=path, className="page-card"))
    return out


def layout(**kwargs):
    samples = []
    for s in SAMPLES.values():
        cfg = s.config or {}
        shed = str(cfg.get("loadBalancerLoadSheddingStrategy", DEFAULT_SHED)).rsplit(".", 1)[-1]
        place = str(cfg.get("loadBalancerLoadPlacementStrategy", DEFAULT_PLACE)).rsplit(".", 1)[-1]
        samples.append(dcc.Link([
            html.Div(s.title, className="sample-title"),
            html.Div(s.description, className="sample-desc"),
            html.Div([html.Span(shed, className="pill"), html.Span(place, className="pill pill-alt")]
                     + ([html.Span(s.note, className="pill pill-policy")] if s.note else []),
                     className="sample-pills"),
        ], href=_sample_link(s.name), className="sample-card"))
    return html.Div([
        html.Section([
            html.Div([
                html.H1("What would the load manager do — and why?"),
                html.P("Shedlab reproduces Apache Pulsar's load balancer decision for decision. Load a cluster "
                       "snapshot, move the thresholds, hit counts and resource weights, and see at once which "
                       "bundles the leader would unload, where they would go, and the numbers behind every "
                       "choice.", className="hero-lead"),
                html.Div([dcc.Link("Open the Tuner", href="/tuner", className="btn btn-primary btn-large"),
                          html.Span("on the data picked at the top right — a shipped sample, your own upload or a "
                                    "live cluster", className="muted")], className="hero-actions"),
            ], className="hero-text"),
            html.Ol([
                html.Li([html.B("Pick data"), " — a sample below, a LoadData JSON, load reports, a zipped "
                         "ZooKeeper dump, or a live cluster (+ Add data)."]),
                html.Li([html.B("Tune"), " — strategies and every broker.conf key they read; lines move while you "
                         "drag, the decision updates when you let go."]),
                html.Li([html.B("Share"), " — the URL is a permalink; export a self-contained report or the "
                         "changed keys as broker.conf lines."]),
            ], className="hero-steps"),
        ], className="hero"),
        html.H2("Worked examples from the field", className="section-title"),
        html.Div(samples, className="sample-grid"),
        html.H2("Pages", className="section-title"),
        html.Div(_pages(), className="page-grid"),
    ], className="page page-home")
