# The README's two commands are `make run` and `make test`; both set up .venv first (idempotent).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The installed torch's version, read from its metadata: importing torch before numpy is installed prints
# "Failed to initialize NumPy", a warning about nothing the user did.
TORCH_VERSION := $(BIN)/python -c 'from importlib.metadata import version; print(version("torch").split("+")[0])'
# setuptools' banners while it builds the editable install ("Editable installation ...") are about setuptools, not
# the user's set-up: its warnings (UserWarning subclasses) are silenced for the install commands only.
QUIET_BUILD := PYTHONWARNINGS=ignore::UserWarning

.PHONY: help setup run test test-fast test-all test-wheel test-cluster test-zoo lint typecheck bench spec test-compat docs

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

setup: $(STAMP) ## Create .venv with torch (CPU 2.13.0 when none is installed) and the project

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# Install torch first, pinned: a bare requirement would let pip pick a multi-GB CUDA build.
	$(BIN)/python -c 'from importlib.metadata import version; version("torch")' 2>/dev/null || $(BIN)/pip install -q torch==2.13.0
	$(QUIET_BUILD) $(BIN)/pip install -q -e ".[test,hpo,video,loggers]" "torch==$$($(TORCH_VERSION))"
	# hydra-optuna-sweeper (optuna < 3) was the hpo extra before the project's own sweeper: gone from older .venvs
	$(BIN)/pip uninstall -q -y hydra-optuna-sweeper 2>/dev/null || true
	touch $(STAMP)

run: setup ## Main job: PPO on CartPole-v1, lit_sb3 and SB3 side by side x 6 seeds (paired), then the report
	OMP_NUM_THREADS=1 $(BIN)/python run.py -m algo=ppo env=CartPole backend=lit,sb3 seed=0,1,2,3,4,5 budget=20000 sweep=make_run
	$(BIN)/python -m lit_bench.cli.report results/runs/make_run --out results/runs/make_run/report

# One pytest worker per core (pytest-xdist), a test file's tests on one worker: every test runs in its own temporary
# directory, so none shares a file with another; on 2 cores the suite takes about half the wall time of one worker.
test: setup ## Default test suite (unit, parity, API, behaviour, fast learning tests)
	$(BIN)/pytest -n auto --dist loadfile -m "not slow and not cluster"

# The inner loop: lit_sb3's unit tests, its architecture rules and its per-update parity with SB3, and lit_bench's
# tests that start no run (its layers, its statistics, a run's skip / resume / fresh decision); no learning runs, no
# whole-run parity; under 2 minutes on 2 cores.
FAST_TESTS := tests/lit_sb3/common tests/lit_sb3/test_spec.py tests/lit_sb3/test_architecture.py \
              tests/lit_sb3/test_lightning_door.py tests/lit_sb3/algorithms/test_onpolicy_parity.py \
              tests/lit_sb3/algorithms/test_offpolicy_parity.py tests/lit_sb3/algorithms/test_contrib_onpolicy_parity.py \
              tests/lit_sb3/algorithms/test_contrib_offpolicy_parity.py tests/lit_sb3/algorithms/test_ars_parity.py \
              tests/lit_bench/test_layers.py tests/lit_bench/test_stats.py tests/lit_bench/test_train.py

test-fast: setup ## Inner loop, under 2 min: unit, architecture and per-update parity tests
	OMP_NUM_THREADS=1 $(BIN)/pytest -q -m "not slow and not learning and not cluster" $(FAST_TESTS)

test-all: setup ## Every test, including the slow learning runs (not the cluster tests)
	$(BIN)/pytest -m "not cluster"

test-cluster: setup ## Real SLURM (one node, sbatch) and Ray (ray start --head) clusters: started, tested, stopped
	$(QUIET_BUILD) $(BIN)/pip install -q -e ".[cluster]" "torch==$$($(TORCH_VERSION))"
	$(BIN)/pytest -m cluster -p no:cacheprovider; status=$$?; bash tools/slurm_test_cluster.sh stop >/dev/null 2>&1; exit $$status

test-wheel: setup ## The installed harness: wheel -> fresh venv -> lit-bench and the report from an empty dir
	OMP_NUM_THREADS=1 $(BIN)/pytest -m wheel

