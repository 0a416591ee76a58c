"""What the native accounting costs, against plain torch, side by side in one process (best of five, rounds alternating).

The device is neurondev's host test device (host memory behind PyTorch's PrivateUse1 mechanism) with aten::addmm
falling back to the CPU, so that every call has events to record, each attributed to its line and module. Columns:

- ``plain``: the model's forward in plain torch;
- ``observer``: neurondev's accounting on any device, the dispatcher's observer: a RecordFunction callback counts in
  C++ and calls back into Python only at a copy, a sync or a fallback (``native.observer``);
- ``counting``: the same with lines off (what a long loop's repeating steps cost: the mechanism's floor);
- ``log``: the host device's own C++ log as the record instead (``NEURONDEV_ACCOUNTING=log``: the reference);
- ``profiler``: ``torch.profiler`` on the CPU with the ops' input shapes, the ecosystem's own sight of every op;
- ``watch``: the public ``neurondev.watch()`` around the calls, a ``w.step()`` after each: a loop of as many steps
  as a timing has calls (lines on its first steps, counts only once it repeats: ``loops/attribution.py``), and
  ``watch10``, a loop of 10 steps, nearly all of them with lines;
- ``program``: explain's native program run (``torch.compile`` through the device's backend, under its accounting)
  against the same model under ``torch.compile(backend="aot_eager")``.

Each timing runs at least ``SECONDS`` of plain calls (at least 10 calls), so that a timer's resolution and the
machine's noise are small against it; the best of ``ROUNDS`` per side. Three loads: a tiny GPT-2 (hidden 64: about 140 ops of a few microseconds each), a small MLP, and a GPT-2 of GPT-2
small's width (hidden 768, 2 layers, 128 tokens). Goal: log, watch and program <= 1.3 on the tiny loads, <= 1.1 at
GPT-2 small's width. ``--target cuda`` runs the same on a GPU (no fallback there: copies and syncs; the observer, CUDA
keeping no log of its own).

    .venv-current/bin/python benchmarks/bench_native_device.py
"""

from __future__ import annotations

import argparse
import contextlib
import math
import time
from collections.abc import Callable, Iterator
from typing import Any

import torch

import neurondev
from neurondev.native.choice import accounting_for
from neurondev.native.device import NativeDriver
from neurondev.native.events import DEVICE_LOGS
from neurondev.native.logged import LoggedAccounting
from neurondev.native.observer import observer_for
from neurondev.testing import tiny_gpt2

ROUNDS = 5
SECONDS = 0.25  # of plain calls per timing, at least
STEPS = 10  # the short loop's steps


def gpt2(device: torch.device, **size: int) -> tuple[torch.nn.Module, Callable[[torch.nn.Module], object]]:
    model, args, kwargs = tiny_gpt2(**size)
    moved = [a.to(device) for a in args]
    return model.to(device), lambda run: run(*moved, **kwargs)


def mlp(device: torch.device) -> tuple[torch.nn.Module, Callable[[torch.nn.Module], object]]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.GELU()) for _ in range(8)]).to(device)
    x = torch.randn(32, 256, device=device)
    return model, lambda run: run(x)


def _calls(call: Callable[[], object], calls: int) -> float:
    start = time.perf_counter()
    with torch.no_grad():
        for _ in range(calls):
            call()
    return time.perf_counter() - start


@contextlib.contextmanager
def _counting(device: torch.device) -> Iterator[Any]:
    accounting = LoggedAccounting(device.type, observer_for(device.type))
    with accounting:
        accounting.attributing = False
        yield accounting


def _profiled() -> Any:
    return torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True)


def sides(model: torch.nn.Module, feed: Callable[[Any], object], device: torch.device) -> dict[str, Callable[[int], float]]:
    """Each side: a function timing a number of calls of the model."""
    call = lambda: feed(model)  # noqa: E731
    found: dict[str, Callable[[int], float]] = {"plain": lambda calls: _calls(call, calls)}
    found["observer"] = lambda calls: _under(LoggedAccounting(device.type, observer_for(device.type)), call, calls)
    found["counting"] = lambda calls: _under(_counting(device), call, calls)
    if device.type in DEVICE_LOGS:
        found["log"] = lambda calls: _under(LoggedAccounting(device.type, DEVICE_LOGS[device.type]), call, calls)
    found["profiler"] = lambda calls: _under(_profiled(), call, calls)
    found["watch"] = lambda calls: _watched(call, calls)
    found["watch10"] = lambda calls: _short_loops(call, calls)
    driver = NativeDriver(device)
    compiled, floor = torch.compile(model, backend=driver.program_backend()), torch.compile(model, backend="aot_eager")
    found["program"] = lambda calls: _under(driver.measuring(compiled=True), lambda: feed(compiled), calls)
    found["aot_eager"] = lambda calls: _calls(lambda: feed(floor), calls)
    return found


def _under(context: Any, call: Callable[[], object], calls: int) -> float:
    with context:
        return _calls(call, calls)


def _short_loops(call: Callable[[], object], calls: int) -> float:
    """Watched loops of STEPS steps, about ``calls`` calls in all, their time scaled to ``calls`` calls."""
    loops = max(1, calls // STEPS)
    return sum(_watched(call, STEPS) for _ in range(loops)) * calls / (loops * STEPS)


def _watched(call: Callable[[], object], calls: int) -> float:
    start = time.perf_counter()
    with torch.no_grad(), neurondev.watch() as watched:
        for _ in range(calls):
            call()
            watched.step()
    return time.perf_counter() - start


def compare(name: str, built: tuple[torch.nn.Module, Callable[[Any], object]], device: torch.device) -> None:
    timers = sides(*built, device)
    for timer in timers.values():
        timer(STEPS)  # warm up (and compile) every side
    calls = max(STEPS, math.ceil(SECONDS / (timers["plain"](STEPS) / STEPS)))
    best = dict.fromkeys(timers, float("inf"))
    for round_ in range(ROUNDS):
        for side in list(timers) if round_ % 2 == 0 else list(reversed(timers)):
            best[side] = min(best[side], timers[side](calls))
    plain = best["plain"]
    ratios = ", ".join(f"{side} {best[side] / plain:.2f}" for side in timers if side not in ("plain", "aot_eager", "program"))
    program = best["program"] / best["aot_eager"]
    print(
        f"{name:>10}: plain {plain / calls * 1e3:.2f} ms/call, {calls} calls a timing; over plain: {ratios}; "
        f"program over aot_eager {program:.2f} (best of {ROUNDS})"
    )


def main() -> None:
    global ROUNDS, SECONDS, STEPS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tiny", action="store_true", help="once, at the smallest size: the suite runs this, so no rename breaks a benchmark unseen"
    )
    parser.add_argument("--target", default="hostdev", help="hostdev (the default) or cuda, where a GPU is lent")
    options = parser.parse_args()
    device = neurondev.host_device(fallback=["aten::addmm"]) if options.target == "hostdev" else torch.device(options.target)
    print(f"device {device} (torch {torch.__version__}); accounting: {type(accounting_for(device.type)).__name__}")
    if options.tiny:
        ROUNDS, SECONDS, STEPS = 1, 0.0, 1
        compare("gpt2 tiny", gpt2(device), device)
        return
    compare("gpt2 tiny", gpt2(device), device)
    compare("mlp", mlp(device), device)
    compare("gpt2 768", gpt2(device, hidden=768, heads=12, sequence=128, vocab=2000), device)


if __name__ == "__main__":
    main()
