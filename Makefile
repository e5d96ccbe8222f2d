# murmur-analysis: every target sets itself up on a fresh machine.
#   make run    load the bundled samples, print a summary, page a record, export Parquet
#   make test   lint, type-check and test (what CI runs)
#   make bench  the side-by-side benchmarks (see benchmarks/README.md)
#   make fuzz   the generated and fuzzed properties (serde_json oracle included), many more examples

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PLUGIN := tests/plugins/murmur_analysis_example_plugin

.PHONY: setup run test fuzz lint typecheck bench samples clean

$(STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[dev,notebooks,dask,bench]"
	if [ -d $(PLUGIN) ]; then $(BIN)/python -m pip install -q -e $(PLUGIN); fi
	touch $(STAMP)

setup: $(STAMP)

run: setup
	$(BIN)/murmur-analysis summary data/samples
	$(BIN)/murmur-analysis page data/samples/murmur/conversations/support-bot/ctx-billing/conversation.jsonl --limit 5
	$(BIN)/murmur-analysis export data/samples --out out/samples

lint: setup
	$(BIN)/ruff check .

typecheck: setup
	$(BIN)/mypy --strict murmur_analysis

test: lint typecheck
	$(BIN)/python -m pytest -q -n 2

samples: setup
	$(BIN)/python data/samples/make_samples.py

fuzz: setup
	HYPOTHESIS_PROFILE=fuzz $(BIN)/python -m pytest -q -n 2 tests/test_serde_oracle.py tests/test_cursor_properties.py

bench: setup
	$(BIN)/python benchmarks/run.py

clean:
	rm -rf $(VENV) out build .pytest_cache .mypy_cache .ruff_cache
