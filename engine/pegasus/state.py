"""The meta server's working view: partition configurations, ``node_state`` and the node map.

:class:`ClusterState` is built from an immutable :class:`~engine.pegasus.model.Snapshot` and is
what the balancer reads and the plan runner changes. Configuration updates go through the same
primitive steps as ``server_state::update_configuration_locally`` so that ``node_state``
(``primaries[app]``, ``partitions[app]``), ``hp_last_drops`` and ``config_context.dropped`` stay in
sync (reference §1.3, §3.4, §3.5).
"""
from __future__ import annotations

import bisect


from .model import DEFAULT_DISK, DroppedReplica, Gpid, HostPort, Node, Partition, Snapshot, Table
from .node_order import NodeMap

__all__ = ["PartitionState", "AppState", "NodeState", "NewlyPartitions", "ClusterState"]

PRIMARY, SECONDARY, INACTIVE = "PRIMARY", "SECONDARY", "INACTIVE"


class PartitionState:
    """Mutable ``partition_configuration`` + ``config_context`` of one partition."""

    __slots__ = ("gpid", "ballot", "primary", "secondaries", "last_drops", "last_committed_decree",
                 "max_replica_count", "serving", "dropped", "prefered_dropped", "lb_actions")

    def __init__(self, gpid: Gpid, p: Partition, max_replica_count: int):
        self.gpid = gpid
        self.ballot = p.ballot
        self.primary = p.primary
        self.secondaries = list(p.secondaries)
        self.last_drops = list(p.last_drops)
        self.last_committed_decree = p.last_committed_decree
        self.max_replica_count = max_replica_count
        self.serving = {hp: tag for hp, tag in p.disks}
        self.dropped = sorted(p.dropped, key=DroppedReplica.sort_key)
        self.prefered_dropped = len(self.dropped) - 1
        self.lb_actions: list = []          # pending cure proposals (flow control)

    @property
    def replica_count(self) -> int:
        return (1 if self.primary else 0) + len(self.secondaries)

    def is_member(self, node: HostPort) -> bool:
        return node == self.primary or node in self.secondaries

    def to_partition(self) -> Partition:
        disks = tuple((hp, self.serving[hp]) for hp in ([self.primary] if self.primary else [])
                      + self.secondaries if hp in self.serving)
        return Partition(self.gpid.pidx, self.primary, tuple(self.secondaries), self.ballot,
                         tuple(self.last_drops), self.last_committed_decree, disks,
                         tuple(self.dropped))


class AppState:
    """A table in the working view."""

    __slots__ = ("app_id", "app_name", "partition_count", "max_replica_count", "status",
                 "is_bulk_loading", "splitting", "pcs")

    def __init__(self, t: Table):
        self.app_id = t.app_id
        self.app_name = t.app_name
        self.partition_count = t.partition_count
        self.max_replica_count = t.max_replica_count
        self.status = t.status
        self.is_bulk_loading = t.is_bulk_loading
        self.splitting = t.splitting
        self.pcs = [PartitionState(Gpid(t.app_id, p.pidx), p, t.max_replica_count)
                    for p in t.partitions]

    @property
    def available(self) -> bool:
        return self.status == "AS_AVAILABLE"

    @property
    def eligible(self) -> bool:
        return self.available and not self.is_bulk_loading and not self.splitting


