"""Why values were not compared is a kind and its facts: the records and their JSON carry no sentence."""

from __future__ import annotations

import json

import pytest
import torch

import neurondev
from neurondev.render.sentences import reason_text
from neurondev.runs.reasons import NotCompared, random_draws


def draws(x):
    return x + torch.rand(4, device=x.device) + torch.rand(4, device=x.device)


def test_a_random_graph_names_its_first_random_node_and_how_many_more_as_facts():
    gm = neurondev.capture(draws, torch.randn(4)).graphs[0]
    reason = random_draws(gm, None, "device", "XLA")
    assert (reason.kind, reason.node, reason.more, reason.draws, reason.device) == ("random", "rand", 1, "device", "XLA")
    assert reason.where.startswith("test_reasons.py:") and not reason.comparable
    assert random_draws(gm, {"add"}, "moved") is None  # none of the nodes named draws
    assert reason_text(reason) == f"random node rand ({reason.where}) and 1 more draws from XLA's generator, which is not CPU's"


def test_a_reason_is_plain_data_and_an_unknown_kind_is_refused():
    reason = NotCompared("no cpu run", error="RuntimeError: no kernel")
    assert json.loads(json.dumps(reason.to_dict())) == {"kind": "no cpu run", "error": "RuntimeError: no kernel"}
    assert reason.comparable and reason_text(reason) == "the graph does not run on CPU (RuntimeError: no kernel)"
    with pytest.raises(ValueError, match="not a reason neurondev knows"):
        NotCompared("the program failed")


@pytest.mark.xla
def test_a_failed_program_says_so_in_its_json_as_a_kind():
    class Scaled(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = torch.ones(4)  # a plain attribute: it stays on the CPU, and the program fails at compile time

        def forward(self, x):
            return x * self.scale

    ex = neurondev.explain(Scaled(), torch.randn(4), quiet=True)
    data = json.loads(ex.to_json())
    as_written = data["program"]["as_written"]
    assert as_written["failure"] is not None and as_written["not_compared"] == {"kind": "program failed"}
