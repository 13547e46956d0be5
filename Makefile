# tfspeed: the study from one command. `make help` lists the targets.
SHELL := /bin/bash
PYTHON ?= $(shell for p in python3.13 python3.12 python3.11 python3; do \
	  command -v $$p >/dev/null && $$p -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null \
	  && { echo $$p; break; }; done)
VENV := .venv
BIN := $(VENV)/bin
SNAKEMAKE := $(BIN)/snakemake
CORES ?= 2
CONFIG ?= presets/own_model.yaml
ARGS ?=
# pytest-xdist workers for the unit tests (make test); the tests that run studies and time them
# (end-to-end, browser, cluster) always run one at a time
TEST_WORKERS ?= auto

.PHONY: help venv doctor quick study own report publish compare-runs retry-failed unlock test test-fast doctor-tests lint format reference architecture republish readme-answer lock retabulate selfbench dimension decisions redecide replan sides-check settle-check components duet-cost pair-probe slow-state measure-fork

##@ For users

help:  ## these lists, by group: for users, for developers, research probes
	@awk '/^##@ /{printf "\n%s\n", substr($$0, 5); next} \
	  /^[a-z-]+:.*## /{t = $$0; sub(/:.*/, "", t); d = $$0; sub(/^[^#]*## /, "", d); \
	  printf "  make %-14s %s\n", t, d}' $(MAKEFILE_LIST)

