"""Run a traced graph frozen and rewritten on several XLA devices at once: one rank per device, xmp.spawn."""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import logging
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from neurondev.errors import InvalidOptionError, RankRunError, UnsupportedWorldSizeError

if TYPE_CHECKING:
    from neurondev.runs.run_records import RunRecord

__all__ = [
    "PJRT_CPU_WORLD_SIZES",
    "RankCase",
    "RankResult",
    "RankRun",
    "check_world_size",
    "run_on_ranks",
]

log = logging.getLogger("neurondev")

_BARRIER_SECONDS = 300


@dataclasses.dataclass(frozen=True)
class RankRun:
    """One graph's run on one rank: where it broke, what crossed, where the output landed, values.

    ``graph_breaks`` names this rank's own nodes. ``executions`` and ``transfers_to_host`` come from
    torch_xla's counters, which are per process: with a thread per device (PJRT CPU) they include
    the peers' share of the same collective step (2 ranks: 2 executions at the frozen ``copy_``).
    """

    graph_breaks: tuple[str, ...]
    executions: int
    transfers_to_host: int
    output_devices: tuple[str, ...]
    values: tuple[float, ...]
    matches_expected: bool | None
    error: str | None


@dataclasses.dataclass(frozen=True)
class RankResult:
    """The frozen and the rewritten graph of one rank, with the reduction that rank must get."""

    rank: int
    world_size: int
    device: str
    expected: tuple[float, ...]
    frozen: RankRun
    rewritten: RankRun


# What one rank runs: (function, its inputs, the outputs this rank must get), for (rank, world_size).
RankCase = Callable[[int, int], tuple[Callable, tuple, torch.Tensor]]


def run_on_ranks(case: str, *, world_size: int = 2, timeout: float = 600) -> list[RankResult]:
    """Trace ``case``'s function on CPU, on each rank, and run it frozen and rewritten on ``world_size`` devices.

    ``case`` names a ``RankCase`` as ``"package.module:function"`` (the workers import it: it must be
    importable in a fresh process); ``neurondev.gallery.collective`` holds the seed's collective.

    Runs in a fresh process (torch_xla's multiprocessing needs an uninitialised runtime) through
    ``torch_xla.distributed.xla_multiprocessing.spawn``, forked: that process has started no runtime
    and no thread, so its rank processes begin with torch_xla imported instead of importing it again
    (the gallery's two-rank run: 7.5 s -> 4.6 s of CPU, measured). On the PJRT CPU runtime the devices are
    ``CPU_NUM_DEVICES=world_size`` CPU devices, a thread per device; on Neuron, the cores the
    Neuron runtime exposes (its own device count setting decides the world size there).
    """
    check_world_size(world_size)
    _load_case(case)
    with tempfile.TemporaryDirectory(prefix="neurondev-ranks-") as folder:
        environ = dict(os.environ, CPU_NUM_DEVICES=str(world_size))
        environ.setdefault("PJRT_DEVICE", "CPU")
        command = [sys.executable, "-m", "neurondev.xla.ranks", case, "--world-size", str(world_size), "--out", folder]
        log.info("running %s on %d XLA devices in a fresh process (xmp.spawn)", case, world_size)
        finished = subprocess.run(command, env=environ, capture_output=True, text=True, timeout=timeout)
        results = sorted(Path(folder).glob("rank-*.json"))
        if finished.returncode != 0 or len(results) != world_size:
            raise RankRunError(
                f"the {world_size}-rank run of {case} failed (exit {finished.returncode}, {len(results)} rank results):\n"
                + finished.stderr[-3000:]
            )
        return [_result_from_json(json.loads(path.read_text())) for path in results]


# PJRT CPU on this kind of machine: 3 and 4 ranks abort in XLA's rendezvous ("Expected 3 threads ...
# only 2 of them arrived"), the same with plain torch_xla; 1 and 2 run.
PJRT_CPU_WORLD_SIZES = (1, 2)


def check_world_size(world_size: Any, *, runtime: str | None = None) -> None:
    """UnsupportedWorldSizeError unless ``world_size`` ranks can run on the runtime neurondev selects."""
    if isinstance(world_size, bool) or not isinstance(world_size, int) or world_size < 1:
        raise UnsupportedWorldSizeError(f"world_size is a number of ranks, an int >= 1; got {world_size!r}")
    runtime = runtime or _runtime_name()
    if runtime == "pjrt-cpu" and world_size not in PJRT_CPU_WORLD_SIZES:
        raise UnsupportedWorldSizeError(
            f"world_size={world_size} cannot run on the PJRT CPU device: XLA's CPU rendezvous aborts with more "
            f'than 2 ranks ("Expected {world_size} threads ... only 2 of them arrived"), with or without neurondev. '
            "Use world_size=1 or 2 here; larger worlds need Trainium (torch-neuronx) or another PJRT device"
        )


