"""Every Dash component id, in one module: nobody spells an id twice.

Each page owns one section. Pattern-matching ids are built by helper functions.
"""
from __future__ import annotations

# ---------------------------------------------------------------- shell (app-wide)
URL = "url"
NAV = "nav"
SESSION = "session-id"          # dcc.Store(storage_type="session"): per-tab id
SOURCE = "source-store"         # dcc.Store(storage_type="session"): the picked source (small info dict)
ALERT = "global-alert"
NAV_LINK = "nav-link"           # pattern type: dcc.Link of one page ({"type": NAV_LINK, "path": path})
SOURCE_PICKER = "source-picker"      # dcc.Dropdown: samples + this session's uploads and live snapshots
SOURCE_SUMMARY = "source-summary"    # html.Div: brokers / bundles / warnings of the picked source
SOURCE_DRAWER = "source-drawer"      # html.Details: "Add data" panel (uploads, live cluster)
DRAWER_CLOSE = "drawer-close"        # dcc.Store: a new value closes the "Add data" panel (data added)
UPLOAD = "source-upload"             # dcc.Upload (multiple): snapshots, reports, ZK zip, timeline, scenario, broker.conf
COLLECT_URL = "collect-url"          # dcc.Input: admin URL of a live cluster
COLLECT_TOKEN = "collect-token"      # dcc.Input (password): bearer token, never stored
COLLECT_CLUSTER = "collect-cluster"  # dcc.Input: cluster name (optional)
COLLECT_BUTTON = "collect-button"    # html.Button: take a snapshot now
COLLECT_STATUS = "collect-status"    # html.Div: what the collector did
CONF_IMPORT = "conf-import-store"    # dcc.Store(session): config requested from outside the Tuner (sample, broker.conf)
CONFIG = "config-store"              # dcc.Store(session): the tuned state (dashboard.tuner.state.TunerState JSON)
SCENARIO = "scenario-store"          # dcc.Store(session): last uploaded scenario {"id", "label"} (Simulator)
JOB_STRIP = "job-strip"              # html.Div: shell-level progress strip for background callbacks
JOB_PROGRESS = "job-progress"        # html.Progress: value/max for background callbacks' `progress=`
JOB_TEXT = "job-text"                # html.Span: what is running
JOB_CANCEL = "job-cancel"            # html.Button: `cancel=` target of background callbacks
PAGE_SOURCE = "page-source"          # pattern type: a page's mirror of SOURCE ({"type": PAGE_SOURCE, "page": name})
PAGE_IMPORT = "page-import"          # pattern type: a page's mirror of CONF_IMPORT

