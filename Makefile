# Shedlab — two commands: `make run` (serve the app) and `make test` (run every test).
# Both set up what they need: a virtualenv with the Python dependencies and, for tests,
# Chromium + chromedriver (browser tests) and a Java runtime (Spark) from apt when missing.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
HOST ?= 127.0.0.1
PORT ?= 8050

.PHONY: run test venv dev-venv system-deps bench screenshots clean lint realcluster realcluster-deps oracle-build oracle

$(VENV)/.installed: requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip >/dev/null 2>&1 || true
	$(PIP) install -q -r requirements.txt
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed requirements-dev.txt
	$(PIP) install -q -r requirements-dev.txt
	touch $@

venv: $(VENV)/.installed
dev-venv: $(VENV)/.installed-dev

# Java for Spark, Chromium + chromedriver for browser tests and Kaleido exports.
system-deps:
	@bash scripts/system-deps.sh

run: $(VENV)/.installed
	@bash scripts/system-deps.sh --java-only || true
	HOST=$(HOST) PORT=$(PORT) $(PY) app.py

test: $(VENV)/.installed-dev system-deps realcluster-deps oracle-build
	$(PY) -m pytest

# the real-cluster lab: the released Pulsar jars (Maven Central, kept in ~/.m2) for realcluster/
REALCLUSTER_CP := realcluster/target/classpath.txt
$(REALCLUSTER_CP): realcluster/pom.xml realcluster/settings.xml scripts/realcluster-deps.sh
	@bash scripts/realcluster-deps.sh
realcluster-deps: $(REALCLUSTER_CP)

# record every scenario on a real 3-broker Pulsar (about 8 minutes each) into REALCLUSTER_OUT
REALCLUSTER_OUT ?= samples/realcluster
realcluster: $(VENV)/.installed-dev system-deps realcluster-deps
	$(PY) -m realcluster all --out $(REALCLUSTER_OUT)


# The oracle (verification only): Pulsar's released pulsar-broker per release line, resolved by Maven from Maven
# Central, and our driver compiled against each (oracle/target/VERSION). Skips lines already built.
oracle-build: system-deps
	bash oracle/build.sh

# The long campaign: N generated inputs per strategy per line through the engine and Pulsar's classes, then
# docs/fidelity.md regenerated from it (oracle/campaign.json). `make test` runs a 2,000-input sample per strategy per line.
N ?= 100000
oracle: $(VENV)/.installed-dev oracle-build
	$(PY) -m oracle campaign --n $(N); status=$$?; $(PY) -m oracle docs; exit $$status

bench: $(VENV)/.installed-dev
	@for f in bench/bench_*.py; do echo "== $$f"; $(PY) $$f || exit 1; done

# refresh the README's screenshots (docs/screenshots/) from the browser tests
screenshots: $(VENV)/.installed-dev system-deps
	SHEDLAB_UPDATE_SCREENSHOTS=1 $(PY) -m pytest tests/e2e/test_tuner_e2e.py tests/e2e/test_simulator_e2e.py \
		tests/e2e/test_recommend_e2e.py

clean:
	rm -rf $(VENV) .pytest_cache .shedlab-cache
