"""The fix of a constructor that names a device: ``torch.empty/zeros/ones/full/tensor/eye(..., device=x.device)``
as ``x.new_*(...)`` with the original's dtype rule kept, ``torch.zeros_like(x, device=x.device)`` without
``device=``; or the reason there is no such spelling (a keyword ``new_*`` refuses, a device that names no tensor,
``self``, ``as_tensor`` of a tensor, a non-square ``eye``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from neurondev.report.fixes.call_edits import is_literal, next_pin, tensor_of, without
from neurondev.report.fixes.records import SpellingNote

__all__ = ["LIKE", "NEW", "constructor", "like"]


NEW = {
    "torch.empty": "new_empty",
    "torch.zeros": "new_zeros",
    "torch.ones": "new_ones",
    "torch.full": "new_full",
    "torch.tensor": "new_tensor",
    "torch.as_tensor": "new_tensor",  # of literal data only (of a tensor it would be a move: no spelling)
    "torch.eye": "new_ones",  # torch.eye(n) is torch.diag(x.new_ones(n)): square only
}
LIKE = {f"torch.{kind}_like" for kind in ("empty", "zeros", "ones", "full", "rand", "randn", "randint")}
_NEW_REFUSES = {"out", "memory_format", "names", "generator", "device_type"}  # keywords a Tensor.new_* method does not take
_SIZE_READERS = {"shape", "size", "numel", "dim", "ndim", "dtype"}


def constructor(editor: Any, call: Any, name: str) -> Any:
    import libcst

    device = next((arg for arg in call.args if arg.keyword is not None and arg.keyword.value == "device"), None)
    pin = next_pin(editor, {name}, ("kwarg",)) if device is not None else None
    if pin is None or device is None:
        return call
    refused = [arg.keyword.value for arg in call.args if arg.keyword is not None and arg.keyword.value in _NEW_REFUSES]
    owner = tensor_of(device.value, editor.scope)
    if owner is None and is_literal(device.value):
        owner = _tensor_named_in(call)
    method = NEW[name]
    problem = _no_new_form(name, method, refused, owner) or _no_literal_form(name, call)
    if problem is not None:
        editor.left.append(pin.node)
        editor.note, editor.advice = problem
        return call
    args = without(call.args, device)
    if not _has_keyword(args, "dtype"):  # new_* would take the tensor's dtype: keep the original's rule for it
        rule = _dtype_rule(name, args) or editor.dtypes.get(pin.node)
        if rule is not None:
            args = _with_keyword(args, "dtype", rule)
    editor.removes.append(pin.node)
    owner_code = libcst.Module([]).code_for_node(owner)
    editor.note = SpellingNote("method follows tensor", call=name, method=method, tensor=owner_code)
    made = call.with_changes(func=libcst.Attribute(value=_parenthesised(owner.deep_clone()), attr=libcst.Name(method)), args=args)
    if name == "torch.eye":  # the identity as the diagonal of ones made on x's device
        editor.advice = f"torch.diag({owner_code}.new_ones(n))"
        return libcst.Call(func=libcst.parse_expression("torch.diag"), args=[libcst.Arg(made)])
    editor.advice = f"{owner_code}.{method}(...)"
    return made


def _no_literal_form(name: str, call: Any) -> tuple[SpellingNote, str] | None:
    """torch.as_tensor has a new_tensor form for literal data only; torch.eye for a square identity only."""
    positional = [arg for arg in call.args if arg.keyword is None]
    if name == "torch.as_tensor" and (not positional or not _elements_literal(positional[0].value)):
        return SpellingNote("as_tensor of a tensor", call=name), "compile through the neurondev backend"
    if name == "torch.eye" and (len(positional) != 1 or any(arg.keyword is not None and arg.keyword.value == "m" for arg in call.args)):
        return SpellingNote("eye not square", call=name), "compile through the neurondev backend"
    return None


def _elements_literal(data: Any) -> bool:
    import libcst

    return isinstance(data, (libcst.List, libcst.Tuple)) and _literal_dtype(_elements(data)) is not None


def _no_new_form(name: str, method: str, refused: list[str], owner: Any) -> tuple[SpellingNote, str] | None:
    """(note, advice) when ``name(..., device=D)`` has no ``owner.method(...)`` spelling; else None."""
    import libcst

    if refused:
        return SpellingNote("keyword refused", call=name, method=method, keyword=refused[0]), f"t.{method}(...)"
    if owner is None:
        return SpellingNote("device names no tensor", call=name, method=method), f"t.{method}(...)"
    if isinstance(owner, libcst.Name) and owner.value == "self":
        return SpellingNote("self is the module", call=name, method=method), f"self.<parameter>.{method}(...)"
    return None


def like(editor: Any, call: Any, name: str) -> Any:
    """``torch.zeros_like(x, device=x.device)``: the device of ``x`` is what ``*_like`` takes anyway."""
    import libcst

    device = next((arg for arg in call.args if arg.keyword is not None and arg.keyword.value == "device"), None)
    pin = next_pin(editor, {name}, ("kwarg",)) if device is not None else None
    if pin is None or device is None:
        return call
    like = call.args[0].value if call.args and call.args[0].keyword is None and not call.args[0].star else None
    owner = tensor_of(device.value, editor.scope)
    code = libcst.Module([]).code_for_node
    if like is None or owner is None or code(owner) != code(like):
        editor.left.append(pin.node)
        editor.advice = f"{name}(t) without device="
        editor.note = SpellingNote("like names another tensor", call=name)
        return call
    editor.removes.append(pin.node)
    editor.advice = f"{name}({code(like)}) without device="
    editor.note = SpellingNote("like follows tensor", call=name, tensor=code(like))
    return call.with_changes(args=without(call.args, device))


def _has_keyword(args: Sequence[Any], name: str) -> bool:
    return any(arg.keyword is not None and arg.keyword.value == name for arg in args)


def _with_keyword(args: list[Any], name: str, value: str) -> list[Any]:
    """``args`` with ``name=value`` added last (the old last's comma kept for the new one)."""
    import libcst

    if not args:
        return [libcst.Arg(value=libcst.parse_expression(value), keyword=libcst.Name(name), equal=_tight_equal())]
    last = args[-1].with_changes(comma=libcst.Comma(whitespace_after=libcst.SimpleWhitespace(" ")))
    added = libcst.Arg(value=libcst.parse_expression(value), keyword=libcst.Name(name), equal=_tight_equal(), comma=args[-1].comma)
    return [*args[:-1], last, added]


def _tight_equal() -> Any:
    import libcst

    return libcst.AssignEqual(whitespace_before=libcst.SimpleWhitespace(""), whitespace_after=libcst.SimpleWhitespace(""))


_DEFAULT_DTYPE = "torch.get_default_dtype()"  # what torch.zeros(n) makes, whatever default the user set


def _dtype_rule(name: str, args: list[Any]) -> str | None:
    """The dtype the original call makes, spelled as the rule it follows: the default dtype for
    empty/zeros/ones/rand/randn, the fill value's kind for full, the data's for tensor; None when the
    call's own arguments do not say (the traced dtype is spelled then, and checked)."""
    if name in ("torch.empty", "torch.zeros", "torch.ones", "torch.rand", "torch.randn", "torch.eye"):
        return _DEFAULT_DTYPE
    if name == "torch.full":
        value = next((a.value for a in args if a.keyword is not None and a.keyword.value == "fill_value"), None)
        positional = [a.value for a in args if a.keyword is None]
        return _literal_dtype([value if value is not None else positional[1]] if value is not None or len(positional) > 1 else [])
    if name in ("torch.tensor", "torch.as_tensor"):
        data = args[0].value if args and args[0].keyword is None else None
        return _literal_dtype(list(_elements(data)))
    return None


def _elements(data: Any) -> list[Any]:
    import libcst

    if isinstance(data, (libcst.List, libcst.Tuple)):
        return [element.value for element in data.elements]
    return [data] if data is not None else []


def _literal_dtype(values: list[Any]) -> str | None:
    """int literals make int64, bools bool, floats the default dtype; anything else does not say."""
    import libcst

    values = [v.expression if isinstance(v, libcst.UnaryOperation) else v for v in values]
    if not values:
        return None
    if all(isinstance(v, libcst.Integer) for v in values):
        return "torch.int64"
    if all(isinstance(v, libcst.Name) and v.value in ("True", "False") for v in values):
        return "torch.bool"
    if all(isinstance(v, (libcst.Integer, libcst.Float)) for v in values):
        return _DEFAULT_DTYPE
    return None


def _tensor_named_in(call: Any) -> Any:
    """The tensor a written-out device's call reads its sizes from: ``x`` in ``torch.zeros(x.shape[-1], device="cpu")``."""
    import libcst

    found: list[Any] = []

    class Finder(libcst.CSTVisitor):
        def visit_Attribute(self, node: Any) -> None:
            if node.attr.value in _SIZE_READERS and isinstance(node.value, libcst.Name) and not found:
                found.append(node.value)

    for arg in call.args:
        if arg.keyword is None or arg.keyword.value != "device":
            arg.visit(Finder())
    return found[0] if found else None


def _parenthesised(expression: Any) -> Any:
    import libcst

    simple = (libcst.Name, libcst.Attribute, libcst.Subscript, libcst.Call)
    if isinstance(expression, simple) or expression.lpar:
        return expression
    return expression.with_changes(lpar=[libcst.LeftParen()], rpar=[libcst.RightParen()])
