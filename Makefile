# The README's two commands: `make demo` (set up, then run the demo) and `make test`.
PY := .venv/bin/python
CURRENT := .venv-current/bin/python

.PHONY: setup demo lint docs test bench mutate
setup:
	@bash scripts/setup.sh

demo: setup
	$(PY) -m neurondev demo

lint: setup
	.venv/bin/ruff check neurondev tests scripts benchmarks docs/rules/examples
	.venv/bin/ruff format --check neurondev tests scripts benchmarks docs/rules/examples
	.venv/bin/mypy

# The documentation site into site/, strict: a warning or a broken link fails (mkdocs-material, mkdocstrings, mkdocs-jupyter).
docs: setup
	NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet

# The whole suite with the tested XLA pair (torch 2.9.0 + torch-xla 2.9.0), then every test that needs no XLA
# device with today's torch (2.13.0, TorchNeuron's; no torch-xla there) but how DDP-over-gloo jobs end (torch 2.13's gloo
# races there without neurondev: the ddp_teardown marker). The heaviest host-device tests, which both torches pass, run
# once, in the second run (the todays_torch marker). Bytecode is cached even where
# PYTHONDONTWRITEBYTECODE is set: the suite starts ~30 Pythons (workers, notebook kernels, subprocesses)
# that would each compile neurondev and rewrite its asserts again. The site's strict build is a test of its own
# (tests/browser/test_docs_site.py builds it as `make docs` and `neurondev docs` do), so it is not built twice.
test: lint
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -m "not todays_torch"
	PYTHONDONTWRITEBYTECODE= $(CURRENT) -m pytest -m "not xla and not docs and not ddp_teardown"

bench: setup
	$(PY) benchmarks/bench_pass.py
	$(PY) benchmarks/bench_xla.py
	$(PY) benchmarks/bench_explain.py
	$(PY) benchmarks/bench_native.py
	$(PY) benchmarks/bench_watch.py
	$(PY) benchmarks/bench_native_device.py
	$(PY) benchmarks/bench_usage.py

# Mutation testing (mutmut) of the modules that decide what a user is told, each module's score after it; slow (an
# hour or more here), so not part of make test. docs/where.md keeps the last scores.
mutate: setup
	$(PY) scripts/mutate.py
