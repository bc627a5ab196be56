"""Home page: what Shedlab is and where to start."""
from dash import html


def layout(**kwargs):
    return html.Div(
        [html.H2("Shedlab"), html.P("A workbench for Pulsar load-balancer tuning.")],
        className="page",
    )
