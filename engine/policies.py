"""The cluster's own placement policies: namespace isolation, anti-affinity groups, failure domains.

Reading them in the shapes Pulsar gives them, and applying them as both load managers do, with a
reason for every broker a policy removes (shown in the placement explanation).

Inputs (each an upstream shape; Jackson field names)
----------------------------------------------------
* **Namespace isolation policies** — ``pulsar-admin ns-isolation-policy list <cluster>`` (the REST
  ``GET /admin/v2/clusters/<cluster>/namespaceIsolationPolicies``), also the ZooKeeper node
  ``/admin/clusters/<cluster>/namespaceIsolationPolicies``: ``{policy name: NamespaceIsolationDataImpl}``
  with ``namespaces`` (regexes), ``primary`` / ``secondary`` (broker regexes) and
  ``auto_failover_policy`` = ``{"policy_type": "min_available", "parameters": {"min_limit": "1",
  "usage_threshold": "80"}}``. A single policy (``ns-isolation-policy get``) is read too.
* **Anti-affinity groups** — per namespace, the ``namespaceAntiAffinityGroup`` of its ``LocalPolicies``
  (ZooKeeper ``/admin/local-policies/<tenant>/<ns>``, what ``namespaces set-anti-affinity-group``
  writes and ``namespaces get-anti-affinity-group <tenant/ns>`` prints), or the ``antiAffinityGroup``
  of the namespace ``Policies`` JSON of Pulsar versions that still had that field (2.x:
  ``namespaces policies <tenant/ns>``, ZooKeeper ``/admin/policies/<tenant>/<ns>``; current ``Policies``
  has none). As a file: ``{"tenant/ns": "group"}`` (one
  ``get-anti-affinity-group`` per namespace) or ``{"tenant/ns": <Policies or LocalPolicies JSON>}``.
* **Failure domains** — ``pulsar-admin clusters list-failure-domains <cluster>``: ``{domain:
  {"brokers": ["host:port", ...]}}`` (``FailureDomainImpl``); ZooKeeper
  ``/admin/clusters/<cluster>/failureDomain/<domain>`` = ``{"brokers": [...]}``.
* Shedlab's own bundle of the three (what the samples ship, under ``"shedlabPolicies"`` in a LoadData
  JSON or an Extensible Load Manager container, or as one file): ``{"namespaceIsolationPolicies": ...,
  "antiAffinityGroups": ..., "failureDomains": ...}``, each part in the shape above.

Where they come in: beside a modular snapshot or the ELM's files (an upload of several files, or inside
their zip: :mod:`engine.io`, :mod:`engine.extensible.readers`), ``--policies FILE`` of ``place``, ``shed``
and ``replay``, the live collector, and a scenario's ``policies:`` section, which both simulated leaders
apply (:class:`engine.simulator.leader.ModularLeader`, :class:`engine.extensible.sim_leader.ExtensibleLeader`).

Applying them
-------------
Modular load manager (:class:`ModularPolicies`, the :class:`~engine.placement.base.NamespacePolicies`
hook): ``LoadManagerShared.applyNamespacePolicies`` (primaries; secondaries only when
``shouldFailoverToSecondaries`` — fewer primaries than ``min_limit``; a namespace without a policy may
only use *shared* brokers, those no policy names as primary, that support the topic type),
``filterAntiAffinityGroupOwnedBrokers`` (with ``failureDomainsEnabled``: first
``filterDomainsNotHavingLeastNumberAntiAffinityNamespaces``) and the two "should unload" checks of
``doLoadShedding`` (``shouldNamespacePoliciesUnload``, ``shouldAntiAffinityNamespaceUnload``), in
``ModularLoadManagerImpl.selectBroker``'s order (policies, max topics, anti-affinity, even
distribution, filter pipeline). Extensible load manager (:class:`ExtensibleClusterPolicies`):
``AntiAffinityGroupPolicyFilter`` and ``BrokerIsolationPoliciesFilter`` (``IsolationPoliciesHelper``),
and which namespaces "have policies" for TopKBundles and TransferShedder's ``isTransferable``.

Departures, deliberate
----------------------
* Regexes are Python ``re`` patterns matched with ``fullmatch`` (Java ``String.matches``). The syntax of
  everyday patterns (classes, ``.*``, groups, alternation) is the same; Java-only constructs (possessive
  quantifiers before Python 3.11, ``\\p{..}`` classes) are refused with a message naming the field.
  Each regex is at most 1,000 characters, and one that repeats a repeating group (``(a+)+``) is refused
  (Python's matcher can take exponential time on it; Java's too, but a broker would hang, not Shedlab).
* Broker regexes are matched like the newest upstream ``NamespaceIsolationPolicyImpl``: against the
  broker's host (``applyNamespacePolicies`` passes the broker id without ``:port``), then, when the value
  still ends in ``:port``, against its host part. Older Pulsar versions used ``Matcher.find`` (a partial
  match): a policy ``broker1`` then also matched ``broker10``; here it does not.
* ``usage_threshold`` is read and shown but, as in Pulsar's modular and extensible placement (they call
  ``shouldFailover(int)``), not applied: only the count of primaries against ``min_limit`` matters.
* Several policies matching one namespace: Pulsar takes the first in its ``HashMap`` order of policy
  names; so does this (``java_map_order``).
* A broker listed in two failure domains belongs to the later one in name order (Pulsar: the later one
  in its metadata listing order).
* Modular anti-affinity counts are per *namespace* a broker serves (its reported bundles plus the
  leader's preallocations: the ``BundleRangeCache``); extensible counts are per *owned bundle* (upstream
  walks the service-unit channel's ownership entries), as upstream does.
"""
from __future__ import annotations

