"""The demo until `neurondev demo` lands: the seed example's device pins, found, rewritten, run on XLA."""

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
    show_runs(captured, graph)


def show_runs(captured: neurondev.Capture, rewritten) -> None:
    """Both graphs on the real XLA device: the measured break before, none after."""
    from neurondev import xla

    try:
        described = xla.describe()
    except neurondev.XlaUnavailableError as error:
        print(f"\nNo XLA run: {error}")
        return
    print(f"\nOn {described['device']} ({described['runtime']}: {described['reason']}):")
    inputs = captured.example_inputs[0]
    for label, graph in (("frozen", captured.graphs[0]), ("rewritten", rewritten)):
        record = neurondev.run_on_xla(graph, *inputs)
        print(f"  {label:>9}: {record.summary()}; {record.seconds * 1e3:.3f} ms/call")


if __name__ == "__main__":
    main()
