"""The JSON of an Explanation: strict JSON (no NaN), devices as text, the pins and the program's verdicts as they are."""

from __future__ import annotations

import json
import math

import pytest
import torch

from neurondev.render.json import plain

pytestmark = pytest.mark.xla


def test_plain_is_strict_json_devices_and_dtypes_as_text_tuples_as_lists():
    value = {"d": torch.device("xla:0"), "t": torch.float16, "n": math.nan, "i": -math.inf, "xs": (1, 2.5, None, True)}
    assert plain(value) == {"d": "xla:0", "t": "torch.float16", "n": "nan", "i": "-inf", "xs": [1, 2.5, None, True]}
    json.dumps(plain(value), allow_nan=False)


def test_the_seeds_json_names_its_pin_its_fix_and_both_scenarios(seed_explained):
    data = json.loads(seed_explained.to_json())
    (pin,) = data["graphs"][0]["pins"]
    assert (pin["node"], pin["function"], pin["where"], pin["kind"], pin["format"]) == (
        "out",
        "torch.empty",
        "patterns.py:39",
        "frozen",
        "torch.device",
    )
    assert data["pins"] == 1 and data["graphs"][0]["rewrites"][0]["new"] == "xla"
    assert data["totals"]["before"]["graph_breaks"] == 1 and data["totals"]["after"]["graph_breaks"] == 0  # the graph-level runs
    assert data["program"]["rewritten"]["ok"] is True and data["xla_matches_cpu"] is True  # the program runs
    assert data["fixes"][0]["after"] == "out = x.new_empty(64, dtype=torch.float32)" and data["fixes"][0]["status"] == "verified"