# ---------------------------------------------------------------- tuner page
TUNER_SHED = "tuner-shed"                  # dcc.Dropdown: shedding strategy
TUNER_PLACE = "tuner-place"                # dcc.Dropdown: placement strategy
TUNER_SEED = "tuner-seed"                  # dcc.Input: seed of random placement draws
TUNER_STEP = "tuner-step"                  # dcc.Slider: timeline step (timeline sources)
TUNER_STEP_ROW = "tuner-step-row"          # html.Div: holds TUNER_STEP (hidden for single snapshots)
TUNER_CONTROLS = "tuner-controls"          # html.Div: the key controls (re-rendered per strategy pair)
TUNER_KEY = "tuner-key"                    # pattern type: dcc.Slider of one numeric broker.conf key
TUNER_FLAG = "tuner-flag"                  # pattern type: dcc.RadioItems of one true/false key
TUNER_TEXT = "tuner-text"                  # pattern type: dcc.Input of any other key (and the release picker)
TUNER_RELEASE_COMPARE = "tuner-release-compare"  # dcc.Dropdown: the release to compare the decision with
TUNER_RELEASE_DIFF = "tuner-release-diff"  # the two releases' decisions side by side
TUNER_KEY_VALUE = "tuner-key-value"        # pattern type: the value label beside it (clientside while dragging)
TUNER_FMT = "tuner-fmt"                    # dcc.Store: {key: {unit, scale, digits}} for clientside labels
TUNER_BASE = "tuner-base"                  # dcc.Store: changed keys not shown as controls + applied import nonce
TUNER_LINK = "tuner-link"                  # dcc.Store: the state a permalink opened the page with
TUNER_RESET = "tuner-reset"                # html.Button: reset to Pulsar 4.x defaults
TUNER_PRESET5 = "tuner-preset5"            # html.Button: Pulsar 5.0 defaults
TUNER_PRESET_BIGO = "tuner-preset-bigo"    # html.Button: BIGO's AvgShedder settings
TUNER_CONF_UPLOAD = "tuner-conf-upload"    # dcc.Upload: import a broker.conf
TUNER_CONF_EXPORT = "tuner-conf-export"    # html.Button: download the changed keys as broker.conf
TUNER_CONF_TEXT = "tuner-conf-text"        # html.Pre: the changed keys as broker.conf lines
TUNER_CONF_DOWNLOAD = "tuner-conf-download"  # dcc.Download
TUNER_ALERT = "tuner-alert"                # html.Div: problems with the state / engine
TUNER_DECISION = "tuner-decision"          # html.Div: the decision headline and reasons
TUNER_FIG_SCORES = "tuner-fig-scores"      # dcc.Graph: broker scores and lines
TUNER_FIG_PAIRS = "tuner-fig-pairs"        # dcc.Graph: AvgShedder pairs
TUNER_PAIRS_CARD = "tuner-pairs-card"      # html.Div: card of the pairs figure (hidden for other strategies)
TUNER_FIG_PLACEMENT = "tuner-fig-placement"  # dcc.Graph: where the first unloaded bundle goes
TUNER_PLACEMENT_CARD = "tuner-placement-card"  # html.Section: its card (class: placement-as-text / -as-figure)
TUNER_PLACEMENT_NOTE = "tuner-placement-note"  # html.Div: the placement in words when there are no scores
TUNER_PLAN = "tuner-plan"                  # html.Div: the unload plan table
TUNER_COMMANDS_STYLE = "tuner-commands-style"  # dcc.RadioItems: pulsar-admin lines or REST calls
TUNER_COMMANDS_EXPORT = "tuner-commands-export"  # html.Button: "Download commands" (the plan as a dry-run script)
TUNER_COMMANDS_DOWNLOAD = "tuner-commands-download"  # dcc.Download: the commands file
TUNER_FIG_PLAN = "tuner-fig-plan"          # dcc.Graph: broker throughput before / after, max/min ratios
TUNER_FIG_TOPICS = "tuner-fig-topics"      # dcc.Graph: per-bundle topic distribution
TUNER_SHOWN = "tuner-shown"                # dcc.Store: what each figure shows (content revs): unchanged ones are not re-sent
TUNER_CYCLES_N = "tuner-cycles-n"          # dcc.Input: N of "Run N cycles"
TUNER_CYCLES_RUN = "tuner-cycles-run"      # html.Button: run N cycles
TUNER_FIG_CYCLES = "tuner-fig-cycles"      # dcc.Graph: scores / hit counts per cycle
TUNER_CYCLES_TABLE = "tuner-cycles-table"  # html.Div: unloads per cycle
TUNER_WHY_TARGET = "tuner-why-target"      # dcc.Dropdown: broker or bundle to explain
TUNER_WHY_OUT = "tuner-why-out"            # html.Div: the explanation
TUNER_PERMALINK = "tuner-permalink"        # dcc.Input (read-only): the permalink
TUNER_PERMALINK_COPY = "tuner-permalink-copy"  # dcc.Clipboard
TUNER_QS = "tuner-qs"                      # dcc.Store: permalink query string (clientside writes the URL bar)
TUNER_EXPORT_FORMAT = "tuner-export-format"  # dcc.RadioItems: png / svg
TUNER_EXPORT_FIGS = "tuner-export-figs"    # html.Button: server-side Kaleido export of every figure
TUNER_REPORT = "tuner-report"              # html.Button: "Export report" (self-contained HTML)
TUNER_DOWNLOAD = "tuner-download"          # dcc.Download: figures zip
TUNER_REPORT_DOWNLOAD = "tuner-report-download"  # dcc.Download: report
TUNER_SOURCE_INFO = "tuner-source-info"    # html.Div: the snapshot the page shows
TUNER_STATE = "tuner-state"                # dcc.Store: the state the figures show (cycles, why-not, exports read it)
TUNER_CYCLES_STATE = "tuner-cycles-state"  # dcc.Store: TUNER_STATE relayed once cycles were run (re-run them)
TUNER_WHY_STATE = "tuner-why-state"        # dcc.Store: TUNER_STATE relayed while a why-not target is picked


