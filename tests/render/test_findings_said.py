"""A check's findings carry what they were found in, not sentences: the words come from render.sentences, and the
JSON gives the facts with the words beside them."""

from __future__ import annotations

import json

import pytest
import torch

import neurondev
from neurondev.render.json import check_finding
from neurondev.render.sentences import finding_detail, finding_fix, unseen_text
from neurondev.report.findings import FINDING_KINDS, Finding
from neurondev.report.skips import Skip
from tests.helpers import line_of

TABLE = torch.arange(4.0)


def pinned_and_global(x):
    out = torch.zeros(x.shape[0], device=x.device)
    out.copy_(x * 2 + TABLE)
    return out


@pytest.mark.xla
def test_a_checks_findings_hold_their_records_and_their_words_are_written_from_them():
    with pytest.raises(neurondev.DevicePinsError) as caught:
        neurondev.check(pinned_and_global, torch.randn(4))
    by_kind = {f.kind: f for f in caught.value.findings}
    assert set(by_kind) == {"pin", "host value"} and set(by_kind) <= set(FINDING_KINDS)
    pin, value = by_kind["pin"], by_kind["host value"]
    assert (pin.found.node, str(pin.found.device), pin.rule, pin.line) == ("out", "cpu", "ND101", line_of(pinned_and_global, "torch.zeros"))
    assert value.found.origin == "TABLE" and value.place == "XLA"
    assert finding_detail(pin) == "out: torch.zeros, device=cpu (frozen, kwarg)"
    assert finding_fix(pin).startswith("write x.new_zeros(size)")
    assert finding_detail(value).endswith("stays on the CPU when the model moves to XLA")
    data = json.loads(json.dumps(check_finding(pin)))
    assert (data["rule"], data["kind"], data["found"]["device"], data["detail"]) == ("ND101", "pin", "cpu", finding_detail(pin))


def test_a_program_level_fallback_finding_says_why_it_could_not_check():
    not_run = Finding("fallback", "program", "", None, None, "ND206", "hostdev:0", why="not run", skip=Skip("no device", device="hostdev"))
    unseen = Finding("fallback", "program", "", None, None, "ND206", "neuron:0", why="unseen", compiler="neuron")
    assert finding_detail(not_run).startswith("your program did not run on the device (") and finding_fix(not_run).startswith(
        "nothing in your code: run the check where the device is"
    )
    assert finding_detail(unseen) == f"cannot verify fallbacks here: {unseen_text('neuron')}"
    assert check_finding(unseen)["compiler"] == "neuron" and check_finding(not_run)["skip"]["kind"] == "no device"
