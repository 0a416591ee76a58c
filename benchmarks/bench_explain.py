"""explain() against its floor, and the focus view's drawing time, measured side by side in one run.

The floor of explain is what it cannot avoid: one recording torch.compile trace plus one XLA run of
the graph (run_on_xla: warm-up, measured call, CPU reference, timed calls). explain does that
trace, two such runs (before and after) and draws both graphs. Rounds alternate explain and
floor; medians are compared. Targets: explain/floor <= 2 for the seed and the tiny GPT-2; the
focus view (DOT + dot to SVG) of 50,000 nodes in under 10 s, growing no faster than linearly.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import neurondev
from neurondev import examples, testing
from neurondev.render.dot import graph_dot, side_by_side
from neurondev.render.svg import find_dot, render_svg


def seconds(work: Callable[[], Any]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def floor(fn: Callable, args: tuple, kwargs: dict) -> None:
    captured = neurondev.capture(fn, *args, **kwargs)
    neurondev.run_on_xla(captured.graphs[0], *captured.example_inputs[0])


def compare(name: str, build: Callable, rounds: int) -> float:
    fn, args, kwargs = build()
    stage_times: dict[str, list[float]] = {}
    explain_times, floor_times = [], []
    for _ in range(rounds + 1):  # the first round compiles for XLA: not counted
        start = time.perf_counter()
        explanation = neurondev.explain(fn, *args, **kwargs, quiet=True)
        explain_times.append(time.perf_counter() - start)
        floor_times.append(seconds(lambda: floor(fn, args, kwargs)))
        for stage, value in explanation.stage_seconds.items():
            stage_times.setdefault(stage, []).append(value)
    explain_s, floor_s = statistics.median(explain_times[1:]), statistics.median(floor_times[1:])
    stages = ", ".join(f"{stage} {statistics.median(values[1:]) * 1e3:.0f} ms" for stage, values in stage_times.items())
    ratio = explain_s / floor_s
    print(f"{name:>6}: explain {explain_s * 1e3:.0f} ms ({stages}); floor {floor_s * 1e3:.0f} ms; explain/floor {ratio:.2f} (target <= 2)")
    return ratio


def focus_view(sizes: list[int]) -> list[float]:
    print(f"focus view drawn with {find_dot()}")
    times = []
    for size in sizes:
        gm = testing.long_graph(size)
        pins = neurondev.find_pins(gm)
        text_s = seconds(lambda: side_by_side(graph_dot(gm, pins=pins)))
        svg_s = seconds(lambda: render_svg(side_by_side(graph_dot(gm, pins=pins))))
        times.append(svg_s)
        print(f"{size:>7} nodes: DOT {text_s * 1e3:.0f} ms, DOT + dot to SVG {svg_s * 1e3:.0f} ms")
    for (small, t_small), (large, t_large) in zip(zip(sizes, times), list(zip(sizes, times))[1:]):
        print(
            f"  {large}/{small} nodes: time x{t_large / t_small:.1f} for x{large / small:.0f} nodes (linear or better: <= x{large / small:.0f})"
        )
    print(f"  50,000 nodes in {times[-1]:.2f} s (target < 10 s)")
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    compare("seed", examples.get("seed").build, options.rounds)
    compare("gpt2", testing.tiny_gpt2, max(options.rounds // 2, 2))
    focus_view([500, 5_000, 50_000])


if __name__ == "__main__":
    main()
