"""The explorer's logic in plain pytest: set widget values, read what it shows."""

from __future__ import annotations

import pytest
import torch

import neurondev
from tests.helpers import line_of

pytestmark = pytest.mark.xla


def two_pins(x):
    a = torch.zeros(4, device=x.device)
    b = torch.arange(4, device="cpu")
    return a + x + b


@pytest.fixture()
def explorer():
    return neurondev.explain(two_pins, torch.randn(4), quiet=True).explore()


def test_the_pin_list_names_node_target_and_line(explorer):
    labels = [label for label, _ in explorer.pins.options]
    assert labels == [
        f"a · torch.zeros · test_widgets.py:{line_of(two_pins, 'torch.zeros')}",
        f"b · torch.arange · test_widgets.py:{line_of(two_pins, 'torch.arange')}",
    ]
    assert isinstance(explorer, __import__("ipywidgets").VBox)


def test_picking_a_pin_shows_its_line_node_users_args_and_journey(explorer):
    explorer.pins.value = explorer.pins.options[1][1]
    detail = explorer.detail.value
    assert "b = torch.arange(4, device=&quot;cpu&quot;)" in detail and 'device="cpu"' not in detail  # escaped, once
    assert "users: add_1" in detail
    assert "args before: <code>arange(4, device=&#x27;cpu&#x27;)</code>" in detail
    assert "args after: <code>arange(4, device=&#x27;xla&#x27;)</code>" in detail
    assert "before: on cpu, crossing b→add_1 cpu→xla:0; after: on xla:0" in detail
    assert "literal" in detail and "write instead: no spelling: no spelling keeps the device symbolic" in detail


@pytest.mark.dot
def test_toggling_before_after_and_the_radius_redraws(explorer):
    assert "device=cpu (frozen)" in explorer.picture.value and 'class="nd-picture nd-before"' in explorer.picture.value
    explorer.which.value = "after"
    assert "rewritten: cpu → xla" in explorer.picture.value and "nd-after" in explorer.picture.value
    explorer.radius.value = 0
    assert "<svg" in explorer.picture.value


def test_run_with_another_target_reruns_and_refreshes_the_metrics(explorer):
    before = explorer.metrics.value
    explorer.target.value = "xla:0"
    first = explorer.explanation
    explorer.run_button.click()
    assert str(explorer.explanation.target) == "xla:0" and explorer.explanation is not first
    assert str(first.target) == "xla"  # rerun made a new Explanation; the first is as it was
    assert [r.new for r in explorer.explanation.rewrites] == [torch.device("xla", 0), "xla:0"]
    assert "time per call" in explorer.metrics.value and explorer.progress.value == 2
    assert explorer.status.value.startswith("ran:") and before != ""


def test_a_bad_target_in_the_box_is_shown_not_raised(explorer):
    explorer.target.value = "trainium"
    explorer.run_button.click()
    assert "not a device torch knows" in explorer.status.value


@pytest.mark.dot
def test_an_explanation_without_pins_still_explores():
    ex = neurondev.explain(lambda x: x * 2, torch.randn(3), quiet=True)
    explorer = ex.explore()
    assert explorer.pins.options[0][0].startswith("no device pin") and explorer.selected() is None
    assert "<svg" in explorer.picture.value


def one_fixable_pin(x):
    a = torch.zeros(4, device=x.device)
    return a + x


def test_the_selected_pins_fix_is_shown_verified_with_a_button_that_copies_it():
    explorer = neurondev.explain(one_fixable_pin, torch.randn(4), quiet=True).explore()
    explorer.pins.value = explorer.pins.options[0][1]
    detail = explorer.detail.value
    assert '<pre class="nd-fixed">a = x.new_zeros(4, dtype=torch.get_default_dtype())</pre>' in detail
    assert '(<span style="color:#2e7d32">verified</span>)' in detail
    assert (
        'data-fix="a = x.new_zeros(4, dtype=torch.get_default_dtype())"' in detail
        and "navigator.clipboard.writeText(this.dataset.fix)" in detail
    )


def test_a_fix_that_cannot_be_checked_on_xla_says_why(explorer):
    """two_pins adds a host arange to XLA tensors: as a program it does not compile on XLA, fixed or not."""
    explorer.pins.value = explorer.pins.options[0][1]
    assert "not verified" in explorer.detail.value and "so nothing can be checked there" in explorer.detail.value
    assert "mixed devices at compile time" in explorer.program.value


def test_run_on_the_host_device_names_it_on_the_button_and_runs_there(explorer):
    assert explorer.run_button.description == "Run on XLA"
    explorer.target.value = str(neurondev.host_device())
    explorer.run_button.click()
    assert explorer.explanation.runtime["device"] == "hostdev:0" and explorer.run_button.description == "Run on hostdev:0"
    assert explorer.status.value.startswith("ran:") and "XLA" not in explorer.metrics.value.replace("ran on XLA for the original", "")