import io
import json
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import PurePosixPath

import numpy as np

from .errors import InputError
from .inputs import MAX_INPUT_BYTES, read_input_bytes, read_json_bytes
from .javacompat import java_map_order
from .model import bundle_namespace
from .placement.base import NamespacePolicies
from .policy_hooks import ExtensiblePolicies

__all__ = ["IsolationPolicy", "ClusterPolicies", "ModularPolicies", "ExtensibleClusterPolicies",
           "read_isolation_policies", "read_anti_affinity", "read_failure_domains", "read_policies_json",
           "classify_policy_json", "policies_from_files", "read_policy_file", "policies_from_zip", "attach", "policies_of",
           "POLICY_KEY", "broker_groups"]

#: key of the policies bundle inside a LoadData JSON (Shedlab extension, ignored by Pulsar readers)
POLICY_KEY = "shedlabPolicies"
MAX_POLICIES = 1000
MAX_REGEX = 1000
MAX_LIST = 10_000
_NS = re.compile(r"[^/\s]{1,200}(/[^/\s]{1,200}){1,2}")
#: a quantified group holding a quantifier, e.g. ``(a+)+`` or ``(x.*)*``: catastrophic backtracking
_NESTED = re.compile(r"\((?:[^()\\]|\\.)*(?<!\\)[+*}](?:[^()\\]|\\.)*\)[+*{]")


def _err(msg, source, fld):
    return InputError(msg, source=source, field=fld)


def _compile(rx, source, fld) -> re.Pattern:
    if not isinstance(rx, str):
        raise _err(f"expected a regex string, got {type(rx).__name__}", source, fld)
    if len(rx) > MAX_REGEX:
        raise _err(f"regex longer than {MAX_REGEX} characters", source, fld)
    if _NESTED.search(rx):
        raise _err(f"regex {rx!r} repeats a group that itself repeats (e.g. (a+)+): refused, it can take "
                   "exponential time to match", source, fld)
    try:
        return re.compile(rx)
    except re.error as exc:
        raise _err(f"invalid regex {rx!r}: {exc}", source, fld) from None


def _str_list(obj, source, fld, *, required=True) -> list:
    if obj is None and not required:
        return []
    if not isinstance(obj, list):
        raise _err("expected a list of strings", source, fld)
    if len(obj) > MAX_LIST:
        raise _err(f"more than {MAX_LIST} entries", source, fld)
    for i, x in enumerate(obj):
        if not isinstance(x, str):
            raise _err("expected a string", source, f"{fld}[{i}]")
    return list(obj)


def _java_int(v, source, fld) -> int:
    """``Integer.parseInt`` of a parameter (Jackson turns a JSON number into its text first)."""
    if isinstance(v, bool):
        raise _err("expected an integer", source, fld)
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str) and re.fullmatch(r"[+-]?\d{1,10}", v.strip()):
        n = int(v.strip())
        if -2**31 <= n < 2**31:
            return n
    raise _err(f"expected an integer, got {v!r}", source, fld)


def _host(broker: str) -> str:
    """``parseBrokerHost``: the broker id without its last ``:port``."""
    i = broker.rfind(":")
    return broker[:i] if i > 0 else broker


def _strip_port(value: str):
    i = value.rfind(":")
    if i <= 0 or i == len(value) - 1 or not value[i + 1:].isdigit():
        return None
    return value[:i]


