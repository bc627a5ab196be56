"""The live-cluster collector: Pulsar's admin REST API → LoadData snapshots (or a timeline).

* :mod:`.cluster` — the requests and the snapshot (brokers in parallel, missing brokers named, ELM detected);
* :mod:`.auth` — ``client.conf``, token / OAuth2 client-credentials / TLS authentication as ``pulsar-admin``;
* :mod:`.net` — the ``httpx`` client: retries, credentials kept to their hosts, the web form's allow-list;
* :mod:`.web` — the "Live cluster" form's settings (off unless ``SHEDLAB_COLLECT=1``);
* :mod:`.cli` — ``python -m dashboard.collect``.
"""
from .auth import ClientConf, OAuth2ClientCredentials, TokenAuth, read_client_conf, ssl_context
from .cli import main
from .cluster import ELM_HELP, Collector, ElmCluster, collect_snapshot, collect_timeline, parse_every
from .net import CollectError, NotAllowed, Policy, redact
from .web import collect_enabled, form_collector

__all__ = ["CollectError", "NotAllowed", "ElmCluster", "Collector", "ClientConf", "TokenAuth",
           "OAuth2ClientCredentials", "Policy", "ELM_HELP", "collect_snapshot", "collect_timeline", "parse_every",
           "read_client_conf", "ssl_context", "redact", "collect_enabled", "form_collector", "main"]
