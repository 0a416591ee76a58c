"""explain's and check's options: checked once into one value, a default told apart from the same value given."""

from __future__ import annotations

import dataclasses

import pytest
import torch

import neurondev
from neurondev.report.options import ExplainOptions, check_target, default, given, refuse_shadowing, value_of


def checked(**overrides):
    values = {"target": "xla", "run": True, "quiet": True, "rtol": None, "atol": None, "native": False, "level": "dynamo"} | overrides
    return ExplainOptions.checked(**values)


def test_the_checked_options_are_one_frozen_value_with_the_program_run_following_run():
    options = checked()
    assert options.target == torch.device("xla") and options.program is True
    assert checked(run=False).program is False and checked(run=False, program=True).program is True
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.run = False  # type: ignore[misc]
    with pytest.raises(TypeError):
        ExplainOptions(torch.device("xla"), True)  # type: ignore[misc]  # everything but the target by keyword


@pytest.mark.parametrize(
    ("option", "value", "error", "says"),
    [
        ("run", "yes", neurondev.InvalidOptionError, "run is True or False, got 'yes'"),
        ("program", 1, neurondev.InvalidOptionError, "program is True or False"),
        ("rtol", -1.0, neurondev.InvalidOptionError, "rtol"),
        ("level", "hlo", neurondev.InvalidOptionError, "level is 'dynamo'"),
        ("target", "cpu", neurondev.InvalidTargetError, "got target 'cpu'"),
        pytest.param("target", "xla:99", neurondev.InvalidTargetError, "does not exist here", marks=pytest.mark.xla),
    ],
)
def test_each_bad_option_is_a_named_error_saying_what_to_pass(option, value, error, says):
    with pytest.raises(error, match=says.replace("(", r"\(").replace(")", r"\)")):
        checked(**{option: value})


@pytest.mark.xla
def test_an_existing_indexed_target_is_kept():
    assert check_target(torch.device("xla:0")) == torch.device("xla:0")


def test_a_default_is_told_apart_from_the_same_value_given():
    unset = default(True)
    assert not given(unset) and given(True) and value_of(unset) is True and value_of(False) is False
    assert repr(unset) == "True"  # help() shows the default's value


def test_an_option_named_like_an_argument_of_the_function_is_refused_only_when_given():
    def fn(x, run=False):
        return x

    refuse_shadowing(fn, {"run": default(True)}, verb="explain")  # not given: nothing to refuse
    with pytest.raises(neurondev.OptionShadowsArgumentError, match=r"neurondev.explain\(fn, run=...\)\(inputs..., run=...\)"):
        refuse_shadowing(fn, {"run": True}, verb="explain")
    with pytest.raises(neurondev.OptionShadowsArgumentError, match=r"functools.partial\(fn, run=...\)"):
        refuse_shadowing(fn, {"run": True}, verb="check")
