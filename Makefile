# The README's commands. Each target builds .venv itself, so a fresh machine with
# python3 >= 3.11 and make needs nothing else.
PY ?= python3
VENV := .venv
STAMP := $(VENV)/.installed-stamp
PYTEST := $(VENV)/bin/python -m pytest
# one worker per core (at most 4), each test file on one worker: files share warm caches
XDIST := -n auto --maxprocesses=4 --dist loadfile

.PHONY: demo test test-slow bench clean gpu

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q -e ".[test,bench]"
	touch $(STAMP)

demo: $(STAMP)  ## train with compiled backward + hooks; print eager vs compiled throughput
	$(VENV)/bin/python -m autograd_compile demo

test: $(STAMP)  ## the test suite CI runs
	$(PYTEST) -q -p no:cacheprovider $(XDIST)

test-slow: $(STAMP)  ## long fuzzing and soak runs
	ACG_SLOW=1 $(PYTEST) -q -p no:cacheprovider $(XDIST)

bench: $(STAMP)  ## the benchmark suite: backward, whole-step and per-op groups
	$(VENV)/bin/python -m autograd_compile bench

# warmgpu: on a GPU machine, with its preinstalled python (no .venv, no network)
GPU_OUT ?= gpu-out
gpu:  ## install, test and bench on the GPU into $(GPU_OUT) (ci/gpu.sh; --dry-run: ACG_GPU_DRY_RUN=1)
	PYTHON=$(PY) bash ci/gpu.sh $(GPU_OUT)

clean:
	rm -rf $(VENV) *.egg-info
