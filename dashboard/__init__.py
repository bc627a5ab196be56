"""Services for the UI: loading/validating files, the Pulsar admin collector, Spark history jobs,
diskcache, figure builders, report export and the component ids (:mod:`dashboard.ids`).

Nothing here imports ``app``; figure builders are pure functions returning ``go.Figure``.
"""
