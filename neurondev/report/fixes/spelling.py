"""The fixed spelling of one statement of the user's code, edited with libcst so formatting and comments stay.

``torch.empty/zeros/ones/full(..., device=x.device)`` becomes ``x.new_empty/new_zeros/new_ones/new_full(...)``
(every other argument kept), ``torch.tensor(data, device=x.device)`` becomes ``x.new_tensor(data)``,
``y.to(x.device, dtype)`` becomes ``y.to(dtype)``, a ``.cpu()`` in the middle of the graph is dropped.
``x`` is read from the device expression (``x.device``, ``str(x.device)``, ``torch.device(x.device.type)``,
a name assigned one of those above); a written-out ``"cpu"`` takes the tensor the call's sizes are read
from. Where no spelling keeps the device symbolic under dynamo (``torch.arange``, ``y.to(x.device)``)
nothing is invented: the spelling says so.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
from collections.abc import Mapping, Sequence
from typing import Any

from neurondev.fx.pins import DevicePin
from neurondev.report.fixes.records import SpellingNote

__all__ = ["NO_SPELLING", "Spelling", "spell"]

NO_SPELLING = SpellingNote("no symbolic spelling")

_NEW = {
    "torch.empty": "new_empty",
    "torch.zeros": "new_zeros",
    "torch.ones": "new_ones",
    "torch.full": "new_full",
    "torch.tensor": "new_tensor",
    "torch.as_tensor": "new_tensor",  # of literal data only (of a tensor it would be a move: no spelling)
    "torch.eye": "new_ones",  # torch.eye(n) is torch.diag(x.new_ones(n)): square only
}
_LIKE = {f"torch.{kind}_like" for kind in ("empty", "zeros", "ones", "full", "rand", "randn", "randint")}
_NEW_REFUSES = {"out", "memory_format", "names", "generator", "device_type"}  # keywords a Tensor.new_* method does not take
_SIZE_READERS = {"shape", "size", "numel", "dim", "ndim", "dtype"}
_LITERALS = {"'cpu'", '"cpu"', "'cuda'", '"cuda"'}


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


@dataclasses.dataclass(frozen=True)
class _Parsed:
    """A file read once with ``ast`` (fast): the lines of every simple statement and function, and the
    single-name assignments (line, name, the value's source). libcst then parses one statement at a time."""

    lines: tuple[str, ...]
    statements: tuple[tuple[int, int], ...]
    functions: tuple[tuple[int, int], ...]
    assignments: tuple[tuple[int, str, str], ...]
    headers: tuple[tuple[int, int], ...] = ()


_BLOCK = "if True:\n"
_HEADED = (ast.If, ast.While, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith)  # their header lines are fixable too
_PASS = "    pass\n"
_COMPOUND = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.If,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.With,
    ast.AsyncWith,
    ast.Try,
)


@functools.lru_cache(maxsize=16)
def _parse(source: str) -> _Parsed | str:
    """The file's statements, or why it does not parse."""
    try:
        tree = ast.parse(source)
    except SyntaxError as error:
        return f"{error.msg}, line {error.lineno}"
    statements, functions, assignments, headers = [], [], [], []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions.append((node.lineno, node.end_lineno or node.lineno))
        if isinstance(node, _HEADED) and node.body and node.body[0].lineno > node.lineno:
            headers.append((node.lineno, node.body[0].lineno - 1))
        if isinstance(node, ast.stmt) and not isinstance(node, _COMPOUND) and not hasattr(node, "handlers"):
            statements.append((node.lineno, node.end_lineno or node.lineno))
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = ast.get_source_segment(source, node.value)
            if value is not None:
                assignments.append((node.lineno, node.targets[0].id, value))
    lines = tuple(source.splitlines(keepends=True))
    return _Parsed(lines, tuple(statements), tuple(functions), tuple(sorted(assignments)), tuple(_header_ends(lines, headers)))


