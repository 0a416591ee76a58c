"""Loaded by every Python the suite starts (tests/conftest.py puts this folder on PYTHONPATH and loads this file
in its own workers): Python's garbage collector runs less often, and not at exit. What a process prints and
its exit status are the same; only when cyclic garbage is freed changes (a test that needs it freed calls
gc.collect() itself)."""

import atexit
import gc

# Python's default (700, 10, 10) collects the young objects every 700 allocations and, with them, walks
# torch's and dynamo's ~1M long-lived objects again and again: a GPT-2 and a 4-layer Llama explained in a
# fresh process spent 3.05 s of ~24 s in the collector, 1.1 s with these thresholds (gc.callbacks, measured).
GC_THRESHOLD = (20_000, 50, 20)
gc.set_threshold(*GC_THRESHOLD)
# At exit, after every atexit hook of the program itself, the objects still alive are frozen, so Python's last
# collection does not walk them. A Python that has imported torch and torch_xla holds ~450k of them and spent
# 1.4 s exiting on that walk, 0.2 s with them frozen (measured).
atexit.register(gc.freeze)  # registered first, so it runs last
