"""Property: a verified fix is right on every input. Constructor calls are generated (torch.empty/zeros/ones/
full/tensor and the *_like ones, with and without dtype=, sizes as tuples, starred, x.shape or keywords, the
device spelled several ways); each verified fix, applied to the file, must give the original's values and
dtypes on inputs of other dtypes than the traced one, on CPU and as a program under torch.compile on XLA."""

from __future__ import annotations

import importlib.util
import sys
import uuid
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import neurondev
from neurondev.report.fixes.patch import fixed_texts

pytestmark = [pytest.mark.xla, pytest.mark.slow]

DEVICES = ("x.device", "str(x.device)", 'f"{x.device.type}"', "torch.device(x.device.type)")
DTYPES = (None, "torch.float32", "torch.float64", "torch.int64")
SIZES = ("(4,)", "4", "x.shape", "*x.shape", "size=x.shape")
DATA = ("[1, 2, 3, 4]", "[1.0, 2.0, 3.0, 4.0]", "[True, False, True, False]")
INPUTS = (torch.randn(4), torch.randn(4, dtype=torch.float64), torch.arange(4), torch.tensor([1.5, -2.0, 0.0, 3.0], dtype=torch.bfloat16))


@st.composite
def constructor_calls(draw) -> str:
    """``torch.<name>(<arguments>, dtype=..., device=...)`` as the user might write it."""
    name = draw(st.sampled_from(("empty", "zeros", "ones", "full", "tensor", "empty_like", "zeros_like", "ones_like", "full_like")))
    if name == "tensor":
        arguments = [draw(st.sampled_from(DATA))]
    elif name.endswith("_like"):
        arguments = ["x"] + ([draw(st.sampled_from(("2", "2.5", "True")))] if name == "full_like" else [])
    else:
        size = draw(st.sampled_from(SIZES if name != "full" else ("(4,)", "x.shape")))
        arguments = [size] + ([draw(st.sampled_from(("2", "2.5", "True")))] if name == "full" else [])
    dtype = draw(st.sampled_from(DTYPES))
    keywords = ([f"dtype={dtype}"] if dtype else []) + [f"device={draw(st.sampled_from(DEVICES))}"]
    if draw(st.booleans()):
        keywords.reverse()
    return f"torch.{name}({', '.join(arguments + keywords)})"


def module_of(source: str, folder: Path):
    path = folder / f"made_{uuid.uuid4().hex[:8]}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module, path


def on_xla(fn, x):
    from neurondev import xla

    try:
        return torch.compile(fn, backend="openxla")(x.to(xla.device())).cpu()
    finally:
        torch._dynamo.reset()


@settings(max_examples=24, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(call=constructor_calls())
def test_every_verified_fix_gives_the_originals_values_and_dtype_on_every_input(call, tmp_path):
    source = f"import torch\n\n\ndef made(x):\n    t = {call}\n    return t.fill_(0.5)\n"
    original, path = module_of(source, tmp_path)
    explanation = neurondev.explain(original.made, torch.randn(4), run=False, quiet=True)
    assert explanation.fixes, f"{call}: a pin with no fix tried"
    verified = [fix for fix in explanation.fixes if fix.verified]
    unverified = [fix for fix in explanation.fixes if not fix.verified]
    # a fix not verified says which check failed (or that no spelling keeps the device), never nothing
    assert all(fix.check.kind != "verified" and (fix.after is None or fix.check.kind != "no spelling") for fix in unverified), call
    if not verified:
        return
    (_, text), *_ = fixed_texts(verified).values()
    fixed, _ = module_of(text, tmp_path)
    for x in INPUTS:
        expected = original.made(x.clone())
        torch.testing.assert_close(
            fixed.made(x.clone()), expected, msg=lambda m, x=x: f"{call} fixed as {verified[0].after}, x {x.dtype}: {m}"
        )
    torch.testing.assert_close(on_xla(fixed.made, INPUTS[1]), original.made(INPUTS[1].clone()), msg=lambda m: f"on XLA: {m}")


@pytest.mark.xla
@pytest.mark.parametrize("call", ["torch.empty(4, device=x.device)", "torch.zeros(4, dtype=torch.float16, device=x.device)"])
def test_the_plain_calls_fix_is_verified_so_the_property_above_has_fixes_to_hold(call, tmp_path):
    """The property returns where nothing is verified: these calls' fixes must be, or verification stopped verifying."""
    original, _ = module_of(f"import torch\n\n\ndef made(x):\n    t = {call}\n    return t.fill_(0.5)\n", tmp_path)
    explanation = neurondev.explain(original.made, torch.randn(4), run=False, quiet=True)
    assert [fix.verified for fix in explanation.fixes] == [True] and explanation.fixes[0].check.kind == "verified"


def test_the_generated_calls_cover_every_constructor_and_spelling():
    """The generator reaches each constructor, dtype and device spelling (the property above tests them)."""
    seen = set()

    @settings(max_examples=400, deadline=None, database=None)
    @given(call=constructor_calls())
    def collect(call):
        seen.add(call.split("(")[0])

    collect()
    assert seen == {
        f"torch.{n}" for n in ("empty", "zeros", "ones", "full", "tensor", "empty_like", "zeros_like", "ones_like", "full_like")
    }
