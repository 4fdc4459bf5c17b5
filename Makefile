# Two entry points: `make demo` and `make test`. Both create (or reuse) .venv and install everything.
VENV ?= .venv
PY := $(VENV)/bin/python
# PyTorch is installed first and pinned so that pip never swaps it for another build; override for your CUDA build.
TORCH_SPEC ?= torch==2.13.0
STAMP := $(VENV)/.ganforge-installed

.PHONY: venv test lint demo docs clean

# `make demo`: where the digits dataset and the run go, and extra `ganforge train` flags (e.g. DEMO_ARGS='--kimg 32').
DEMO_DIR ?= demo
DEMO_ARGS ?=

venv: $(STAMP)

$(STAMP): pyproject.toml Makefile
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install -q "$(TORCH_SPEC)"
	$(PY) -m pip install -q -e ".[dev,fid,video,export,report,docs,sweep]"
	touch $@

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks docs/hooks
	$(VENV)/bin/ruff format --check src tests benchmarks docs/hooks

# Two pytest workers, whole test files each (module fixtures are built once), one thread each: on 2 cores the suite
# takes about 0.6x the time of one process with two threads, since much of it waits on subprocesses and file I/O.
# Bytecode is cached even where PYTHONDONTWRITEBYTECODE is set: otherwise each worker compiles every test module
# (with pytest's assertion rewriting, 12 s instead of 6) and each of the ~150 `ganforge` processes the tests start
# compiles ganforge again (0.2-0.3 s each).
test: lint
	PYTHONDONTWRITEBYTECODE= OMP_NUM_THREADS=1 $(PY) -m pytest -q -n 2 --dist loadfile tests

demo: $(STAMP)
	$(PY) -m ganforge.demo digits $(DEMO_DIR)/digits.zip
	$(VENV)/bin/ganforge train --data $(DEMO_DIR)/digits.zip --outdir $(DEMO_DIR)/runs --cfg tiny $(DEMO_ARGS)
	$(PY) -m ganforge.demo where $(DEMO_DIR)/runs

# `make docs`: the site in site/ (open site/index.html), warnings as errors; the CLI reference is generated from the
# commands at build time. MkDocs 1.x prints a banner about its successor unless told not to.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

clean:
	rm -rf $(VENV) build site *.egg-info
