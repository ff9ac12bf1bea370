PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
# What each target installs into .venv, one stamp each: `make demo` the package alone, `make
# test` the dev tools too, `make test-ray` the ray extra besides (Ray is about 1 GB: only the
# targets that run it install it).
PKG_STAMP := $(VENV)/.installed-package
DEV_STAMP := $(VENV)/.installed-dev
RAY_STAMP := $(VENV)/.installed-ray
# the framework extras live in a venv of their own: `make test` stays light
FW_VENV := .venv-frameworks
FW_BIN := $(FW_VENV)/bin
FW_STAMP := $(FW_VENV)/.installed
FW_EXTRAS := dev,policies-langchain,policies-autogen,policies-pydantic-ai
# every package of that venv at a pinned version: the page regenerates byte for byte, and a
# pin that no longer installs fails the install (so make test-frameworks, so CI)
FW_PINS := docs/frameworks/constraints.txt

.PHONY: demo test test-ray test-slow test-all mutate bench bench-check-large bench-prove \
  bench-fuzz bench-fuzz-e2e bench-import bench-scale bench-distributed frameworks test-frameworks \
  frameworks-pins screenshot clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(PKG_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	touch $@

$(DEV_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

$(RAY_STAMP): pyproject.toml $(DEV_STAMP)
	$(BIN)/pip install -q -e '.[dev,ray]'
	touch $@

demo: $(PKG_STAMP)
	$(BIN)/ctxproof demo

# The tiers, their times on a 2-core machine, and who runs them (CI runs every one).
define TIERS
The test tiers (times on 2 cores; CI runs all four):
  make test             ruff, mypy --strict, the fast tier: about 3.5 min
  make test-ray         the Ray extra's tests on a local cluster (installs Ray): about 1.5 min
  make test-slow        the long tier (fuzzers at length, every property example): about 35-40 min
  make test-frameworks  the framework extras' policies, in .venv-frameworks: about 2.5 min
endef
export TIERS

# make test and make test-slow run the tests in this many processes (pytest-xdist): the times
# above are with 2 on 2 cores; TEST_JOBS=0 runs them in this process, one by one. The long
# tier's bad-input fuzzers take most of its time, each with a resident-size cap per command
# (its own peak, so two processes measure what one does).
TEST_JOBS ?= 2

# The fast tier runs this share of each property test's hypothesis examples (at least 10);
# the long tier runs those tests again with all of them (tests/conftest.py).
FAST_EXAMPLES ?= 0.25

test: $(DEV_STAMP)
	@echo "$$TIERS"
	@echo "now: make test"
	$(BIN)/ruff check verifier tests benchmarks models
	$(BIN)/mypy
	CTXPROOF_EXAMPLES=$(FAST_EXAMPLES) $(BIN)/pytest -q -rs -n $(TEST_JOBS) -m "not slow and not ray"

# The Ray tests: CTXPROOF_REQUIRE_RAY turns "Ray is not installed" from a skip into a failure,
# so they never pass by skipping where they are meant to run.
test-ray: $(RAY_STAMP)
	@echo "$$TIERS"
	@echo "now: make test-ray"
	CTXPROOF_REQUIRE_RAY=1 $(BIN)/pytest -q -rs -m "ray and not slow"

# The long tier: tests marked slow (the bad-input and API fuzzers at length, every unsafe
# model fuzzed, the safe policies over 500 sessions, every spec's two-item states), and the
# property tests with all their examples (the fast tier runs a share of them). A few of its
# tests take most of its time: a process that runs out of tests takes some from the other's
# queue (--dist worksteal), rather than waiting while the other runs them one by one.
test-slow: $(DEV_STAMP)
	@echo "$$TIERS"
	@echo "now: make test-slow"
	$(BIN)/pytest -q -rs -n $(TEST_JOBS) --dist worksteal -m "(slow or hypothesis) and not ray"

test-all: test test-ray test-slow test-frameworks

# Mutation testing of the rules (not in make test, not in CI: half an hour or more on two
# cores): single-point mutants of verifier/rules/ and verifier/check.py, each run against
# the rule tests (the corpus, the readings' unit tests) with a time limit, the survivors
# against the wider suite; prints the score per rule family and every survivor.
# MUTATE_ARGS adds options, e.g. --jobs 2, --sample 6 (every sixth mutant), --no-wider.
MUTATE_ARGS ?=
mutate: $(DEV_STAMP)
	$(BIN)/python tests/mutation.py $(MUTATE_ARGS)

$(FW_STAMP): pyproject.toml $(FW_PINS)
	$(PY) -m venv $(FW_VENV)
	$(FW_BIN)/pip install -q --upgrade pip
	$(FW_BIN)/pip install -q -c $(FW_PINS) -e '.[$(FW_EXTRAS)]'
	touch $(FW_STAMP)

# New pins: the extras installed afresh at their newest releases, frozen into $(FW_PINS)
# (its comment lines kept); then `make frameworks` and commit both.
frameworks-pins:
	rm -rf $(FW_VENV).pins
	$(PY) -m venv $(FW_VENV).pins
	$(FW_VENV).pins/bin/pip install -q --upgrade pip
	$(FW_VENV).pins/bin/pip install -q -e '.[$(FW_EXTRAS)]'
	{ grep '^#' $(FW_PINS); $(FW_VENV).pins/bin/pip freeze --exclude-editable \
	  | grep -v '^#' | sort -f; } > $(FW_PINS).new
	mv $(FW_PINS).new $(FW_PINS)
	rm -rf $(FW_VENV).pins

# Fuzzes every third-party compaction policy and the two baselines with the same seeded
# sessions and rewrites docs/frameworks.md, its plot and its counterexamples
# (docs/frameworks/), at the pinned versions.
# FW_JOBS=2 runs the sessions in two worker processes: the page is the same.
FW_JOBS ?= 1
frameworks: $(FW_STAMP)
	$(FW_BIN)/python -m verifier.policies.thirdparty.report --out docs/frameworks.md \
	  --jobs $(FW_JOBS)

# The third-party policy tests and the LangChain export round trip with their extras
# installed (they skip without them), and the adapters type-checked against the
# frameworks' own types (Any in the main venv).
test-frameworks: $(FW_STAMP)
	$(FW_BIN)/mypy verifier/policies/thirdparty tests/unit/test_thirdparty.py \
	  tests/unit/test_session_export.py
	$(FW_BIN)/pytest -q tests/unit/test_thirdparty.py tests/unit/test_session_export.py

# The benchmarks (pytest-benchmark; `make test` does not collect benchmarks/): each run
# saves its JSON under benchmarks/results/, and benchmarks/report.py writes RESULTS.md from
# every saved run. BENCH_ARGS adds options: --bench-large (100k and 300k-item checks),
# --bench-late-pass N, --bench-all-models, --bench-prove-large.
BENCH_ARGS ?=
BENCH_PYTEST := $(BIN)/pytest -q --benchmark-only --benchmark-columns=median,iqr,min,rounds

bench: $(DEV_STAMP) bench-prove
	$(BENCH_PYTEST) benchmarks --ignore=benchmarks/test_bench_prove.py \
	  --ignore=benchmarks/test_bench_import.py --ignore=benchmarks/test_bench_scale.py \
	  --ignore=benchmarks/test_bench_startup.py \
	  --benchmark-json=benchmarks/results/bench.json $(BENCH_ARGS)
	$(BIN)/python -m benchmarks.report > benchmarks/RESULTS.md

# check at 100k and 300k items, and with a quarter of 100k items broken (a few minutes),
# saved beside the other runs
bench-check-large: $(DEV_STAMP)
	$(BENCH_PYTEST) benchmarks/test_bench_check.py benchmarks/test_bench_check_faults.py \
	  --bench-large -k "100k or 300k" \
	  --benchmark-json=benchmarks/results/check-large.json $(BENCH_ARGS)
	$(BIN)/python -m benchmarks.report > benchmarks/RESULTS.md

# fuzz throughput in process and with the policy in its own process, and the cost of a call
# there against the same calls in process, saved beside the other runs
bench-fuzz: $(DEV_STAMP)
	$(BENCH_PYTEST) benchmarks/test_bench_fuzz.py -k "not end_to_end" \
	  --benchmark-json=benchmarks/results/fuzz-isolation.json $(BENCH_ARGS)
	$(BIN)/python -m benchmarks.report > benchmarks/RESULTS.md

# import of Claude Code sessions of 10, 50 and 100 MB with 5 compactions, and with a compaction
# every 8 MB (the session files are generated once into the temporary folder), saved beside
# the other runs
bench-import: $(DEV_STAMP)
	$(BENCH_PYTEST) benchmarks/test_bench_import.py \
	  --benchmark-json=benchmarks/results/import.json $(BENCH_ARGS)
	$(BIN)/python -m benchmarks.report > benchmarks/RESULTS.md

# audit cost against items and findings (findings on most of an append's items, 50k-item
# traces with and without findings, appends of 10k and 20k commitments), an append into a
# window of 1k and 10k stubs and a rewrite of one item there, and start-up, saved beside the
# other runs (a few minutes)
bench-scale: $(DEV_STAMP)
	$(BENCH_PYTEST) benchmarks/test_bench_scale.py benchmarks/test_bench_startup.py \
	  "benchmarks/test_bench_append.py::test_append_stub_window_small" \
	  "benchmarks/test_bench_append.py::test_append_stub_window_large" \
	  "benchmarks/test_bench_append.py::test_rewrite_diff_stub_window_small" \
	  "benchmarks/test_bench_append.py::test_rewrite_diff_stub_window_large" \
	  "benchmarks/test_bench_append.py::test_rewrite_whole_stub_window_small" \
	  "benchmarks/test_bench_append.py::test_rewrite_whole_stub_window_large" \
	  "benchmarks/test_bench_append.py::test_rewrite_new_objects_stub_window_small" \
	  "benchmarks/test_bench_append.py::test_rewrite_new_objects_stub_window_large" \
	  --benchmark-json=benchmarks/results/scale.json $(BENCH_ARGS)
	$(BIN)/python -m benchmarks.report > benchmarks/RESULTS.md

# fuzz end to end: the README's unsafe policy against its safe one, as `ctxproof fuzz
# --sessions 50` runs them (shrinking included), saved beside the other runs
bench-fuzz-e2e: $(DEV_STAMP)
	$(BENCH_PYTEST) "benchmarks/test_bench_fuzz.py::test_fuzz_end_to_end_safe" \
	  "benchmarks/test_bench_fuzz.py::test_fuzz_end_to_end_unsafe" \
	  --benchmark-json=benchmarks/results/fuzz-e2e.json $(BENCH_ARGS)
	$(BIN)/python -m benchmarks.report > benchmarks/RESULTS.md

bench-prove: $(DEV_STAMP)
	$(BENCH_PYTEST) benchmarks/test_bench_prove.py \
	  --benchmark-json=benchmarks/results/prove.json $(BENCH_ARGS)
	$(BIN)/python -m benchmarks.report > benchmarks/RESULTS.md

# --ray against --jobs (needs the ray extra; starts local Ray clusters): whole commands
# timed from outside, so not on pytest-benchmark; its page is included in RESULTS.md
bench-distributed: $(RAY_STAMP)
	$(BIN)/python benchmarks/bench_distributed.py --write
	$(BIN)/python -m benchmarks.report > benchmarks/RESULTS.md

clean:
	rm -rf $(VENV) $(FW_VENV) build *.egg-info

# Renders the demo report in headless Chromium (apt-get install chromium) and
# saves a screenshot: the check that the report draws in a real browser.
screenshot: demo
	chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
	  --disable-background-networking --disable-component-update --disable-sync \
	  --user-data-dir="$$(mktemp -d)" --window-size=1300,1800 \
	  --screenshot=ctxproof-report/screenshot.png "file://$(CURDIR)/ctxproof-report/index.html"
	@echo "screenshot: ctxproof-report/screenshot.png"
