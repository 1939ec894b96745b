# The two commands a newcomer needs: `make run` and `make test` (`make test-fast` while working: no slow or browser tests).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8501
# NATIVE=0 skips compiling the engine's hot modules (they then run interpreted; results are the same).
NATIVE ?= 1

.PHONY: run serve lint test test-fast bench build clean-native clean-venv

$(VENV)/.installed: requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	# The venv finds the project from any folder (examples/, notebooks): a .pth file naming this checkout.
	$(PY) -c "import site, pathlib; pathlib.Path(site.getsitepackages()[0], 'gpu-scheduling-playground.pth').write_text('$(CURDIR)\n')"
	touch $@

# Compile engine/_native.py's modules with mypyc when they are not compiled from the current sources. Without a
# C compiler this prints a note and the engine runs interpreted.
build: $(VENV)/.installed
ifneq ($(NATIVE),0)
	@$(PY) -c "import sys; from engine._native import stale_modules; sys.exit(bool(stale_modules()))" || { \
	  echo "compiling the engine's hot modules with mypyc (a few minutes; NATIVE=0 skips; log: build/native.log)"; \
	  mkdir -p build; \
	  $(PY) setup.py build_ext --inplace > build/native.log 2>&1 \
	    || echo "note: compiling failed (see build/native.log); the engine runs interpreted, just slower"; }
endif

run: build
	$(VENV)/bin/streamlit run app.py --server.port $(PORT) --server.headless true

# The gate, in seconds: lint, formatting and types (settings in pyproject.toml); every test target runs it first.
lint: $(VENV)/.installed
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy engine

test: lint build
	$(PY) -m pytest $(PYTEST_ARGS)

# The quick loop spreads the tests over the cores (pytest-xdist); browser and slow tests are left to `make test`.
test-fast: lint build
	$(PY) -m pytest -m "not slow and not e2e" -n auto $(PYTEST_ARGS)

bench: build
	$(PY) -m benchmarks

clean-native:
	rm -rf build engine/_compiled.json engine_native__mypyc.*.so
	find engine -name '*.so' -delete

clean-venv:
	rm -rf $(VENV)

# The HTTP API on 127.0.0.1 (API_PORT, API_STORE); OpenAPI pages at http://127.0.0.1:$(API_PORT)/docs.
API_PORT ?= 8000
API_STORE ?= runs/playground.sqlite
serve: build
	$(PY) -m engine serve --port $(API_PORT) --store $(API_STORE)