# ------------------------------------------------------------------------------------------ model
@dataclass
class IsolationPolicy:
    """One ``NamespaceIsolationDataImpl`` (auto-failover policy ``min_available``)."""

    name: str
    namespaces: list
    primary: list
    secondary: list
    min_limit: int = 1
    usage_threshold: int = 100
    policy_type: str = "min_available"
    unload_scope: str | None = None
    _ns: list = field(default_factory=list, repr=False)
    _pri: list = field(default_factory=list, repr=False)
    _sec: list = field(default_factory=list, repr=False)

    def __post_init__(self):
        self._ns = [re.compile(x) for x in self.namespaces]
        self._pri = [re.compile(x) for x in self.primary if x]
        self._sec = [re.compile(x) for x in self.secondary if x]

    def matches_namespace(self, ns: str) -> bool:
        return any(p.fullmatch(ns) for p in self._ns)

    @staticmethod
    def _matches(pats, value: str) -> bool:
        if any(p.fullmatch(value) for p in pats):
            return True
        host = _strip_port(value)
        return host is not None and any(p.fullmatch(host) for p in pats)

    def is_primary(self, host: str, broker_id: str | None = None) -> bool:
        return self._matches(self._pri, host) or (broker_id is not None and self._matches_id(self._pri, broker_id))

    def is_secondary(self, host: str, broker_id: str | None = None) -> bool:
        return self._matches(self._sec, host) or (broker_id is not None and self._matches_id(self._sec, broker_id))

    @staticmethod
    def _matches_id(pats, broker_id: str) -> bool:
        """5.0's broker-id matching: only a regex that contains a ':' is tried, on the whole ``host:port``."""
        return any(":" in p.pattern and p.fullmatch(broker_id) for p in pats)

    def should_failover(self, primaries: int) -> bool:
        """``MinAvailablePolicy.shouldFailoverToSecondary(int)``."""
        return primaries < self.min_limit

    def primary_text(self) -> str:
        return ", ".join(f"`{x}`" for x in self.primary)

    def secondary_text(self) -> str:
        return ", ".join(f"`{x}`" for x in self.secondary) or "(none)"

    def to_json(self) -> dict:
        d = {"namespaces": list(self.namespaces), "primary": list(self.primary), "secondary": list(self.secondary),
             "auto_failover_policy": {"policy_type": self.policy_type,
                                      "parameters": {"min_limit": str(self.min_limit),
                                                     "usage_threshold": str(self.usage_threshold)}}}
        if self.unload_scope is not None:
            d["unload_scope"] = self.unload_scope
        return d

    def __getstate__(self):  # compiled patterns are rebuilt, not pickled
        d = dict(self.__dict__)
        d["_ns"], d["_pri"], d["_sec"] = [], [], []
        return d

    def __setstate__(self, d):
        self.__dict__.update(d)
        self.__post_init__()


@dataclass
class ClusterPolicies:
    """The policies of one cluster: isolation policies by name, namespace → anti-affinity group,
    failure domain → brokers."""

    isolation: dict = field(default_factory=dict)
    anti_affinity: dict = field(default_factory=dict)
    failure_domains: dict = field(default_factory=dict)
    sources: list = field(default_factory=list)
    warnings: list = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.isolation or self.anti_affinity or self.failure_domains)

    def modular(self) -> NamespacePolicies:
        """The modular load manager's hook for these policies: :class:`ModularPolicies`, or the no-op
        :class:`~engine.placement.base.NamespacePolicies` when there are none (what a load manager built on
        a snapshot carrying them uses, so it needs no import of this module)."""
        return NamespacePolicies() if self.empty else ModularPolicies(self)

    def extensible(self) -> ExtensiblePolicies:
        """The extensible load manager's hook for these policies: :class:`ExtensibleClusterPolicies`, or the
        no-op :class:`~engine.policy_hooks.ExtensiblePolicies` when there are none."""
        return ExtensiblePolicies() if self.empty else ExtensibleClusterPolicies(self)

    def merge(self, other: "ClusterPolicies") -> "ClusterPolicies":
        out = ClusterPolicies(dict(self.isolation), dict(self.anti_affinity), dict(self.failure_domains),
                              self.sources + other.sources, self.warnings + other.warnings)
        out.isolation.update(other.isolation)
        out.anti_affinity.update(other.anti_affinity)
        out.failure_domains.update(other.failure_domains)
        return out

    def policy_for(self, ns: str) -> IsolationPolicy | None:
        """``NamespaceIsolationPolicies.getPolicyByNamespace``: the first match in HashMap order."""
        cache = self.__dict__.setdefault("_pcache", {})
        if ns not in cache:
            got = None
            for name in self._order():
                if self.isolation[name].matches_namespace(ns):
                    got = self.isolation[name]
                    break
            cache[ns] = got
        return cache[ns]

    def _order(self) -> list:
        o = self.__dict__.get("_order_cache")
        if o is None or len(o) != len(self.isolation):
            o = java_map_order(list(self.isolation))
            self.__dict__["_order_cache"] = o
        return o

    def is_shared(self, host: str, broker_id: str | None = None) -> bool:
        """``NamespaceIsolationPolicies.isSharedBroker``: no policy names the host (or, from 5.0, the broker id)
        as primary."""
        return not any(p.is_primary(host, broker_id) for p in self.isolation.values())

    def primary_of(self, host: str, broker_id: str | None = None) -> list:
        return [n for n in self._order() if self.isolation[n].is_primary(host, broker_id)]

    def group_of(self, ns: str) -> str | None:
        g = self.anti_affinity.get(ns)
        return g if isinstance(g, str) and g.strip() else None

    def has_policies(self, ns: str) -> bool:
        return self.policy_for(ns) is not None or self.group_of(ns) is not None

    def broker_domain(self) -> dict:
        """broker → failure domain (``refreshBrokerToFailureDomainMap``)."""
        out = {}
        for d in sorted(self.failure_domains):
            for b in self.failure_domains[d]:
                out[b] = d
        return out

    def to_json(self) -> dict:
        return {"namespaceIsolationPolicies": {n: p.to_json() for n, p in self.isolation.items()},
                "antiAffinityGroups": dict(self.anti_affinity),
                "failureDomains": {d: {"brokers": list(b)} for d, b in self.failure_domains.items()}}

    def __getstate__(self):
        d = dict(self.__dict__)
        d.pop("_pcache", None)
        d.pop("_order_cache", None)
        return d

    def summary(self) -> str:
        parts = []
        if self.isolation:
            parts.append(f"{len(self.isolation)} isolation polic{'y' if len(self.isolation) == 1 else 'ies'}")
        groups = sorted({g for g in self.anti_affinity.values() if g})
        if groups:
            parts.append(f"{len(groups)} anti-affinity group(s) over {len(self.anti_affinity)} namespace(s)")
        if self.failure_domains:
            parts.append(f"{len(self.failure_domains)} failure domain(s)")
        return ", ".join(parts) or "no policies"