# ---------------------------------------------------------------- tuner page: TransferShedder view
TUNER_TS_SUMMARY = "tuner-ts-summary"      # html.Div (in the decision card): std vs target, hit count k of n
TUNER_TS_HITS = "tuner-ts-hits"            # html.Span: the hit-count pips "●●○○ 2 of 4"
TUNER_TS_WALK = "tuner-ts-walk"            # html.Ul: TransferShedder's max -> min steps with their numbers


def nav_link(path: str) -> dict:
    """Id of the navigation link of one page."""
    return {"type": NAV_LINK, "path": path}


def page_source(page: str) -> dict:
    """Id of a page's ``dcc.Store`` mirroring the shell's SOURCE.

    Page callbacks take this as their Input instead of SOURCE: a callback mixing shell and page
    Inputs raises in the browser when the shell store changes on another page.
    """
    return {"type": PAGE_SOURCE, "page": page}


def page_import(page: str) -> dict:
    """Id of a page's ``dcc.Store`` mirroring the shell's CONF_IMPORT."""
    return {"type": PAGE_IMPORT, "page": page}


def tuner_key(key: str) -> dict:
    """Id of the control of one ``broker.conf`` key on the Tuner."""
    return {"type": TUNER_KEY, "key": key}


def tuner_flag(key: str) -> dict:
    """Id of the true/false control of one ``broker.conf`` key."""
    return {"type": TUNER_FLAG, "key": key}


def tuner_text(key: str) -> dict:
    """Id of the free-text control of one ``broker.conf`` key."""
    return {"type": TUNER_TEXT, "key": key}


def history_weight(key: str) -> dict:
    """Id of the History page's control of one resource weight (``key``: its ``broker.conf`` key)."""
    return {"type": HISTORY_WEIGHT, "key": key}


def tuner_key_value(key: str) -> dict:
    """Id of the value label of one key's control."""
    return {"type": TUNER_KEY_VALUE, "key": key}


