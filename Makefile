# murmur-analysis: every target sets itself up on a fresh machine.
#   make run    load the bundled samples, print a summary, page a record, export Parquet, write the reports
#   make report execute the notebooks on the samples (or DATA=path, SESSIONS=dir, PRICES=csv) into build/report/*.html
#   make test   lint, type-check, check the layers' imports and test (what CI runs; installs the peers)
#   make peers  install the peer readers the tests run (ccusage, @ccusage/codex; npm ci in tests/peers)
#   make bench  the side-by-side benchmarks (installs the peers; see benchmarks/README.md)
#   make fuzz   the property and fuzz tests (serde_json oracle included) with many more examples (minutes)

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PLUGIN := tests/plugins/murmur_analysis_example_plugin
NATIVE := $(wildcard native/Cargo.toml native/src/*.rs native/src/*/*.rs)
# cargo builds the native decode engine; rustup installs it under ~/.cargo/bin.
export PATH := $(HOME)/.cargo/bin:$(PATH)

# What a fresh Debian machine lacks is installed here when we are root; otherwise make stops
# at once with the one command to run. Elsewhere (a Mac, rustup) cargo takes crates.io's crates.
APT_NATIVE  := $(shell python3 native/crates.py packages)
CRATES      := $(shell python3 native/crates.py crates)
APT_BROWSER := chromium
APT_NODE    := nodejs npm
PEERS       := tests/peers
HAVE_APT    := $(shell command -v apt-get >/dev/null 2>&1 && echo yes)
ROOT        := $(shell [ "$$(id -u)" = 0 ] && echo yes)

.PHONY: setup run report test lint typecheck imports bench fuzz samples clean native-deps browser-deps node-deps \
	peers wheel-check

# cargo, and on Debian its packaged crates (the build uses them offline; native/crates.py).
native-deps:
	@missing=""; \
	command -v cargo >/dev/null 2>&1 || [ -x "$(HOME)/.cargo/bin/cargo" ] || missing="$(APT_NATIVE)"; \
	if [ -z "$$missing" ] && [ "$(HAVE_APT)" = yes ]; then \
	  for c in $(CRATES); do \
	    ls -d /usr/share/cargo/registry/$$c-[0-9]* >/dev/null 2>&1 || missing="$(APT_NATIVE)"; \
	  done; \
	  if [ -n "$$missing" ] && [ "$(ROOT)" != yes ]; then \
	    echo "note: Debian's Rust crates are not installed; cargo will take them from crates.io" \
	         "(offline? run: sudo apt-get install $(APT_NATIVE))" >&2; missing=""; \
	  fi; \
	fi; \
	if [ -n "$$missing" ]; then \
	  if [ "$(ROOT)" = yes ] && [ "$(HAVE_APT)" = yes ]; then \
	    echo "installing $$missing (Debian packages)" >&2; \
	    DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing >/dev/null; \
	  elif [ "$(HAVE_APT)" = yes ]; then \
	    echo "error: cargo is not installed. Run: sudo apt-get install $(APT_NATIVE)   then make again" >&2; exit 1; \
	  else \
	    echo "error: cargo is not installed. Install Rust (https://rustup.rs), then make again" >&2; exit 1; \
	  fi; \
	fi

# The browser the end-to-end tests drive (Debian's chromium; no browser is ever downloaded).
browser-deps:
	@if [ ! -x /usr/bin/chromium ]; then \
	  if [ "$(ROOT)" = yes ] && [ "$(HAVE_APT)" = yes ]; then \
	    echo "installing chromium (Debian package)" >&2; \
	    DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $(APT_BROWSER) >/dev/null; \
	  else \
	    echo "error: the browser tests drive Debian's chromium. Run: sudo apt-get install $(APT_BROWSER)   then make test again" >&2; exit 1; \
	  fi; \
	fi

# Node and npm, which run the peer readers the tests compare against (Debian's; nothing else is downloaded).
node-deps:
	@if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then \
	  if [ "$(ROOT)" = yes ] && [ "$(HAVE_APT)" = yes ]; then \
	    echo "installing $(APT_NODE) (Debian packages)" >&2; \
	    DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $(APT_NODE) >/dev/null; \
	  else \
	    echo "error: the peer tests run ccusage on Node. Run: sudo apt-get install $(APT_NODE)   then make test again" >&2; exit 1; \
	  fi; \
	fi

# The peer readers (ccusage, @ccusage/codex), at the exact versions of tests/peers/package-lock.json.
$(PEERS)/node_modules/.package-lock.json: $(PEERS)/package.json $(PEERS)/package-lock.json
	@$(MAKE) --no-print-directory node-deps
	cd $(PEERS) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

peers: $(PEERS)/node_modules/.package-lock.json

$(STAMP): pyproject.toml setup.py native/crates.py Makefile $(NATIVE)
	@$(MAKE) --no-print-directory native-deps
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
	$(BIN)/python notebooks/report.py $(if $(DATA),--data $(DATA)) $(if $(SESSIONS),--sessions $(SESSIONS)) \
		$(if $(PRICES),--prices $(PRICES)) --out build/report

lint: setup
	$(BIN)/ruff check .

typecheck: setup
	$(BIN)/mypy --strict murmur_analysis

# The layers of the package (pyproject.toml, [tool.importlinter]): imports run downward, no cycles.
imports: setup
	$(BIN)/lint-imports --no-cache

test: browser-deps peers lint typecheck imports
	$(BIN)/python -m pytest -q -n 2

fuzz: setup
	HYPOTHESIS_PROFILE=fuzz $(BIN)/python -m pytest -q -n 2 -p no:cacheprovider tests/test_fuzz_decoders.py \
		tests/test_assembly_properties.py tests/test_cursor_properties.py tests/test_serde_oracle.py \
		tests/test_export.py::test_incremental_exports_equal_a_fresh_load_after_any_changes \
		tests/test_export.py::test_exports_of_records_that_grew_in_any_way_equal_a_fresh_load

samples: setup
	$(BIN)/python data/samples/make_samples.py

bench: setup peers
	$(BIN)/python benchmarks/run.py

# A wheel built from this checkout, installed into a fresh virtual environment, loads the samples.
wheel-check: native-deps
	rm -rf build/wheel build/wheel-venv
	$(PYTHON) -m pip wheel -q --no-deps -w build/wheel .
	$(PYTHON) -m venv build/wheel-venv
	build/wheel-venv/bin/python -m pip install -q build/wheel/murmur_analysis-*.whl
	cd build && wheel-venv/bin/murmur-analysis summary ../data/samples
	cd build && wheel-venv/bin/python -c "import murmur_analysis as ma, sys; c = ma.load('../data/samples'); \
	  sys.exit(0 if len(c.conversations) and ma.__file__.startswith('$(CURDIR)/build/wheel-venv') else 'not the wheel')"

clean:
	rm -rf $(VENV) out build .pytest_cache .mypy_cache .ruff_cache $(PEERS)/node_modules