def attach(ld, policies: "ClusterPolicies | None"):
    """Give a snapshot (LoadData or ExtensibleLoadData) its cluster policies (merged with any it has)."""
    if policies is None or policies.empty:
        return ld
    cur = getattr(ld, "cluster_policies", None)
    ld.cluster_policies = policies if cur is None else cur.merge(policies)
    return ld


def policies_of(data) -> "ClusterPolicies | None":
    p = getattr(data, "cluster_policies", None)
    return p if isinstance(p, ClusterPolicies) and not p.empty else None


# ------------------------------------------------------------------------------------------ readers
def _isolation_one(name: str, obj, source, path) -> IsolationPolicy:
    if not isinstance(obj, dict):
        raise _err("expected a NamespaceIsolationData object", source, path)
    ns = _str_list(obj.get("namespaces"), source, f"{path}.namespaces")
    if not ns:
        raise _err("no namespaces: a policy needs at least one namespace regex", source, f"{path}.namespaces")
    pri = _str_list(obj.get("primary"), source, f"{path}.primary")
    if not pri:
        raise _err("no primary brokers: a policy needs at least one primary regex", source, f"{path}.primary")
    sec = _str_list(obj.get("secondary"), source, f"{path}.secondary", required=False)
    for key, xs in (("namespaces", ns), ("primary", pri), ("secondary", sec)):
        for i, x in enumerate(xs):
            _compile(x, source, f"{path}.{key}[{i}]")
    afp = obj.get("auto_failover_policy")
    if not isinstance(afp, dict):
        raise _err("missing auto_failover_policy ({\"policy_type\": \"min_available\", \"parameters\": "
                   "{\"min_limit\": ..., \"usage_threshold\": ...}})", source, f"{path}.auto_failover_policy")
    ptype = afp.get("policy_type")
    if ptype != "min_available":
        raise _err(f"policy_type {ptype!r}: Pulsar knows only min_available", source,
                   f"{path}.auto_failover_policy.policy_type")
    params = afp.get("parameters")
    if not isinstance(params, dict):
        raise _err("expected an object with min_limit and usage_threshold", source,
                   f"{path}.auto_failover_policy.parameters")
    vals = {}
    for k in ("min_limit", "usage_threshold"):
        if k not in params:
            raise _err(f"missing {k} (MinAvailablePolicy requires it)", source, f"{path}.auto_failover_policy.parameters")
        vals[k] = _java_int(params[k], source, f"{path}.auto_failover_policy.parameters.{k}")
    scope = obj.get("unload_scope")
    return IsolationPolicy(name, ns, pri, sec, vals["min_limit"], vals["usage_threshold"], "min_available",
                           scope if isinstance(scope, str) else None)


def read_isolation_policies(obj, source: str = "<policies>") -> dict:
    """``{name: IsolationPolicy}`` from ``ns-isolation-policy list`` JSON (or one ``get``)."""
    if isinstance(obj, dict) and "namespaces" in obj and "primary" in obj:
        obj = {"policy": obj}
    if not isinstance(obj, dict):
        raise _err("expected {policy name: NamespaceIsolationData}", source, None)
    if len(obj) > MAX_POLICIES:
        raise _err(f"more than {MAX_POLICIES} isolation policies", source, None)
    return {str(n): _isolation_one(str(n), v, source, n) for n, v in obj.items()}


def _group_from(v, source, fld):
    if v is None or isinstance(v, str):
        return (v or "").strip() or None
    if isinstance(v, dict):
        for k in ("namespaceAntiAffinityGroup", "antiAffinityGroup"):
            g = v.get(k)
            if g is not None and not isinstance(g, str):
                raise _err("expected a string", source, f"{fld}.{k}")
            if isinstance(g, str) and g.strip():
                return g
        return None
    raise _err("expected the group name, or a Policies / LocalPolicies object", source, fld)


