"""Draw assets/seed-before-after.png: the seed graph traced on CPU, run on XLA before and after the pass."""

from pathlib import Path

import graphviz

import neurondev
from neurondev import examples
from neurondev.render.dot import graph_dot, side_by_side

ASSETS = Path(__file__).resolve().parent.parent / "assets"


def main() -> None:
    fn, args, kwargs = examples.get("seed").build()
    captured = neurondev.capture(fn, *args, **kwargs)
    frozen = captured.graphs[0]
    rewritten, _ = neurondev.rewrite_copy(frozen)
    inputs = captured.example_inputs[0]
    before, after = (neurondev.run_on_xla(graph, *inputs, repeat=0) for graph in (frozen, rewritten))
    text = side_by_side(
        graph_dot(frozen, pins=neurondev.find_pins(frozen), record=before, prefix="before_",
                  title=f"traced on CPU, run on XLA: {len(before.graph_breaks)} break, output on {before.output_devices[0]}"),
        graph_dot(rewritten, record=after, prefix="after_",
                  title=f"after DeviceRewriterPass: {len(after.graph_breaks)} breaks, output on {after.output_devices[0]}"),
    )
    ASSETS.mkdir(exist_ok=True)
    graphviz.Source(text).render(ASSETS / "seed-before-after", format="png", cleanup=True)
    print(ASSETS / "seed-before-after.png")


if __name__ == "__main__":
    main()
