"""Why a stage did not run is a value (a kind and its facts); the sentence is written by render alone."""

from __future__ import annotations

import json

import pytest
import torch

import neurondev
from neurondev.gallery.patterns import seed_function
from neurondev.render.sentences import skip_text
from neurondev.report.skips import SKIP_KINDS, Skip


def test_a_skip_is_a_kind_with_its_facts_and_a_sentence_per_stage():
    skip = Skip("ran elsewhere", device="XLA", target="hostdev:0")
    assert skip.to_dict() == {"kind": "ran elsewhere", "device": "XLA", "target": "hostdev:0"}
    assert skip_text(skip, "program") == "ran on XLA for the original; explain the function again with target='hostdev:0'"
    assert skip_text(skip, "native").startswith("the native trace ran on XLA")
    assert skip_text(Skip("run off"), "program") == "run=False: your program was not run on the device"
    assert all(skip_text(Skip(kind)) for kind in SKIP_KINDS)  # each kind has its words


def test_an_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="Skip kind must be one of"):
        Skip("because")


def test_explain_without_runs_says_why_as_a_value_and_in_words_in_its_json():
    ex = neurondev.explain(seed_function, torch.randn(64), run=False, quiet=True)
    assert ex.skipped == Skip("run off") and ex.program_skipped == Skip("run off")
    report = json.loads(ex.to_json())
    assert report["skipped"] == {"kind": "run off", "text": "run=False: the graphs were not run on the device"}


def test_run_false_on_the_host_device_verifies_its_fixes_there_without_torch_xla():
    """The fixes' original program ran on XLA whatever the target: without torch_xla, run=False on the host device raised."""
    ex = neurondev.explain(seed_function, torch.randn(64), target="hostdev", run=False, quiet=True)
    assert ex.skipped == Skip("run off") and ex.fixes and all(fix.check.kind != "fixed code raised" for fix in ex.fixes)
