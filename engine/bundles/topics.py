"""Topic names as Pulsar parses them (``TopicName``): short-name completion, namespaces, partitions."""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from .constants import _INT_MAX, PARTITIONED_TOPIC_SUFFIX

# NamedEntity: ^[-=:.\w]*$ with Java's ASCII \w (we also require non-empty)
_NAMED = re.compile(r"[-=:.\w]+", re.ASCII)
_DOMAINS = ("persistent", "non-persistent")
_FULL_PREFIXES = ("persistent://", "non-persistent://")
_JAVA_INT = re.compile(r"[+-]?[0-9]+")


@dataclass(frozen=True)
class TopicName:
    """A parsed topic name, like Pulsar's ``TopicName``.

    Attributes
    ----------
    domain : str
        ``persistent`` or ``non-persistent``.
    tenant, namespace_portion, local_name : str
        The parts of ``domain://tenant/namespace/local``.
    cluster : str or None
        The cluster of a legacy ``domain://tenant/cluster/namespace/local`` name.
    partition_index : int
        ``N`` of a ``...-partition-N`` name, else ``-1`` (Pulsar's ``getPartitionIndex``).
    """

    domain: str
    tenant: str
    cluster: str | None
    namespace_portion: str
    local_name: str
    partition_index: int = -1

    @property
    def namespace(self) -> str:
        """``tenant/namespace`` (or ``tenant/cluster/namespace`` for legacy names)."""
        if self.cluster is None:
            return f"{self.tenant}/{self.namespace_portion}"
        return f"{self.tenant}/{self.cluster}/{self.namespace_portion}"

    @property
    def is_partitioned(self) -> bool:
        """True for a partition ``...-partition-N`` of a partitioned topic."""
        return self.partition_index >= 0

    @property
    def partitioned_topic_name(self) -> str:
        """The base name of a partition (``TopicName.getPartitionedTopicName``), else the name."""
        s = str(self)
        if self.is_partitioned:
            return s[: s.rfind(PARTITIONED_TOPIC_SUFFIX)]
        return s

    def partition(self, index: int) -> str:
        """``TopicName.getPartition(index)``: the full name of partition ``index``."""
        s = str(self)
        if index == -1 or s.endswith(f"{PARTITIONED_TOPIC_SUFFIX}{index}"):
            return s
        return f"{s}{PARTITIONED_TOPIC_SUFFIX}{index}"

    def __str__(self) -> str:  # TopicName.toString(): the name that is hashed
        return f"{self.domain}://{self.namespace}/{self.local_name}"


def _partition_index(name: str) -> int:
    """``TopicName.getPartitionIndex``: ``-1`` unless the suffix is a canonical non-negative int."""
    i = name.rfind(PARTITIONED_TOPIC_SUFFIX)
    if i < 0:
        return -1
    idx = name[i + len(PARTITIONED_TOPIC_SUFFIX):]
    if not _JAVA_INT.fullmatch(idx):
        return -1
    v = int(idx)
    if v < 0 or v > _INT_MAX:  # negative, or Integer.parseInt overflow
        return -1
    if len(idx) != len(str(v)):  # "topic-partition-01", "topic-partition-+1"
        return -1
    return v


def parse_topic_name(name: str) -> TopicName:
    """Parse a topic name the way Pulsar's ``TopicName`` does.

    Short names are completed: ``t`` → ``persistent://public/default/t`` and
    ``tenant/ns/t`` → ``persistent://tenant/ns/t``. ``domain://tenant/cluster/ns/local`` is the
    legacy form with a cluster (a ``/`` in the local part makes a name legacy, as in Pulsar).

    Parameters
    ----------
    name : str
        A short or full topic name.

    Returns
    -------
    TopicName

    Raises
    ------
    InputError
        For an empty name, a two-part short name, an unknown domain, bad tenant/namespace
        characters or a blank local name.

    Examples
    --------
    >>> str(parse_topic_name("my-topic"))
    'persistent://public/default/my-topic'
    >>> t = parse_topic_name("a/b/t-partition-3")
    >>> t.namespace, t.partition_index, t.partitioned_topic_name
    ('a/b', 3, 'persistent://a/b/t')
    """
    if not isinstance(name, str) or not name:
        raise InputError(f"invalid topic name {name!r}: empty")
    full = name
    if "://" not in name:
        parts = [p for p in name.split("/") if p]  # StringUtils.split drops empty tokens
        if len(parts) == 3:
            full = "persistent://" + name
        elif len(parts) == 1:
            full = "persistent://public/default/" + parts[0]
        else:
            raise InputError(f"invalid short topic name {name!r}: use <tenant>/<namespace>/<topic> or <topic>")
    domain, rest = full.split("://", 1)
    if domain not in _DOMAINS:
        raise InputError(f"invalid topic name {name!r}: domain must be persistent or non-persistent")
    parts = rest.split("/", 3)  # Splitter.on("/").limit(4)
    if len(parts) == 3:
        tenant, ns, local = parts
        cluster = None
    elif len(parts) == 4:
        tenant, cluster, ns, local = parts
    else:
        raise InputError(f"invalid topic name {name!r}: expected {domain}://<tenant>/<namespace>/<topic>")
    for what, v in (("tenant", tenant), ("cluster", cluster), ("namespace", ns)):
        if v is not None and not _NAMED.fullmatch(v):
            raise InputError(f"invalid topic name {name!r}: bad {what} {v!r}")
    if not local.strip():
        raise InputError(f"invalid topic name {name!r}: the topic local name must not be blank")
    return TopicName(domain, tenant, cluster, ns, local, _partition_index(full))


def normalize_topic_name(name: str) -> str:
    """The full name Pulsar hashes (``TopicName.toString()``).

    Examples
    --------
    >>> normalize_topic_name("tenant/ns/orders")
    'persistent://tenant/ns/orders'
    """
    return str(parse_topic_name(name))


def partition_names(topic: str, partitions: int, namespace: str | None = None) -> list[str]:
    """The partition names Pulsar creates for a partitioned topic.

    Parameters
    ----------
    topic : str
        The topic (short or full name). With ``namespace``, a bare local name placed there.
    partitions : int
        Number of partitions (≥ 1).
    namespace : str, optional
        ``tenant/ns``: "topic ``t`` with 30 partitions in namespace ``a/b``".

    Returns
    -------
    list of str
        ``<full>-partition-0`` … ``<full>-partition-(K-1)``.

    Examples
    --------
    >>> partition_names("t", 2, namespace="a/b")
    ['persistent://a/b/t-partition-0', 'persistent://a/b/t-partition-1']
    """
    if isinstance(partitions, bool) or not isinstance(partitions, (int, np.integer)) or partitions < 1:
        raise InputError(f"partitions must be an integer ≥ 1, got {partitions!r}")
    if namespace is not None:
        if "://" in topic or "/" in topic:
            raise InputError(f"with a namespace, give the bare topic name, got {topic!r}")
        topic = f"{namespace}/{topic}"
    t = parse_topic_name(topic)
    if t.is_partitioned:
        raise InputError(f"{str(t)!r} is already a partition")
    base = str(t)
    return [f"{base}{PARTITIONED_TOPIC_SUFFIX}{i}" for i in range(int(partitions))]