def read_anti_affinity(obj, source: str = "<policies>") -> dict:
    """``{namespace: group}`` from ``{"tenant/ns": "group" | Policies | LocalPolicies}``."""
    if not isinstance(obj, dict):
        raise _err("expected {\"tenant/namespace\": anti-affinity group}", source, None)
    if len(obj) > MAX_LIST:
        raise _err(f"more than {MAX_LIST} namespaces", source, None)
    out = {}
    for ns, v in obj.items():
        if not isinstance(ns, str) or not _NS.fullmatch(ns):
            raise _err(f"{ns!r} is not a namespace name (tenant/namespace)", source, str(ns))
        g = _group_from(v, source, ns)
        if g is not None:
            if len(g) > 500:
                raise _err("group name longer than 500 characters", source, ns)
            out[ns] = g
    return out


def read_failure_domains(obj, source: str = "<policies>") -> dict:
    """``{domain: [brokers]}`` from ``clusters list-failure-domains`` JSON."""
    if not isinstance(obj, dict):
        raise _err("expected {domain: {\"brokers\": [...]}}", source, None)
    if len(obj) > MAX_POLICIES:
        raise _err(f"more than {MAX_POLICIES} failure domains", source, None)
    out = {}
    for d, v in obj.items():
        if not isinstance(v, dict):
            raise _err("expected a FailureDomain object {\"brokers\": [...]}", source, str(d))
        out[str(d)] = _str_list(v.get("brokers", []), source, f"{d}.brokers")
    return out


_BUNDLE_KEYS = ("namespaceIsolationPolicies", "antiAffinityGroups", "failureDomains")


def classify_policy_json(obj) -> str | None:
    """Which policy file a parsed JSON is: ``"bundle"``, ``"isolation"``, ``"anti-affinity"``,
    ``"failure-domains"``, or ``None`` (not a policy file)."""
    if not isinstance(obj, dict) or not obj:
        return None
    if set(obj) & set(_BUNDLE_KEYS) and not set(obj) & {"brokers", "bundleData", "brokerLoadData"}:
        return "bundle"
    vals = list(obj.values())
    if "namespaces" in obj and "primary" in obj and "auto_failover_policy" in obj:
        return "isolation"
    if all(isinstance(v, dict) and "primary" in v and "namespaces" in v for v in vals):
        return "isolation"
    if all(isinstance(v, dict) and set(v) <= {"brokers"} and isinstance(v.get("brokers", []), list) for v in vals):
        return "failure-domains"
    if all(isinstance(k, str) and _NS.fullmatch(k) for k in obj) and all(
            isinstance(v, str) or (isinstance(v, dict) and ("antiAffinityGroup" in v or "namespaceAntiAffinityGroup"
                                                            in v or "bundles" in v or "auth_policies" in v))
            for v in vals):
        return "anti-affinity"
    return None


def read_policies_json(obj, source: str = "<policies>", kind: str | None = None) -> ClusterPolicies:
    """One policy file (any of the shapes in the module docstring)."""
    kind = kind or classify_policy_json(obj)
    out = ClusterPolicies(sources=[source])
    if kind == "bundle":
        if obj.get("namespaceIsolationPolicies") is not None:
            out.isolation = read_isolation_policies(obj["namespaceIsolationPolicies"], source)
        if obj.get("antiAffinityGroups") is not None:
            out.anti_affinity = read_anti_affinity(obj["antiAffinityGroups"], source)
        if obj.get("failureDomains") is not None:
            out.failure_domains = read_failure_domains(obj["failureDomains"], source)
    elif kind == "isolation":
        out.isolation = read_isolation_policies(obj, source)
    elif kind == "anti-affinity":
        out.anti_affinity = read_anti_affinity(obj, source)
    elif kind == "failure-domains":
        out.failure_domains = read_failure_domains(obj, source)
    else:
        raise InputError("not a policy file: expected ns-isolation-policy list, anti-affinity groups "
                         "({\"tenant/ns\": \"group\"}) or list-failure-domains JSON", source=source)
    return out


def _json(raw: bytes, where: str):
    return read_json_bytes(raw, where)


def read_policy_file(path) -> ClusterPolicies:
    """One policy JSON file from disk (size-limited, named in every message)."""
    return read_policies_json(_json(read_input_bytes(path), str(path)), str(path))