test-zoo: setup ## The RL Zoo's own scripts (rl_zoo3, the zoo extra) on lit_sb3's classes at tiny budgets (~20-30 min)
	$(QUIET_BUILD) $(BIN)/pip install -q -e ".[zoo]" "torch==$$($(TORCH_VERSION))"
	OMP_NUM_THREADS=1 $(BIN)/pytest -m zoo tests/zoo -p no:cacheprovider

lint: setup ## The pre-commit hooks on every file: ruff check and ruff format (fails on any change they would make)
	$(QUIET_BUILD) $(BIN)/pip install -q -e ".[dev]" "torch==$$($(TORCH_VERSION))"
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/pre-commit run --all-files --show-diff-on-failure

typecheck: setup ## mypy on lit_sb3 and lit_bench (settings and baseline: pyproject.toml)
	$(BIN)/mypy

docs: setup ## The docs site (docs/ -> docs/_build/html), strict: any warning fails; the generated reference checked
	$(QUIET_BUILD) $(BIN)/pip install -q -e ".[docs]" "torch==$$($(TORCH_VERSION))"
	$(BIN)/python tools/docs_reference.py --check
	$(BIN)/sphinx-build -W --keep-going -q -b html docs docs/_build/html
	@echo "docs: docs/_build/html/index.html"

bench: setup ## Throughput of lit_sb3 vs SB3 (env steps/s and ratio)
	$(BIN)/python benchmarks/throughput.py

spec: setup ## Conformance with the API spec (tests/lit_sb3/spec.py encodes it)
	$(BIN)/pytest -q tests/lit_sb3/test_spec.py

# The oldest and newest supported Lightning / SB3 / sb3-contrib (pyproject.toml's pins), each in its own venv.
# hydra14: Hydra 1.4 (a release candidate until 1.4.0 ships) with the newest Lightning, SB3 and Optuna of the day.
COMPAT := oldest:lightning==2.6.0,stable-baselines3==2.7.0,sb3-contrib==2.7.0 \
          newest:lightning==2.6.6,stable-baselines3==2.9.2,sb3-contrib==2.9.2 \
          hydra14:hydra-core==1.4.0rc3,omegaconf==2.4.1rc1,hydra-joblib-launcher==1.4.0rc3,lightning==2.6.6,stable-baselines3==2.9.2,sb3-contrib==2.9.2,optuna==5.1.0
COMPAT_TESTS := tests/lit_sb3/test_lean_loops.py tests/lit_sb3/test_lightning_features.py \
                tests/lit_sb3/test_lightning_door.py tests/lit_sb3/common/test_exact_resume.py \
                tests/lit_sb3/common/test_training_mode.py tests/lit_sb3/test_spec.py \
                tests/lit_sb3/algorithms/test_whole_run_parity.py
# hydra14 (newest's Lightning and SB3, so not COMPAT_TESTS again): the harness's own calls warn of nothing on Hydra 1.4,
# its plugins are found, sweeps, studies, plans and one-line errors work
HYDRA_TESTS := tests/lit_bench/test_hydra_versions.py tests/lit_bench/test_run_plan.py tests/lit_bench/test_checks.py

test-compat: ## Lightning-facing and parity tests on the oldest and newest supported versions, and on Hydra 1.4 (.venv-compat/)
	@failed=""; for entry in $(COMPAT); do \
	  name=$${entry%%:*}; pins=$$(echo $${entry#*:} | tr ',' ' '); venv=.venv-compat/$$name; \
	  if [ ! -f $$venv/.installed ] || [ "$$(cat $$venv/.installed)" != "$$pins pytest-xdist" ]; then \
	    $(PY) -m venv $$venv && $$venv/bin/pip install -q torch==2.13.0 && \
	    $(QUIET_BUILD) $$venv/bin/pip install -q -e . "pytest>=8" "pytest-xdist>=3.6" $$pins "torch==2.13.0" && echo "$$pins pytest-xdist" > $$venv/.installed \
	    || exit 1; fi; \
	  echo "== $$name: $$pins"; \
	  tests="$(COMPAT_TESTS)"; if [ $$name = hydra14 ]; then tests="$(HYDRA_TESTS)"; fi; \
	  OMP_NUM_THREADS=1 $$venv/bin/pytest -q -n auto --dist loadfile -m "not slow and not learning" $$tests || failed="$$failed $$name"; \
	done; if [ -n "$$failed" ]; then echo "test-compat failed on:$$failed"; exit 1; fi
