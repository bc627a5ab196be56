"""The low-level input helpers every snapshot reader shares: bounded file and JSON reading, a load
report's broker id, ``ResourceQuota`` nodes, and the checks every modular ``LoadData`` gets once read.

This module imports nothing above it (no reader of a format, no policies): :mod:`engine.io` (the
dispatcher over formats), :mod:`engine.fastload`, :mod:`engine.policies` and
:mod:`engine.extensible.readers` build on it, and :mod:`engine.io` re-exports its public names.
"""
from __future__ import annotations

from urllib.parse import urlsplit

from .bounded import check_size, loads_json, read_bytes_bounded
from .errors import InputError
from .limits import limit_bytes
from .model import LoadData

__all__ = ["MAX_INPUT_BYTES", "read_json_bytes", "read_input_bytes", "read_input_text", "report_broker_id",
           "json_file_stem", "is_report", "resource_quota_from_json", "finish_load_data"]

#: largest single input file read at import time (the limit itself is ``SHEDLAB_MAX_INPUT_MB``, read each
#: time it is checked: :mod:`engine.limits`)
MAX_INPUT_BYTES = limit_bytes("SHEDLAB_MAX_INPUT_MB")


def _check_size(n: int, source: str) -> None:
    check_size(n, source)


def read_json_bytes(raw: bytes, source: str):
    """Parse JSON bytes (UTF-8, BOM tolerated) within the size and nesting limits
    (:func:`engine.bounded.loads_json`), or raise an InputError naming the line."""
    return loads_json(raw, source)


def read_input_bytes(path) -> bytes:
    """The bytes of an input file, device or stream (``-``: stdin), refused (``InputError`` naming it)
    when unreadable or over ``SHEDLAB_MAX_INPUT_MB`` (at most limit + 1 bytes are read)."""
    return read_bytes_bounded(path)


def read_input_text(path) -> str:
    """:func:`read_input_bytes` decoded as UTF-8 (a BOM tolerated); ``InputError`` when it is not."""
    raw = read_input_bytes(path)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", source=str(path)) from None


_read_file = read_input_bytes


def report_broker_id(obj, fallback: str | None = None) -> str | None:
    """The broker id of a ``LocalBrokerData`` load report, by one rule for every way a report arrives.

    Parameters
    ----------
    obj : the parsed report (``pulsar-admin broker-stats load-report`` / ``/loadbalance/brokers/<id>``).
    fallback : the id to use when the report names none (the file name's stem), or ``None``.

    Returns
    -------
    ``brokerId`` when the report carries it; else ``host:port`` of ``webServiceUrl``, else of
    ``webServiceUrlTls``; else ``fallback``.

    Notes
    -----
    Pulsar names a broker by its lookup address, ``advertisedAddress + ":" + webServicePort`` (the
    TLS web port when the plain one is off) — ``PulsarService.getBrokerId()``, the
    ``lookupServiceAddress`` of ``ModularLoadManagerImpl`` and of the extensible load manager — and
    ``LocalBrokerData.webServiceUrl`` is ``http://`` + that host and port, so the URL's
    ``host:port`` is the id. ``pulsarServiceUrl`` carries the binary protocol port (6650), not the
    web port, so it cannot give the id and is not used. In a ZooKeeper dump the ``brokers/<id>``
    node name is the id itself and wins over the content.

    >>> report_broker_id({"webServiceUrl": "http://10.0.0.1:8080", "pulsarServiceUrl": "pulsar://10.0.0.1:6650"},
    ...                  "broker-1")
    '10.0.0.1:8080'
    >>> report_broker_id({"webServiceUrlTls": "https://b2.example:8443/"}, "b2")
    'b2.example:8443'
    >>> report_broker_id({"cpu": {"usage": 1, "limit": 100}}, "broker-3")
    'broker-3'
    """
    if isinstance(obj, dict):
        bid = obj.get("brokerId")
        if isinstance(bid, str) and bid.strip():
            return bid.strip()
        for key in ("webServiceUrl", "webServiceUrlTls"):
            url = obj.get(key)
            if isinstance(url, str) and url.strip():
                try:
                    netloc = urlsplit(url.strip()).netloc.rsplit("@", 1)[-1]
                except ValueError:  # not a URL
                    netloc = ""
                if netloc:
                    return netloc
    return fallback


def json_file_stem(source) -> str | None:
    """``"dir/broker-7.json"`` → ``"broker-7"`` (also inside a zip, ``"a.zip:r/broker-7.json"``); ``None``
    when ``source`` is not a ``.json`` file's name."""
    s = str(source or "").replace("\\", "/")
    if ".zip:" in s:
        s = s.rsplit(".zip:", 1)[1]
    name = s.rsplit("/", 1)[-1]
    return (name[:-5] or None) if name.lower().endswith(".json") else None


def is_report(obj) -> bool:
    return isinstance(obj, dict) and ("brokerId" in obj or "cpu" in obj or "lastStats" in obj) and "brokers" not in obj


def finish_load_data(ld: LoadData) -> None:
    """The checks every modular snapshot gets once read: a warning for an empty cluster and for a bundle
    listed by several brokers, default BundleData for every listed bundle, and time averages started
    from the last stats where a broker has none."""
    if not ld.brokers:
        ld.warnings.append(f"{ld.source}: the cluster is empty (no brokers): nothing to balance")
    owners = ld.owners()
    for b, bs in owners.items():
        if len(bs) > 1:
            ld.warnings.append(f"{ld.source}: bundle {b} is listed by {len(bs)} brokers ({', '.join(bs)}): "
                               "an ownership change in progress; Pulsar considers it on each")
    ld.ensure_bundle_data()
    for bid, bd in ld.brokers.items():
        if not any(bd.time_average.values()) and bd.local.last_stats:
            bd.time_average.reset(bd.local.last_stats.keys(), ld.bundle_data)


#: ``ResourceQuota`` JSON fields (``org.apache.pulsar.common.policies.data.ResourceQuota``)
_QUOTA_NUMBERS = ("msgRateIn", "msgRateOut", "bandwidthIn", "bandwidthOut", "memory")


def resource_quota_from_json(obj, source: str) -> dict:
    """A ``ResourceQuota`` node (``msgRateIn``/``msgRateOut`` msg/s, ``bandwidthIn``/``bandwidthOut``
    bytes/s, ``memory`` MB, ``dynamic``) as a plain dict, each number finite and not negative.

    >>> resource_quota_from_json({"msgRateIn": 40.0, "msgRateOut": 120.0, "bandwidthIn": 100000.0,
    ...                           "bandwidthOut": 300000.0, "memory": 80.0, "dynamic": True}, "q")["msgRateOut"]
    120.0
    """
    if not isinstance(obj, dict):
        raise InputError(f"expected a ResourceQuota object, got {type(obj).__name__}", source=source)
    out = {}
    for k in _QUOTA_NUMBERS:
        v = obj.get(k, 0.0)
        if v is None:
            v = 0.0
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or v in (float("inf"), float("-inf")):
            raise InputError(f"expected a finite number, got {v!r}", source=source, field=k)
        if v < 0:
            raise InputError(f"must not be negative, got {v}", source=source, field=k)
        out[k] = float(v)
    dyn = obj.get("dynamic", True)
    if not isinstance(dyn, bool):
        raise InputError(f"expected true or false, got {dyn!r}", source=source, field="dynamic")
    out["dynamic"] = dyn
    return out


_finish = finish_load_data
_json_file_stem = json_file_stem
_is_report = is_report
