"""What the native accounting costs: a model's forward on a native device with neurondev's accounting on (a
dispatch mode that runs each device op's kernel with itself pushed again, seeing the ops beneath it: the
fallbacks inside composite ops), against the same forward in plain torch, side by side in one process.

The device is neurondev's host test device (host memory behind PyTorch's PrivateUse1 mechanism), with
aten::addmm falling back to the CPU so that the accounting has events to record (each one attributed to
its line and module). A third column is the floor of the mechanism: a ``TorchDispatchMode`` that does
nothing but call the op (torch's own cost of seeing every op from Python, which neurondev cannot lower).
Three loads, called eagerly: a tiny GPT-2 (hidden 64: about 140 ops of a few microseconds each), a small
MLP, and a GPT-2 of GPT-2 small's width (hidden 768, 2 layers, 128 tokens), where each op does real
work as it does on an accelerator. Rounds alternate the sides; the best of five is compared.
Target: accounted/plain <= 1.3 where ops do real work; on the tiny loads the floor alone exceeds it.

    .venv-current/bin/python benchmarks/bench_native_device.py
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

import neurondev
from neurondev.native.accounting import Accounting
from neurondev.testing import tiny_gpt2

ROUNDS = 5
CALLS = 10


class SeesEveryOp(TorchDispatchMode):
    """The floor: every op seen from Python, nothing recorded."""

    @classmethod
    def ignore_compile_internals(cls) -> bool:
        return True

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        return func(*args, **(kwargs or {}))


def gpt2(device: torch.device, **size: int) -> Callable[[], object]:
    model, args, kwargs = tiny_gpt2(**size)
    model = model.to(device)
    moved = [a.to(device) for a in args]
    return lambda: model(*moved, **kwargs)


def mlp(device: torch.device) -> Callable[[], object]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.GELU()) for _ in range(8)]).to(device)
    x = torch.randn(32, 256, device=device)
    return lambda: model(x)


def timed(run: Callable[[], object], mode: TorchDispatchMode | None) -> float:
    start = time.perf_counter()
    with torch.no_grad():
        if mode is None:
            for _ in range(CALLS):
                run()
        else:
            with mode:
                for _ in range(CALLS):
                    run()
    return time.perf_counter() - start


def compare(name: str, run: Callable[[], object], device: torch.device) -> None:
    accounting = Accounting(device.type)
    sides: dict[str, TorchDispatchMode | None] = {"plain": None, "floor": SeesEveryOp(), "accounted": accounting}
    for mode in sides.values():
        timed(run, mode)  # warm up every side
    best = {side: float("inf") for side in sides}
    for round_ in range(ROUNDS):
        order = list(sides) if round_ % 2 == 0 else list(reversed(sides))
        for side in order:
            best[side] = min(best[side], timed(run, sides[side]))
    events = len(accounting.events) // (CALLS * (ROUNDS + 1))
    per_call = {side: seconds / CALLS * 1e3 for side, seconds in best.items()}
    print(
        f"{name:>10}: plain {per_call['plain']:.2f} ms/call, floor {per_call['floor']:.2f}, accounted {per_call['accounted']:.2f} "
        f"({events} events a call); accounted/plain {best['accounted'] / best['plain']:.2f} (target <= 1.3), "
        f"floor/plain {best['floor'] / best['plain']:.2f}, accounted/floor {best['accounted'] / best['floor']:.2f} (best of {ROUNDS})"
    )


def main() -> None:
    global ROUNDS, CALLS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tiny", action="store_true", help="once, at the smallest size: the suite runs this, so no rename breaks a benchmark unseen"
    )
    options = parser.parse_args()
    device = neurondev.host_device(fallback=["aten::addmm"])
    if options.tiny:
        ROUNDS, CALLS = 1, 1
        compare("gpt2 tiny", gpt2(device), device)
        return
    compare("gpt2 tiny", gpt2(device), device)
    compare("mlp", mlp(device), device)
    compare("gpt2 768", gpt2(device, hidden=768, heads=12, sequence=128, vocab=2000), device)


if __name__ == "__main__":
    main()
