"""The device-neutral run layer: what a run counts, how values compare, the records of graph and program runs."""