# ---------------------------------------------------------------- simulator page
SIM_SCENARIO = "sim-scenario"              # dcc.Dropdown: shipped scenario or this session's uploaded one
SIM_SCENARIO_INFO = "sim-scenario-info"    # html.Div: what the scenario is (title, brokers, minutes)
SIM_START = "sim-start"                    # dcc.RadioItems: start from a scenario / the current snapshot (source picker)
SIM_START_BOX = "sim-start-box"            # html.Div: SIM_START and its label (hidden without a snapshot source)
SIM_START_SEEN = "sim-start-seen"          # dcc.Store(session): the last source the page saw (a new upload is simulated)
SIM_FINDING = "sim-finding"                # dcc.Dropdown: a field finding, run as a one-click A/B
SIM_FINDING_FIGURES = "sim-finding-figures"  # html.Div: the article's figures beside the run's (a finding's A/B)
SIM_FINDING_CARD = "sim-finding-card"      # html.Section: card of SIM_FINDING_FIGURES (hidden unless a finding's A/B is shown)
SIM_MINUTES = "sim-minutes"                # dcc.Input: simulated minutes (empty = the scenario's)
SIM_SEED = "sim-seed"                      # dcc.Input: run seed
SIM_RUN = "sim-run"                        # html.Button: run A and B (one background callback)
SIM_CANCEL = "sim-cancel"                  # html.Button: cancel the running job (the shell's JOB_CANCEL too)
SIM_PROGRESS = "sim-progress"              # html.Progress: the job's progress on the page (the shell strip too)
SIM_PROGRESS_TEXT = "sim-progress-text"    # html.Span: what the job is doing
SIM_SHED = "sim-shed"                      # pattern type: dcc.Dropdown, shedding strategy of one side
SIM_PLACE = "sim-place"                    # pattern type: dcc.Dropdown, placement strategy of one side
SIM_PRESET = "sim-preset"                  # pattern type: dcc.Dropdown, base config of one side
SIM_CONTROLS = "sim-controls"              # pattern type: html.Div, the key sliders of one side
SIM_EXTRA = "sim-extra"                    # pattern type: dcc.Textarea, other changed keys (broker.conf lines)
SIM_RELEASE = "sim-release"                # pattern type: dcc.Dropdown, the Pulsar release one side decides as
SIM_EXTRA_NOTE = "sim-extra-note"          # pattern type: html.Div, problems with those lines
SIM_KEY = "sim-key"                        # pattern type: dcc.Slider of one key of one side
SIM_KEY_VALUE = "sim-key-value"            # pattern type: its value label (clientside while dragging)
SIM_FMT = "sim-fmt"                        # dcc.Store: {key: {unit, scale, digits}} for the clientside labels
SIM_UPLOADED = "sim-uploaded"              # pattern type: the page's mirror of the shell's SCENARIO store
SIM_LINK = "sim-link"                      # dcc.Store: the state a permalink opened the page with
SIM_FORM = "sim-form"                      # dcc.Store: the state the controls were last rendered from
SIM_SAVED = "sim-saved"                    # dcc.Store(session): the form state, restored when coming back
SIM_SEEN = "sim-seen"                      # dcc.Store(session): the last uploaded scenario the page switched to
SIM_AUTORUN = "sim-autorun"                # dcc.Store: nonce that starts a run (a permalink without cached results)
SIM_RESULT = "sim-result"                  # dcc.Store: {"key"} of the A/B results in the server cache
SIM_ALERT = "sim-alert"                    # html.Div: problems (bad scenario, bad keys, expired results)
SIM_HEADLINE = "sim-headline"              # html.Div: what was run (scenario, A vs B)
SIM_SUMMARY = "sim-summary"                # html.Div: the summary table, A and B side by side
SIM_FIG_A = "sim-fig-a"                    # dcc.Graph: run A per broker (score seen vs real usage, unloads)
SIM_FIG_B = "sim-fig-b"                    # dcc.Graph: run B per broker
SIM_FIG_CLUSTER = "sim-fig-cluster"        # dcc.Graph: max/min ratios, CPU range, cumulative unloads (A and B)
SIM_FIG_STD = "sim-fig-std"                # dcc.Graph: TransferShedder load std, target, hit count
SIM_STD_CARD = "sim-std-card"              # html.Section: card of SIM_FIG_STD (hidden without TransferShedder)
SIM_EVENT_KINDS = "sim-event-kinds"        # dcc.Dropdown (multi): event kinds shown in the log
SIM_EVENT_RUN = "sim-event-run"            # dcc.RadioItems: A / B / both
SIM_EVENTS = "sim-events"                  # html.Div: the event log table
SIM_SWEEP_X = "sim-sweep-x"                # dcc.Dropdown: sweep key on x
SIM_SWEEP_X_VALUES = "sim-sweep-x-values"  # dcc.Input: its values
SIM_SWEEP_Y = "sim-sweep-y"                # dcc.Dropdown: sweep key on y
SIM_SWEEP_Y_VALUES = "sim-sweep-y-values"  # dcc.Input: its values
SIM_SWEEP_RUN = "sim-sweep-run"            # html.Button: run the grid (background)
SIM_SWEEP_RESULT = "sim-sweep-result"      # dcc.Store: {"key"} of the sweep in the server cache
SIM_SWEEP_FIG = "sim-sweep-fig"            # dcc.Graph: heatmaps of unloads and settling minute (click → run A)
SIM_SWEEP_NOTE = "sim-sweep-note"          # html.Div: what the sweep ran / problems
SIM_PERMALINK = "sim-permalink"            # dcc.Input (read-only): the permalink
SIM_PERMALINK_COPY = "sim-permalink-copy"  # dcc.Clipboard
SIM_QS = "sim-qs"                          # dcc.Store: permalink query string (clientside writes the URL bar)
SIM_EXPORT_FORMAT = "sim-export-format"    # dcc.RadioItems: png / svg
SIM_EXPORT_FIGS = "sim-export-figs"        # html.Button: server-side Kaleido export of every figure
SIM_REPORT = "sim-report"                  # html.Button: "Export report" (self-contained HTML)
SIM_DOWNLOAD = "sim-download"              # dcc.Download: figures zip
SIM_REPORT_DOWNLOAD = "sim-report-download"  # dcc.Download: report


