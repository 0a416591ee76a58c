"""Golden sentences of a watch's advice, its check and its gaps: the records carry kinds and facts, these words are
written from them in one place (the watch tests assert the facts a real loop gives)."""

from __future__ import annotations

import pytest

import neurondev
from neurondev.loops.causes import ADVICE, CHECK_KINDS, PROGRAM_ADVICE, Advice, AdviceCheck, Recurring
from neurondev.loops.record import GAP_KINDS, Gap
from neurondev.render.watch_words import advice_check_text, advice_text, gap_text
from neurondev.trace.source import source_line

READ = source_line("/work/train.py", 12, "step", "p = lr * g")
EVERY_STEP = Recurring((1, 2), 3, None, "step")


def test_each_kind_of_dynamo_advice_names_its_function_and_facts():
    said = {
        "python number": advice_text(Advice("python number", "step", "lr", source=READ)),
        "changing size": advice_text(Advice("changing size", "Net.forward", "x", (5, 8), (8,))),
        "library value": advice_text(Advice("library value", "Net.forward", "cache.seen", source=READ)),
        "flag": advice_text(Advice("flag", "Net.forward", "self.drop.training")),
    }
    assert said["python number"].startswith("step: pass lr as a tensor (torch.tensor(lr) on the device, updated in place)")
    assert said["changing size"].startswith("Net.forward: x takes 2 sizes (5, 8): pad to a few bucket sizes (8), or drop")
    assert "(dynamo read it at train.py:12); if each call changes it" in said["library value"]
    assert "compile the train and the eval step as two functions" in said["flag"]
    for kind in ADVICE:  # every kind has words of its own, not the fallback's
        assert advice_text(Advice(kind, "f", "v", (1, 2), (2,))) != f"f: {kind}"


def test_xla_advice_says_how_its_programs_recur_and_what_triggers_them():
    growing = Advice("lazy state growing", recurring=EVERY_STEP, inputs=(22, 39, 56), source=READ)
    assert advice_text(growing).startswith(
        "XLA compiles 1/2 program(s) on every step from step 3 (triggered at train.py:12: `p = lr * g`) and the lazy graph "
        "keeps growing (its inputs reach 22, 39, 56)"
    )
    every = Advice("xla programs", recurring=Recurring((1,), 4, 4, "call"), programs=(("host read", 2),))
    assert advice_text(every) == "XLA compiles a new program every 4 calls from call 4: 2 x host read"
    unanalysed = Advice("xla programs", recurring=EVERY_STEP, analysed=False)
    assert "set PT_XLA_DEBUG_LEVEL=2 and PT_XLA_DEBUG_FILE" in advice_text(unanalysed)
    assert "a host read of a lazy value at train.py:12" in advice_text(Advice("host read", recurring=EVERY_STEP, source=READ))
    assert "transformers' own stop check (train.py:12:" in advice_text(Advice("stop check", recurring=EVERY_STEP, source=READ))
    per_size = advice_text(Advice("program per size", recurring=EVERY_STEP, source=READ))
    assert (
        "XLA compiles a program for each size it runs at: pad the sizes to a few buckets" in per_size
        and "sync per step would not" in per_size
    )
    assert "every 4 calls, most often" in advice_text(Advice("xla programs", recurring=Recurring((1,), 4, 4, "call"), analysed=False))
    number = advice_text(Advice("number in program", value="9 -> 10 -> 11", recurring=EVERY_STEP, source=READ))
    assert "a Python number at train.py:12 (`p = lr * g`) is a constant of each program (9 -> 10 -> 11)" in number
    assert "keep it on the device" in number
    size = advice_text(Advice("size in program", value="[1,9] -> [1,10]", recurring=EVERY_STEP, source=READ))
    assert "changes size step after step ([1,9] -> [1,10])" in size and "preallocated buffer at an index" in size
    programs = {"lazy state growing", "stop check", "host read", "program per size", "number in program", "size in program"}
    assert set(PROGRAM_ADVICE) == programs | {"xla programs"}


def test_a_check_and_a_gap_of_every_kind_have_their_sentence():
    assert advice_check_text(None) == "not verified"
    checks = {kind: advice_check_text(AdviceCheck(kind, steady=2, since=3, steps=6)) for kind in CHECK_KINDS}
    assert checks["verified"].endswith("it was steady after step 2 of 6")
    assert checks["not enough"].endswith("it still compiles from step 3 of 6")
    assert checks["did not finish"] == "not verified: the run with a sync per step did not finish"
    gaps = {kind: gap_text(Gap(kind, device="hostdev", torch="2.9.0", level="2")) for kind in GAP_KINDS}
    assert len(set(gaps.values())) == len(GAP_KINDS)


@pytest.mark.parametrize(
    ("record", "words"),
    [
        (Advice("flag", "f", "v"), advice_text),
        (AdviceCheck("verified", steady=1, steps=2), advice_check_text),
        (Gap("analysis off"), gap_text),
    ],
)
def test_describe_says_a_watchs_values(record, words):
    assert neurondev.describe(record) == words(record)