def _runtime_name() -> str:
    """'neuron', 'pjrt-cpu' or 'pjrt' (another PJRT device), without starting a runtime."""
    from neurondev import xla

    choice = xla.planned_runtime()
    return "pjrt-cpu" if choice.pjrt_cpu else choice.runtime


def _result_from_json(data: dict[str, Any]) -> RankResult:
    """A rank's result as its worker wrote it (JSON has lists where the records hold tuples)."""
    frozen, rewritten = (_run_from_json(data.pop(name)) for name in ("frozen", "rewritten"))
    return RankResult(**{**data, "expected": tuple(data["expected"])}, frozen=frozen, rewritten=rewritten)


def _run_from_json(data: dict[str, Any]) -> RankRun:
    sequences = {name: tuple(data[name]) for name in ("graph_breaks", "output_devices", "values")}
    return RankRun(**{**data, **sequences})


_trace_lock = threading.Lock()
_threads_barrier: threading.Barrier | None = None


def _load_case(case: Any) -> RankCase:
    """The RankCase ``case`` names; InvalidOptionError unless it is an importable "package.module:function"."""
    module, _, name = case.partition(":") if isinstance(case, str) else ("", "", "")
    try:
        found = getattr(importlib.import_module(module), name) if module and name else None
    except (ImportError, AttributeError):
        found = None
    if not callable(found):
        raise InvalidOptionError(
            f'case names the function each rank runs, as "package.module:function" importable in a fresh process '
            f'(e.g. "neurondev.gallery.collective:collective_case"); got {case!r}'
        )
    return found


def _worker(index: int, case: str, folder: str, world_size: int) -> None:
    """One rank (a thread per device on PJRT CPU): trace alone, run both graphs in lock-step."""
    import torch_xla.runtime as xr

    from neurondev import xla
    from neurondev.passes.device_rewriter import rewrite_copy
    from neurondev.trace.capture import trace_only
    from neurondev.xla.run import run_on_xla

    rank, ranks = xr.global_ordinal(), xr.world_size()
    if ranks != world_size:
        raise RuntimeError(f"asked for {world_size} ranks, torch_xla runs {ranks}")
    fn, inputs, expected = _load_case(case)(rank, world_size)
    with _trace_lock:  # dynamo traces one thread at a time
        traced = trace_only(fn, *inputs)
    (gm,) = traced.graphs
    barrier = _rank_barrier()
    runs = {
        name: _rank_run(run_on_xla(graph, *inputs, reference=expected, repeat=0, barrier=barrier))
        for name, graph in (("frozen", gm), ("rewritten", rewrite_copy(gm)[0]))
    }
    result = RankResult(rank, world_size, str(xla.device()), tuple(expected.tolist()), **runs)
    Path(folder, f"rank-{rank}.json").write_text(json.dumps(dataclasses.asdict(result)))


def _rank_barrier():
    """A barrier across the ranks: the threads of this process, and processes when there are several."""
    import torch_xla.core.xla_model as xm
    import torch_xla.runtime as xr

    global _threads_barrier
    with _trace_lock:
        if _threads_barrier is None:
            _threads_barrier = threading.Barrier(xr.addressable_device_count(), timeout=_BARRIER_SECONDS)
        threads = _threads_barrier

    def barrier() -> None:
        threads.wait()
        if xr.process_count() > 1:
            xm.rendezvous("neurondev-ranks")

    return barrier


def _rank_run(record: RunRecord) -> RankRun:
    outputs = record.outputs[0].cpu().tolist() if record.outputs else []
    return RankRun(
        graph_breaks=tuple(b.node for b in record.graph_breaks),
        executions=record.executions,
        transfers_to_host=record.transfers_to_host,
        output_devices=tuple(record.output_devices),
        values=tuple(outputs),
        matches_expected=record.matches_reference,
        error=str(record.error) if record.error else None,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description="run a traced graph on several XLA devices (internal)")
    parser.add_argument("case", help="package.module:function, a RankCase")
    parser.add_argument("--world-size", type=int, required=True)
    parser.add_argument("--out", required=True)
    options = parser.parse_args()
    import torch_xla.distributed.xla_multiprocessing as xmp

    # forked: this process imported torch_xla and neurondev and started nothing (see run_on_ranks)
    xmp.spawn(_worker, args=(options.case, options.out, options.world_size), start_method="fork")


if __name__ == "__main__":
    main()