def sim_side(kind: str, side: str) -> dict:
    """Id of one side's (``"a"`` / ``"b"``) control of type ``kind`` (SIM_SHED, SIM_PLACE, …)."""
    return {"type": kind, "side": side}


def sim_key(side: str, key: str) -> dict:
    """Id of the slider of one ``broker.conf`` key of one side."""
    return {"type": SIM_KEY, "side": side, "key": key}


def sim_key_value(side: str, key: str) -> dict:
    """Id of the value label beside that slider."""
    return {"type": SIM_KEY_VALUE, "side": side, "key": key}


def sim_uploaded() -> dict:
    """Id of the Simulator's mirror of the shell's SCENARIO store (see :func:`page_source`)."""
    return {"type": SIM_UPLOADED, "page": "simulator"}


# ---------------------------------------------------------------- history page
HISTORY_DATASET = "history-dataset"              # dcc.Dropdown: the history dataset (path)
HISTORY_RANGE = "history-range"                  # dcc.DatePickerRange: the time range (UTC days)
HISTORY_RESOLUTION = "history-resolution"        # dcc.RadioItems: minute / hour / day
HISTORY_WEIGHT = "history-weight"                # pattern type: dcc.Input of one resource weight (its broker.conf key)
HISTORY_INFO = "history-info"                    # html.Div: what the dataset holds
HISTORY_AGG_GRAPH = "history-agg-graph"          # dcc.Graph: aggregates over time (zoomable)
HISTORY_HOT_GRAPH = "history-hot-graph"          # dcc.Graph: hottest brokers
HISTORY_AGG_NOTE = "history-agg-note"            # html.Div: where the aggregates came from
HISTORY_STRATEGY = "history-strategy"            # dcc.Dropdown: strategy to backtest
HISTORY_OVERRIDES = "history-overrides"          # dcc.Textarea: KEY=VALUE broker.conf overrides
HISTORY_RELEASE = "history-release"              # dcc.Dropdown: the Pulsar release the backtest decides as
HISTORY_BUNDLES_MODE = "history-bundles-mode"    # dcc.RadioItems: auto / synthetic bundles
HISTORY_X_KEY = "history-x-key"                  # dcc.Dropdown: sweep key on x
HISTORY_X_VALUES = "history-x-values"            # dcc.Input: sweep values on x
HISTORY_Y_KEY = "history-y-key"                  # dcc.Dropdown: sweep key on y
HISTORY_Y_VALUES = "history-y-values"            # dcc.Input: sweep values on y
HISTORY_RUN_AGG = "history-run-agg"              # html.Button: compute aggregates with Spark
HISTORY_RUN_BACKTEST = "history-run-backtest"    # html.Button: run the backtest (Spark, background)
HISTORY_RUN_SWEEP = "history-run-sweep"          # html.Button: run the sweep (Spark, background)
HISTORY_CANCEL = "history-cancel"                # html.Button: cancel the running job
HISTORY_PROGRESS = "history-progress"            # html.Progress: Spark stage progress
HISTORY_PROGRESS_TEXT = "history-progress-text"  # html.Span: what the job is doing
HISTORY_JOB = "history-job"                      # dcc.Store: summary of the last finished job
HISTORY_ALERT = "history-alert"                  # html.Div: problems (bad input, Spark unavailable)
HISTORY_BACKTEST_GRAPH = "history-backtest-graph"  # dcc.Graph: fires per day + timeline (click → Tuner)
HISTORY_PAIRS = "history-pairs"                  # html.Div: fires per broker pair
HISTORY_SWEEP_GRAPH = "history-sweep-graph"      # dcc.Graph: sweep heatmap
HISTORY_BUNDLE_GRAPH = "history-bundle-graph"    # dcc.Graph: per-bundle distribution
HISTORY_BUNDLE_NOTE = "history-bundle-note"      # html.Div: where the bundle figure came from
HISTORY_GOTO = "history-goto"                    # dcc.Location: navigation to the Tuner
HISTORY_TUNER_LINK = "history-tuner-link"        # html.Div: link to the snapshot just opened
HISTORY_AGREE_CONF = "history-agree-conf"        # dcc.Upload: the cluster's broker.conf (predicted vs actual)
HISTORY_AGREE_TIMELINE = "history-agree-timeline"  # dcc.Upload: a timeline of snapshots (instead of the range)
HISTORY_AGREE_FILES = "history-agree-files"      # html.Div: the files chosen for the comparison
HISTORY_AGREE_RUN = "history-agree-run"          # html.Button: compare predicted and actual
HISTORY_AGREE_SUMMARY = "history-agree-summary"  # html.Div: agreement figures and notes
HISTORY_AGREE_GRAPH = "history-agree-graph"      # dcc.Graph: unloads per hour and shedding brokers, side by side
HISTORY_AGREE_TABLE = "history-agree-table"      # html.Div: disagreeing unloads (timeline) / hours
HISTORY_AGREE_REPORT = "history-agree-report"    # html.Button: download the predicted-vs-actual report
HISTORY_AGREE_DOWNLOAD = "history-agree-download"  # dcc.Download: the report file

