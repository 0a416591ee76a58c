"""The columns of a watch's tables: one row per compile, per step, per call of a watched function."""

from __future__ import annotations

__all__ = ["CALL_COLUMNS", "COMPILE_COLUMNS", "STEP_COLUMNS"]

# what the device did in a step (or call): XLA's executions and transfers, a native device's copies, syncs, fallbacks
_DEVICE = (
    "executions",
    "transfers_to_host",
    "transfers_to_device",
    "copies_to_host",
    "copies_to_device",
    "syncs",
    "fallbacks",
    "device_lines",
)

COMPILE_COLUMNS = (
    "function",
    "file",
    "line",
    "index",
    "kind",
    "cause",
    "value",
    "before",
    "after",
    "measure",
    "dim",
    "xla_compiles",
    "read_at",
    "step",
    "call",
    "outside",
    "graphs",
    "graph_hashes",
    "seconds",
)
STEP_COLUMNS = (
    "step",
    "function",
    "phase",
    "dynamo_compiles",
    "graphs",
    "cache_hits",
    "xla_compiles",
    "compile_seconds",
    "cached_programs",
    *_DEVICE,
    "lined",
    "xla_triggers",
    "xla_programs",
    "dynamo_seconds",
    "execute_seconds",
    "transfer_seconds",
    "seconds",
)
CALL_COLUMNS = (
    "call",
    "compiled",
    "graphs",
    "xla_compiles",
    *_DEVICE,
    "seconds",
)