def policies_from_files(files: dict, source: str) -> ClusterPolicies | None:
    """Policies in a ZooKeeper dump (``admin/clusters/<c>/namespaceIsolationPolicies``,
    ``admin/clusters/<c>/failureDomain/<d>``, ``admin/local-policies/<t>/<ns>``,
    ``admin/policies/<t>/<ns>``) and loose policy JSON files (``files``: posix path → bytes).
    ``None`` when there are none."""
    out = ClusterPolicies()
    clusters = set()
    local, glob = {}, {}
    found = False
    for p, raw in sorted(files.items()):
        parts = PurePosixPath(p).parts
        where = f"{source}:{p}"
        if "admin" in parts:
            rest = parts[parts.index("admin") + 1:]
            if len(rest) == 3 and rest[0] == "clusters" and rest[2] == "namespaceIsolationPolicies":
                if raw.strip():
                    out.isolation.update(read_isolation_policies(_json(raw, where), where))
                    clusters.add(rest[1])
                    found = True
            elif len(rest) == 4 and rest[0] == "clusters" and rest[2] == "failureDomain":
                if raw.strip():
                    out.failure_domains.update(read_failure_domains({rest[3]: _json(raw, where)}, where))
                    clusters.add(rest[1])
                    found = True
            elif len(rest) in (3, 4) and rest[0] in ("local-policies", "policies"):
                # tenant/ns, or prop/cluster/ns of a v1 namespace (a 3-segment parent node has no group)
                if raw.strip():
                    g = _group_from(_json(raw, where), where, "/".join(rest[1:]))
                    (local if rest[0] == "local-policies" else glob)["/".join(rest[1:])] = g
                    found = True
            continue
        if p.endswith(".json") and len(raw) < 50 * 1024 * 1024:
            try:
                obj = json.loads(raw.decode("utf-8-sig"))
            except (ValueError, UnicodeDecodeError):
                continue
            kind = classify_policy_json(obj)
            if kind is not None:
                got = read_policies_json(obj, where, kind)
                out = out.merge(got)
                found = True
    for ns, g in {**glob, **local}.items():  # the local policies (newer Pulsar) win
        if g:
            out.anti_affinity[ns] = g
    if len(clusters) > 1:
        out.warnings.append(f"{source}: policies of {len(clusters)} clusters ({', '.join(sorted(clusters))}) "
                            "are merged: give one cluster's nodes only")
    if not found:
        return None
    out.sources.append(source)
    return out


def is_policy_member(name: str, obj) -> bool:
    """A zip member that is a policy file (so readers of load reports skip it)."""
    return "admin" in PurePosixPath(name).parts or classify_policy_json(obj) is not None


def policies_from_zip(raw: bytes, source: str) -> ClusterPolicies | None:
    """Policies inside a zip (read in memory; archive paths are never used on disk)."""
    try:
        zf = zipfile.ZipFile(io.BytesIO(raw))
    except zipfile.BadZipFile:
        raise InputError("not a valid zip archive", source=source) from None
    files, total = {}, 0
    for info in zf.infolist():
        name = info.filename.replace("\\", "/")
        if info.is_dir() or name.startswith("/") or ".." in PurePosixPath(name).parts or name.startswith("__MACOSX"):
            continue
        parts = PurePosixPath(name).parts
        if "admin" not in parts and not name.endswith(".json"):
            continue
        total += info.file_size
        if info.file_size > MAX_INPUT_BYTES or total > 4 * MAX_INPUT_BYTES:
            raise InputError("the archive expands beyond the size limit", source=source)
        files[name] = zf.read(info)
    return policies_from_files(files, source)


# ------------------------------------------------------------------------------------------ applying
def _counts_reason(group, n, least):
    return f"already serves {n} namespace(s) of anti-affinity group `{group}` (fewest among the candidates: {least})"


def apply_isolation(cp: ClusterPolicies, ns: str, brokers: list, topic_ok, broker_ids: bool = False
                    ) -> tuple[list, str, dict]:
    """``applyNamespacePolicies`` over ``brokers`` (ids, kept in order): (kept, step name, reasons).

    ``topic_ok(broker)`` says whether the broker supports the bundle's topic type (only checked for
    a namespace without an isolation policy, as upstream does). ``broker_ids``: regexes with a ':' are also
    matched against the broker id (5.0's modular load manager)."""
    pol = cp.policy_for(ns)
    reasons = {}
    if pol is not None:
        prim, sec = [], []
        for b in brokers:
            h = _host(b)
            bid = b if broker_ids else None
            if pol.is_primary(h, bid):
                prim.append(b)
            elif pol.is_secondary(h, bid):
                sec.append(b)
            else:
                reasons[b] = (f"namespace {ns} is isolated by policy `{pol.name}` to primary brokers "
                              f"{pol.primary_text()} (secondary {pol.secondary_text()}); this broker is neither")
        failover = pol.should_failover(len(prim))
        if failover:
            keep = set(prim) | set(sec)
            name = (f"namespace isolation `{pol.name}`: {len(prim)} primary broker(s) < min_limit {pol.min_limit}, "
                    f"failover adds {len(sec)} secondary broker(s)")
        else:
            keep = set(prim)
            for b in sec:
                reasons[b] = (f"namespace {ns} is isolated by policy `{pol.name}` to primary brokers "
                              f"{pol.primary_text()}; this secondary broker is used only when fewer than min_limit "
                              f"{pol.min_limit} primaries are available ({len(prim)} are)")
            name = (f"namespace isolation `{pol.name}`: {len(prim)} primary broker(s) >= min_limit {pol.min_limit}, "
                    "secondaries not used")
        return [b for b in brokers if b in keep], name, reasons
    kept = []
    for b in brokers:
        if not topic_ok(b):
            reasons[b] = "does not support the bundle's topic type (persistentTopicsEnabled / nonPersistentTopicsEnabled)"
            continue
        owners = cp.primary_of(_host(b), b if broker_ids else None)
        if owners:
            reasons[b] = (f"is a primary broker of isolation policy `{owners[0]}` (not shared), and namespace {ns} "
                          "has no isolation policy: only shared brokers may serve it")
            continue
        kept.append(b)
    return kept, ("shared brokers (namespace has no isolation policy)" if cp.isolation
                  else "available brokers (namespace policies, topic type)"), reasons


