"""Datasets and results at any Hadoop-compatible URI (``file://``, ``hdfs://``, ``s3a://`` ...), for the
command line and for roots an operator configures. The web app never takes a URI from a browser: it
picks datasets by name (:func:`.dataset.dataset_by_name`).

Everything goes through the Spark session (so through the cluster's Hadoop connectors and settings,
e.g. ``--spark-conf spark.hadoop.fs.s3a.endpoint=...``; ``s3a://`` needs the ``hadoop-aws`` jars on
the cluster): the metadata is read with the session's Hadoop ``FileSystem`` (Spark's file sources
skip names starting with ``_``), the file listing (for the fingerprint that keys the cache) with
the ``binaryFile`` source's ``path``, ``length`` and ``modificationTime`` columns (the file contents
are not read), and results are written as Parquet directories with Spark. URI datasets need a
classic session (local, standalone, YARN, Kubernetes); over Spark Connect there is no JVM in this
process to read the metadata with.

Departure from the local layout checks: a URI dataset's wide layout (:mod:`.layout`) is trusted when
its metadata lists it (comparing it with the long files would mean listing and hashing them twice).
"""
from __future__ import annotations

import hashlib
import json
import re

from engine.errors import InputError

__all__ = ["is_uri", "local_path", "join", "read_meta_uri", "read_text_uri", "fingerprint_uri", "write_results_uri", "MAX_META_BYTES"]

_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
MAX_META_BYTES = 16 << 20


def is_uri(value) -> bool:
    """``scheme://...`` (a local path or a bare name is not)."""
    return bool(_URI.match(str(value)))


def local_path(value):
    """The local path of a ``file://`` URI (``file:///data/x`` → ``/data/x``), else ``None``."""
    s = str(value)
    if s.startswith("file://"):
        from urllib.parse import unquote, urlparse

        u = urlparse(s)
        if u.netloc not in ("", "localhost"):
            return None
        return unquote(u.path)
    return None


def join(uri: str, *parts: str) -> str:
    return "/".join([str(uri).rstrip("/")] + [p.strip("/") for p in parts])


def read_text_uri(spark, f: str, limit: int = MAX_META_BYTES) -> str:
    """A small text file at a Hadoop URI, through the session's Hadoop FileSystem (Spark's file
    sources skip names starting with ``_``, like ``_shedlab.json``)."""
    sc = spark.sparkContext  # classic sessions; Spark Connect has no JVM here (see the module docstring)
    jvm = sc._jvm
    path = jvm.org.apache.hadoop.fs.Path(f)
    fs = path.getFileSystem(sc._jsc.hadoopConfiguration())
    if int(fs.getFileStatus(path).getLen()) > limit:
        raise InputError(f"larger than {limit >> 20} MiB", source=f)
    stream = fs.open(path)
    try:
        data = bytes(jvm.org.apache.commons.io.IOUtils.toByteArray(stream))
    finally:
        stream.close()
    return data.decode("utf-8", "replace")


def read_meta_uri(spark, uri: str) -> dict:
    """The dataset metadata at ``uri`` (``_shedlab.json``), or a clear :class:`InputError`."""
    from .dataset import META_FILE

    f = join(uri, META_FILE)
    try:
        text = read_text_uri(spark, f)
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - FileNotFoundException, unknown scheme, auth ... via py4j
        msg = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
        if "FileNotFoundException" in str(exc):
            msg = "no such file"
        raise InputError(f"not a Shedlab history dataset, or not readable: {msg}", source=f) from None
    try:
        meta = json.loads(text)
    except ValueError as exc:
        raise InputError(f"unreadable metadata: {exc}", source=f) from None
    if not isinstance(meta, dict) or meta.get("format") != "shedlab-history":
        raise InputError("not a Shedlab history metadata file", source=f)
    meta["_text_sha"] = hashlib.sha256(text.encode()).hexdigest()[:16]
    return meta


def fingerprint_uri(spark, uri: str) -> str:
    """A short hash of the dataset's data files (relative path, size, modification time) and metadata,
    from one listing: the part of the cache key that changes whenever the data does."""
    from pyspark.sql import functions as F

    base = str(uri).rstrip("/")
    df = (spark.read.format("binaryFile").option("recursiveFileLookup", "true").load(base)
          .select("path", "length", "modificationTime")
          .where(~F.col("path").contains("/_results/")))
    h = hashlib.sha256()
    h.update(str(read_meta_uri(spark, uri)["_text_sha"]).encode())  # the listing skips "_" names
    rows = sorted((r["path"], int(r["length"]), str(r["modificationTime"])) for r in df.collect())
    for p, n, t in rows:
        rel = p.split(base.split("://", 1)[-1], 1)[-1]
        h.update(f"{rel}|{n}|{t}\n".encode())
    return h.hexdigest()[:20]


def write_results_uri(spark, out_uri: str, res: dict, meta: dict) -> str:
    """Write a job's result frames as Parquet directories under ``out_uri`` (one per frame) and
    ``meta`` as JSON text (``out_uri/meta``); returns ``out_uri``."""
    for name, frame in res.items():
        if name.startswith("_") or not hasattr(frame, "columns"):
            continue
        pdf = frame.copy()
        for c in pdf.columns:  # lists of timestamps (per_pair) as ISO text lists: portable Parquet
            if pdf[c].dtype == object and len(pdf) and isinstance(pdf[c].dropna().iloc[0] if pdf[c].notna().any()
                                                                   else None, list):
                pdf[c] = pdf[c].map(lambda a: None if a is None else [str(x) for x in a])
        sdf = spark.createDataFrame(pdf) if len(pdf) else spark.createDataFrame(pdf.astype(str))
        sdf.coalesce(1).write.mode("overwrite").parquet(join(out_uri, name))
    spark.createDataFrame([(json.dumps(meta, default=str),)], "value string").coalesce(1).write.mode(
        "overwrite").text(join(out_uri, "meta"))
    return out_uri
