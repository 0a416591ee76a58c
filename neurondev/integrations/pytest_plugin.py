"""pytest plugin (entry point pytest11): the ``neurondev_check`` fixture and marker for a test suite.

    def test_model_has_no_device_pins(neurondev_check):
        neurondev_check(model, torch.randn(1, 16))

    @pytest.mark.neurondev_check(model, torch.randn(1, 16), allow=["masking_utils.py:*"])
    def test_model_is_clean():
        pass

    @pytest.mark.neurondev_check(fn=takes_no_inputs)   # the keyword form: a lone callable as the
    def test_no_inputs():                             # marker's only argument is taken by pytest
        pass                                          # as the function it decorates


A failure reads like pytest's own: which pin, which line, what to write instead; no traceback
from inside neurondev.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

__all__ = ["neurondev_check"]

_MARKER = "neurondev_check"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{_MARKER}(fn, *inputs, allow=(), select=None, ignore=(), target=None) or {_MARKER}(fn=fn, inputs=(...), "
        "ignore=('ND109',)): fail the test when fn has findings (neurondev.check; select/ignore take rule codes, "
        "neurondev.rules() lists them); without fn, set allow/select/ignore/target for the neurondev_check fixture",
    )


def _run(fn: Callable, args: tuple, kwargs: dict) -> Any:
    from neurondev.errors import NeurondevError
    from neurondev.results.explanation import check

    try:
        return check(fn, *args, **kwargs)
    except NeurondevError as error:  # pins, or a wrong call of the guard itself: a test failure, not a traceback
        message = str(error)
    from neurondev.results.jobs import job

    where = job()  # under torchrun each rank runs the suite: say which one failed
    rank = f"on rank {where.rank} of {where.world} (torchrun): " if where is not None else ""
    pytest.fail(rank + message, pytrace=False)  # outside the except: no "during handling" chain


@pytest.fixture
def neurondev_check(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """``neurondev_check(fn, *inputs, allow=(), select=None, ignore=(), target=None)``: fail the test, pytest-style, when
    ``fn`` has device pins or device-specialised lines; returns the Explanation otherwise. The
    test's ``@pytest.mark.neurondev_check(allow=..., ignore=("ND109",), target=...)`` gives defaults."""
    marker = request.node.get_closest_marker(_MARKER)
    defaults = dict(marker.kwargs) if marker is not None and not _marked_function(marker) else {}

    def run(fn: Callable, *args: Any, **kwargs: Any) -> Any:
        return _run(fn, args, {**defaults, **kwargs})

    return run


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    marker = item.get_closest_marker(_MARKER)
    if marker is not None and _marked_function(marker):
        kwargs = dict(marker.kwargs)
        if "fn" in kwargs:
            fn, args = kwargs.pop("fn"), tuple(kwargs.pop("inputs", ()))
        else:
            fn, *rest = marker.args
            args = tuple(rest)
        _run(fn, args, kwargs)


def _marked_function(marker: pytest.Mark) -> bool:
    """The marker names the function to check (positionally, or as fn=) rather than the fixture's defaults."""
    return bool(marker.args) or "fn" in marker.kwargs
