"""The "Live cluster" form's server side: off unless the operator turns it on, then only to the allow-list.

* ``SHEDLAB_COLLECT=1`` turns the form on; ``SHEDLAB_DISABLE_COLLECT=1`` turns it off whatever else is set.
* ``SHEDLAB_COLLECT_ALLOW`` — host names (``*.example.com`` patterns) and CIDRs the form may reach (see
  :class:`dashboard.collect.net.Policy`). Empty: nothing is reachable.
* ``SHEDLAB_COLLECT_CA`` — optional CA bundle (PEM) the form trusts besides the system's, for clusters with a
  private CA. The form has no client certificate and no client.conf: it sends only the token typed in it.
* Failures tell only "not allowed", "no answer" or the HTTP status of an allowed host; the token typed in
  the form is sent only to the admin URL and the brokers it lists, and is never stored or logged.
"""
from __future__ import annotations

import os

from .auth import ssl_context
from .cluster import Collector
from .net import CollectError, Policy

__all__ = ["collect_enabled", "form_policy", "form_collector", "OFF_MESSAGE"]

_ON = ("1", "true", "yes", "on")
OFF_MESSAGE = ("live collection is off on this server (the operator turns it on with SHEDLAB_COLLECT=1 and "
               "SHEDLAB_COLLECT_ALLOW=<hosts/CIDRs>)")


def collect_enabled(env=None) -> bool:
    env = os.environ if env is None else env
    if str(env.get("SHEDLAB_DISABLE_COLLECT", "")).strip().lower() in _ON:
        return False
    return str(env.get("SHEDLAB_COLLECT", "")).strip().lower() in _ON


def form_policy(env=None) -> Policy:
    env = os.environ if env is None else env
    return Policy.parse(env.get("SHEDLAB_COLLECT_ALLOW", ""))


def form_collector(url: str, token: str | None, env=None, **kw) -> Collector:
    """A :class:`Collector` for the web form: allow-list on, terse errors, short timeouts."""
    if not collect_enabled(env):
        raise CollectError(OFF_MESSAGE)
    pol = form_policy(env)
    if pol.empty:
        raise CollectError("live cluster: no host is allowed on this server (SHEDLAB_COLLECT_ALLOW is empty)")
    ca = (env if env is not None else os.environ).get("SHEDLAB_COLLECT_CA")
    if ca:
        kw.setdefault("verify", ssl_context(ca))
    kw.setdefault("timeout", 8.0)
    kw.setdefault("retries", 1)
    return Collector(url, token, policy=pol, quiet=True, **kw)
