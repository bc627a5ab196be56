"""Read a Pegasus cluster: the shell's ``nodes -d`` / ``app NAME -d`` text, or Shedlab's JSON form.

Text
----
Any number of ``app NAME -d`` outputs (sections ``[parameters]`` ``[general]`` ``[replicas]``
``[nodes]`` ``[healthy]``, reference §6.2), concatenated, optionally with one ``nodes -d`` output
(``[details]`` ``[summary]``, §6.1) listing every replica server with its status — that is how a
node hosting nothing (just added) or a dead one gets into the snapshot. ``[replicas]`` gives the
primary and secondaries of each partition; ``[nodes]`` and ``[healthy]`` are cross-checked against
it (a mismatch means the text was cut or edited). Lines before the first section and shell prompt
lines (``>>> app temp -d``) are ignored. The text has no disk information: every node gets one disk,
``default``.

JSON (``shedlab-pegasus/1``)
----------------------------
::

    {
      "format": "shedlab-pegasus/1",                  # optional
      "now_ms": 0,                                     # optional: clock for dropped[].time_ms
      "nodes": [                                       # optional for nodes that host replicas
        {"address": "10.0.0.1:34801", "status": "ALIVE",        # or "alive": true
         "disks": ["data0", "data1"]}                  # optional, default ["default"]
      ],
      "node_map_order": ["10.0.0.3:34801", ...],      # optional: node-map insertion order
      "tables": [
        {"app_id": 2, "app_name": "temp", "max_replica_count": 3,
         "partition_count": 8,                         # optional, = len(partitions)
         "status": "AS_AVAILABLE", "is_bulk_loading": false, "splitting": false,   # optional
         "partitions": [
           {"pidx": 0, "ballot": 3, "primary": "10.0.0.1:34801",     # null = no primary
            "secondaries": ["10.0.0.2:34801", "10.0.0.3:34801"],
            "disks": {"10.0.0.1:34801": "data0"},                     # optional disk tags
            "last_drops": [], "last_committed_decree": 0,             # optional
            "dropped": [{"node": "...", "time_ms": 0, "ballot": -1,   # optional
                         "last_committed_decree": -1, "last_prepared_decree": -1}]}
         ]}
      ]
    }

A replica without a disk tag lives on its node's only disk; on a node with several disks the
tag is required. :func:`snapshot_to_json` writes this form.

Every problem raises :class:`engine.errors.InputError` naming the file and the section/line or
JSON path.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from ..errors import InputError
from ..limits import epoch_ms
from .model import (APP_STATUSES, DEFAULT_DISK, DroppedReplica, HostPort, Node, Partition, Snapshot,
                    Table, default_insertion_order)
from .node_order import MAX_NODES

__all__ = [
    "MAX_BYTES",
    "parse_snapshot_text",
    "parse_snapshot_json",
    "parse_snapshot",
    "load_snapshot",
    "snapshot_to_json",
    "build_snapshot",
]

#: largest input accepted (bytes)
MAX_BYTES = 64 * 1024 * 1024
#: largest partition count accepted per table
MAX_PARTITIONS = 1 << 16

_SECTION = re.compile(r"^\s*\[([A-Za-z_][A-Za-z0-9_ ]*)\]\s*$")
_APP_SECTIONS = {"parameters", "general", "replicas", "nodes", "healthy"}
_NODE_SECTIONS = {"details", "summary"}


# ---------------------------------------------------------------------------------- helpers
def _int(text, source, where, what, lo=None):
    try:
        v = int(str(text).strip())
    except (TypeError, ValueError):
        raise InputError(f"{what} {text!r} is not an integer", source=source, field=where) from None
    if lo is not None and v < lo:
        raise InputError(f"{what} {v} must be at least {lo}", source=source, field=where)
    return v


def _hp(text, source, where):
    try:
        return HostPort.parse(text)
    except ValueError as exc:
        raise InputError(str(exc), source=source, field=where) from None


def _kv(lines, source, name):
    out = {}
    for ln, line in lines:
        if not line.strip():
            continue
        key, sep, value = line.partition(":")
        if not sep or not key.strip():
            raise InputError(f"expected 'key : value', got {line.strip()!r}", source=source,
                             field=f"[{name}] line {ln}")
        out[key.strip()] = (value.strip(), ln)
    return out


def _sections(text: str, source):
    """[(name, header_line_no, [(line_no, line), ...])] in file order."""
    out = []
    cur = None
    for ln, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip("\r")
        if line.lstrip().startswith(">>>"):            # shell prompt + command: ends a section
            cur = None
            continue
        m = _SECTION.match(line)
        if m:
            cur = (m.group(1).strip().lower(), ln, [])
            out.append(cur)
        elif cur is not None:
            cur[2].append((ln, line))
    return out


# ---------------------------------------------------------------------------------- text
def _parse_replicas(lines, source, app_name, max_rc, warnings):
    where = f"[replicas] of {app_name}"
    rows = [(ln, line) for ln, line in lines if line.strip()]
    if not rows:
        raise InputError("section is empty (truncated?)", source=source, field=where)
    ln0, head = rows[0]
    cols = head.split()
    if cols[:1] != ["pidx"]:
        raise InputError(f"expected the header 'pidx ballot replica_count primary secondaries', "
                         f"got {head.strip()!r}", source=source, field=f"{where} line {ln0}")
    parts = {}
    for ln, line in rows[1:]:
        at = f"{where} line {ln}"
        tok = line.split()
        if len(tok) < 5:
            raise InputError(f"row has {len(tok)} of 5 columns (pidx ballot replica_count primary "
                             f"secondaries): {line.strip()!r} (truncated?)", source=source, field=at)
        pidx = _int(tok[0], source, at, "pidx", 0)
        ballot = _int(tok[1], source, at, "ballot", -1)
        rc_text = tok[2]
        primary_txt = tok[3]
        sec_txt = "".join(tok[4:])
        if not (sec_txt.startswith("[") and sec_txt.endswith("]")):
            raise InputError(f"secondaries {sec_txt!r} are not '[host:port,...]' (truncated?)",
                             source=source, field=at)
        primary = None if primary_txt == "-" else _hp(primary_txt, source, at)
        inner = sec_txt[1:-1].strip()
        secs = tuple(_hp(s, source, at) for s in inner.split(",")) if inner else ()
        members = ([primary] if primary else []) + list(secs)
        if len(set(members)) != len(members):
            raise InputError("a node appears twice in the partition", source=source, field=at)
        n_txt, slash, m_txt = rc_text.partition("/")
        if not slash:
            raise InputError(f"replica_count {rc_text!r} is not 'n/max'", source=source, field=at)
        n = _int(n_txt, source, at, "replica_count", 0)
        m = _int(m_txt, source, at, "max replica count", 0)
        if n != len(members):
            raise InputError(f"replica_count says {n} but the row lists {len(members)} replica(s)",
                             source=source, field=at)
        if m != max_rc:
            warnings.append(f"{app_name} partition {pidx}: max replica count {m} differs from "
                            f"the table's {max_rc}")
        if pidx in parts:
            raise InputError(f"partition {pidx} listed twice", source=source, field=at)
        parts[pidx] = Partition(pidx, primary, secs, ballot)
    return parts


def _parse_app_nodes(lines, source, app_name, parts):
    """Cross-check the ``[nodes]`` section against the partitions."""
    where = f"[nodes] of {app_name}"
    counted: dict = {}
    for p in parts.values():
        if p.primary:
            counted.setdefault(p.primary, [0, 0])[0] += 1
        for s in p.secondaries:
            counted.setdefault(s, [0, 0])[1] += 1
    rows = [(ln, line) for ln, line in lines if line.strip()]
    if not rows:
        return
    if rows[0][1].split()[:1] == ["node"]:
        rows = rows[1:]
    listed = set()
    for ln, line in rows:
        at = f"{where} line {ln}"
        tok = line.split()
        if len(tok) == 3 or (len(tok) == 4 and tok[0] == "total"):
            continue                                   # totals row
        if len(tok) != 4:
            raise InputError(f"expected 'node primary secondary total', got {line.strip()!r}",
                             source=source, field=at)
        hp = _hp(tok[0], source, at)
        p, s, t = (_int(x, source, at, "count", 0) for x in tok[1:])
        got = counted.get(hp, [0, 0])
        if (p, s) != tuple(got) or t != p + s:
            raise InputError(f"{hp} listed with {p} primaries / {s} secondaries but [replicas] "
                             f"gives {got[0]} / {got[1]} (text cut or edited?)",
                             source=source, field=at)
        listed.add(hp)
    missing = sorted(set(counted) - listed)
    if missing:
        raise InputError(f"{missing[0]} hosts replicas in [replicas] but is missing from [nodes] "
                         f"(truncated?)", source=source, field=where)


def _parse_healthy(lines, source, app_name, parts, max_rc):
    where = f"[healthy] of {app_name}"
    kv = _kv(lines, source, "healthy")
    key = "fully_healthy_partition_count"
    if key in kv:
        full = sum(1 for p in parts.values() if p.primary and p.replica_count >= max_rc)
        v = _int(kv[key][0], source, f"{where} line {kv[key][1]}", key, 0)
        if v != full:
            raise InputError(f"{key} is {v} but [replicas] has {full} fully healthy partitions",
                             source=source, field=f"{where} line {kv[key][1]}")


def _app_block(block, source, warnings):
    secs = {name: (ln, lines) for name, ln, lines in block}
    params = _kv(secs["parameters"][1], source, "parameters") if "parameters" in secs else {}
    if "general" not in secs:
        raise InputError("an `app NAME -d` output without its [general] section (truncated?)",
                         source=source, field=f"[parameters] line {secs['parameters'][0]}")
    gen_ln = secs["general"][0]
    gen = _kv(secs["general"][1], source, "general")
    name = (gen.get("app_name") or params.get("app_name") or ("", 0))[0]
    if not name:
        raise InputError("no app_name", source=source, field=f"[general] line {gen_ln}")
    for key in ("app_id", "partition_count", "max_replica_count"):
        if key not in gen:
            raise InputError(f"missing {key} (truncated?)", source=source,
                             field=f"[general] of {name}")
    app_id = _int(gen["app_id"][0], source, f"[general] line {gen['app_id'][1]}", "app_id", 1)
    pcount = _int(gen["partition_count"][0], source, f"[general] line {gen['partition_count'][1]}",
                  "partition_count", 1)
    if pcount > MAX_PARTITIONS:
        raise InputError(f"partition_count {pcount} larger than {MAX_PARTITIONS}", source=source,
                         field=f"[general] of {name}")
    max_rc = _int(gen["max_replica_count"][0], source,
                  f"[general] line {gen['max_replica_count'][1]}", "max_replica_count", 1)
    if "replicas" not in secs:
        raise InputError("no [replicas] section: run `app NAME -d` (with -d)", source=source,
                         field=f"[general] of {name}")
    parts = _parse_replicas(secs["replicas"][1], source, name, max_rc, warnings)
    missing = [i for i in range(pcount) if i not in parts]
    extra = sorted(i for i in parts if i >= pcount)
    if extra:
        raise InputError(f"partition {extra[0]} beyond partition_count {pcount}", source=source,
                         field=f"[replicas] of {name}")
    if missing:
        shown = ", ".join(str(i) for i in missing[:5]) + (" ..." if len(missing) > 5 else "")
        raise InputError(f"lists {pcount - len(missing)} of {pcount} partitions (missing pidx "
                         f"{shown}): truncated?", source=source, field=f"[replicas] of {name}")
    if "nodes" in secs:
        _parse_app_nodes(secs["nodes"][1], source, name, parts)
    if "healthy" in secs:
        _parse_healthy(secs["healthy"][1], source, name, parts, max_rc)
    return Table(app_id, name, pcount, tuple(parts[i] for i in range(pcount)), max_rc)


def _nodes_block(block, source):
    secs = {name: (ln, lines) for name, ln, lines in block}
    if "details" not in secs:
        raise InputError("[summary] without [details]: expected `nodes -d` output", source=source)
    rows = [(ln, line) for ln, line in secs["details"][1] if line.strip()]
    if not rows:
        raise InputError("section is empty (truncated?)", source=source, field="[details]")
    ln0, head = rows[0]
    cols = head.split()
    if cols[:2] != ["address", "status"]:
        raise InputError(f"expected the header 'address status ...', got {head.strip()!r}",
                         source=source, field=f"[details] line {ln0}")
    nodes = {}
    for ln, line in rows[1:]:
        at = f"[details] line {ln}"
        tok = line.split()
        if len(tok) != len(cols):
            raise InputError(f"row has {len(tok)} of {len(cols)} columns: {line.strip()!r} "
                             f"(truncated?)", source=source, field=at)
        hp = _hp(tok[0], source, at)
        status = tok[1].upper()
        if status not in ("ALIVE", "UNALIVE"):
            raise InputError(f"status {tok[1]!r} is neither ALIVE nor UNALIVE", source=source, field=at)
        row = {c: _int(v, source, at, c, 0) for c, v in zip(cols[2:], tok[2:])
               if c in ("replica_count", "primary_count", "secondary_count")}
        if hp in nodes:
            raise InputError(f"{hp} listed twice", source=source, field=at)
        nodes[hp] = (status == "ALIVE", row, ln)
    if "summary" in secs:
        kv = _kv(secs["summary"][1], source, "summary")
        if "total_node_count" in kv:
            total = _int(kv["total_node_count"][0], source, "[summary]", "total_node_count", 0)
            if total != len(nodes):
                raise InputError(f"total_node_count is {total} but [details] lists {len(nodes)} "
                                 f"node(s) (truncated?)", source=source, field="[summary]")
    return nodes


def parse_snapshot_text(text: str, source: str | None = None) -> Snapshot:
    """Parse ``app NAME -d`` outputs (and optionally one ``nodes -d``) into a :class:`Snapshot`.

    Parameters
    ----------
    text : str
        The shell output(s), concatenated.
    source : str, optional
        File name for messages.

    Raises
    ------
    InputError
        Missing or truncated sections, malformed rows, counts that do not add up.
    """
    if not text or not text.strip():
        raise InputError("empty input", source=source)
    sections = _sections(text, source)
    if not sections:
        raise InputError("no [section] found: expected the text of `app NAME -d` (and `nodes -d`) "
                         "or Shedlab's JSON form", source=source)
    warnings: list = []
    app_blocks, node_blocks = [], []
    cur_app = cur_nodes = None
    for name, ln, lines in sections:
        if name in _APP_SECTIONS:
            have = {s[0] for s in cur_app} if cur_app is not None else set()
            if name == "parameters" or (name == "general" and (cur_app is None or "general" in have)):
                cur_app = []
                app_blocks.append(cur_app)
            elif cur_app is None or name in have:
                raise InputError(f"[{name}] without the [general] section of its table "
                                 f"(truncated?)", source=source, field=f"line {ln}")
            cur_app.append((name, ln, lines))
            cur_nodes = None
        elif name in _NODE_SECTIONS:
            if name == "details" or cur_nodes is None:
                cur_nodes = []
                node_blocks.append(cur_nodes)
            cur_nodes.append((name, ln, lines))
            cur_app = None
        else:
            warnings.append(f"section [{name}] (line {ln}) ignored")
    if len(node_blocks) > 1:
        raise InputError("more than one `nodes -d` output", source=source)
    tables = [_app_block(b, source, warnings) for b in app_blocks]
    if not tables:
        raise InputError("no table found: add the output of `app NAME -d` ([general] and "
                         "[replicas] sections)", source=source)
    listed = _nodes_block(node_blocks[0], source) if node_blocks else None
    nodes = {}
    if listed is not None:
        for hp, (alive, _row, _ln) in listed.items():
            nodes[hp] = Node(hp, alive)
    for t in tables:
        for p in t.partitions:
            for hp in p.members:
                if hp not in nodes:
                    if listed is not None:
                        raise InputError(f"{hp} hosts replicas of {t.app_name} but `nodes -d` does "
                                         f"not list it", source=source, field="[details]")
                    nodes[hp] = Node(hp, True)
    if listed is not None:
        placed: dict = {}
        for t in tables:
            for p in t.partitions:
                for hp in p.members:
                    placed[hp] = placed.get(hp, 0) + 1
        for hp, (_alive, row, ln) in listed.items():
            rc = row.get("replica_count")
            if rc is not None and rc != placed.get(hp, 0):
                warnings.append(f"`nodes -d` counts {rc} replicas on {hp}, the tables given place "
                                f"{placed.get(hp, 0)} (tables missing from the input?)")
    return build_snapshot(tables, nodes.values(), source=source, warnings=warnings)


# ---------------------------------------------------------------------------------- JSON
def _get(obj, key, where, source, kind, default=...):
    if not isinstance(obj, dict):
        raise InputError(f"expected an object, got {type(obj).__name__}", source=source, field=where)
    if key not in obj:
        if default is ...:
            raise InputError("missing", source=source, field=f"{where}.{key}" if where else key)
        return default
    v = obj[key]
    ok = {
        "int": lambda x: isinstance(x, int) and not isinstance(x, bool),
        "str": lambda x: isinstance(x, str),
        "bool": lambda x: isinstance(x, bool),
        "list": lambda x: isinstance(x, list),
        "dict": lambda x: isinstance(x, dict),
        "str?": lambda x: x is None or isinstance(x, str),
    }[kind](v)
    if not ok:
        names = {"int": "an integer", "str": "a string", "bool": "true or false", "list": "a list",
                 "dict": "an object", "str?": "a string or null"}
        raise InputError(f"must be {names[kind]}, got {json.dumps(v)[:40]}", source=source,
                         field=f"{where}.{key}" if where else key)
    if kind == "int" and not -(2**63) <= v < 2**63:  # Pegasus' fields are C++ int32/int64
        raise InputError(f"out of range for a 64-bit integer: {str(v)[:40]}", source=source,
                         field=f"{where}.{key}" if where else key)
    return v


def parse_snapshot_json(data, source: str | None = None) -> Snapshot:
    """Build a :class:`Snapshot` from Shedlab's JSON form (a parsed object or JSON text)."""
    if isinstance(data, (str, bytes)):
        from ..bounded import loads_json

        data = loads_json(data, source)  # nesting and size limits (engine.limits)
    if not isinstance(data, dict):
        raise InputError("the JSON must be an object with 'tables'", source=source)
    fmt = data.get("format", "shedlab-pegasus/1")
    if fmt != "shedlab-pegasus/1":
        raise InputError(f"unknown format {fmt!r} (expected 'shedlab-pegasus/1')", source=source,
                         field="format")
    now = epoch_ms(_get(data, "now_ms", "", source, "int", 0), source, "now_ms")
    nodes: dict = {}
    disks_given: dict = {}
    for i, n in enumerate(_get(data, "nodes", "", source, "list", [])):
        w = f"nodes[{i}]"
        hp = _hp(_get(n, "address", w, source, "str"), source, f"{w}.address")
        if hp in nodes:
            raise InputError(f"{hp} listed twice", source=source, field=w)
        if "status" in n:
            st = _get(n, "status", w, source, "str").upper()
            if st not in ("ALIVE", "UNALIVE"):
                raise InputError("must be ALIVE or UNALIVE", source=source, field=f"{w}.status")
            alive = st == "ALIVE"
        else:
            alive = _get(n, "alive", w, source, "bool", True)
        disks = _get(n, "disks", w, source, "list", None)
        if disks is not None:
            if not disks or not all(isinstance(d, str) and d for d in disks) or len(set(disks)) != len(disks):
                raise InputError("must be a non-empty list of distinct disk tags", source=source,
                                 field=f"{w}.disks")
            disks_given[hp] = tuple(disks)
        collected = _get(n, "has_collected_replicas", w, source, "bool", True)
        nodes[hp] = (alive, collected)
    tables = []
    used_tags: dict = {}
    raw_tables = _get(data, "tables", "", source, "list")
    for ti, t in enumerate(raw_tables):
        w = f"tables[{ti}]"
        app_id = _get(t, "app_id", w, source, "int")
        if app_id < 1:
            raise InputError("must be at least 1", source=source, field=f"{w}.app_id")
        name = _get(t, "app_name", w, source, "str")
        max_rc = _get(t, "max_replica_count", w, source, "int", 3)
        if max_rc < 1:
            raise InputError("must be at least 1", source=source, field=f"{w}.max_replica_count")
        status = _get(t, "status", w, source, "str", "AS_AVAILABLE").upper()
        if not status.startswith("AS_"):
            status = "AS_" + status
        if status not in APP_STATUSES:
            raise InputError(f"unknown status (one of {', '.join(APP_STATUSES)})", source=source,
                             field=f"{w}.status")
        raw_parts = _get(t, "partitions", w, source, "list")
        pcount = _get(t, "partition_count", w, source, "int", len(raw_parts))
        if not 1 <= pcount <= MAX_PARTITIONS:
            raise InputError(f"must be within 1..{MAX_PARTITIONS}", source=source,
                             field=f"{w}.partition_count")
        parts = {}
        for pi, p in enumerate(raw_parts):
            pw = f"{w}.partitions[{pi}]"
            pidx = _get(p, "pidx", pw, source, "int", pi)
            if not 0 <= pidx < pcount or pidx in parts:
                raise InputError(f"pidx {pidx} out of range or repeated", source=source, field=pw)
            prim_txt = _get(p, "primary", pw, source, "str?", None)
            primary = _hp(prim_txt, source, f"{pw}.primary") if prim_txt else None
            secs = tuple(_hp(s, source, f"{pw}.secondaries") if isinstance(s, str) else
                         _hp(None, source, f"{pw}.secondaries")
                         for s in _get(p, "secondaries", pw, source, "list", []))
            members = ([primary] if primary else []) + list(secs)
            if len(set(members)) != len(members):
                raise InputError("a node appears twice in the partition", source=source, field=pw)
            drops = tuple(_hp(s, source, f"{pw}.last_drops") if isinstance(s, str) else
                          _hp(None, source, f"{pw}.last_drops")
                          for s in _get(p, "last_drops", pw, source, "list", []))
            tags = _get(p, "disks", pw, source, "dict", {})
            disk_pairs = []
            for k, v in tags.items():
                hp = _hp(k, source, f"{pw}.disks")
                if hp not in members:
                    raise InputError(f"{hp} is not a member of the partition", source=source,
                                     field=f"{pw}.disks")
                if not isinstance(v, str) or not v:
                    raise InputError("disk tag must be a non-empty string", source=source,
                                     field=f"{pw}.disks")
                disk_pairs.append((hp, v))
                used_tags.setdefault(hp, []).append(v)
            dropped = []
            for di, d in enumerate(_get(p, "dropped", pw, source, "list", [])):
                dw = f"{pw}.dropped[{di}]"
                dropped.append(DroppedReplica(
                    _hp(_get(d, "node", dw, source, "str"), source, f"{dw}.node"),
                    _get(d, "time_ms", dw, source, "int", 0),
                    _get(d, "ballot", dw, source, "int", -1),
                    _get(d, "last_committed_decree", dw, source, "int", -1),
                    _get(d, "last_prepared_decree", dw, source, "int", -1)))
            parts[pidx] = Partition(pidx, primary, secs, _get(p, "ballot", pw, source, "int", 1),
                                    drops, _get(p, "last_committed_decree", pw, source, "int", 0),
                                    tuple(disk_pairs), tuple(dropped))
        missing = [i for i in range(pcount) if i not in parts]
        if missing:
            raise InputError(f"has {len(parts)} of {pcount} partitions (missing pidx {missing[0]})",
                             source=source, field=f"{w}.partitions")
        tables.append(Table(app_id, name, pcount, tuple(parts[i] for i in range(pcount)), max_rc,
                            status, _get(t, "is_bulk_loading", w, source, "bool", False),
                            _get(t, "splitting", w, source, "bool", False)))
    # nodes: listed ones plus every member / last drop / dropped node
    all_nodes: dict = {hp: v for hp, v in nodes.items()}
    for t in tables:
        for p in t.partitions:
            for hp in p.members + tuple(p.last_drops) + tuple(d.node for d in p.dropped):
                all_nodes.setdefault(hp, (True, True))
    node_objs = []
    for hp, (alive, collected) in all_nodes.items():
        disks = disks_given.get(hp)
        if disks is None:
            disks = tuple(sorted(set(used_tags.get(hp, ())))) or (DEFAULT_DISK,)
        else:
            bad = [x for x in used_tags.get(hp, ()) if x not in disks]
            if bad:
                raise InputError(f"replica on disk {bad[0]!r} which {hp} does not list",
                                 source=source, field="nodes[].disks")
        node_objs.append(Node(hp, alive, disks, collected))
    order = None
    if "node_map_order" in data:
        raw = _get(data, "node_map_order", "", source, "list")
        order = [_hp(x if isinstance(x, str) else None, source, "node_map_order") for x in raw]
        unknown = [hp for hp in order if hp not in all_nodes]
        if unknown:
            raise InputError(f"{unknown[0]} is not a node", source=source, field="node_map_order")
    return build_snapshot(tables, node_objs, now_ms=now, insertion_order=order, source=source)


