# Entry points. Every target first makes sure .venv exists (tools/bootstrap.py), installing
# from ./wheelhouse without network when it holds wheels, CuPy only where a GPU is found.
BASE_PYTHON ?= python3
# PY: the CPython version that `make wheelhouse` downloads for (default: BASE_PYTHON's)
PY      ?=
VENV    ?= .venv
PYTHON  := $(VENV)/bin/python
EXTRAS  ?= test
GPU     ?= auto
SIZE    ?= small
ARGS    ?=

# bench defaults: the issue's all-pairs points
STRATEGIES ?= allpairs_tiled
SCENARIO   ?= allpairs_cube
N          ?= 32768,216000
PRECISION  ?= fp32

.PHONY: help setup test verify bench sanitize wheelhouse list clean

help:
	@echo "make verify     correctness matrix (SIZE=small|medium|large, ARGS='...' for harness verify)"
	@echo "make test       pytest (GPU tests skip without a device)"
	@echo "make bench      harness bench (STRATEGIES=, SCENARIO=, N=, PRECISION=)"
	@echo "make sanitize   compute-sanitizer memcheck/racecheck/synccheck/initcheck per GPU strategy (ARGS=)"
	@echo "make list       registered strategies, scenarios and precision modes"
	@echo "make wheelhouse PY=3.12   download all wheels for an offline node into wheelhouse/"

$(VENV)/.bootstrap-stamp: tools/bootstrap.py requirements/*.txt
	$(BASE_PYTHON) tools/bootstrap.py venv --venv $(VENV) --extras $(EXTRAS) --gpu $(GPU)

setup: $(VENV)/.bootstrap-stamp

test: setup
	$(PYTHON) -m pytest -q tests $(ARGS)

verify: setup
	$(PYTHON) -m harness verify --size $(SIZE) $(ARGS)

bench: setup
	$(PYTHON) -m harness bench --strategies $(STRATEGIES) --scenario $(SCENARIO) --n $(N) --precision $(PRECISION) $(ARGS)

sanitize: setup
	$(PYTHON) -m harness sanitize --self-test
	$(PYTHON) -m harness sanitize $(ARGS)

list: setup
	$(PYTHON) -m harness list

wheelhouse:
	$(BASE_PYTHON) tools/bootstrap.py wheelhouse --dest wheelhouse $(if $(PY),--python-version $(PY))

clean:
	rm -rf $(VENV) .pytest_cache build
