"""Comparing outputs: assert_close's verdict with the figures measured whatever it is; a shape named before any value."""

from __future__ import annotations

import math

import pytest
import torch

import neurondev
from neurondev.runs.values import check_tolerances, compare_outputs


def test_equal_values_nan_in_the_same_place_and_equal_infinities_match():
    a = torch.tensor([1.0, math.nan, math.inf])
    comparison = compare_outputs(a.clone(), a)
    assert comparison.matches and comparison.max_abs_error == 0 and comparison.describe() == "equal"


def test_a_difference_is_counted_element_by_element():
    expected = torch.zeros(64)
    actual = expected.clone()
    actual[:3] = 1.0
    comparison = compare_outputs(actual, expected)
    assert not comparison.matches and (comparison.elements_off, comparison.elements, comparison.max_abs_error) == (3, 64, 1.0)
    assert comparison.describe().startswith("DIFFER (3 of 64 elements off;")


def test_a_different_shape_is_named_before_any_value_and_one_output_matches_a_one_element_tuple():
    comparison = compare_outputs(torch.zeros(3), torch.zeros(4))
    assert not comparison.matches and comparison.structure is not None and "shape" in comparison.describe()
    assert compare_outputs((torch.ones(2),), torch.ones(2)).matches


def test_tolerances_come_together_or_not_at_all():
    assert compare_outputs(torch.tensor([1.0]), torch.tensor([1.01]), rtol=0.1, atol=0.0).matches
    check_tolerances(None, None)
    for rtol, atol, says in ((1e-4, None, "rtol was given alone"), (-1, 0, "rtol is a tolerance"), (0, math.inf, "atol is a tolerance")):
        with pytest.raises(neurondev.InvalidOptionError, match=says):
            check_tolerances(rtol, atol)
