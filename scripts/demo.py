"""The demo until `neurondev demo` lands: the seed example's device pins, found and rewritten."""

import pandas

import neurondev
from neurondev import examples


def main() -> None:
    fn, args, kwargs = examples.get("seed").build()
    captured = neurondev.capture(fn, *args, **kwargs)
    print(captured)
    with pandas.option_context("display.width", 200, "display.max_colwidth", 70):
        table = neurondev.diagnose(captured)
        print("\nDevice pins frozen into the graph traced on CPU:")
        print(table[["node", "target", "device", "location", "kind", "line", "code"]].to_string(index=False))
    graph, rewrites = neurondev.rewrite_copy(captured.graphs[0])
    print("\nDeviceRewriterPass rewrote:")
    for rewrite in rewrites:
        print(f"  {rewrite.node} ({rewrite.location}): {rewrite.old!r} -> {rewrite.new!r}")
    print("\nThe graph after the pass:")
    print(graph.code.strip())


if __name__ == "__main__":
    main()