$(VENV)/.installed: requirements.txt
	@test -n "$(PYTHON)" || { echo "tfspeed needs Python >= 3.11 for the workflow itself (Snakemake 9); set PYTHON=/path/to/python3.11" >&2; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --disable-pip-version-check -q -r requirements.txt
	touch $@

venv: $(VENV)/.installed  ## the workflow's own environment (.venv/): Snakemake, pandas, ...

doctor: venv  ## can make study run here? platform, each env's Python, disk (exit 1 if not); the tests' tools as information. Other studies: ARGS="--configfile <preset>"
	$(BIN)/python scripts/doctor.py --for study -- $(ARGS)

quick: venv  ## the quick preset (tests/quick.yaml) into build/quick/results/
	$(SNAKEMAKE) --cores $(CORES) --directory build/quick --configfile $(CURDIR)/tests/quick.yaml $(ARGS)

study: venv  ## the default study (config.yaml): results/report.html, study.xlsx, tables/cells.csv
	@$(BIN)/python scripts/doctor.py --for study --quiet -- $(ARGS)
	$(SNAKEMAKE) --cores $(CORES) $(ARGS)

own: venv  ## the factor grid on your own model: make own CONFIG=my_model.yaml (template presets/own_model.yaml) into build/own/<name>/results/
	$(SNAKEMAKE) --cores $(CORES) --directory build/own/$(basename $(notdir $(CONFIG))) --configfile $(abspath $(CONFIG)) $(ARGS)

report: venv  ## Snakemake's own report of the default study: results/snakemake-report.html
	$(SNAKEMAKE) --report results/snakemake-report.html $(ARGS)

publish: venv  ## copy a run's measurements into docs/data/<machine>/<run>/, then regenerate docs/ from them (docs/publishing.md)
	$(BIN)/python scripts/publish.py --results results --docs docs $(ARGS)

compare-runs: venv  ## do two runs agree? make compare-runs A=<results dir> B=<results dir>
	@test -n "$(A)" -a -n "$(B)" || { echo "usage: make compare-runs A=<results dir> B=<results dir>" >&2; exit 2; }
	$(BIN)/python scripts/compare_runs.py $(A) $(B)

retry-failed: venv  ## delete failed cell files so the next run redoes them
	$(BIN)/python scripts/retry_failed.py results/cells

unlock: venv  ## release Snakemake's lock after a crashed run (never while a run is going)
	$(SNAKEMAKE) --unlock

##@ For developers

test: venv  ## the whole test suite (what CI runs): the unit tests on every core, then the rest one at a time
	$(BIN)/python -m pytest -q -rs -n $(TEST_WORKERS) tests/unit $(ARGS) || [ $$? = 5 ]
	$(BIN)/python -m pytest -q -rs tests --ignore=tests/unit $(ARGS) || [ $$? = 5 ]

test-fast: venv  ## the tests without e2e and slurm marks (no framework envs, no cluster; the browser tests run where Chromium is installed)
	$(BIN)/python -m pytest -q -m "not e2e and not slurm" tests $(ARGS)

doctor-tests: venv  ## can make test run everything here? Chromium (browser tests) and SLURM (cluster test); exit 1 if not
	$(BIN)/python scripts/doctor.py --for test

lint: venv  ## snakemake --lint, snakefmt --check, ruff
	$(SNAKEMAKE) --lint
	$(BIN)/snakefmt --check .
	$(BIN)/ruff check .

format: venv  ## snakefmt and ruff --fix
	$(BIN)/snakefmt .
	$(BIN)/ruff check --fix .

reference: venv  ## regenerate docs/reference/ (tables, config keys, cell axes, presets) from the code
	$(BIN)/python scripts/reference_docs.py --presets

architecture: venv  ## regenerate docs/ARCHITECTURE.md (the map of the code) from the module docstrings
	$(BIN)/python scripts/architecture_doc.py

republish: venv  ## regenerate docs/'s report, workbook, tables and pages from docs/data by the current code
	$(BIN)/python scripts/republish.py --docs docs $(ARGS)
	$(BIN)/python scripts/readme_answer.py --docs docs $(filter --check,$(ARGS))

readme-answer: venv  ## write the published answer into README.md between its markers (from docs/tables)
	$(BIN)/python scripts/readme_answer.py --docs docs

lock: venv  ## lock each env that takes all its packages from PyPI, with hashes (envs/<name>.lock.txt), used by later builds
	$(BIN)/python scripts/lock_envs.py $(ARGS)

retabulate: venv  ## a run's tables and report again from its measurements by the current code: make retabulate R=<results dir>
	@test -n "$(R)" || { echo "usage: make retabulate R=<results dir>" >&2; exit 2; }
	$(BIN)/python scripts/republish.py --retabulate $(R)

selfbench: venv  ## benchmark the harness itself; prints figures and a JSON line
	$(BIN)/python scripts/selfbench.py $(ARGS)

##@ Research probes and method checks (findings go to dated run notes under docs/runs/)

dimension: venv  ## variance and cost per level, best repeats and window: make dimension R=<results dir> [B=<second run>]
	@test -n "$(R)" || { echo "usage: make dimension R=<results dir> [B=<second results dir>]" >&2; exit 2; }
	$(BIN)/python scripts/dimension.py $(R) $(B) $(ARGS)

decisions: venv  ## what one run decided, per machine, as the goals count it: make decisions R=<results dir>
	@test -n "$(R)" || { echo "usage: make decisions R=<results dir>" >&2; exit 2; }
	$(BIN)/python scripts/decisions.py $(R) $(ARGS)

sides-check: venv  ## do a duet's sides time a cell as its own processes do? make sides-check R="<results dir> ..."
	@test -n "$(R)" || { echo "usage: make sides-check R=\"<results dir> ...\"" >&2; exit 2; }
	$(BIN)/python scripts/sides_check.py $(R) $(ARGS)

settle-check: venv  ## would more untimed calls a window change the duets' ratios? make settle-check R="<results dir> ..."
	@test -n "$(R)" || { echo "usage: make settle-check R=\"<results dir> ...\" [ARGS=\"--extra 2 --margin 0.01\"]" >&2; exit 2; }
	$(BIN)/python scripts/settle_check.py $(R) $(ARGS)

replan: venv  ## the second look's plan replayed on a run's first look, with releases as items: make replan R=<results dir>
	@test -n "$(R)" || { echo "usage: make replan R=<results dir> [ARGS=\"--available-s S --n 10 16\"]" >&2; exit 2; }
	$(BIN)/python scripts/replan.py $(R) $(ARGS)

redecide: venv  ## what a cheaper design would have decided, from a run's own paired replicates: make redecide R=<results dir> ARGS="--windows 6 --first-look"
	@test -n "$(R)" || { echo "usage: make redecide R=<results dir> ARGS=\"--windows W --first-look\"" >&2; exit 2; }
	$(BIN)/python scripts/redecide.py $(R) $(ARGS)

components: venv  ## where the spread comes from and what each replicate costs (fresh pairs vs duets); quiet machine only: make components ARGS="--trials 20"
	$(BIN)/python scripts/components.py $(ARGS)

duet-cost: venv  ## what a duet costs with its workers importing side by side vs one after the other; quiet machine only: make duet-cost ARGS="--trials 12"
	$(BIN)/python scripts/duet_cost.py $(ARGS)

pair-probe: venv  ## both cells of a comparison in one process (window turns, call by call, with the group) vs duets: spread, cost, shift; quiet machine only: make pair-probe ARGS="--trials 12"
	$(BIN)/python scripts/pair_probe.py $(ARGS)

slow-state: venv  ## what makes a process slow for its whole life (layout, huge pages, steal, ...): make slow-state ARGS="--n 14"; quiet machine only
	$(BIN)/python scripts/slow_state.py $(ARGS)

measure-fork: venv  ## forked vs fresh cell processes (siblings' ICC, spread, cost); on a quiet machine only: make measure-fork ARGS="--helpers 5 --children 4"
	$(BIN)/python scripts/measure_fork.py $(ARGS)
