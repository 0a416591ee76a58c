# The README's two commands: `make demo` (set up, then run the demo) and `make test`.
PY := .venv/bin/python

.PHONY: setup demo lint test bench
setup:
	@bash scripts/setup.sh

demo: setup
	$(PY) -m neurondev demo

lint: setup
	.venv/bin/ruff check neurondev tests scripts benchmarks
	.venv/bin/ruff format --check neurondev tests scripts benchmarks
	.venv/bin/mypy

# Bytecode is cached even where PYTHONDONTWRITEBYTECODE is set: the suite starts ~30 Pythons (workers,
# notebook kernels, subprocesses) that would each compile neurondev and rewrite its asserts again.
test: lint
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest

bench: setup
	$(PY) benchmarks/bench_pass.py
	$(PY) benchmarks/bench_xla.py
	$(PY) benchmarks/bench_explain.py
	$(PY) benchmarks/bench_native.py
	$(PY) benchmarks/bench_watch.py
