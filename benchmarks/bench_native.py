"""The native graph as the yardstick: per-call time of the rewritten CPU trace over the graph traced
natively on XLA, for every gallery pattern whose two traces agree, and the tiny GPT-2.

Both graphs run on the same XLA device in one process, calls interleaved round by round, medians
compared (neurondev.runs.traces.side_by_side_seconds), so the ratio holds on a shared, noisy machine.
Target: within 1.1 on every one.
"""

from __future__ import annotations

import argparse

import neurondev
from neurondev import examples
from neurondev.runs.traces import compare_with_native, side_by_side_seconds
from neurondev.xla.driver import XlaDriver


def ratio_of(name: str, rounds: int) -> float | None:
    with examples.get(name).open() as (fn, args, kwargs):
        cpu = neurondev.capture(fn, *args, **kwargs)
        comparison = compare_with_native(cpu, fn, args, kwargs, driver=XlaDriver())
    if not comparison.agree:
        print(f"{name:>17}: traces differ, no yardstick ({neurondev.describe(comparison)[:90]})")
        return None
    ratios = []
    for index, gm in enumerate(cpu.graphs):
        rewritten = neurondev.rewrite_copy(gm, target=neurondev.xla.device())[0]
        runs = {
            "rewritten": (rewritten, cpu.example_inputs[index]),
            "native": (comparison.native.graphs[index], comparison.native.example_inputs[index]),
        }
        seconds = side_by_side_seconds(runs, driver=XlaDriver(), rounds=rounds)
        ratios.append(seconds["rewritten"] / seconds["native"])
        print(
            f"{name:>17}: graph {index} rewritten {seconds['rewritten'] * 1e3:.3f} ms, native "
            f"{seconds['native'] * 1e3:.3f} ms, rewritten/native {ratios[-1]:.2f}"
        )
    return max(ratios)


def main() -> None:
    import neurondev.xla  # noqa: F401  (the device used above)

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument(
        "--tiny", action="store_true", help="once, at the smallest size: the suite runs this, so no rename breaks a benchmark unseen"
    )
    options = parser.parse_args()
    names = ["seed"] if options.tiny else list(examples.CATALOGUE)
    rounds = 2 if options.tiny else options.rounds
    worst = {}
    for name in names:
        ratio = ratio_of(name, rounds)
        if ratio is not None:
            worst[name] = ratio
    over = {name: ratio for name, ratio in worst.items() if ratio > 1.1}
    print(
        f"worst rewritten/native: {max(worst.values()):.2f} over {len(worst)} pattern(s) (target <= 1.1); "
        + (f"over target: {', '.join(f'{n} {r:.2f}' for n, r in over.items())}" if over else "all within target")
    )


if __name__ == "__main__":
    main()
