"""Comparing outputs: assert_close's verdict with the figures measured whatever it is; a shape named before any value."""

from __future__ import annotations

import math

import pytest
import torch

import neurondev
from neurondev.render.sentences import describe
from neurondev.runs.values import LeftOut, Mismatch, check_tolerances, compare_outputs


def test_equal_values_nan_in_the_same_place_and_equal_infinities_match():
    a = torch.tensor([1.0, math.nan, math.inf])
    comparison = compare_outputs(a.clone(), a)
    assert comparison.matches and comparison.max_abs_error == 0 and describe(comparison) == "equal"


def test_a_difference_is_counted_element_by_element():
    expected = torch.zeros(64)
    actual = expected.clone()
    actual[:3] = 1.0
    comparison = compare_outputs(actual, expected)
    assert not comparison.matches and (comparison.elements_off, comparison.elements, comparison.max_abs_error) == (3, 64, 1.0)
    assert describe(comparison).startswith("DIFFER (3 of 64 elements off;")


def test_a_different_shape_is_named_before_any_value_and_one_output_matches_a_one_element_tuple():
    comparison = compare_outputs(torch.zeros(3), torch.zeros(4))
    assert (
        not comparison.matches
        and comparison.structure is not None
        and comparison.structure == Mismatch("shape", "output 0", "(3,)", "(4,)")
    )
    assert compare_outputs((torch.ones(2),), torch.ones(2)).matches


def test_tolerances_come_together_or_not_at_all():
    assert compare_outputs(torch.tensor([1.0]), torch.tensor([1.01]), rtol=0.1, atol=0.0).matches
    check_tolerances(None, None)
    for rtol, atol, says in ((1e-4, None, "rtol was given alone"), (-1, 0, "rtol is a tolerance"), (0, math.inf, "atol is a tolerance")):
        with pytest.raises(neurondev.InvalidOptionError, match=says):
            check_tolerances(rtol, atol)


def test_an_object_pytree_does_not_open_is_compared_through_the_tensors_it_holds():
    from neurondev.testing import tiny_llama

    model, (ids,), _ = tiny_llama(1)
    first, again = model(ids), model(ids)  # a ModelOutput holding transformers' DynamicCache
    comparison = compare_outputs(first, again)
    assert comparison.status == "equal" and comparison.elements > first.logits.numel()  # the cache's keys and values too
    changed = model(ids)
    next(iter(vars(changed.past_key_values)["layers"])).keys.add_(1.0)
    assert compare_outputs(changed, first).status == "differ"


def test_nothing_to_compare_is_not_compared_never_a_difference():
    nothing = compare_outputs((x for x in []), (x for x in []))
    assert nothing.status == "not compared" and nothing.matches is None and "generator" in describe(nothing)
    import threading

    partly = compare_outputs((torch.ones(2), threading.Lock()), (torch.ones(2), threading.Lock()))
    assert partly.status == "equal" and partly.left_out == (LeftOut("output[1]", "lock"),)
    assert describe(partly) == "equal; not compared: output[1] (a lock: no tensor in it, and nothing to compare it by)"


def test_complex_sparse_and_plain_values_compare_or_name_what_differs():
    values = torch.randn(4, dtype=torch.complex128)
    assert compare_outputs(values, values.clone()).status == "equal"
    assert describe(compare_outputs(values, values.real.clone())) == "dtypes DIFFER at output 0: complex128 vs float64"
    sparse = torch.eye(3).to_sparse()
    assert compare_outputs(sparse, sparse.clone()).status == "equal"
    assert describe(compare_outputs((torch.ones(1), 3), (torch.ones(1), 4))) == "values DIFFER at output[1]: 3 vs 4"


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.complex64])
def test_a_comparison_in_chunks_gives_assert_closes_verdict_and_the_same_figures(monkeypatch, dtype):
    """Large outputs are compared a chunk at a time (memory a few chunks, not a few outputs): the verdict and the
    count of elements off are assert_close's, the greatest difference and its index the same as one chunk gives."""
    import neurondev.runs.values as values

    generator = torch.Generator().manual_seed(0)
    expected = (torch.randn(6, 7, generator=generator) * 100).to(dtype)
    actual = expected.clone()
    actual[4, 5] += 3
    actual[1, 2] += 1
    whole = compare_outputs(actual, expected)
    monkeypatch.setattr(values, "_CHUNK", 5)
    chunked = compare_outputs(actual, expected)
    assert chunked == whole and chunked.elements == 42
    with pytest.raises(AssertionError) as told:
        torch.testing.assert_close(actual, expected)
    assert f"Mismatched elements: {chunked.elements_off} / 42" in str(told.value)
    assert "at index (4, 5)" in (chunked.detail or "")
