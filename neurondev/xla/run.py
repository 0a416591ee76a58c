"""run_on_xla: one FX graph on the XLA device, node by node (the run layer's graph run through the XLA driver)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch.fx

from neurondev.runs.graph import run_graph
from neurondev.runs.run_records import RunRecord
from neurondev.xla.driver import XlaDriver

__all__ = ["run_on_xla"]


def run_on_xla(
    gm: torch.fx.GraphModule,
    *inputs: Any,
    reference: Any = None,
    repeat: int = 3,
    rtol: float | None = None,
    atol: float | None = None,
    barrier: Callable[[], None] | None = None,
    keep_on_host: Iterable[int] = (),
    seed: int | None = None,
) -> RunRecord:
    """Run ``gm`` on the XLA device and record what crossed and what executed, node by node.

    Inputs (and the graph's own parameters and buffers) are copied to the device; ``gm`` and the
    inputs are left untouched, whatever the graph writes to. ``reference`` is the expected output
    (by default the graph's result on CPU); ``rtol``/``atol`` its tolerances, given together.
    ``repeat`` calls are timed for ``seconds`` (0 skips timing). A failing run is recorded in
    ``error``, not raised; inputs that cannot move to the device raise XlaInputError. ``seed``: set
    on the CPU and the XLA generator before each call. ``keep_on_host``: positions of inputs that stay
    on the host, as the user's code would leave them. ``barrier``: for ranks in one process.
    """
    options = {"reference": reference, "repeat": repeat, "rtol": rtol, "atol": atol, "barrier": barrier}
    return run_graph(gm, *inputs, driver=XlaDriver(), keep_on_host=keep_on_host, seed=seed, **options)