# ---------------------------------------------------------------- history page: recommend a setting
RECOMMEND_CARD = "recommend-card"                # html.Div: the History page's Recommend card
RECOMMEND_OBJECTIVE = "recommend-objective"      # dcc.Textarea: goals and constraints ("min unloads_per_day; ...")
RECOMMEND_KEYS = "recommend-keys"                # dcc.Dropdown (multi): the keys to search
RECOMMEND_TRIALS = "recommend-trials"            # dcc.Input: complete trials the study should hold
RECOMMEND_HOLDOUT = "recommend-holdout"          # dcc.Input: days held out at the end of the range
RECOMMEND_RUN = "recommend-run"                  # html.Button: run (or continue) the study (background)
RECOMMEND_CANCEL = "recommend-cancel"            # html.Button: cancel the running study (its trials stay)
RECOMMEND_PROGRESS = "recommend-progress"        # html.Progress: trials done
RECOMMEND_PROGRESS_TEXT = "recommend-progress-text"  # html.Span: what the study is doing
RECOMMEND_JOB = "recommend-job"                  # dcc.Store: {"ok", "key" | "error"} of the last study run
RECOMMEND_ALERT = "recommend-alert"              # html.Div: problems (bad objective, ...) and the verdict
RECOMMEND_EXPLAIN = "recommend-explain"          # html.Div: the recommendation in words, measures side by side
RECOMMEND_PARETO = "recommend-pareto"            # dcc.Graph: trials on the objective's axes, current marked
RECOMMEND_IMPORTANCE = "recommend-importance"    # dcc.Graph: which keys matter
RECOMMEND_ACTIONS = "recommend-actions"          # html.Div: open in Tuner / compare in Simulator links
RECOMMEND_CONF = "recommend-conf"                # html.Pre: the changed keys as broker.conf lines
RECOMMEND_CONF_EXPORT = "recommend-conf-export"  # html.Button: download the broker.conf lines
RECOMMEND_REPORT = "recommend-report"            # html.Button: download the HTML report
RECOMMEND_DOWNLOAD = "recommend-download"        # dcc.Download: the broker.conf lines or the report

