"""Dynamo's caches on the user's code objects: what neurondev's own traces add there is taken out again.

Dynamo keeps compiled variants on the code object of every frame it compiles, and refuses to
compile a frame again once it holds ``recompile_limit`` (8) variants, whatever backend made them.
neurondev's traces and program runs compile fresh entry functions, but a graph break inside the
user's code makes dynamo compile the user's own frames (a module's ``forward``) too. Eight explains
of such a model would use up the limit: the ninth would record no graph there, and the user's own
``torch.compile`` would then run that frame uncompiled. ``kept_dynamo_caches`` takes the variants a
block added out again (a code object that held none before is reset), and lifts the limit inside
the block so that variants the user made earlier never stop neurondev's trace. Dynamo's memory of
which sizes changed (its automatic-dynamic state, kept per file, line and name) is empty inside the
block and the user's afterwards: neurondev's traces are neither made dynamic by earlier ones nor make
the user's own compiles dynamic.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from neurondev._compat.dynamo import cache_entry_ids, compiled_code_objects, dynamo_config, own_code_state, reset_code

__all__ = ["kept_dynamo_caches"]

_LIMIT = 1024


@contextlib.contextmanager
def kept_dynamo_caches() -> Iterator[None]:
    """Inside: dynamo may compile every frame again (the recompile limits lifted), from no memory of
    earlier sizes. After: every code object that held no compiled variant before the block holds none
    again, and dynamo's size memory is the one from before the block."""
    before = {id(code): cache_entry_ids(code) for code in compiled_code_objects()}
    config = dynamo_config()
    limits = {
        "recompile_limit": max(config.recompile_limit, _LIMIT),
        "accumulated_recompile_limit": max(config.accumulated_recompile_limit, _LIMIT),
    }
    try:
        with config.patch(limits), own_code_state():
            yield
    finally:
        for code in compiled_code_objects():
            if not before.get(id(code)) and cache_entry_ids(code):
                reset_code(code)
