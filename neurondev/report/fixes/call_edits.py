"""What every fix of a call shares (libcst): the next pin of the statement a call can be, a call's dotted name,
the tensor a device expression names, a written-out device, and an argument dropped with its comma and its comment
kept."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from neurondev.fx.pins import DevicePin

__all__ = ["dotted", "is_literal", "next_pin", "tensor_of", "without"]


def dotted(node: Any) -> str:
    """``torch.zeros`` for the expression torch.zeros; '' for anything but names and attributes."""
    import libcst

    if isinstance(node, libcst.Name):
        return node.value
    if isinstance(node, libcst.Attribute):
        inner = dotted(node.value)
        return f"{inner}.{node.attr.value}" if inner else ""
    return ""


def next_pin(editor: Any, functions: set[str], locations: tuple[str, ...]) -> DevicePin | None:
    """The first pin of the statement not yet handled that this call can be (by function and location)."""
    for pin in editor.pins:
        if pin.node in editor.removes or pin.node in editor.left:
            continue
        if pin.function in functions and pin.location.startswith(locations):
            return pin
    return None


def without(args: Sequence[Any], dropped: Any) -> list[Any]:
    """The arguments without ``dropped``. When it was the last: on one line the new last takes its
    comma (none, or a trailing one); one argument per line, the new last keeps its comma and the
    closing parenthesis keeps its place. A comment on the dropped argument's line moves to the line
    of the argument before it (after it, when it was the first): every comment is kept."""
    import libcst

    position = list(args).index(dropped)
    kept = [arg for arg in args if arg is not dropped]
    if not kept:
        return kept
    if args[-1] is dropped:
        own, theirs = kept[-1].comma, dropped.comma
        per_line = isinstance(own, libcst.Comma) and isinstance(own.whitespace_after, libcst.ParenthesizedWhitespace)
        if per_line and isinstance(theirs, libcst.Comma) and isinstance(theirs.whitespace_after, libcst.ParenthesizedWhitespace):
            closing = own.whitespace_after.with_changes(indent=theirs.whitespace_after.indent, last_line=theirs.whitespace_after.last_line)
            kept[-1] = kept[-1].with_changes(comma=own.with_changes(whitespace_after=closing))
        else:
            kept[-1] = kept[-1].with_changes(comma=theirs)
    comment = _comment_of(dropped)
    if comment is not None:
        receiver = max(position - 1, 0)
        kept[receiver] = _with_comment(kept[receiver], comment)
    return kept


def _comment_of(arg: Any) -> Any:
    """The comment at the end of an argument's own line (after its comma), or None."""
    import libcst

    comma = arg.comma
    if not isinstance(comma, libcst.Comma) or not isinstance(comma.whitespace_after, libcst.ParenthesizedWhitespace):
        return None
    return comma.whitespace_after.first_line.comment


def _with_comment(arg: Any, comment: Any) -> Any:
    """``arg`` with ``comment`` at the end of its line (beside its own comment, if it has one)."""
    import libcst

    comma = arg.comma
    if not isinstance(comma, libcst.Comma) or not isinstance(comma.whitespace_after, libcst.ParenthesizedWhitespace):
        return arg  # an argument not on a line of its own: the comment has no line to go to
    first = comma.whitespace_after.first_line
    joined = comment if first.comment is None else libcst.Comment(f"{first.comment.value}  {comment.value}")
    spacing = first.whitespace if first.comment is not None else libcst.SimpleWhitespace("  ")
    line = first.with_changes(whitespace=spacing, comment=joined)
    return arg.with_changes(comma=comma.with_changes(whitespace_after=comma.whitespace_after.with_changes(first_line=line)))


def tensor_of(expression: Any, scope: dict[str, Any], depth: int = 3) -> Any:
    """The tensor whose device ``expression`` names: x for ``x.device``, ``str(x.device)``,
    ``torch.device(x.device)``, ``torch.device(x.device.type)``, or a name assigned one of those."""
    import libcst

    if isinstance(expression, libcst.Attribute) and expression.attr.value == "device":
        return expression.value
    if isinstance(expression, libcst.Attribute) and expression.attr.value == "type":
        return tensor_of(expression.value, scope, depth)
    if isinstance(expression, libcst.Call) and dotted(expression.func) in ("str", "torch.device") and len(expression.args) == 1:
        return tensor_of(expression.args[0].value, scope, depth)
    if isinstance(expression, libcst.Name) and depth > 0 and expression.value in scope:
        return tensor_of(scope[expression.value], scope, depth - 1)
    if isinstance(expression, libcst.FormattedString):  # f"{x.device}", f"{x.device.type}"
        parts = [part for part in expression.parts if not (isinstance(part, libcst.FormattedStringText) and not part.value)]
        if len(parts) == 1 and isinstance(parts[0], libcst.FormattedStringExpression):
            return tensor_of(parts[0].expression, scope, depth)
    return None


def is_literal(expression: Any) -> bool:
    """A device written out: ``"cpu"`` or ``torch.device("cpu")``."""
    import libcst

    if isinstance(expression, libcst.SimpleString):
        return True
    return (
        isinstance(expression, libcst.Call)
        and dotted(expression.func) == "torch.device"
        and all(isinstance(arg.value, (libcst.SimpleString, libcst.Integer)) for arg in expression.args)
    )