def anti_affinity(cp: ClusterPolicies, ns: str, cands: list, counts: dict, domains_enabled: bool
                  ) -> tuple[list, list]:
    """``filterAntiAffinityGroupOwnedBrokers`` over ``cands`` with ``counts`` = broker → namespaces of
    the group it serves (only brokers with at least one). Returns (kept, [(step name, after, before,
    reasons)...])."""
    group = cp.group_of(ns)
    steps = []
    if group is None or not cands:
        return cands, steps
    c = list(cands)
    dom = cp.broker_domain()
    if domains_enabled and dom:
        per = {}
        for b in c:
            d = dom.get(b, "default")
            per[d] = per.get(d, 0) + counts.get(b, 0)
        least = min(per.values())
        kept = [b for b in c if per.get(dom.get(b, "default")) == least]
        if len(kept) != len(c):
            reasons = {b: (f"failure domain `{dom.get(b, 'default')}` serves {per[dom.get(b, 'default')]} "
                           f"namespace(s) of anti-affinity group `{group}` (fewest among the domains: {least})")
                       for b in c if b not in kept}
            steps.append((f"anti-affinity group `{group}`: failure domains with the fewest of its namespaces "
                          "(failureDomainsEnabled)", kept, c, reasons))
        c = kept
    least = 0 if any(b not in counts for b in c) else min((counts[b] for b in c), default=0)
    if least == 0:
        kept = [b for b in c if not counts.get(b, 0) > 0]
    else:
        kept = [b for b in c if counts.get(b) == least]
    if len(kept) != len(c):
        reasons = {b: _counts_reason(group, counts.get(b, 0), least) for b in c if b not in kept}
        steps.append((f"anti-affinity group `{group}` (filterAntiAffinityGroupOwnedBrokers)", kept, c, reasons))
    return kept, steps


def anti_affinity_should_unload(cp: ClusterPolicies, ns: str, current: str, cands: list, counts: dict
                                ) -> tuple[bool, str]:
    """``shouldAntiAffinityNamespaceUnload`` (``cands``: the namespace-policy candidates)."""
    group = cp.group_of(ns)
    if group is None or not counts:
        return True, ""
    least, cur = None, 0
    for b in cands:
        n = counts.get(b, 0)
        if b == current:
            cur = n
        least = n if least is None else min(least, n)
    least = least if least is not None else 2**31 - 1
    if least == 0 or cur > least:
        return True, ""
    same = sum(1 for b in cands if counts.get(b, 0) == least)
    if len(cands) != same:
        return True, ""
    return False, (f"anti-affinity group `{group}`: every candidate broker serves {least} namespace(s) of the group, "
                   "so the bundle would come back (shouldAntiAffinityNamespaceUnload)")


