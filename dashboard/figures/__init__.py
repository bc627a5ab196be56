"""Pure figure builders: each takes engine results and returns a ``plotly.graph_objects.Figure``.

No Dash here; callbacks, the report and the image export all call these. Every figure carries
``layout.meta.rev`` (what it shows) and, where a slider moves one of its lines, ``layout.meta.drag``:
``{broker.conf key: [{"shape": i, "ann": j, "a": a, "b": b, "label": text, "unit": u, "digits": d}]}``
meaning "while the key's slider is dragged to v, put shape i and annotation j at a + b·v" — the
assets' clientside ``shedlab.dragLines`` applies it without a server round trip.
"""
from .theme import STATUS, graph_config  # noqa: F401