class NodeState:
    """``node_state``: per app the gpids a node is primary for and all gpids it hosts."""

    __slots__ = ("address", "alive", "disks", "has_collected_replicas", "primaries", "partitions",
                 "_total_primaries", "_total_partitions")

    def __init__(self, node: Node):
        self.address = node.address
        self.alive = node.alive
        self.disks = tuple(node.disks)
        self.has_collected_replicas = node.has_collected_replicas
        self.primaries: dict = {}
        self.partitions: dict = {}
        self._total_primaries = 0
        self._total_partitions = 0

    def primary_count(self, app_id: int | None = None) -> int:
        if app_id is None:
            return self._total_primaries
        return len(self.primaries.get(app_id, ()))

    def partition_count(self, app_id: int | None = None) -> int:
        """Replicas hosted (primaries included), for one app or in total."""
        if app_id is None:
            return self._total_partitions
        return len(self.partitions.get(app_id, ()))

    def secondary_count(self, app_id: int | None = None) -> int:
        return self.partition_count(app_id) - self.primary_count(app_id)

    def served_as(self, gpid: Gpid) -> str:
        if gpid in self.primaries.get(gpid.app_id, ()):
            return PRIMARY
        if gpid in self.partitions.get(gpid.app_id, ()):
            return SECONDARY
        return INACTIVE

    def put_partition(self, gpid: Gpid, is_primary: bool) -> None:
        parts = self.partitions.setdefault(gpid.app_id, set())
        if gpid not in parts:
            parts.add(gpid)
            self._total_partitions += 1
        if is_primary:
            pris = self.primaries.setdefault(gpid.app_id, set())
            if gpid not in pris:
                pris.add(gpid)
                self._total_primaries += 1

    def remove_partition(self, gpid: Gpid, only_primary: bool) -> None:
        pris = self.primaries.get(gpid.app_id)
        if pris and gpid in pris:
            pris.discard(gpid)
            self._total_primaries -= 1
        if not only_primary:
            parts = self.partitions.get(gpid.app_id)
            if parts and gpid in parts:
                parts.discard(gpid)
                self._total_partitions -= 1

    def sorted_primaries(self, app_id: int) -> list:
        return sorted(self.primaries.get(app_id, ()))

    def sorted_partitions(self, app_id: int) -> list:
        return sorted(self.partitions.get(app_id, ()))


class NewlyPartitions:
    """``newly_partitions``: replicas proposed by cure but not confirmed yet (reference §3.1)."""

    __slots__ = ("primaries", "partitions", "total_primaries", "total_partitions")

    def __init__(self):
        self.primaries: dict = {}
        self.partitions: dict = {}
        self.total_primaries = 0
        self.total_partitions = 0

    def add_primary(self, app_id: int, only_primary: bool) -> None:
        self.primaries[app_id] = self.primaries.get(app_id, 0) + 1
        self.total_primaries += 1
        if not only_primary:
            self.add_partition(app_id)

    def add_partition(self, app_id: int) -> None:
        self.partitions[app_id] = self.partitions.get(app_id, 0) + 1
        self.total_partitions += 1

    def remove_primary(self, app_id: int, only_primary: bool) -> None:
        self.primaries[app_id] = self.primaries.get(app_id, 0) - 1
        self.total_primaries -= 1
        if not only_primary:
            self.remove_partition(app_id)

    def remove_partition(self, app_id: int) -> None:
        self.partitions[app_id] = self.partitions.get(app_id, 0) - 1
        self.total_partitions -= 1

    def is_empty(self) -> bool:
        return self.total_primaries == 0 and self.total_partitions == 0


