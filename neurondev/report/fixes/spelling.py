"""The fixed spelling of one statement of the user's code, edited with libcst so formatting and comments stay.

``torch.empty/zeros/ones/full(..., device=x.device)`` becomes ``x.new_empty/new_zeros/new_ones/new_full(...)``
(every other argument kept), ``torch.tensor(data, device=x.device)`` becomes ``x.new_tensor(data)``,
``y.to(x.device, dtype)`` becomes ``y.to(dtype)``, a ``.cpu()`` in the middle of the graph is dropped.
``x`` is read from the device expression (``x.device``, ``str(x.device)``, ``torch.device(x.device.type)``,
a name assigned one of those above); a written-out ``"cpu"`` takes the tensor the call's sizes are read
from. Where no spelling keeps the device symbolic under dynamo (``torch.arange``, ``y.to(x.device)``)
nothing is invented: the spelling says so.

Here: the statement found and its calls edited, each by the fix of its kind: a constructor's
(``spell_constructors``), a move's (``spell_moves``); the file's statements are read in ``statements``, and
what the fixes share in ``call_edits``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from neurondev.fx.pins import DevicePin
from neurondev.report.fixes.call_edits import dotted
from neurondev.report.fixes.records import NO_SPELLING, SpellingNote
from neurondev.report.fixes.spell_constructors import LIKE, NEW, constructor, like
from neurondev.report.fixes.spell_moves import drop_move, move_to
from neurondev.report.fixes.statements import (
    BLOCK,
    as_written_header,
    assignments_above,
    header_at,
    parse,
    parseable_header,
    statement_at,
)

__all__ = ["Spelling", "spell"]


@dataclasses.dataclass(frozen=True)
class Spelling:
    """One statement: the file's text after the fix (None when there is no spelling), the statement's
    lines in the original, a short phrase of what to write, and the nodes of the pins it removes."""

    first: int
    last: int
    text: str | None
    advice: str
    note: SpellingNote
    removes: tuple[str, ...] = ()
    left: tuple[str, ...] = ()


def spell(source: str, line: int, pins: Sequence[DevicePin], dtypes: Mapping[str, str] | None = None) -> Spelling:
    """The fix of the statement at ``line`` of ``source`` for ``pins`` (pins of that line); ``dtypes``
    (pin node -> ``torch.int64``) spells the dtype of the value a pin made where ``new_*`` would
    take another (the tensor's it is called on)."""
    try:
        import libcst
    except ImportError:  # a dependency, but an environment may lack it: say so on the card, never fail explain
        return Spelling(line, line, None, "pip install libcst", SpellingNote("no libcst"))
    parsed = parse(source)
    if isinstance(parsed, str):
        return Spelling(line, line, None, "see the advice", SpellingNote("file does not parse", error=parsed))
    found = statement_at(parsed, line)
    header = found is None
    found = found or header_at(parsed, line)
    if found is None:
        return Spelling(line, line, None, "see the advice", SpellingNote("no statement"))
    first, last = found
    written = "".join(parsed.lines[first - 1 : last])
    block = BLOCK if written[:1].isspace() else ""  # an indented statement parses as the body of a block, byte for byte
    parseable, body = parseable_header(written) if header else (written, "")
    try:
        snippet = libcst.parse_module(block + parseable + body)
    except libcst.ParserSyntaxError as error:
        return Spelling(first, last, None, "see the advice", SpellingNote("does not parse", error=str(error).splitlines()[0]))
    editor = _editor(list(pins), assignments_above(parsed, first), dict(dtypes or {}))
    code = snippet.visit(editor).code[len(block) :]
    statement = as_written_header(code[: len(code) - len(body)], written) if header else code
    left = tuple(pin.node for pin in pins if pin.node not in editor.removes)
    if not editor.removes:
        return Spelling(first, last, None, editor.advice or _advice_without_spelling(pins), editor.note or NO_SPELLING, (), left)
    text = "".join(parsed.lines[: first - 1]) + statement + "".join(parsed.lines[last:])
    return Spelling(first, last, text, editor.advice, editor.note, tuple(editor.removes), left)


def _advice_without_spelling(pins: Sequence[DevicePin]) -> str:
    if any(pin.function == "torch.autocast" for pin in pins):
        return "device_type='xla' (where it runs), or the neurondev backend"
    return "compile through the neurondev backend"


def _editor(pins: list[DevicePin], scope: dict[str, Any], dtypes: dict[str, str]) -> Any:
    """A libcst transformer that edits the calls of one statement, and says what it did."""
    import libcst

    class Editor(libcst.CSTTransformer):
        def __init__(self) -> None:
            super().__init__()
            self.pins = pins
            self.scope = scope
            self.dtypes = dtypes
            self.removes: list[str] = []
            self.left: list[str] = []
            self.advice = ""
            self.note: SpellingNote | None = None

        def leave_Call(self, original: Any, updated: Any) -> Any:
            return _edit_call(self, updated)

    return Editor()


def _edit_call(editor: Any, call: Any) -> Any:
    import libcst

    name = dotted(call.func)
    if name in NEW:
        return constructor(editor, call, name)
    if name in LIKE:
        return like(editor, call, name)
    if isinstance(call.func, libcst.Attribute) and call.func.attr.value == "to":
        return move_to(editor, call)
    if isinstance(call.func, libcst.Attribute) and call.func.attr.value in ("cpu", "cuda") and not call.args:
        return drop_move(editor, call)
    return call
