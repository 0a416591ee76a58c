"""A small, safe language for example inputs on the command line: parsed with ast, never evaluated.

``randn(64)``, ``rand(2, 3)``, ``zeros(4, 4, dtype=float16)``, ``ones((2, 8))``, ``arange(10)``,
``randint(0, 1000, (1, 16))``, ``full((2, 2), 0.5)``. Tensors come from a fixed-seed generator.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from neurondev.errors import InputSpecError

if TYPE_CHECKING:
    import torch

__all__ = ["InputSpecError", "SPEC_HELP", "check_spec", "parse_input"]

_DTYPES = ("float32", "float16", "bfloat16", "float64", "int64", "int32", "int8", "bool")  # torch's dtypes, by name
SPEC_HELP = (
    "randn(shape), rand(shape), zeros(shape), ones(shape), full(shape, value), arange(n), "
    "randint(low, high, shape); shape as numbers or a tuple; optional dtype=" + "|".join(_DTYPES)
)


def check_spec(spec: str) -> tuple[str, list[Any], dict[str, str]]:
    """The spec read without torch (a usage error is said before torch is imported): (maker, arguments, keywords, the
    dtype by name); InputSpecError naming what is accepted otherwise."""
    try:
        tree = ast.parse(spec.strip(), mode="eval").body
    except SyntaxError as error:
        raise InputSpecError(f"input {spec!r} is not a call like randn(64): {error.msg}; accepted: {SPEC_HELP}") from None
    if not (isinstance(tree, ast.Call) and isinstance(tree.func, ast.Name)):
        raise InputSpecError(f"input {spec!r} must be one call such as randn(64); accepted: {SPEC_HELP}")
    name = tree.func.id
    if name not in _MAKERS:
        raise InputSpecError(f"input {spec!r}: {name} is not one of {', '.join(_MAKERS)}; accepted: {SPEC_HELP}")
    return name, [_literal(node, spec) for node in tree.args], {str(keyword.arg): _keyword(keyword, spec) for keyword in tree.keywords}


def parse_input(spec: str, *, seed: int = 0) -> torch.Tensor:
    """The tensor an input spec describes; InputSpecError (naming what is accepted) otherwise."""
    import torch

    name, args, dtypes = check_spec(spec)
    kwargs = {key: getattr(torch, value) for key, value in dtypes.items()}
    generator = torch.Generator().manual_seed(seed)
    try:
        return _MAKERS[name](args, kwargs, generator)
    except (TypeError, ValueError, RuntimeError) as error:
        raise InputSpecError(f"input {spec!r}: {error}; accepted: {SPEC_HELP}") from None


def _literal(node: ast.AST, spec: str) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_literal(node.operand, spec)
    if isinstance(node, (ast.Tuple, ast.List)):
        return tuple(_literal(item, spec) for item in node.elts)
    raise InputSpecError(f"input {spec!r}: only numbers and tuples of numbers are accepted as arguments; {SPEC_HELP}")


def _keyword(keyword: ast.keyword, spec: str) -> str:
    if keyword.arg != "dtype" or not isinstance(keyword.value, ast.Name) or keyword.value.id not in _DTYPES:
        raise InputSpecError(f"input {spec!r}: the only keyword is dtype=, one of {', '.join(_DTYPES)}")
    return keyword.value.id


def _shape(args: list) -> tuple[int, ...]:
    shape = args[0] if len(args) == 1 and isinstance(args[0], tuple) else tuple(args)
    if not shape or not all(isinstance(n, int) and n >= 0 for n in shape):
        raise ValueError("a shape is one or more whole numbers >= 0")
    return shape


def _random(kind: str):
    def make(args: list, kwargs: dict, generator: torch.Generator) -> torch.Tensor:
        import torch

        return getattr(torch, kind)(*_shape(args), generator=generator, dtype=kwargs.get("dtype", torch.float32))

    return make


def _filled(kind: str):
    def make(args: list, kwargs: dict, generator: torch.Generator) -> torch.Tensor:
        import torch

        return getattr(torch, kind)(*_shape(args), dtype=kwargs.get("dtype", torch.float32))

    return make


def _full(args: list, kwargs: dict, generator: torch.Generator) -> torch.Tensor:
    import torch

    if len(args) != 2:
        raise ValueError("full takes a shape and a value: full((2, 2), 0.5)")
    return torch.full(_shape([args[0]]), args[1], dtype=kwargs.get("dtype", torch.float32))


def _arange(args: list, kwargs: dict, generator: torch.Generator) -> torch.Tensor:
    import torch

    if len(args) != 1 or not isinstance(args[0], int):
        raise ValueError("arange takes one whole number: arange(10)")
    return torch.arange(args[0], dtype=kwargs.get("dtype", torch.int64))


def _randint(args: list, kwargs: dict, generator: torch.Generator) -> torch.Tensor:
    import torch

    if len(args) != 3:
        raise ValueError("randint takes low, high and a shape: randint(0, 1000, (1, 16))")
    low, high, shape = args
    return torch.randint(low, high, _shape([shape]), generator=generator, dtype=kwargs.get("dtype", torch.int64))


_MAKERS = {
    "randn": _random("randn"),
    "rand": _random("rand"),
    "zeros": _filled("zeros"),
    "ones": _filled("ones"),
    "full": _full,
    "arange": _arange,
    "randint": _randint,
}