# ---------------------------------------------------------------------------------- common
def build_snapshot(tables, nodes, now_ms: int = 0, insertion_order=None, source=None,
                   warnings=()) -> Snapshot:
    """Validate and assemble a :class:`Snapshot`; fills disk tags for single-disk nodes.

    Raises :class:`InputError` for repeated app ids/names, unknown nodes, a replica on a node
    with several disks but no tag, too many nodes.
    """
    tables = sorted(tables, key=lambda t: t.app_id)
    ids = [t.app_id for t in tables]
    names = [t.app_name for t in tables]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise InputError(f"app_id {dup} appears in two tables", source=source)
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise InputError(f"table {dup!r} appears twice", source=source)
    node_map = {n.address: n for n in nodes}
    if len(node_map) > MAX_NODES:
        raise InputError(f"{len(node_map)} nodes: at most {MAX_NODES} supported", source=source)
    fixed_tables = []
    for t in tables:
        parts = []
        for p in t.partitions:
            pairs = dict(p.disks)
            for hp in p.members:
                node = node_map.get(hp)
                if node is None:
                    raise InputError(f"{hp} hosts partition {t.app_id}.{p.pidx} but is not a "
                                     f"known node", source=source)
                if hp not in pairs:
                    if len(node.disks) != 1:
                        raise InputError(f"{hp} has {len(node.disks)} disks: say which one holds "
                                         f"partition {t.app_id}.{p.pidx}", source=source,
                                         field=f"tables[{t.app_name}].partitions[{p.pidx}].disks")
                    pairs[hp] = node.disks[0]
            parts.append(Partition(p.pidx, p.primary, p.secondaries, p.ballot, p.last_drops,
                                   p.last_committed_decree,
                                   tuple((hp, pairs[hp]) for hp in p.members), p.dropped))
        fixed_tables.append(Table(t.app_id, t.app_name, t.partition_count, tuple(parts),
                                  t.max_replica_count, t.status, t.is_bulk_loading, t.splitting))
    node_list = tuple(sorted(node_map.values(), key=lambda n: n.address))
    if insertion_order is None:
        order = default_insertion_order(fixed_tables, node_list)
    else:
        seen = dict.fromkeys(insertion_order)
        order = tuple(seen) + tuple(n.address for n in node_list if n.address not in seen)
    return Snapshot(tuple(fixed_tables), node_list, tuple(order), int(now_ms), source,
                    tuple(warnings))


