"""Fixes right on every input: no fix is verified that changes a dtype or fails on XLA, and the right ones
(static and class methods, *_like, starred sizes, f-string devices, if headers) are found and verified."""

from __future__ import annotations

import os

import pytest
import torch

import neurondev
from neurondev import cli
from neurondev.render.sentences import why_text
from neurondev.report.fixes.records import SpellingNote
from tests.helpers import line_of
from tests.report.fixes import user_patterns as patterns

pytestmark = pytest.mark.xla


def fixes_of(fn, *inputs):
    return {fix.line: fix for fix in neurondev.explain(fn, *inputs, run=False, quiet=True).fixes}


def test_a_move_of_a_host_value_is_not_verified_when_the_fixed_program_fails_on_xla():
    (fix,) = fixes_of(patterns.to_device_and_dtype, torch.randn(8)).values()
    assert fix.after == "y = torch.arange(8).to(torch.float32)" and not fix.verified
    assert fix.check.kind == "fails on device" and fix.check.place == "XLA" and fix.check.was is None, fix.check


def test_a_mask_keeps_its_float_dtype_and_is_right_on_a_padded_batch():
    (fix,) = fixes_of(patterns.padded_mask, torch.tensor([[3, 4, 5, 6]])).values()
    assert fix.verified and fix.after == "mask = ids.new_ones(ids.shape, dtype=torch.get_default_dtype())"
    namespace = {"torch": torch}
    exec(f"def fixed(ids):\n    {fix.after}\n    return mask.masked_fill(ids == 0, 0.5)", namespace)
    padded = torch.tensor([[3, 4, 0, 0]])  # the traced input had no padding: the int64 mask would truncate 0.5 to 0 here
    torch.testing.assert_close(namespace["fixed"](padded), patterns.padded_mask(padded))
    assert patterns.padded_mask(padded).tolist() == [[1.0, 1.0, 0.5, 0.5]]


def test_fixes_inside_static_and_class_methods_are_verified_and_the_command_exits_0():
    fixes = fixes_of(patterns.WithStatic(), torch.randn(8))
    assert {fix.after for fix in fixes.values()} == {
        "return x.new_zeros(x.shape, dtype=torch.get_default_dtype())",
        "return x.new_ones(x.shape, dtype=torch.get_default_dtype())",
    }
    assert all(fix.verified for fix in fixes.values()), [fix.check for fix in fixes.values()]
    assert cli.main(["fix", f"{patterns.__file__}:WithStatic", "--input", "randn(8)"]) == 0


def test_like_constructors_drop_their_device_and_a_starred_size_is_kept():
    fixes = fixes_of(patterns.likes, torch.randn(8))
    assert [fixes[line].after for line in sorted(fixes)] == [
        "a = torch.empty_like(x)",
        "b = torch.zeros_like(x, dtype=torch.float64)",
        "c = torch.full_like(x, 2.0)",
        "d = x.new_zeros(*x.shape, dtype=torch.get_default_dtype())",
    ]
    assert all(fix.verified for fix in fixes.values()), [fix.check for fix in fixes.values()]


def test_a_modules_own_device_property_gets_no_tensor_method_but_the_way_to_write_it():
    (fix,) = fixes_of(patterns.SelfDevice(), torch.randn(8)).values()
    assert fix.status == "no spelling" and fix.note == SpellingNote("self is the module", call="torch.zeros", method="new_zeros"), fix.note
    assert "self.weight.new_zeros" in why_text(fix)


def test_an_f_string_device_names_its_tensor_and_an_if_header_is_a_statement():
    (fix,) = fixes_of(patterns.fstring_device, torch.randn(8)).values()
    assert fix.verified and fix.after == "out = x.new_zeros(8, dtype=torch.get_default_dtype())"
    (header,) = fixes_of(patterns.in_an_if, torch.randn(8)).values()
    assert header.line == line_of(patterns.in_an_if, "if torch.zeros")
    assert header.verified and header.after == "if x.new_zeros(1, dtype=torch.get_default_dtype()).sum() == 0:"


def test_a_comment_on_the_removed_device_arguments_line_moves_to_the_line_before():
    (fix,) = fixes_of(patterns.comment_on_device, torch.randn(8)).values()
    assert fix.verified and "0.5,  # NOTE: keep in sync" in fix.after and "device=" not in fix.after


def test_one_graph_and_a_break_is_said_plainly():
    def prints(x):
        y = x * 2
        print("", end="")
        return y.tolist()

    ex = neurondev.explain(prints, torch.randn(3), run=False, quiet=True)
    assert len(ex.sections) == 1 and len(ex.capture.dynamo_breaks) == 1  # what the words say: one graph, one break
    summary = ex.summary()
    assert "1 graph(s) (1 dynamo break(s))" not in summary
    assert "Dynamo made 1 graph of" in summary and "1 break(s) of its own" in summary


def test_explain_leaves_the_users_module_globals_and_the_environment_as_they_were(tmp_path):
    import importlib.util
    import sys

    path = tmp_path / "counting.py"
    path.write_text(
        "import torch\nCALLS = 0\nSEEN = []\n\n\ndef counted(x):\n    global CALLS\n    CALLS += 1\n    SEEN.append(1)\n"
        "    return torch.zeros(4, device=x.device) + x\n"
    )
    spec = importlib.util.spec_from_file_location("counting_module", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["counting_module"] = module
    spec.loader.exec_module(module)
    environment = dict(os.environ)
    neurondev.explain(module.counted, torch.randn(4), quiet=True)
    neurondev.check(module.counted, torch.randn(4), allow=["*"])
    neurondev.capture(module.counted, torch.randn(4))
    assert module.CALLS == 0  # every run rebinds CALLS in a copy of the module's namespace
    assert len(module.SEEN) > 0  # a list the globals hold is the user's own object: shared, as the README says
    from neurondev.xla.runtime import runtime_environment

    changed = {key for key in set(os.environ) | set(environment) if os.environ.get(key) != environment.get(key)}
    assert changed <= runtime_environment() and "TORCHINDUCTOR_CACHE_DIR" not in changed


def test_a_fix_keeps_the_dtype_rule_of_the_call_it_replaces():
    fixes = fixes_of(patterns.filled, torch.randn(4))
    assert sorted(fix.after for fix in fixes.values()) == [
        "counts = x.new_full((4,), 2, dtype=torch.int64)",  # an int fill makes int64, whatever x is
        "flags = x.new_full((4,), True, dtype=torch.bool)",
        "zeros = x.new_zeros(4, dtype=torch.get_default_dtype())",  # the default dtype, whatever the user sets it to
    ]
    assert all(fix.verified for fix in fixes.values()), [fix.check for fix in fixes.values()]


def test_eye_and_as_tensor_of_literal_data_have_spellings_that_keep_the_device_symbolic():
    fixes = fixes_of(patterns.eye_and_list, torch.randn(4, 4))
    assert sorted(fix.after for fix in fixes.values()) == [
        "eye = torch.diag(x.new_ones(4, dtype=torch.get_default_dtype()))",
        "picks = x.new_tensor([0, 2], dtype=torch.int64)",
    ]
    assert all(fix.verified for fix in fixes.values()), [fix.check for fix in fixes.values()]
