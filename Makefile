# Every target works on a fresh clone with only python3 and make.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
RUN_STAMP := $(VENV)/.installed-run
STAMP := $(VENV)/.installed

.PHONY: run demo test lint bench bench-full soak screenshots clean

# `make run` installs what running needs (the dashboard, the CLI, the MCP server); the other
# targets add the test and lint tools
$(RUN_STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[mcp]'
	touch $(RUN_STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP) $(RUN_STAMP)

# the sample jobs and the dashboard; then how to go on
run demo: $(RUN_STAMP)
	$(BIN)/hermes-procs demo
	@echo "The command is $(BIN)/hermes-procs (or run . $(BIN)/activate, then hermes-procs), e.g.:"
	@echo "    $(BIN)/hermes-procs ls              # the jobs"
	@echo "    $(BIN)/hermes-procs web             # the same dashboard in a browser (open the printed URL)"
	@echo "    $(BIN)/python examples/agent_loop.py   # a scripted agent; its jobs appear in the dashboard (README)"
	@echo "    $(BIN)/hermes-procs demo --stop     # stop the sample jobs (they run on after the dashboard closes)"

# ruff, import-linter (the layer contracts in pyproject.toml), mypy and the size rule: see tools/lint.py
lint: $(STAMP)
	$(BIN)/python tools/lint.py

# make test lints first: the layer contracts, ruff, mypy (strict for core/) and sizes, as `make lint`.
# Three workers on the 2-core CI machine: much of the suite waits on real processes, timeouts and
# servers (-n 3: ~410 s of pytest here against ~460 s with -n 2)
test: $(STAMP)
	sh tools/system-deps.sh
	$(BIN)/python tools/lint.py import-linter ruff mypy sizes
	$(BIN)/python -m pytest -n 3 --dist worksteal -q --durations=15

bench: $(STAMP)
	$(BIN)/python -m bench

bench-full: $(STAMP)
	$(BIN)/python -m bench --full

# Not in `make test`: minutes of spawn/kill/wait/attach churn with injected faults (SOAK_MINUTES=2).
soak: $(STAMP)
	$(BIN)/python tools/soak.py --minutes $(or $(SOAK_MINUTES),2)

screenshots: $(STAMP)
	$(BIN)/python -m hermes_procs.tui.screenshots
	sh tools/system-deps.sh
	HERMES_PROCS_SCREENSHOT_DIR=screenshots $(BIN)/python -m pytest -q -p no:cacheprovider tests/test_web_browser.py

clean:
	rm -rf $(VENV) build *.egg-info