# ---------------------------------------------------------------- simulator page: recommend a setting (same roles)
SIM_RECOMMEND_CARD = "sim-recommend-card"            # html.Div: the Simulator's Recommend card
SIM_RECOMMEND_OBJECTIVE = "sim-recommend-objective"  # dcc.Textarea: goals and constraints (scenario measures)
SIM_RECOMMEND_SEARCH = "sim-recommend-search"        # dcc.RadioItems: run A's strategy's keys / any strategy
SIM_RECOMMEND_KEYS = "sim-recommend-keys"            # dcc.Dropdown (multi): the keys of run A's strategy to search
SIM_RECOMMEND_TRIALS = "sim-recommend-trials"        # dcc.Input: complete trials the study should hold
SIM_RECOMMEND_SEEDS = "sim-recommend-seeds"          # dcc.Input: held-out seeds
SIM_RECOMMEND_RUN = "sim-recommend-run"              # html.Button: run (or continue) the study (background)
SIM_RECOMMEND_CANCEL = "sim-recommend-cancel"        # html.Button: cancel it (its finished trials stay)
SIM_RECOMMEND_PROGRESS = "sim-recommend-progress"    # html.Progress: trials done
SIM_RECOMMEND_PROGRESS_TEXT = "sim-recommend-progress-text"  # html.Span: what the study is doing
SIM_RECOMMEND_JOB = "sim-recommend-job"              # dcc.Store: {"ok", "key" | "error"} of the last study run
SIM_RECOMMEND_ALERT = "sim-recommend-alert"          # html.Div: problems and the verdict
SIM_RECOMMEND_EXPLAIN = "sim-recommend-explain"      # html.Div: the recommendation in words, measures side by side
SIM_RECOMMEND_PARETO = "sim-recommend-pareto"        # dcc.Graph: trials on the objective's axes, current marked
SIM_RECOMMEND_IMPORTANCE = "sim-recommend-importance"  # dcc.Graph: which keys matter
SIM_RECOMMEND_ACTIONS = "sim-recommend-actions"      # html.Div: open in Tuner / compare in the Simulator links
SIM_RECOMMEND_CONF = "sim-recommend-conf"            # html.Pre: the changed keys as broker.conf lines
SIM_RECOMMEND_CONF_EXPORT = "sim-recommend-conf-export"  # html.Button: download the broker.conf lines
SIM_RECOMMEND_REPORT = "sim-recommend-report"        # html.Button: download the HTML report
SIM_RECOMMEND_DOWNLOAD = "sim-recommend-download"    # dcc.Download: the broker.conf lines or the report


# ---------------------------------------------------------------- bundles page
BUNDLES_SOURCE = "bundles-source"                # dcc.Dropdown: generated / snapshot sample / uploaded file
BUNDLES_UPLOAD = "bundles-upload"                # dcc.Upload: topics list text, broker-stats JSON, snapshot
BUNDLES_ALERT = "bundles-alert"                  # html.Div: problems with the input
BUNDLES_SOURCE_INFO = "bundles-source-info"      # html.Div: what the source holds
BUNDLES_SOURCE_BOX = "bundles-source-box"        # html.Div: namespace + options of a file/sample source
BUNDLES_GEN = "bundles-gen"                      # html.Div: the generated-topic fields (hidden otherwise)
BUNDLES_GEN_TOPIC = "bundles-gen-topic"          # dcc.Input: generated topic name
BUNDLES_GEN_NAMESPACE = "bundles-gen-namespace"  # dcc.Input: generated topic's namespace
BUNDLES_GEN_RATE = "bundles-gen-rate"            # dcc.Input: msg/s per partition (optional)
BUNDLES_GEN_THROUGHPUT = "bundles-gen-throughput"  # dcc.Input: KB/s per partition (optional)
BUNDLES_NAMESPACE = "bundles-namespace"          # dcc.Dropdown: namespace of the source
BUNDLES_OPTIONS = "bundles-options"              # dcc.Checklist: input layout / expand base names
BUNDLES_PARTITIONS = "bundles-partitions"        # dcc.Slider: partitions of the generated topic
BUNDLES_PARTITIONS_LABEL = "bundles-partitions-label"  # html.Span: slider value while dragging
BUNDLES_BUNDLES = "bundles-bundles"              # dcc.Slider: number of (initial) bundles
BUNDLES_BUNDLES_LABEL = "bundles-bundles-label"  # html.Span: slider value while dragging
BUNDLES_VIVO = "bundles-vivo"                    # html.Button: the vivo 30 vs 120 comparison
BUNDLES_COMPARE = "bundles-compare"              # html.Div: the comparison side by side
BUNDLES_LAYOUT_GRAPH = "bundles-layout-graph"    # dcc.Graph: one bar per bundle
BUNDLES_MAXMEAN = "bundles-maxmean"              # html.Div: the headline max/mean line
BUNDLES_METRICS = "bundles-metrics"              # html.Div: distribution metrics table
BUNDLES_AUTO = "bundles-auto"                    # html.Div: bundles the auto-split check picks
BUNDLES_ALGORITHM = "bundles-algorithm"          # dcc.Dropdown: defaultNamespaceBundleSplitAlgorithm
BUNDLES_AUTO_ENABLED = "bundles-auto-enabled"    # dcc.Checklist: loadBalancerAutoBundleSplitEnabled
BUNDLES_SPLIT_BUNDLE = "bundles-split-bundle"    # dcc.Dropdown: bundle whose split is previewed
BUNDLES_SPLIT_POSITIONS = "bundles-split-positions"  # dcc.Input: specified_positions_divide positions
BUNDLES_SPLIT_FORCE = "bundles-split-force"      # dcc.Checklist: specified_positions_divide force
BUNDLES_SPLIT_GRAPH = "bundles-split-graph"      # dcc.Graph: the bundle's hashes and each algorithm's cuts
BUNDLES_SPLIT_TABLE = "bundles-split-table"      # html.Div: label, boundaries, reason per algorithm
BUNDLES_THRESHOLD = "bundles-threshold"          # pattern type: dcc.Slider of one split key
BUNDLES_THRESHOLD_VALUE = "bundles-threshold-value"  # pattern type: html.Span with its value


