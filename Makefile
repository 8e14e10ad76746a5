PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The venv belongs to the interpreter PYTHON names: another PYTHON makes it anew.
PYTHON_TAG := $(shell $(PYTHON) -c 'import hashlib, os, sys; print(sys.version.split()[0] + "-" + hashlib.sha256(os.path.realpath(sys.executable).encode()).hexdigest()[:8])' 2>/dev/null)
STAMP := $(VENV)/.installed-$(PYTHON_TAG)
# The offline mirrors of the pinned corpora, where this machine has them.
MIRROR ?= $(wildcard $(abspath ../shared/corpora/))
MIRROR_FLAG := $(if $(MIRROR),--mirror $(MIRROR))
BASE ?=
ARGS ?=
# No "Entering directory" lines on stdout when make runs make.
MAKEFLAGS += --no-print-directory

.PHONY: schema recall fetch fetched results results-typed results-typing results-paths results-judgments test test-fast test-install check derive-check clean bench wheel

# stdout holds what the target is for (`make recall ARGS=--json > x.json` parses): the
# venv's set-up and the corpora's fetch speak on stderr, each command echoed there (say).
say = @echo '$(subst ','\'',$(1))' >&2

$(STAMP): pyproject.toml
	@test -n "$(PYTHON_TAG)" || { echo "make: PYTHON=$(PYTHON) does not run" >&2; exit 2; }
	@if [ "$$(cat $(VENV)/.python 2>/dev/null)" != "$(PYTHON_TAG)" ]; then \
	  echo "$(PYTHON) -m venv $(VENV)" >&2; \
	  rm -rf $(VENV) && $(PYTHON) -m venv $(VENV) && echo "$(PYTHON_TAG)" > $(VENV)/.python; fi
	$(call say,$(BIN)/python -m pip install --upgrade pip && pip install -e '.[dev]')
	@$(BIN)/python -m pip install --quiet --upgrade pip >&2
	@# the distribution was named `recall` before `recall-harness`: no stale second copy
	@$(BIN)/python -m pip uninstall --quiet --yes recall >&2 2>/dev/null || true
	@$(BIN)/python -m pip install --quiet -e '.[dev]' >&2
	@touch $(STAMP)

fetch: $(STAMP)
	$(BIN)/recall fetch $(MIRROR_FLAG)

# The pins fetched before a run, their lines on stderr.
fetched: $(STAMP)
	$(call say,$(BIN)/recall fetch $(MIRROR_FLAG))
	@$(BIN)/recall fetch $(MIRROR_FLAG) >&2

recall: fetched
	$(call say,$(BIN)/recall $(MIRROR_FLAG) $(if $(BASE),--base $(BASE)) $(ARGS))
	@$(BIN)/recall $(MIRROR_FLAG) $(if $(BASE),--base $(BASE)) $(ARGS)

# Where each results page keeps its finders' reports (--reports), which the judgments page
# reads (build/ is git-ignored): `make results ARGS=--render-only` renders from them.
REPORTS ?= build/reports
SETS := default typed typing paths

# Every peer finder and the reference finder over the whole query set: docs/RESULTS.md.
results: fetched
	$(BIN)/recall results $(MIRROR_FLAG) --out docs/RESULTS.md --reports $(REPORTS)/default $(ARGS)

# The same finders over the typed query set (docs/queries.md): docs/RESULTS-typed.md.
results-typed: fetched
	$(BIN)/recall results $(MIRROR_FLAG) --queries typed --out docs/RESULTS-typed.md --reports $(REPORTS)/typed $(ARGS)

# Keystrokes to the name (docs/queries.md, the typing set): docs/RESULTS-typing.md.
results-typing: fetched
	$(BIN)/recall results $(MIRROR_FLAG) --queries typing --out docs/RESULTS-typing.md --reports $(REPORTS)/typing $(ARGS)

# The file pickers over the path set (docs/queries.md): docs/RESULTS-paths.md.
results-paths: fetched
	$(BIN)/recall results $(MIRROR_FLAG) --queries paths --out docs/RESULTS-paths.md --reports $(REPORTS)/paths $(ARGS)

# Every finder that reads a names list over the maintainers' judgments, beside the other
# pages' #1 shares (their kept reports: run those targets first): docs/RESULTS-judgments.md.
results-judgments: fetched
	$(BIN)/recall results $(MIRROR_FLAG) --queries judgments --out docs/RESULTS-judgments.md --reports $(REPORTS)/judgments $(foreach set,$(SETS),--set-reports $(set)=$(REPORTS)/$(set)) $(ARGS)

# What the harness itself costs, then the reference finder against frizbee and on a
# synthetic million names (benchmarks/reference.py); not part of `make test`.
bench: fetched
	$(BIN)/python benchmarks/harness.py $(MIRROR_FLAG)
	$(BIN)/python benchmarks/reference.py $(MIRROR_FLAG)

# Two pytest-xdist workers, each test file whole on one of them (a file's module fixtures
# are made once, and its tests keep their order); TEST_JOBS=0 runs the suite in one process.
# The tests marked install (a wheel in a fresh venv, the CI recipe: about a minute) run in
# test-install, which CI runs too.
TEST_JOBS ?= 2
test: $(STAMP)
	RECALL_MIRROR=$(MIRROR) $(BIN)/python -m pytest -q -m "not install" $(if $(filter-out 0,$(TEST_JOBS)),-n $(TEST_JOBS) --dist loadfile)

# The tests not marked slow or install (no corpus indexed, no finder built, no browser or
# language server started): under a minute on two cores, for the loop of an edit.
test-fast: $(STAMP)
	RECALL_MIRROR=$(MIRROR) $(BIN)/python -m pytest -q -m "not slow and not install" $(if $(filter-out 0,$(TEST_JOBS)),-n $(TEST_JOBS) --dist loadfile)

test-install: $(STAMP)
	RECALL_MIRROR=$(MIRROR) $(BIN)/python -m pytest -q -m install

# A wheel of the working tree in dist/ (git-ignored), the same bytes every time: its files
# dated by the last commit (SOURCE_DATE_EPOCH; 1980, zip's first date, outside a checkout),
# built with the venv's setuptools rather than whatever release an isolated build fetches.
wheel: $(STAMP)
	SOURCE_DATE_EPOCH=$${SOURCE_DATE_EPOCH:-$$(git log -1 --format=%ct 2>/dev/null || echo 315532800)} \
	  $(BIN)/python -m pip wheel --quiet --no-deps --no-build-isolation -w dist .
	@ls dist/*.whl >&2

check: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check recall tests
	$(BIN)/mypy

derive-check: fetched
	$(BIN)/recall derive all --check $(MIRROR_FLAG)

clean:
	rm -rf $(VENV) .venv-* *.egg-info build dist

# docs/report.schema.json from the report's types (recall/analysis/schema.py); a test holds
# the committed file to it.
schema: $(STAMP)
	$(BIN)/python -m recall.analysis.schema > docs/report.schema.json