class ClusterState:
    """The mutable view the balancer reads and the plan runner updates.

    Attributes
    ----------
    apps : dict of int -> AppState
        Ascending app id (``std::map<app_id, app_state>``).
    nodes : dict of HostPort -> NodeState
        Every node ever seen (sorted by address).
    node_map : NodeMap
        The emulated ``unordered_map`` (iteration order = node ids; Appendix A).
    newly : dict of HostPort -> NewlyPartitions
        Cure's pending counters.
    now_ms : int
        Simulated wall clock.
    """

    def __init__(self, snapshot: Snapshot):
        self.source = snapshot.source
        self.apps = {t.app_id: AppState(t) for t in sorted(snapshot.tables, key=lambda t: t.app_id)}
        self.nodes = {n.address: NodeState(n) for n in sorted(snapshot.nodes, key=lambda n: n.address)}
        order = list(dict.fromkeys(snapshot.insertion_order or tuple(self.nodes)))
        order += [hp for hp in self.nodes if hp not in set(order)]   # first heartbeat
        self.insertion_order = order
        self.node_map = NodeMap(order)
        self.newly = {hp: NewlyPartitions() for hp in self.nodes}
        self.now_ms = snapshot.now_ms
        #: (gpid, node) of hosted replicas without a serving entry (disk tag unknown)
        self.serving_gaps: set = set()
        #: node -> disk tag -> gpids served there (the ``serving`` lists, indexed by node)
        self.disk_index: dict = {hp: {} for hp in self.nodes}
        #: partitions cure must look at: not fully replicated, invalid ballot, or pending actions
        self.unhealthy: set = set()
        self.pending: set = set()
        for app in self.apps.values():
            for pc in app.pcs:
                if pc.primary:
                    self.nodes[pc.primary].put_partition(pc.gpid, True)
                for s in pc.secondaries:
                    self.nodes[s].put_partition(pc.gpid, False)
                for hp in ([pc.primary] if pc.primary else []) + pc.secondaries:
                    if hp not in pc.serving:
                        self.serving_gaps.add((pc.gpid, hp))
                for hp, tag in pc.serving.items():
                    self.disk_index[hp].setdefault(tag, set()).add(pc.gpid)
                self._update_health(pc)

    # ------------------------------------------------------------------ views
    def map_nodes(self) -> list:
        """Nodes in node-map iteration order (the order behind node ids and cure scans)."""
        return list(self.node_map)             # the keys are the HostPort objects inserted

    def pc(self, gpid: Gpid) -> PartitionState:
        return self.apps[gpid.app_id].pcs[gpid.pidx]

    def is_alive(self, hp: HostPort | None) -> bool:
        return bool(hp) and hp in self.nodes and self.nodes[hp].alive

    def alive_count(self) -> tuple:
        """(alive, dead) among the nodes of the node map."""
        alive = sum(1 for hp in self.map_nodes() if self.nodes[hp].alive)
        return alive, len(self.node_map) - alive

    def disk_of(self, node: HostPort, gpid: Gpid) -> str | None:
        return self.pc(gpid).serving.get(node)

    def counts(self) -> dict:
        """``{app_id: {node: (primaries, secondaries)}}`` for every node (zeros included)."""
        out = {}
        for app_id in self.apps:
            per = {}
            for hp, ns in self.nodes.items():
                p = len(ns.primaries.get(app_id, ()))
                per[hp] = (p, len(ns.partitions.get(app_id, ())) - p)
            out[app_id] = per
        return out

    # ------------------------------------------------------------------ config updates
    def _update_health(self, pc: PartitionState) -> None:
        if (pc.ballot == -1 or not pc.primary
                or len(pc.secondaries) + 1 != pc.max_replica_count):
            self.unhealthy.add(pc.gpid)
        else:
            self.unhealthy.discard(pc.gpid)

    def _serve(self, pc: PartitionState, node: HostPort, tag: str) -> None:
        old = pc.serving.get(node)
        if old is not None:
            self.disk_index[node].get(old, set()).discard(pc.gpid)
        pc.serving[node] = tag
        self.disk_index[node].setdefault(tag, set()).add(pc.gpid)
        self.serving_gaps.discard((pc.gpid, node))

    def _unserve(self, pc: PartitionState, node: HostPort) -> None:
        old = pc.serving.pop(node, None)
        if old is not None:
            self.disk_index[node].get(old, set()).discard(pc.gpid)
        self.serving_gaps.discard((pc.gpid, node))

    def _choose_disk(self, node: HostPort, app_id: int) -> str:
        """Disk for a new replica: fewest replicas of this app, then fewest in total, then first.

        Emulates the replica server's ``fs_manager`` choice (not part of the meta server).
        """
        ns = self.nodes[node]
        disks = ns.disks or (DEFAULT_DISK,)
        if len(disks) == 1:
            return disks[0]
        index = self.disk_index[node]
        total = {d: len(index.get(d, ())) for d in disks}
        per_app = {d: sum(1 for g in index.get(d, ()) if g.app_id == app_id) for d in disks}
        return min(disks, key=lambda d: (per_app[d], total[d], disks.index(d)))

    def _drops_remove(self, pc: PartitionState, node: HostPort) -> None:
        if node in pc.last_drops:
            pc.last_drops.remove(node)
        before = len(pc.dropped)
        pc.dropped = [d for d in pc.dropped if d.node != node]
        if len(pc.dropped) != before:
            pc.prefered_dropped = len(pc.dropped) - 1

    def _drops_add(self, pc: PartitionState, node: HostPort) -> None:
        if node in pc.last_drops:
            pc.last_drops.remove(node)
        pc.last_drops.append(node)
        pc.dropped = [d for d in pc.dropped if d.node != node]
        entry = DroppedReplica(node, self.now_ms, pc.ballot, pc.last_committed_decree,
                               pc.last_committed_decree)
        keys = [d.sort_key() for d in pc.dropped]
        pc.dropped.insert(bisect.bisect_right(keys, entry.sort_key()), entry)
        pc.prefered_dropped = len(pc.dropped) - 1

    def check_dropped_size(self, pc: PartitionState, max_reserved: int) -> None:
        """``check_size``: forget the oldest dropped replicas beyond the reserve."""
        while pc.dropped and pc.replica_count + len(pc.dropped) > pc.max_replica_count + max_reserved:
            pc.dropped.pop(0)
            pc.prefered_dropped = len(pc.dropped) - 1

    def apply_action(self, gpid: Gpid, action: str, node: HostPort, max_reserved: int = 1) -> None:
        """Apply one configuration update of type ``action`` affecting ``node``.

        ``ASSIGN_PRIMARY``, ``UPGRADE_TO_PRIMARY``, ``ADD_SECONDARY`` / ``ADD_SECONDARY_FOR_LB``
        (the learner becomes a secondary), ``DOWNGRADE_TO_SECONDARY``, ``DOWNGRADE_TO_INACTIVE`` and
        ``REMOVE``. Raises ``ValueError`` when the action does not fit the configuration (a bug).
        """
        pc = self.pc(gpid)
        ns = self.nodes[node]
        if action == "ASSIGN_PRIMARY":
            if pc.primary or node in pc.secondaries:
                raise ValueError(f"{gpid}: cannot assign primary to {node}")
            pc.primary = node
            if node not in pc.serving:
                self._serve(pc, node, self._choose_disk(node, gpid.app_id))
            self.serving_gaps.discard((gpid, node))
            ns.put_partition(gpid, True)
            self._drops_remove(pc, node)
        elif action == "UPGRADE_TO_PRIMARY":
            if pc.primary or node not in pc.secondaries:
                raise ValueError(f"{gpid}: cannot upgrade {node} to primary")
            pc.secondaries.remove(node)
            pc.primary = node
            ns.put_partition(gpid, True)
            self._drops_remove(pc, node)
        elif action in ("ADD_SECONDARY", "ADD_SECONDARY_FOR_LB"):
            if pc.is_member(node):
                raise ValueError(f"{gpid}: {node} is already a member")
            pc.secondaries.append(node)
            self._serve(pc, node, self._choose_disk(node, gpid.app_id))
            ns.put_partition(gpid, False)
            self._drops_remove(pc, node)
        elif action == "DOWNGRADE_TO_SECONDARY":
            if pc.primary != node:
                raise ValueError(f"{gpid}: {node} is not the primary")
            pc.primary = None
            pc.secondaries.append(node)
            ns.remove_partition(gpid, only_primary=True)
        elif action in ("REMOVE", "DOWNGRADE_TO_INACTIVE"):
            if pc.primary == node:
                pc.primary = None
            elif node in pc.secondaries:
                pc.secondaries.remove(node)
            else:
                raise ValueError(f"{gpid}: {node} is not a member")
            self._unserve(pc, node)
            ns.remove_partition(gpid, only_primary=False)
            self._drops_add(pc, node)
            self.check_dropped_size(pc, max_reserved)
        else:
            raise ValueError(f"unknown action {action!r}")
        pc.ballot += 1
        self._update_health(pc)

    def erase_node(self, hp: HostPort) -> None:
        """``can_run_balancer``: a dead node hosting nothing leaves the node map."""
        self.node_map.erase(tuple(hp))
        if hp in self.insertion_order:
            self.insertion_order.remove(hp)

    # ------------------------------------------------------------------ export
    def to_snapshot(self, source: str | None = None) -> Snapshot:
        """The current state as an immutable snapshot (same nodes, node-map order kept)."""
        tables = tuple(
            Table(a.app_id, a.app_name, a.partition_count,
                  tuple(pc.to_partition() for pc in a.pcs), a.max_replica_count, a.status,
                  a.is_bulk_loading, a.splitting)
            for a in self.apps.values())
        nodes = tuple(Node(ns.address, ns.alive, ns.disks, ns.has_collected_replicas)
                      for ns in self.nodes.values())
        return Snapshot(tables, nodes, tuple(self.insertion_order), self.now_ms,
                        source or self.source)


