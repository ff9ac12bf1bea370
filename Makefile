PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-slow bench bench-prove screenshot clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/ctxproof demo

test: $(STAMP)
	$(BIN)/ruff check verifier tests benchmarks models
	$(BIN)/mypy
	$(BIN)/pytest -q -m "not slow"

# The long tier: tests marked slow (the bad-input fuzzer at length).
test-slow: $(STAMP)
	$(BIN)/pytest -q -m slow

bench: $(STAMP) bench-prove
	$(BIN)/python benchmarks/bench_check.py --write
	$(BIN)/python benchmarks/bench_audit.py --write

bench-prove: $(STAMP)
	$(BIN)/python benchmarks/bench_prove.py --write

clean:
	rm -rf $(VENV) build *.egg-info

# Renders the demo report in headless Chromium (apt-get install chromium) and
# saves a screenshot: the check that the report draws in a real browser.
screenshot: demo
	chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
	  --disable-background-networking --disable-component-update --disable-sync \
	  --user-data-dir="$$(mktemp -d)" --window-size=1300,1800 \
	  --screenshot=ctxproof-report/screenshot.png "file://$(CURDIR)/ctxproof-report/index.html"
	@echo "screenshot: ctxproof-report/screenshot.png"
