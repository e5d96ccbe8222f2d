# murmur-analysis: every target sets itself up on a fresh machine.
#   make run    load the bundled samples, print a summary, page a record, export Parquet, write the reports
#   make report execute the notebooks on the samples (or DATA=path) into build/report/*.html
#   make test   lint, type-check and test (what CI runs)
#   make bench  the side-by-side benchmarks (see benchmarks/README.md)
#   make fuzz   the property and fuzz tests (serde_json oracle included) with many more examples (minutes)

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PLUGIN := tests/plugins/murmur_analysis_example_plugin
NATIVE := $(wildcard native/Cargo.toml native/src/*.rs)
# cargo builds the native decode engine; rustup installs it under ~/.cargo/bin.
export PATH := $(HOME)/.cargo/bin:$(PATH)

.PHONY: setup run report test lint typecheck bench fuzz samples clean

$(STAMP): pyproject.toml Makefile $(NATIVE)
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
	$(MAKE) --no-print-directory report

report: setup
	$(BIN)/python notebooks/report.py $(if $(DATA),--data $(DATA)) --out build/report

lint: setup
	$(BIN)/ruff check .

typecheck: setup
	$(BIN)/mypy --strict murmur_analysis

test: lint typecheck
	$(BIN)/python -m pytest -q -n 2

fuzz: setup
	HYPOTHESIS_PROFILE=fuzz $(BIN)/python -m pytest -q -n 2 -p no:cacheprovider tests/test_fuzz_decoders.py \
		tests/test_assembly_properties.py tests/test_cursor_properties.py tests/test_serde_oracle.py \
		tests/test_export.py::test_incremental_exports_equal_a_fresh_load_after_any_changes \
		tests/test_export.py::test_exports_of_records_that_grew_in_any_way_equal_a_fresh_load

samples: setup
	$(BIN)/python data/samples/make_samples.py

bench: setup
	$(BIN)/python benchmarks/run.py

clean:
	rm -rf $(VENV) out build .pytest_cache .mypy_cache .ruff_cache