def bundles_threshold(key: str) -> dict:
    """Id of the slider of one auto-split ``broker.conf`` key."""
    return {"type": BUNDLES_THRESHOLD, "key": key}


def bundles_threshold_value(key: str) -> dict:
    """Id of the value label beside that slider (updated clientside while dragging)."""
    return {"type": BUNDLES_THRESHOLD_VALUE, "key": key}


# ---------------------------------------------------------------- pegasus page
PEGASUS_SAMPLE = "pegasus-sample"              # dcc.Dropdown: shipped samples
PEGASUS_UPLOAD = "pegasus-upload"              # dcc.Upload: shell text or JSON
PEGASUS_SOURCE = "pegasus-source"              # dcc.Store: the loaded cluster (sample or upload)
PEGASUS_ALERT = "pegasus-alert"                # html.Div: problems with the input
PEGASUS_OPTIONS = "pegasus-options"            # dcc.Checklist: balancer toggles
PEGASUS_SEED = "pegasus-seed"                  # dcc.Input: disk-choice seed (empty = first disk)
PEGASUS_SUMMARY = "pegasus-summary"            # html.Div: stop reason, operation counts
PEGASUS_HEALTH = "pegasus-health"              # html.Div: partition health table
PEGASUS_TABLE = "pegasus-table"                # dcc.Dropdown: cluster or one table
PEGASUS_STEP = "pegasus-step"                  # dcc.Slider: proposals applied
PEGASUS_STEP_LABEL = "pegasus-step-label"      # html.Div: the proposal at the current step
PEGASUS_COUNTS = "pegasus-counts"              # dcc.Graph: per-node counts before / at step
PEGASUS_SKEW = "pegasus-skew"                  # dcc.Graph: skew along the plan
PEGASUS_PROPOSALS = "pegasus-proposals"        # html.Div: the proposal list
PEGASUS_DOWNLOAD_CSV = "pegasus-download-csv"  # html.Button
PEGASUS_DOWNLOAD_JSON = "pegasus-download-json"  # html.Button
PEGASUS_DOWNLOAD = "pegasus-download"          # dcc.Download


def all_ids() -> dict[str, str]:
    """Every string id defined here (name -> id); used by the start-up consistency check."""
    return {k: v for k, v in globals().items() if k.isupper() and isinstance(v, str)}
