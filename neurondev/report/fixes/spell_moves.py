"""The fix of a move: ``y.to(x.device, dtype)`` as ``y.to(dtype)``, a ``.cpu()`` (or ``.cuda()``) in the middle of
the graph dropped; a ``.to(device)`` alone has no spelling that keeps the device symbolic."""

from __future__ import annotations

from typing import Any

from neurondev.report.fixes.call_edits import dotted, next_pin, tensor_of, without
from neurondev.report.fixes.records import NO_SPELLING, SpellingNote

__all__ = ["drop_move", "move_to"]


_LITERALS = {"'cpu'", '"cpu"', "'cuda'", '"cuda"'}


def move_to(editor: Any, call: Any) -> Any:
    positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
    keyword = {arg.keyword.value: arg for arg in call.args if arg.keyword is not None}
    if positional and _is_device(positional[0].value, editor.scope):
        device, location, dtype_given = positional[0], ("arg",), len(positional) > 1 or "dtype" in keyword
    elif "device" in keyword:
        device, location, dtype_given = keyword["device"], ("kwarg",), bool(positional) or "dtype" in keyword
    else:
        return call
    pin = next_pin(editor, {"Tensor.to"}, location)
    if pin is None:
        return call
    if not dtype_given:
        editor.left.append(pin.node)
        editor.advice, editor.note = "compile through the neurondev backend", NO_SPELLING
        return call
    editor.removes.append(pin.node)
    editor.advice = ".to(dtype) without the device"
    editor.note = SpellingNote("dtype kept", method="to")
    return call.with_changes(args=without(call.args, device))


def drop_move(editor: Any, call: Any) -> Any:
    method = call.func.attr.value
    pin = next_pin(editor, {f"Tensor.{method}"}, ("method",))
    if pin is None or pin.output_transfer:
        return call
    editor.removes.append(pin.node)
    editor.advice = f"drop .{method}()"
    editor.note = SpellingNote("stays on device", method=method)
    return call.func.value


def _is_device(expression: Any, scope: dict[str, Any]) -> bool:
    """Whether a positional argument of .to() is a device (not a dtype or a tensor)."""
    import libcst

    if tensor_of(expression, scope) is not None:
        return True
    if isinstance(expression, libcst.SimpleString):
        return expression.value in _LITERALS or expression.value.strip("'\"").startswith(("cpu", "cuda", "xla"))
    if isinstance(expression, libcst.Call):
        return dotted(expression.func) == "torch.device"
    return isinstance(expression, libcst.Name) and "device" in expression.value
