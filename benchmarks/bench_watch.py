"""What neurondev.watch costs: a watched loop against the same loop bare, warm, side by side in one process.

Two loops: a training step fed a decaying Python-float learning rate (a dynamo recompile every step),
and a tiny random-weight Llama's decode loop (``generate`` with a static cache: two compiles, then
steady). Each round resets dynamo first (so both sides compile the same frames again; torch_xla's
compile cache stays warm, as it would in a process that ran the loop before), the order of the two
sides alternates, and the best of three rounds is compared. Target: watched/bare <= 1.1 (the watch reads the
device counts at every step, and with `xla_analysis` off: torch_xla's analysis costs what it costs whoever turns it on).

    .venv/bin/python benchmarks/bench_watch.py
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import neurondev  # noqa: E402
from neurondev.testing import tiny_llama  # noqa: E402
from tests.loops import loops  # noqa: E402

ROUNDS = 3


def learning_rate_loop(device: torch.device) -> Callable[[], object]:
    torch.manual_seed(0)
    model = loops.Regressor().to(device)

    def run() -> object:
        compiled = torch.compile(loops.make_step(model), backend="openxla")
        return loops.train(compiled, device, batches=(8,) * 12)

    return run


def decode_loop(device: torch.device) -> Callable[[], object]:
    model, (ids,), _ = tiny_llama(2)
    model = model.to(device)
    forward = model.forward
    prompt = ids.to(device)

    def run() -> object:
        model.forward = torch.compile(forward, backend="openxla")
        return model.generate(prompt, max_new_tokens=16, do_sample=False, cache_implementation="static").cpu()

    return run


def timed(run: Callable[[], object], watched: bool) -> float:
    torch._dynamo.reset()
    start = time.perf_counter()
    if watched:
        with neurondev.watch():
            run()
    else:
        run()
    return time.perf_counter() - start


def compare(name: str, run: Callable[[], object]) -> None:
    timed(run, False), timed(run, True)  # warm torch_xla's compile cache for both sides
    bare, watched = [], []
    for round_ in range(ROUNDS):
        order = (False, True) if round_ % 2 == 0 else (True, False)
        for side in order:
            (watched if side else bare).append(timed(run, side))
    print(
        f"{name:>14}: bare {min(bare):.2f} s, watched {min(watched):.2f} s; watched/bare {min(watched) / min(bare):.2f} (target <= 1.1, best of {ROUNDS})"
    )


def main() -> None:
    global ROUNDS
    from neurondev import xla

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tiny", action="store_true", help="once, at the smallest size: the suite runs this, so no rename breaks a benchmark unseen"
    )
    options = parser.parse_args()
    device = xla.device()
    if options.tiny:
        ROUNDS = 1
        compare("learning rate", learning_rate_loop(device))
        return
    compare("learning rate", learning_rate_loop(device))
    compare("decode", decode_loop(device))


if __name__ == "__main__":
    main()
