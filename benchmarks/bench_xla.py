"""Per-call time and mid-graph executions/transfers on the XLA device, four ways, side by side in one run.

(a) the graph traced directly on XLA inputs: nothing frozen, the limit
(b) the graph traced on CPU, kwargs-only rewrite (the documented DeviceRewriterPass)
(c) the graph traced on CPU, default rewrite (kwargs and positional pins)
(d) the graph traced on CPU, compiled by torch_xla's openxla backend with its own constructor mover

For the seed example and a tiny GPT-2 (random weights, 2 layers, hidden 64, sequence 16). Calls of
the four are interleaved round by round and the median kept, so the ratios hold on a noisy machine.
Targets: (c)/(a) <= 1.1, and zero mid-graph executions and transfers for (c).
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

import neurondev
from neurondev import examples, xla
from neurondev import testing as bridge
from neurondev.render.sentences import runtime_info_text


def traced_on_xla(fn: Callable, args: tuple, kwargs: dict, device: torch.device) -> tuple[torch.fx.GraphModule, list]:
    """The limit: dynamo traces with XLA inputs (and an XLA copy of a module), so no device is frozen to CPU."""
    graphs, inputs = [], []

    def record(gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
        graphs.append(gm)
        inputs.append(list(example_inputs))
        return gm.forward

    traced = copy.deepcopy(fn).to(device) if isinstance(fn, torch.nn.Module) else fn
    with torch.no_grad():
        torch.compile(traced, backend=record, dynamic=False)(*[a.to(device) for a in args], **kwargs)
    torch._dynamo.reset()
    return graphs[0], inputs[0]


def variants(name: str, device: torch.device) -> dict[str, tuple[Callable, list]]:
    """The four callables of one example, each with the XLA inputs it takes."""
    fn, args, kwargs = examples.get(name).build()
    captured = neurondev.capture(fn, *args, **kwargs)
    gm, cpu_inputs = captured.graphs[0], captured.example_inputs[0]
    limit, limit_inputs = traced_on_xla(fn, args, kwargs, device)
    result = {
        "(a) traced on XLA": (limit, xla.to_device(limit_inputs, device)),
        "(b) kwargs-only": (neurondev.rewrite_copy(gm, rewrite_positional=False)[0].to(device), xla.to_device(cpu_inputs, device)),
        "(c) default rewrite": (neurondev.rewrite_copy(gm)[0].to(device), xla.to_device(cpu_inputs, device)),
    }
    xla_inputs = xla.to_device(cpu_inputs, device)
    try:
        result["(d) openxla + mover"] = (bridge.observed_openxla([])(copy.deepcopy(gm), xla_inputs), xla_inputs)
    except Exception as error:
        print(f"  (d) openxla + mover: cannot compile: {type(error).__name__}: {str(error).splitlines()[0]}")
    return result


def one_call(call: Callable, inputs: list) -> tuple[float, xla.Counts]:
    """Wall time of one call plus its sync, and the counters that moved before the sync (mid-graph)."""
    xla.settle()
    before = xla.counts()
    start = time.perf_counter()
    call(*inputs)
    middle = xla.counts() - before
    xla.sync()
    return time.perf_counter() - start, middle


def measure(name: str, device: torch.device, rounds: int) -> dict[str, tuple[float, xla.Counts]]:
    calls, times, counts = {}, {}, {}
    with torch.no_grad():
        for label, (call, inputs) in variants(name, device).items():
            try:
                for _ in range(2):
                    one_call(call, inputs)  # compile and upload constants
                calls[label] = (call, inputs)
            except Exception as error:
                print(f"  {label}: fails: {type(error).__name__}: {str(error).splitlines()[0]}")
        for _ in range(rounds):
            for label, (call, inputs) in calls.items():
                seconds, counts[label] = one_call(call, inputs)
                times.setdefault(label, []).append(seconds)
    return {label: (statistics.median(times[label]), counts[label]) for label in calls}


def report(name: str, results: dict[str, tuple[float, Any]]) -> None:
    print(f"{'variant':<22} {'ms/call':>8} {'mid-graph exec':>15} {'to host':>8} {'to device':>10}")
    for label, (seconds, counts) in results.items():
        print(f"{label:<22} {seconds * 1e3:>8.3f} {counts.executions:>15} {counts.transfers_to_host:>8} {counts.transfers_to_device:>10}")
    a, b, c = (results.get(k, (None,))[0] for k in ("(a) traced on XLA", "(b) kwargs-only", "(c) default rewrite"))
    if a and c:
        print(f"{name}: (c)/(a) = {c / a:.2f} (target <= 1.1)", end="")
        print(f"; (b)/(c) = {b / c:.2f}" if b else "; (b) did not run")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", nargs="+", default=["seed", "gpt2"])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument(
        "--tiny", action="store_true", help="once, at the smallest size: the suite runs this, so no rename breaks a benchmark unseen"
    )
    options = parser.parse_args()
    if options.tiny:
        options.examples, options.rounds = ["seed"], 2
    device = xla.device()
    print(f"device: {xla.describe()['device']} ({runtime_info_text(xla.describe())})")
    for name in options.examples:
        print(f"\n== {name} ==")
        report(name, measure(name, device, options.rounds))


if __name__ == "__main__":
    main()