def parse_snapshot(data, source: str | None = None) -> Snapshot:
    """Text or JSON (detected by a leading ``{``), as ``str`` or ``bytes``."""
    if isinstance(data, bytes):
        if len(data) > MAX_BYTES:
            raise InputError(f"larger than {MAX_BYTES // (1024 * 1024)} MB", source=source)
        try:
            data = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise InputError("not UTF-8 text", source=source) from None
    if not isinstance(data, str):
        raise InputError(f"expected text, got {type(data).__name__}", source=source)
    if "\x00" in data:
        raise InputError("binary data, not text", source=source)
    if data.lstrip().startswith("{"):
        return parse_snapshot_json(data, source)
    return parse_snapshot_text(data, source)


def load_snapshot(path) -> Snapshot:
    """Read a snapshot file (text or JSON); ``InputError`` if it cannot be read."""
    from ..bounded import read_bytes_bounded

    raw = read_bytes_bounded(path)  # at most SHEDLAB_MAX_INPUT_MB (+1 byte), devices and streams too
    if len(raw) > MAX_BYTES:
        raise InputError(f"larger than {MAX_BYTES // (1024 * 1024)} MB", source=str(path))
    return parse_snapshot(raw, str(path))


def snapshot_to_json(snap: Snapshot) -> dict:
    """The JSON form of a snapshot (round-trips through :func:`parse_snapshot_json`)."""
    return {
        "format": "shedlab-pegasus/1",
        "now_ms": snap.now_ms,
        "nodes": [{"address": str(n.address), "status": "ALIVE" if n.alive else "UNALIVE",
                   "disks": list(n.disks)} for n in snap.nodes],
        "node_map_order": [str(hp) for hp in snap.insertion_order],
        "tables": [{
            "app_id": t.app_id, "app_name": t.app_name, "partition_count": t.partition_count,
            "max_replica_count": t.max_replica_count, "status": t.status,
            "is_bulk_loading": t.is_bulk_loading, "splitting": t.splitting,
            "partitions": [{
                "pidx": p.pidx, "ballot": p.ballot,
                "primary": str(p.primary) if p.primary else None,
                "secondaries": [str(s) for s in p.secondaries],
                "disks": {str(hp): tag for hp, tag in p.disks},
                "last_drops": [str(s) for s in p.last_drops],
                "last_committed_decree": p.last_committed_decree,
                "dropped": [{"node": str(d.node), "time_ms": d.time_ms, "ballot": d.ballot,
                             "last_committed_decree": d.last_committed_decree,
                             "last_prepared_decree": d.last_prepared_decree} for d in p.dropped],
            } for p in t.partitions],
        } for t in snap.tables],
    }
