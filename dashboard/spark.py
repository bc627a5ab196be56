"""One lazily created SparkSession per process, tuned for a small machine.

Never created at import time and never shared across a fork: :func:`get_spark` remembers the pid
that created the session and builds a new one in a forked child (a Dash background job), so the
web process itself never starts a JVM. ``atexit`` stops the session.

Settings (environment)
----------------------
``LB_SPARK_MASTER``
    Spark master URL, default ``local[*]``. A standalone cluster: ``spark://host:7077``; YARN or
    Kubernetes work too (the driver runs in this process, so executors must reach it back: set
    ``LB_SPARK_DRIVER_HOST``). Example::

        $SPARK_HOME/sbin/start-master.sh --host 10.0.0.5
        $SPARK_HOME/sbin/start-worker.sh spark://10.0.0.5:7077
        LB_SPARK_MASTER=spark://10.0.0.5:7077 LB_SPARK_DRIVER_HOST=10.0.0.9 \\
            python -m dashboard.history aggregate /data/history/prod-eu

    The project's ``engine`` and ``dashboard`` packages are shipped to the executors with
    ``addPyFile``; executors need Python 3.11 with numpy, pandas and pyarrow.
``LB_SPARK_REMOTE``
    Spark Connect URL (``sc://host:15002``); takes precedence over ``LB_SPARK_MASTER``. Needs the
    connect extras (``pip install "pyspark[connect]>=4.3,<5"``, which brings grpcio); without them
    :func:`get_spark` fails with a message saying so. Example::

        $SPARK_HOME/sbin/start-connect-server.sh
        LB_SPARK_REMOTE=sc://spark-gw:15002 python -m dashboard.history backtest prod-eu --strategy AvgShedder
``LB_SPARK_DRIVER_MEMORY`` (default ``4g``), ``LB_SPARK_SHUFFLE_PARTITIONS`` (default: chosen per job
from the data size and the cores, :func:`tune_for`),
``LB_SPARK_DRIVER_HOST`` (default ``127.0.0.1``), ``LB_SPARK_EXECUTOR_MEMORY`` (cluster mode only).

Any other Spark setting (``spark.*`` keys), lowest precedence first:

1. the settings above and this module's tuned defaults;
2. ``SHEDLAB_SPARK_DEFAULTS``: a ``spark-defaults.conf`` file for the app (``key value`` or
   ``key=value`` lines, ``#`` comments) — e.g. ``spark.hadoop.fs.s3a.endpoint``;
3. ``SHEDLAB_SPARK_CONF``: ``key=value`` pairs separated by newlines or ``;``;
4. the command line's ``--spark-conf key=value`` (repeatable; :func:`set_cli_conf`).

They apply when the session starts (JVM settings such as ``spark.driver.memory`` only then); a
``spark.sql.*`` key given this way also wins over the per-job tuning. Only ``spark.*`` keys are
accepted (a typo such as ``park.executor.memory`` is refused with the key named).

A missing Java runtime gives :class:`SparkUnavailable` with the install hint, not a py4j traceback.
"""
from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path

__all__ = ["get_spark", "stop_spark", "SparkUnavailable", "java_available", "spark_settings", "StageProgress",
           "spark_home", "user_conf", "set_cli_conf", "parse_conf_pairs", "tune_for", "job_group", "cancel_jobs",
           "cancel_on_sigterm"]

_lock = threading.Lock()
_spark = None
_pid = None
_atexit_done = False
_cli_conf: dict[str, str] = {}
MAX_CONF_ENTRIES = 200
ROOT = Path(__file__).resolve().parent.parent


class SparkUnavailable(RuntimeError):
    """Spark cannot start here (no Java, no connect extras, bad master URL, ...); the message says why."""


