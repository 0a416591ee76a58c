"""The gallery: every example explained on the real XLA device gives exactly its stored outcome, and the
fix its paragraph recommends, verified (or says there is no spelling, inventing nothing)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import neurondev
from neurondev import examples, testing
from neurondev.gallery import catalogue, patterns
from neurondev.gallery.catalogue import describe_fixes
from neurondev.report.fixes.records import FixCheck
from tests.conftest import SHARED_GROUP

FAST = [name for name, example in examples.CATALOGUE.items() if not example.slow]
SLOW = [name for name, example in examples.CATALOGUE.items() if example.slow]


# The session's own explanations of the same builds (conftest): explained once per worker, not again here.
_SHARED = {"seed": "seed_explained", "gpt2": "gpt2_explained"}


def check(name: str, request: pytest.FixtureRequest) -> None:
    example = examples.get(name)
    for module in example.needs:
        pytest.importorskip(module)
    if name in _SHARED:
        explanation = request.getfixturevalue(_SHARED[name])
    else:
        with example.open() as (fn, args, kwargs):
            explanation = neurondev.explain(fn, *args, **kwargs, quiet=True)
    every_output(explanation)
    observed = testing.outcome_of(explanation)
    assert observed == example.outcome
    for record in explanation.after:
        assert record.error is None and record.graph_breaks == () and record.transfers_to_host == 0
    assert describe_fixes(explanation.fixes) == example.fix
    for fix in explanation.fixes:
        if fix.after is not None:  # verified: traced again on CPU and on XLA, the same outputs
            assert fix.verified and fix.file == patterns.__file__ and fix.removes and not fix.left, fix.check
            assert fix.check == FixCheck("verified", place="XLA")
        else:
            assert fix.status == "no spelling" and "neurondev backend" in fix.advice and fix.left and not fix.removes


def every_output(explanation) -> None:
    """Every output a user can ask of an explanation, each what it is: the summary, the card, the JSON (strict), the
    tables and the sentence of each finding; none raises."""
    from neurondev.report.findings import explanation_findings

    assert explanation.summary() and "<" in explanation._repr_html_()
    data = json.loads(explanation.to_json())
    findings = explanation_findings(explanation)
    assert [finding["rule"] for finding in data["findings"]] == [record.rule for record in findings]
    assert all(neurondev.describe(record) for record in findings)
    assert len(explanation.pin_table()) == len(explanation.pins)
    for table in (explanation.transfer_table(), explanation.fallback_table()):
        assert list(table.columns) and table.shape[0] >= 0


@pytest.mark.parametrize("name", FAST)
def test_each_example_on_the_host_device_gives_every_output(name):
    """The same patterns on the host test device (a native device): the outputs hold there too."""
    example = examples.get(name)
    for module in example.needs:
        pytest.importorskip(module)
    with example.open() as (fn, args, kwargs):
        explanation = neurondev.explain(fn, *args, **kwargs, target="hostdev", quiet=True)
    every_output(explanation)
    assert explanation.place.startswith("hostdev")


@pytest.mark.xla
@pytest.mark.parametrize("name", FAST)
def test_each_example_has_its_stored_outcome(name, request):
    check(name, request)


@pytest.mark.xla
@pytest.mark.slow
@pytest.mark.parametrize(
    "name",
    [pytest.param(name, marks=pytest.mark.xdist_group(SHARED_GROUP)) if _SHARED.get(name) == "gpt2_explained" else name for name in SLOW],
)
def test_each_slow_example_has_its_stored_outcome(name, request):
    check(name, request)


def test_the_gallery_has_the_patterns_a_newcomer_needs():
    table = examples.list()
    assert len(table) >= 14
    assert {
        "seed",
        "collective",
        "arange",
        "zeros",
        "ones",
        "full",
        "tensor",
        "str-device",
        "literal-cpu",
        "to-other-device",
        "to-device-dtype",
        "device-object",
        "cpu-midway",
        "causal-mask",
        "rotary",
        "kv-cache",
        "module-buffer",
        "no-device-upload",
        "like-and-new",
    } <= set(table.index)
    assert not table.loc["like-and-new", "freezes"] and table.loc["seed", "freezes"]
    assert all(len(e.description) > 80 and e.instead for e in examples.CATALOGUE.values())


def test_the_gallery_is_the_data_file_next_to_it_and_a_misspelt_key_is_refused():
    entries = json.loads((Path(catalogue.__file__).parent / "catalogue.json").read_text(encoding="utf-8"))
    assert [entry["name"] for entry in entries] == list(examples.CATALOGUE)
    fn, args, kwargs = examples.get("zeros").build()
    assert fn is patterns.zeros_accumulator and [a.shape for a in args] == [(3, 8)] and kwargs == {}
    assert examples.get("rotary").outcome.pins == (("torch.arange", "kwarg", "frozen"),) * 2
    with pytest.raises(ValueError, match=r"'seed' has unknown keys \['breaks'\]"):
        catalogue._example({**entries[0], "outcome": {"breaks": ["copy_"]}})