class ModularPolicies(NamespacePolicies):
    """The modular hook over :class:`ClusterPolicies` (see the module docstring).

    Built by :class:`~engine.load_manager.ModularLoadManager` when its snapshot carries policies
    (``policies_of(data)``); ``bind`` gives it the manager (config, preallocations).
    """

    def __init__(self, policies: ClusterPolicies):
        self.cp = policies
        self.lm = None
        self._cache = {}

    def bind(self, lm) -> None:
        self.lm = lm

    # applyNamespacePolicies -------------------------------------------------------------
    def explain_candidates(self, bundle, avail, view, non_persistent):
        ns = bundle_namespace(bundle)
        key = (id(view), ns, bool(non_persistent), len(avail))
        got = self._cache.get(key)
        if got is not None and got[0] is view:
            return got[1]
        ok = view.non_persistent_ok if non_persistent else view.persistent_ok
        names = view.brokers
        idx = view.broker_index
        order = [names[j] for j in np.asarray(avail).tolist()]
        ids = self.lm is not None and self.lm.config.has("isolation_broker_id")
        kept, name, reasons = apply_isolation(self.cp, ns, order, lambda b: bool(ok[idx[b]]), broker_ids=ids)
        out = (np.array([idx[b] for b in kept], dtype=np.int64), name, reasons)
        if len(self._cache) > 256:
            self._cache.clear()
        self._cache[key] = (view, out)
        return out

    def candidates(self, bundle, avail, view, non_persistent):
        return self.explain_candidates(bundle, avail, view, non_persistent)[0]

    # anti-affinity -----------------------------------------------------------------------
    def group_counts(self, ns: str, view) -> dict:
        """broker → namespaces of ``ns``'s anti-affinity group it serves (reports + preallocations)."""
        group = self.cp.group_of(ns)
        if group is None:
            return {}
        g = group.lower()
        members = {n for n, x in self.cp.anti_affinity.items() if isinstance(x, str) and x.lower() == g}
        out = {}
        ns_names = view.namespaces if view.nk else []
        ids = view.bundle_namespace_id if view.nk else None
        for j, owned in enumerate(view.owned):
            served = {ns_names[i] for i in np.unique(ids[owned]).tolist()} if len(owned) else set()
            if self.lm is not None:
                served |= {bundle_namespace(x) for x in self.lm.preallocated.get(view.brokers[j], {})}
            n = len(served & members)
            if n:
                out[view.brokers[j]] = n
        return out

    def explain_anti_affinity(self, bundle, cand, view):
        ns = bundle_namespace(bundle)
        if self.cp.group_of(ns) is None or len(cand) == 0:
            return cand, []
        names, idx = view.brokers, view.broker_index
        order = [names[j] for j in np.asarray(cand).tolist()]
        enabled = bool(self.lm.config.failureDomainsEnabled) if self.lm is not None else False
        kept, steps = anti_affinity(self.cp, ns, order, self.group_counts(ns, view), enabled)
        arr = lambda xs: np.array([idx[b] for b in xs], dtype=np.int64)  # noqa: E731
        return arr(kept), [(n, arr(a), arr(b), r) for n, a, b, r in steps]

    def anti_affinity_filter(self, bundle, cand, view):
        return self.explain_anti_affinity(bundle, cand, view)[0]

    # doLoadShedding's checks ----------------------------------------------------------------
    def should_unload(self, bundle, broker, view):
        ns = bundle_namespace(bundle)
        avail = self.lm._avail if self.lm is not None else np.arange(view.nb, dtype=np.int64)
        cand, _, _ = self.explain_candidates(bundle, avail, view, False)
        names = [view.brokers[j] for j in cand.tolist()]
        others = [b for b in names if b != broker]
        if not others:
            pol = self.cp.policy_for(ns)
            what = (f"isolation policy `{pol.name}`" if pol is not None else "the shared-broker rule")
            return False, (f"no other broker satisfies the namespace policies of {ns} ({what}): "
                           "shouldNamespacePoliciesUnload is false")
        ok, why = anti_affinity_should_unload(self.cp, ns, broker, names, self.group_counts(ns, view))
        return ok, why


class ExtensibleClusterPolicies(ExtensiblePolicies):
    """The extensible hook over :class:`ClusterPolicies`: ``AntiAffinityGroupPolicyFilter`` and
    ``BrokerIsolationPoliciesFilter`` (see :class:`~engine.extensible.filters.ExtensiblePolicies`)."""

    def __init__(self, policies: ClusterPolicies):
        self.cp = policies
        self.conf = None

    def bind_conf(self, conf) -> None:
        self.conf = conf

    def has_policies(self, namespace: str) -> bool:
        return self.cp.has_policies(namespace)

    def _counts(self, ns: str, data, owners=None) -> dict:
        """broker → owned bundles of ``ns``'s anti-affinity group (``getAntiAffinityNamespaceOwnedBrokers``
        over the channel's ownership entries: ``owners()``, else the snapshot's owners)."""
        group = self.cp.group_of(ns)
        if group is None:
            return {}
        g = group.lower()
        out = {}
        for bundle, owner in (owners or data.owners)().items():
            x = self.cp.group_of(bundle_namespace(bundle))
            if owner and x is not None and x.lower() == g:
                out[owner] = out.get(owner, 0) + 1
        return out

    def explain_anti_affinity(self, brokers, bundle, data, owners=None):
        ns = bundle_namespace(bundle)
        if self.cp.group_of(ns) is None:
            return brokers, []
        enabled = bool(getattr(self.conf, "failureDomainsEnabled", False))
        return anti_affinity(self.cp, ns, list(brokers), self._counts(ns, data, owners), enabled)

    def anti_affinity_filter(self, brokers, bundle, data, owners=None):
        return self.explain_anti_affinity(brokers, bundle, data, owners)[0]

    def explain_isolation(self, brokers, bundle, data, non_persistent=False):
        ns = bundle_namespace(bundle)

        def topic_ok(b):  # a non-persistent topic's lookup gives a bundle with hasNonPersistentTopic
            look = data.lookup_data(b)
            return look.non_persistent_topics_enabled if non_persistent else look.persistent_topics_enabled

        return apply_isolation(self.cp, ns, list(brokers), topic_ok)

    def isolation_filter(self, brokers, bundle, data, non_persistent=False):
        return self.explain_isolation(brokers, bundle, data, non_persistent)[0]


def broker_groups(cp: ClusterPolicies | None, brokers: list) -> dict:
    """broker → a short label of its isolation group (primary of which policy, or "shared"), plus its
    failure domain when there are domains: what the scores figure marks."""
    if cp is None:
        return {}
    dom = cp.broker_domain()
    out = {}
    for b in brokers:
        prim = cp.primary_of(_host(b))
        label = ("primary: " + ", ".join(prim)) if prim else "shared"
        if cp.failure_domains:
            label += f" · domain {dom.get(b, 'default')}"
        out[b] = label
    return out
