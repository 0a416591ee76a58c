"""pytest plugin (entry point pytest11): the ``neurondev_check`` fixture and marker for a test suite.

    def test_model_has_no_device_pins(neurondev_check):
        neurondev_check(model, torch.randn(1, 16))

    @pytest.mark.neurondev_check(model, torch.randn(1, 16), allow=["masking_utils.py:*"])
    def test_model_is_clean():
        pass

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
        f"{_MARKER}(fn, *inputs, allow=(), target='xla'): fail the test when fn has device pins (neurondev.check); "
        "without fn, set allow/target for the neurondev_check fixture",
    )


def _run(fn: Callable, args: tuple, kwargs: dict) -> Any:
    from neurondev import DevicePinsError, check

    try:
        return check(fn, *args, **kwargs)
    except DevicePinsError as error:
        message = str(error)
    pytest.fail(message, pytrace=False)  # outside the except: no "during handling" chain


@pytest.fixture
def neurondev_check(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """``neurondev_check(fn, *inputs, allow=(), target="xla")``: fail the test, pytest-style, when
    ``fn`` has device pins or device-specialised lines; returns the Explanation otherwise. The
    test's ``@pytest.mark.neurondev_check(allow=..., target=...)`` gives defaults."""
    marker = request.node.get_closest_marker(_MARKER)
    defaults = dict(marker.kwargs) if marker is not None and not marker.args else {}

    def run(fn: Callable, *args: Any, **kwargs: Any) -> Any:
        return _run(fn, args, {**defaults, **kwargs})

    return run


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    marker = item.get_closest_marker(_MARKER)
    if marker is not None and marker.args:
        fn, *args = marker.args
        _run(fn, tuple(args), dict(marker.kwargs))