def _header_ends(lines: tuple[str, ...], headers: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Each header's lines up to its colon's line (comments and blank lines before the body left out)."""
    ends = []
    for first, last in headers:
        while last > first and (not lines[last - 1].strip() or lines[last - 1].lstrip().startswith("#")):
            last -= 1
        ends.append((first, last))
    return ends


def statement_lines(source: str, line: int) -> tuple[int, int]:
    """The first and last line of the statement at ``line`` (``(line, line)`` when there is none)."""
    parsed = _parse(source)
    found = _statement_at(parsed, line) if isinstance(parsed, _Parsed) else None
    return found or (line, line)


def spell(source: str, line: int, pins: Sequence[DevicePin], dtypes: Mapping[str, str] | None = None) -> Spelling:
    """The fix of the statement at ``line`` of ``source`` for ``pins`` (pins of that line); ``dtypes``
    (pin node -> ``torch.int64``) spells the dtype of the value a pin made where ``new_*`` would
    take another (the tensor's it is called on)."""
    try:
        import libcst
    except ImportError:  # a dependency, but an environment may lack it: say so on the card, never fail explain
        return Spelling(line, line, None, "pip install libcst", SpellingNote("no libcst"))
    parsed = _parse(source)
    if isinstance(parsed, str):
        return Spelling(line, line, None, "see the advice", SpellingNote("file does not parse", error=parsed))
    found = _statement_at(parsed, line)
    header = found is None
    found = found or _header_at(parsed, line)
    if found is None:
        return Spelling(line, line, None, "see the advice", SpellingNote("no statement"))
    first, last = found
    written = "".join(parsed.lines[first - 1 : last])
    block = _BLOCK if written[:1].isspace() else ""  # an indented statement parses as the body of a block, byte for byte
    parseable, body = _parseable_header(written) if header else (written, "")
    try:
        snippet = libcst.parse_module(block + parseable + body)
    except libcst.ParserSyntaxError as error:
        return Spelling(first, last, None, "see the advice", SpellingNote("does not parse", error=str(error).splitlines()[0]))
    editor = _editor(list(pins), _assignments_above(parsed, first), dict(dtypes or {}))
    code = snippet.visit(editor).code[len(block) :]
    statement = _as_written_header(code[: len(code) - len(body)], written) if header else code
    left = tuple(pin.node for pin in pins if pin.node not in editor.removes)
    if not editor.removes:
        return Spelling(first, last, None, editor.advice or _advice_without_spelling(pins), editor.note or NO_SPELLING, (), left)
    text = "".join(parsed.lines[: first - 1]) + statement + "".join(parsed.lines[last:])
    return Spelling(first, last, text, editor.advice, editor.note, tuple(editor.removes), left)


def _header_at(parsed: _Parsed, line: int) -> tuple[int, int] | None:
    """The header (``if ...:``, ``while ...:``, ``with ...:``, ``for ...:``) whose lines include ``line``."""
    found = [header for header in parsed.headers if header[0] <= line <= header[1]]
    return min(found, key=lambda header: header[1] - header[0], default=None)


def _parseable_header(written: str) -> tuple[str, str]:
    """A header parses with a body: ``pass`` one level in (an ``elif`` is spelled ``if``, and back)."""
    indent = written[: len(written) - len(written.lstrip())]
    text = written if written.endswith("\n") else written + "\n"
    if text.lstrip().startswith("elif"):
        text = indent + text.lstrip()[2:]  # 'elif x:' -> 'if x:'
    return text, indent + _PASS


def _as_written_header(code: str, written: str) -> str:
    """The edited header with its own first keyword (``elif``) and line ending back."""
    if written.lstrip().startswith("elif") and not code.lstrip().startswith("elif"):
        indent = code[: len(code) - len(code.lstrip())]
        code = indent + "el" + code.lstrip()
    return code if written.endswith("\n") else code.rstrip("\n")


def _statement_at(parsed: _Parsed, line: int) -> tuple[int, int] | None:
    """The innermost simple statement whose lines include ``line``."""
    found = [statement for statement in parsed.statements if statement[0] <= line <= statement[1]]
    return min(found, key=lambda statement: statement[1] - statement[0], default=None)


def _assignments_above(parsed: _Parsed, line: int) -> dict[str, Any]:
    """``name -> value`` (a libcst expression) of single-name assignments above ``line`` in the function around it."""
    import libcst

    around = [start for start, end in parsed.functions if start <= line <= end]
    if not around:
        return {}
    start = max(around)
    scope = {}
    for at, name, value in parsed.assignments:
        if start < at < line:
            try:
                scope[name] = libcst.parse_expression(" ".join(value.split()))
            except libcst.ParserSyntaxError:
                continue
    return scope


def _advice_without_spelling(pins: Sequence[DevicePin]) -> str:
    if any(pin.function == "torch.autocast" for pin in pins):
        return "device_type='xla' (where it runs), or the neurondev backend"
    return "compile through the neurondev backend"


def dotted(node: Any) -> str:
    """``torch.zeros`` for the expression torch.zeros; '' for anything but names and attributes."""
    import libcst

    if isinstance(node, libcst.Name):
        return node.value
    if isinstance(node, libcst.Attribute):
        inner = dotted(node.value)
        return f"{inner}.{node.attr.value}" if inner else ""
    return ""


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


def _take(editor: Any, functions: set[str], locations: tuple[str, ...]) -> DevicePin | None:
    """The first pin of the statement not yet handled that this call can be (by function and location)."""
    for pin in editor.pins:
        if pin.node in editor.removes or pin.node in editor.left:
            continue
        if pin.function in functions and pin.location.startswith(locations):
            return pin
    return None


def _edit_call(editor: Any, call: Any) -> Any:
    import libcst

    name = dotted(call.func)
    if name in _NEW:
        return _constructor(editor, call, name)
    if name in _LIKE:
        return _like(editor, call, name)
    if isinstance(call.func, libcst.Attribute) and call.func.attr.value == "to":
        return _to(editor, call)
    if isinstance(call.func, libcst.Attribute) and call.func.attr.value in ("cpu", "cuda") and not call.args:
        return _drop_move(editor, call)
    return call


def _constructor(editor: Any, call: Any, name: str) -> Any:
    import libcst

    device = next((arg for arg in call.args if arg.keyword is not None and arg.keyword.value == "device"), None)
    pin = _take(editor, {name}, ("kwarg",)) if device is not None else None
    if pin is None or device is None:
        return call
    refused = [arg.keyword.value for arg in call.args if arg.keyword is not None and arg.keyword.value in _NEW_REFUSES]
    owner = _tensor_of(device.value, editor.scope)
    if owner is None and _is_literal(device.value):
        owner = _tensor_named_in(call)
    method = _NEW[name]
    problem = _no_new_form(name, method, refused, owner) or _no_literal_form(name, call)
    if problem is not None:
        editor.left.append(pin.node)
        editor.note, editor.advice = problem
        return call
    args = _without(call.args, device)
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


def _like(editor: Any, call: Any, name: str) -> Any:
    """``torch.zeros_like(x, device=x.device)``: the device of ``x`` is what ``*_like`` takes anyway."""
    import libcst

    device = next((arg for arg in call.args if arg.keyword is not None and arg.keyword.value == "device"), None)
    pin = _take(editor, {name}, ("kwarg",)) if device is not None else None
    if pin is None or device is None:
        return call
    like = call.args[0].value if call.args and call.args[0].keyword is None and not call.args[0].star else None
    owner = _tensor_of(device.value, editor.scope)
    code = libcst.Module([]).code_for_node
    if like is None or owner is None or code(owner) != code(like):
        editor.left.append(pin.node)
        editor.advice = f"{name}(t) without device="
        editor.note = SpellingNote("like names another tensor", call=name)
        return call
    editor.removes.append(pin.node)
    editor.advice = f"{name}({code(like)}) without device="
    editor.note = SpellingNote("like follows tensor", call=name, tensor=code(like))
    return call.with_changes(args=_without(call.args, device))


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


def _to(editor: Any, call: Any) -> Any:
    positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
    keyword = {arg.keyword.value: arg for arg in call.args if arg.keyword is not None}
    if positional and _is_device(positional[0].value, editor.scope):
        device, location, dtype_given = positional[0], ("arg",), len(positional) > 1 or "dtype" in keyword
    elif "device" in keyword:
        device, location, dtype_given = keyword["device"], ("kwarg",), bool(positional) or "dtype" in keyword
    else:
        return call
    pin = _take(editor, {"Tensor.to"}, location)
    if pin is None:
        return call
    if not dtype_given:
        editor.left.append(pin.node)
        editor.advice, editor.note = "compile through the neurondev backend", NO_SPELLING
        return call
    editor.removes.append(pin.node)
    editor.advice = ".to(dtype) without the device"
    editor.note = SpellingNote("dtype kept", method="to")
    return call.with_changes(args=_without(call.args, device))


def _drop_move(editor: Any, call: Any) -> Any:
    method = call.func.attr.value
    pin = _take(editor, {f"Tensor.{method}"}, ("method",))
    if pin is None or pin.output_transfer:
        return call
    editor.removes.append(pin.node)
    editor.advice = f"drop .{method}()"
    editor.note = SpellingNote("stays on device", method=method)
    return call.func.value


def _without(args: Sequence[Any], dropped: Any) -> list[Any]:
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


def _tensor_of(expression: Any, scope: dict[str, Any], depth: int = 3) -> Any:
    """The tensor whose device ``expression`` names: x for ``x.device``, ``str(x.device)``,
    ``torch.device(x.device)``, ``torch.device(x.device.type)``, or a name assigned one of those."""
    import libcst

    if isinstance(expression, libcst.Attribute) and expression.attr.value == "device":
        return expression.value
    if isinstance(expression, libcst.Attribute) and expression.attr.value == "type":
        return _tensor_of(expression.value, scope, depth)
    if isinstance(expression, libcst.Call) and dotted(expression.func) in ("str", "torch.device") and len(expression.args) == 1:
        return _tensor_of(expression.args[0].value, scope, depth)
    if isinstance(expression, libcst.Name) and depth > 0 and expression.value in scope:
        return _tensor_of(scope[expression.value], scope, depth - 1)
    if isinstance(expression, libcst.FormattedString):  # f"{x.device}", f"{x.device.type}"
        parts = [part for part in expression.parts if not (isinstance(part, libcst.FormattedStringText) and not part.value)]
        if len(parts) == 1 and isinstance(parts[0], libcst.FormattedStringExpression):
            return _tensor_of(parts[0].expression, scope, depth)
    return None


def _is_literal(expression: Any) -> bool:
    """A device written out: ``"cpu"`` or ``torch.device("cpu")``."""
    import libcst

    if isinstance(expression, libcst.SimpleString):
        return True
    return (
        isinstance(expression, libcst.Call)
        and dotted(expression.func) == "torch.device"
        and all(isinstance(arg.value, (libcst.SimpleString, libcst.Integer)) for arg in expression.args)
    )


def _is_device(expression: Any, scope: dict[str, Any]) -> bool:
    """Whether a positional argument of .to() is a device (not a dtype or a tensor)."""
    import libcst

    if _tensor_of(expression, scope) is not None:
        return True
    if isinstance(expression, libcst.SimpleString):
        return expression.value in _LITERALS or expression.value.strip("'\"").startswith(("cpu", "cuda", "xla"))
    if isinstance(expression, libcst.Call):
        return dotted(expression.func) == "torch.device"
    return isinstance(expression, libcst.Name) and "device" in expression.value


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