def spark_home() -> Path:
    """The pyspark package directory (it carries ``bin/spark-class`` and the jars)."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def java_available() -> tuple[bool, str]:
    """``(ok, detail)``: a Java 17/21 runtime is on ``JAVA_HOME`` or ``PATH``."""
    home = os.getenv("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not java or not Path(java).exists():
        return False, "no Java runtime found (JAVA_HOME unset and no `java` on PATH)"
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"`java -version` failed: {exc}"
    text = (out.stderr or out.stdout).strip().splitlines()
    return out.returncode == 0, text[0] if text else "java"


def spark_settings() -> dict:
    """The effective settings (for the UI and the CLI's ``--json`` output)."""
    sp = os.getenv("LB_SPARK_SHUFFLE_PARTITIONS")
    return {
        "remote": os.getenv("LB_SPARK_REMOTE") or None,
        "master": os.getenv("LB_SPARK_MASTER", "local[*]"),
        "driver_memory": os.getenv("LB_SPARK_DRIVER_MEMORY", "4g"),
        "shuffle_partitions": int(sp) if sp else None,
        "driver_host": os.getenv("LB_SPARK_DRIVER_HOST", "127.0.0.1"),
        "conf": user_conf(),
    }


def parse_conf_pairs(pairs, source: str) -> dict[str, str]:
    """``["key=value", ...]`` (or ``key value``) → ``{key: value}``; only ``spark.*`` keys."""
    from engine.errors import UsageError

    out: dict[str, str] = {}
    for raw in pairs:
        line = str(raw).strip()
        if not line or line.startswith("#"):
            continue
        if "=" in line and (" " not in line.split("=", 1)[0]):
            k, v = line.split("=", 1)
        else:
            parts = line.split(None, 1)
            if len(parts) != 2:
                raise UsageError(f"{source}: expected key=value, got {line[:80]!r}")
            k, v = parts
        k, v = k.strip(), v.strip()
        if not k.startswith("spark.") or len(k) > 200 or len(v) > 4000:
            raise UsageError(f"{source}: {k[:80]!r} is not a Spark setting (keys start with 'spark.')")
        out[k] = v
        if len(out) > MAX_CONF_ENTRIES:
            raise UsageError(f"{source}: more than {MAX_CONF_ENTRIES} Spark settings")
    return out


def user_conf() -> dict[str, str]:
    """The Spark settings given by the operator (defaults file < environment < command line)."""
    from engine.errors import UsageError

    conf: dict[str, str] = {}
    f = os.getenv("SHEDLAB_SPARK_DEFAULTS")
    if f:
        try:
            text = Path(f).read_text(encoding="utf-8", errors="replace")[:1_000_000]
        except OSError as exc:
            raise UsageError(f"SHEDLAB_SPARK_DEFAULTS={f}: cannot read it ({exc.strerror})") from None
        conf.update(parse_conf_pairs(text.splitlines(), f"SHEDLAB_SPARK_DEFAULTS={f}"))
    env = os.getenv("SHEDLAB_SPARK_CONF")
    if env:
        conf.update(parse_conf_pairs(env.replace(";", "\n").splitlines(), "SHEDLAB_SPARK_CONF"))
    conf.update(_cli_conf)
    return conf


def set_cli_conf(pairs) -> dict[str, str]:
    """Record ``--spark-conf key=value`` options (before the session starts); returns them parsed."""
    global _cli_conf
    _cli_conf = parse_conf_pairs(pairs or [], "--spark-conf")
    return dict(_cli_conf)


#: Arrow batch size of the jobs without Python groups (``spark.sql.execution.arrow.maxRecordsPerBatch``)
ARROW_BATCH_ROWS = 200_000


def tune_for(spark, rows: int, bytes_per_row: int = 60, groups: int | None = None) -> dict:
    """Per-job SQL settings from the data size and the cores (runtime settings; the session is reused).

    Measured on 2 cores (``bench/bench_history.py``): the default 200 shuffle partitions, and even 8,
    cost more in task overhead than they gain on the broker-minute table; so one partition per ~128 MB
    of shuffled rows, at least one per core and at most four per core, with adaptive execution on
    and its partition coalescing on (it merges the small post-aggregation partitions), and Arrow
    batches of :data:`ARROW_BATCH_ROWS` rows for the aggregate job's Python pass (the default 10,000
    cuts a 128 MB input partition into ~150 batches). Settings the operator gave
    (``LB_SPARK_SHUFFLE_PARTITIONS``, ``--spark-conf`` ...) are left alone.

    ``groups``: a job whose tasks are Python groups (backtest chunks, sweep cells): one shuffle
    partition per group and no coalescing — adaptive execution would otherwise merge the small
    partitions of the (tiny-looking) input into one task and run every group on one core
    (measured: a 5 × 6 sweep ran slower on two cores than on one).
    """
    try:
        cores = int(spark.sparkContext.defaultParallelism)
    except Exception:  # noqa: BLE001 - Spark Connect: no sparkContext
        cores = int(spark.conf.get("spark.default.parallelism", str(os.cpu_count() or 2)))
    given = user_conf()
    chosen = {}
    if "spark.sql.shuffle.partitions" not in given and not os.getenv("LB_SPARK_SHUFFLE_PARTITIONS"):
        want = -(-max(1, rows) * bytes_per_row // (128 << 20))
        chosen["spark.sql.shuffle.partitions"] = str(max(cores, min(4 * cores, want)))
        if groups:
            chosen["spark.sql.shuffle.partitions"] = str(max(1, int(groups)))
    if "spark.sql.adaptive.coalescePartitions.enabled" not in given:
        chosen["spark.sql.adaptive.coalescePartitions.enabled"] = "false" if groups else "true"
    if not groups and "spark.sql.execution.arrow.maxRecordsPerBatch" not in given:
        # the aggregate job hands whole input partitions to numpy: big Arrow batches, fewer hand-overs
        chosen["spark.sql.execution.arrow.maxRecordsPerBatch"] = str(ARROW_BATCH_ROWS)
    for k, v in chosen.items():
        spark.conf.set(k, v)
    return {"cores": cores, **chosen}


def _code_zip() -> str:
    """A zip of the ``engine`` and ``dashboard`` packages for the executors' Python workers."""
    fd, name = tempfile.mkstemp(prefix="shedlab-code-", suffix=".zip")
    os.close(fd)
    with zipfile.ZipFile(name, "w", zipfile.ZIP_DEFLATED) as z:
        for pkg in ("engine", "dashboard"):
            for f in (ROOT / pkg).rglob("*.py"):
                z.write(f, f.relative_to(ROOT).as_posix())
    atexit.register(lambda: os.path.exists(name) and os.remove(name))
    return name


_LOG4J = """rootLogger.level = error
rootLogger.appenderRef.stdout.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


def _log4j_file() -> str:
    """A quiet log4j2 config (errors only), so jobs do not flood the terminal or the app's log."""
    path = Path(tempfile.gettempdir()) / "shedlab-spark-log4j2.properties"
    if not path.exists() or path.read_text() != _LOG4J:
        path.write_text(_LOG4J)
    return str(path)


def _build():
    s = spark_settings()
    # the Python workers must be this interpreter (it has numpy/pandas/pyarrow and the engine)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    pp = os.environ.get("PYTHONPATH", "")
    if str(ROOT) not in pp.split(os.pathsep):
        os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([pp] if pp else []))
    if s["remote"]:
        try:
            from pyspark.sql.connect.utils import check_dependencies

            check_dependencies("pyspark.sql.connect")
        except Exception as exc:  # ImportError of grpc/protobuf/... surfaces in different shapes
            raise SparkUnavailable(
                f"LB_SPARK_REMOTE={s['remote']} needs the Spark Connect client: "
                f'pip install "pyspark[connect]>=4.3,<5" ({exc})') from None
        from pyspark.sql import SparkSession

        try:
            bld = SparkSession.builder.remote(s["remote"]).appName("shedlab-history")
            for k, v in s["conf"].items():
                bld = bld.config(k, v)
            spark = bld.getOrCreate()
        except Exception as exc:
            raise SparkUnavailable(f"cannot connect to Spark Connect at {s['remote']}: {exc}") from None
        try:
            spark.addArtifacts(_code_zip(), pyfile=True)
        except Exception as exc:
            raise SparkUnavailable(f"cannot ship the project code to {s['remote']}: {exc}") from None
        return spark
    os.environ.setdefault("SPARK_LOCAL_IP", s["driver_host"])
    ok, detail = java_available()
    if not ok:
        raise SparkUnavailable(f"Spark needs Java 17 or 21: {detail}. Install it (Debian: "
                               "`apt-get install -y openjdk-17-jre-headless`, or `make system-deps`) "
                               "or set JAVA_HOME.")
    from pyspark.sql import SparkSession

    b = (SparkSession.builder.master(s["master"]).appName("shedlab-history")
         .config("spark.sql.shuffle.partitions", str(s["shuffle_partitions"] or 4))
         .config("spark.sql.execution.arrow.pyspark.enabled", "true")
         .config("spark.sql.execution.arrow.pyspark.fallback.enabled", "false")
         .config("spark.sql.session.timeZone", "UTC")
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.driver.memory", s["driver_memory"])
         .config("spark.driver.host", s["driver_host"])
         .config("spark.driver.bindAddress", s["driver_host"])
         .config("spark.pyspark.python", os.environ["PYSPARK_PYTHON"])
         .config("spark.executorEnv.PYTHONPATH", os.environ["PYTHONPATH"])
         .config("spark.sql.adaptive.enabled", "true")
         .config("spark.sql.adaptive.coalescePartitions.enabled", "true")
         .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{_log4j_file()}")
         .config("spark.executor.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{_log4j_file()}")
         .config("spark.sql.sources.partitionColumnTypeInference.enabled", "false"))
    if os.getenv("LB_SPARK_EXECUTOR_MEMORY"):
        b = b.config("spark.executor.memory", os.environ["LB_SPARK_EXECUTOR_MEMORY"])
    if not s["master"].startswith("local"):
        b = b.config("spark.cores.max", os.getenv("LB_SPARK_CORES_MAX", "64"))
    for k, v in s["conf"].items():  # the operator's settings win over ours
        b = b.config(k, v)
    try:
        spark = b.getOrCreate()
    except Exception as exc:
        raise SparkUnavailable(f"Spark did not start (master {s['master']}): {str(exc).splitlines()[0]}") from None
    spark.sparkContext.setLogLevel("ERROR")
    spark.sparkContext.addPyFile(_code_zip())
    return spark


def _forget_inherited_spark() -> None:
    """In a forked child: drop PySpark's class-level references to the parent's JVM gateway, so the
    builder launches a JVM of our own instead of handing back the parent's session (whose py4j
    socket must not be shared: concurrent use corrupts it, SPARK-25992)."""
    try:
        from pyspark import SparkContext
        from pyspark.sql import SparkSession
    except ImportError:  # pragma: no cover - pyspark is a dependency
        return
    SparkContext._gateway = None
    SparkContext._jvm = None
    SparkContext._active_spark_context = None
    for attr in ("_instantiatedSession", "_activeSession"):
        if hasattr(SparkSession, attr):
            setattr(SparkSession, attr, None)


def get_spark():
    """The process's SparkSession (created on first call; a new one, with its own JVM, after a fork)."""
    global _spark, _pid, _atexit_done
    with _lock:
        if _spark is not None and _pid == os.getpid():
            return _spark
        if _spark is not None:  # inherited across fork: never touch the parent's gateway
            _spark = None
            _forget_inherited_spark()
        _spark = _build()
        _pid = os.getpid()
        if not _atexit_done:
            atexit.register(stop_spark)
            _atexit_done = True
        return _spark


def stop_spark() -> None:
    """Stop this process's session (no-op if none, or if it belongs to a parent process)."""
    global _spark, _pid
    with _lock:
        if _spark is not None and _pid == os.getpid():
            try:
                _spark.stop()
            except Exception:  # noqa: BLE001 - stopping is best effort at exit
                pass
        _spark = None
        _pid = None


class StageProgress:
    """Poll Spark's status tracker in a thread and report ``(done_tasks, total_tasks, text)``.

    ``report`` is called at most every ``interval`` seconds while a job runs (for a progress bar);
    ``None``: nobody listens, and nothing polls (each poll is a few calls into the JVM, beside the job).
    Spark Connect sessions have no status tracker: only start/end are reported there.
    """

    def __init__(self, spark, report, interval: float = 0.5):
        self.spark, self.report, self.interval = spark, report, interval
        self._stop = threading.Event()
        self._thread = None
        self.seen: dict[int, tuple[int, int]] = {}

    def _poll(self):
        try:
            tracker = self.spark.sparkContext.statusTracker()
        except Exception:  # noqa: BLE001 - Spark Connect has no sparkContext
            return
        while not self._stop.wait(self.interval):
            try:
                for sid in tracker.getActiveStageIds():
                    info = tracker.getStageInfo(sid)
                    if info is not None:
                        self.seen[sid] = (info.numCompletedTasks, info.numTasks)
                done = sum(d for d, _ in self.seen.values())
                total = sum(t for _, t in self.seen.values())
                if total:
                    self.report(done, total, f"Spark: {len(self.seen)} stage(s), {done}/{total} tasks")
            except Exception:  # noqa: BLE001 - progress is best effort; the job itself reports errors
                pass

    def __enter__(self):
        if self.report is not None:
            self._thread = threading.Thread(target=self._poll, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        return False


def timed_start(report=None):
    """Start (or reuse) the session and return ``(spark, seconds)``; reports while the JVM starts."""
    t = time.perf_counter()
    if report:
        report(0, 1, "starting Spark (JVM, about 10 s)")
    spark = get_spark()
    return spark, time.perf_counter() - t


_groups: set[str] = set()
_groups_lock = threading.Lock()


class job_group:
    """``with job_group(spark, "aggregate"):`` — every Spark job started inside belongs to one job
    group (classic sessions: ``setJobGroup(..., interruptOnCancel=True)``; Spark Connect: a tag), so
    :func:`cancel_jobs` stops them all, running tasks included."""

    def __init__(self, spark, name: str, description: str = ""):
        self.spark, self.name, self.description = spark, name, description or name
        self.id = f"shedlab-{name}-{os.getpid()}-{time.time_ns()}"

    def __enter__(self):
        try:
            self.spark.sparkContext.setJobGroup(self.id, self.description, interruptOnCancel=True)
        except Exception:  # noqa: BLE001 - Spark Connect: tags instead of job groups
            try:
                self.spark.addTag(self.id)
            except Exception:  # noqa: BLE001
                pass
        with _groups_lock:
            _groups.add(self.id)
        return self

    def __exit__(self, *exc):
        with _groups_lock:
            _groups.discard(self.id)
        try:
            self.spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
        except Exception:  # noqa: BLE001
            try:
                self.spark.removeTag(self.id)
            except Exception:  # noqa: BLE001
                pass
        return False


def cancel_jobs() -> int:
    """Cancel every job group this process started (from any thread); returns how many were active."""
    with _groups_lock:
        ids = list(_groups)
    spark = _spark if _pid == os.getpid() else None
    if spark is None:
        return 0
    for gid in ids:
        try:
            spark.sparkContext.cancelJobGroup(gid)
        except Exception:  # noqa: BLE001 - Spark Connect
            try:
                spark.interruptTag(gid)
            except Exception:  # noqa: BLE001
                pass
    return len(ids)


def cancel_on_sigterm() -> bool:
    """In a background job's process: on SIGTERM (what the page's Cancel sends to the job process),
    cancel this process's Spark job groups and stop the session before exiting, so the executors
    stop working at once instead of finishing tasks for a dead driver. ``False`` if the handler
    cannot be installed (not the main thread)."""
    import signal

    def handler(signum, frame):  # noqa: ARG001
        def stop():
            cancel_jobs()
            stop_spark()
            os._exit(143)

        threading.Thread(target=stop, daemon=True).start()  # py4j calls off the interrupted main thread

    try:
        signal.signal(signal.SIGTERM, handler)
    except ValueError:
        return False
    return True
