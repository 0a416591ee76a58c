"""A torch.export.ExportedProgram as a capture: its graph is already traced; its inputs are its state, then the call's."""

from __future__ import annotations

from typing import Any

import torch

from neurondev._compat.fx_internals import tree_leaves
from neurondev.errors import InputCountError
from neurondev.trace.capture_notes import CaptureNote

__all__ = ["capture_exported"]

_STATE_KINDS = ("PARAMETER", "BUFFER", "CONSTANT_TENSOR")


def capture_exported(program: torch.export.ExportedProgram, args: tuple, kwargs: dict) -> Any:
    """A Capture of ``program``'s one graph with the inputs it runs with: each parameter, buffer and
    constant the signature lifts, then the call's own inputs (flattened as export flattened them), in the
    graph's order; ``output`` is the program run on them."""
    from neurondev.trace.capture import Capture

    given = list(tree_leaves((args, kwargs)))
    inputs: list[Any] = []
    for spec in program.graph_signature.input_specs:
        kind = spec.kind.name
        if kind in _STATE_KINDS:
            state = program.state_dict if kind != "CONSTANT_TENSOR" else program.constants
            inputs.append(state[spec.target].detach().clone())
        elif given:
            inputs.append(given.pop(0))
        else:
            raise InputCountError("the exported program takes more inputs than were given: pass the inputs it was exported with")
    if given:
        raise InputCountError(f"the exported program takes {len(inputs)} input(s) with its state, and {len(given)} more were given")
    with torch.no_grad():
        output = program.module()(*args, **kwargs)
    notes = (CaptureNote("exported"),)
    name = f"exported {type(program.module()).__name__}"
    return Capture(name, (program.graph_module,), (tuple(inputs),), output=output, notes=notes)
