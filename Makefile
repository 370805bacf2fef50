# The README's two commands are `make run` and `make test`; both set up .venv first (idempotent).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: help setup run test test-all test-zoo lint bench spec

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

setup: $(STAMP) ## Create .venv with torch (CPU 2.13.0 when none is installed) and the project

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# Install torch first, pinned: a bare requirement would let pip pick a multi-GB CUDA build.
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e ".[test,hpo,video]" "torch==$$($(BIN)/python -c 'import torch; print(torch.__version__.split("+")[0])')"
	touch $(STAMP)

run: setup ## Main job: Hydra multirun (PPO, A2C on CartPole-v1 x 3 seeds), then the report with SB3 references
	OMP_NUM_THREADS=1 $(BIN)/python run.py -m algo=ppo,a2c env=CartPole seed=0,1,2 budget=20000 sweep=make_run
	$(BIN)/python -m lit_bench.report results/runs/make_run --out results/runs/make_run/report

test: setup ## Default test suite (unit, parity, API, behaviour, fast learning tests)
	$(BIN)/pytest -m "not slow"

test-all: setup ## Every test, including the slow learning runs
	$(BIN)/pytest

# The RL Zoo needs optuna >= 3, which the hpo extra's hydra-optuna-sweeper refuses: its own venv until they agree.
ZOO_VENV := .venv-zoo
test-zoo: ## The RL Zoo's own scripts (rl_zoo3) on lit_sb3's classes, at tiny budgets (own venv .venv-zoo, ~20 min)
	test -x $(ZOO_VENV)/bin/python || $(PY) -m venv $(ZOO_VENV)
	$(ZOO_VENV)/bin/python -c "import torch" 2>/dev/null || $(ZOO_VENV)/bin/pip install -q torch==2.13.0
	$(ZOO_VENV)/bin/pip install -q -e ".[test,video,zoo]" "torch==$$($(ZOO_VENV)/bin/python -c 'import torch; print(torch.__version__.split("+")[0])')"
	OMP_NUM_THREADS=1 $(ZOO_VENV)/bin/pytest -m zoo tests/zoo

lint: setup ## ruff
	$(BIN)/ruff check lit_sb3 lit_bench tests benchmarks

bench: setup ## Throughput of lit_sb3 vs SB3 (env steps/s and ratio)
	$(BIN)/python benchmarks/throughput.py

spec: setup ## Conformance with the API spec in ../shared
	$(BIN)/python ../shared/tools/spec_check.py
