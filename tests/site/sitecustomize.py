"""Loaded by every Python the suite starts (tests/conftest.py puts this folder on PYTHONPATH): at exit, after
every atexit hook of the program itself, the objects still alive are frozen, so Python's last garbage
collection does not walk them. A Python that has imported torch and torch_xla holds ~450k of them and spent
1.4 s exiting on that walk, 0.2 s with them frozen (measured); what it prints and its exit status are the same."""

import atexit
import gc

atexit.register(gc.freeze)  # registered first, so it runs last
