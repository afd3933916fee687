# Entry points. Every target first makes sure .venv has what that target needs (tools/bootstrap.py:
# only what is missing, from ./wheelhouse without network when it holds wheels, CuPy only where a
# GPU is found; offline and missing something, it stops within seconds saying what to fetch).
BASE_PYTHON ?= python3
# PY: the CPython version that `make wheelhouse` downloads for (default: BASE_PYTHON's)
PY      ?=
VENV    ?= .venv
PYTHON  := $(VENV)/bin/python
EXTRAS  ?= test,bench
GPU     ?= auto
SIZE    ?= small
ARGS    ?=
comma   := ,

# bench: a named suite (harness/suites.py), or STRATEGIES= for an ad-hoc sweep
SUITE      ?= default
STRATEGIES ?=
SCENARIO   ?= lj_liquid
N          ?= medium
PRECISION  ?= fp32
# profile: one point under Nsight Compute (large by default: the timing cross-check needs it)
STRATEGY   ?= fullshell_thread_csr
PROFILE_N  ?= large

.PHONY: help setup test verify bench results profile timeline report claims asv asv-preview sanitize wheelhouse list clean

help:
	@echo "make verify     correctness matrix (SIZE=small|medium|large, ARGS='...' for harness verify)"
	@echo "make test       pytest in TEST_JOBS=2 processes (GPU tests skip without a device)"
	@echo "make bench      harness bench: SUITE=default (harness/suites.py), or STRATEGIES= SCENARIO= N= PRECISION="
	@echo "make results    this GPU model's canonical results in reports/<gpu>/, resumable (BUDGET=540s stops in time, GPUS=4 runs stages side by side)"
	@echo "make profile    Nsight Compute on one point's force phase: STRATEGY= SCENARIO= PROFILE_N= PRECISION="
	@echo "make timeline   Nsight Systems timeline of one evaluation, where nsys exists"
	@echo "make report     HTML + markdown report from bench/verify/profile results (REPORT=name, INPUTS=files)"
	@echo "make claims     the source documents' claims answered from the results under CLAIMS_FROM (default reports/), verdicts computed"
	@echo "make asv        record an asv run for the current commit and build the HTML history"
	@echo "make sanitize   compute-sanitizer memcheck/racecheck/synccheck/initcheck per GPU strategy (ARGS=)"
	@echo "make list       registered strategies, scenarios and precision modes"
	@echo "make wheelhouse PY=3.12 [WHEELS=nvtx,asv,asv-runner,tqdm]   wheels for an offline node into wheelhouse/ (WHEELS: only those, with deps)"

# the set-up of one target: $(call boot,EXTRAS) (a comma list in a variable: call splits at commas)
boot = $(BASE_PYTHON) tools/bootstrap.py venv --venv $(VENV) --gpu $(GPU) --extras "$(1)"
TEST_EXTRAS := test,bench,cluster

setup:
	$(call boot,$(EXTRAS))

# TEST_JOBS: pytest processes (pytest-xdist, a module per process at a time: --dist loadscope shares a
# module's costly fixtures, the compiled kernels, the built report; tests/conftest.py joins the modules
# that compile the same numba code into one scope); 1 runs them in this process
TEST_JOBS ?= 2
test:
	$(call boot,$(TEST_EXTRAS))
	$(PYTHON) -m pytest -q $(if $(filter-out 1,$(TEST_JOBS)),-n $(TEST_JOBS) --dist loadscope) tests research $(ARGS)

verify:
	$(call boot,)
	$(PYTHON) -m harness verify --size $(SIZE) $(ARGS)

bench:
	$(call boot,bench)
	$(PYTHON) -m harness bench $(if $(STRATEGIES),--strategies $(STRATEGIES) --scenario $(SCENARIO) --n $(N) --precision $(PRECISION),--suite $(SUITE)) $(ARGS)

# results: the canonical campaign of this machine's GPU model (harness/campaign.py); BUDGET= stops
# before running past it (a time-limited job), and the same command continues where it stopped;
# GPUS=4 (or all) runs four stages at once on a node with several GPUs of one model; CLUSTER=local
# (or local:K, or a scheduler's address) spreads each bench and verify stage's points on Dask workers
BUDGET ?=
GPUS ?=
CLUSTER ?=
results:
	$(call boot,report$(if $(CLUSTER),$(comma)cluster))
	$(PYTHON) -m harness results $(if $(BUDGET),--budget $(BUDGET)) $(if $(GPUS),--gpus $(GPUS)) $(if $(CLUSTER),--cluster $(CLUSTER)) $(ARGS)

profile:
	$(call boot,)
	$(PYTHON) -m harness profile --strategy $(STRATEGY) --scenario $(SCENARIO) --n $(PROFILE_N) --precision $(PRECISION) $(ARGS)

timeline:
	$(call boot,)
	$(PYTHON) -m harness timeline --strategy $(STRATEGY) --scenario $(SCENARIO) --n $(N) --precision $(PRECISION)

# report: from the newest reports/bench/*.json, reports/verify/verify.json and reports/profile/*.json,
# or the result files named in INPUTS; into reports/$(REPORT)/. BEFORE: earlier bench results for
# the section 'Before and after' (e.g. the previous SUITE=full sweep)
REPORT ?= latest
INPUTS ?=
BEFORE ?=
report:
	$(call boot,bench)
	$(PYTHON) -m harness report $(INPUTS) $(foreach f,$(BEFORE),--before $(f)) --name $(REPORT) $(ARGS)

# claims: the source documents' claims, each with its measurement and a computed verdict, from the
# bench, NVE and verify results under CLAIMS_FROM (CLAIMS_OUT: write the markdown table there)
CLAIMS_FROM ?= reports
CLAIMS_OUT ?=
claims:
	$(call boot,bench)
	$(PYTHON) -m harness claims $(CLAIMS_FROM) $(if $(CLAIMS_OUT),--out $(CLAIMS_OUT)) $(ARGS)

# asv: the existing environment (no network on GPU nodes), results for the checked-out commit,
# filed under a machine named by the GPU's model (ASV_MACHINE= to override), not the host name,
# and an environment named by the Python version, not the checkout's path (tools/asv_environment.py)
ASV_MACHINE ?=
asv:
	$(call boot,bench)
	@git rev-parse HEAD >/dev/null 2>&1 || { echo "make asv: needs a git checkout (asv files results by commit)"; exit 2; }
	M=$${ASV_MACHINE:-$$($(PYTHON) -m harness.device)} && \
	$(PYTHON) -m asv machine --yes --machine "$$M" && \
	$(PYTHON) -m asv run -E project:same --machine "$$M" --set-commit-hash $$(git rev-parse HEAD) $(ARGS)
	$(PYTHON) -m asv publish
	@echo "history: .asv/html/index.html (make asv-preview serves it)"

asv-preview:
	$(call boot,bench)
	$(PYTHON) -m asv preview

sanitize:
	$(call boot,)
	$(PYTHON) -m harness sanitize --self-test
	$(PYTHON) -m harness sanitize $(ARGS)

list:
	$(call boot,)
	$(PYTHON) -m harness list

wheelhouse:
	$(BASE_PYTHON) tools/bootstrap.py wheelhouse --dest wheelhouse $(if $(PY),--python-version $(PY)) $(if $(WHEELS),--only $(WHEELS))

clean:
	rm -rf $(VENV) .pytest_cache build
