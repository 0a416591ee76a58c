"""One sentence per record, written in render/ only: ``neurondev.describe`` for every record a user reads,
the same text in the card, the JSON and the headline, and no record below render/ writing sentences of its own."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
import torch

import neurondev
from neurondev.fx.kernels import CpuKernel
from neurondev.render.fix_words import CPU_KERNEL_FIX
from neurondev.render.sentences import describe, values_text, verdict_text
from neurondev.report.findings import Finding
from neurondev.report.verdicts import Verdict
from neurondev.runs.values import compare_outputs
from neurondev.trace.inputs import HostValue
from neurondev.trace.source import SourceLine

PACKAGE = Path(neurondev.__file__).parent
BELOW_RENDER = ("trace", "fx", "passes", "runs", "xla", "native", "devices", "loops", "report")
SENTENCE_METHODS = {"describe", "summary", "values_text", "__str__"}  # a __repr__ shows fields, as dataclasses do
# A run error reads as the exception it holds (type and message), as an exception does.
ALLOWED = {("runs/run_records.py", "RunError", "__str__")}


def _sentence_methods() -> list[tuple[str, str, str]]:
    found = []
    for folder in BELOW_RENDER:
        for path in sorted((PACKAGE / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if not isinstance(node, ast.ClassDef):
                    continue
                for item in node.body:
                    if isinstance(item, ast.FunctionDef) and item.name in SENTENCE_METHODS:
                        returns = ast.unparse(item.returns) if item.returns else ""
                        if returns == "str":
                            found.append((str(path.relative_to(PACKAGE)), node.name, item.name))
    return [entry for entry in found if entry not in ALLOWED]


def test_no_record_below_render_writes_a_sentence_of_its_own():
    assert _sentence_methods() == []


WORDY_FIELDS = ("text", "detail", "note", "reason", "words", "why", "verified", "advice", "summary", "fix", "said", "structure")
# Fields with such names that hold no sentence of ours: the runtime's own text (dynamo's break and guard,
# assert_close's message), a kind, or code (a spelling, a file's text).
NOT_OURS = {
    ("trace/capture.py", "DynamoBreak", "reason"),
    ("loops/recorder.py", "CompileEvent", "reason"),
    ("runs/values.py", "Comparison", "detail"),
    ("report/findings.py", "Finding", "why"),
    ("loops/causes.py", "AdviceCheck", "fix"),
    ("report/fixes/records.py", "Fix", "advice"),
    ("report/fixes/spelling.py", "Spelling", "text"),
    ("report/fixes/spelling.py", "Spelling", "advice"),
    ("report/fixes/edits.py", "FileEdits", "text"),
    ("report/fixes/patch.py", "SourceFile", "text"),
}


def test_no_record_below_render_holds_a_sentence_in_a_field():
    """Records carry kinds and facts: a str field named like a sentence (``xla_note``, ``text``, ``detail``) is one
    frozen in, unless it is the runtime's own words, a kind, or code."""
    found = []
    for folder in BELOW_RENDER:
        for path in sorted((PACKAGE / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ClassDef):
                    for item in node.body:
                        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and "str" in ast.unparse(item.annotation):
                            name = item.target.id
                            if any(word in name for word in WORDY_FIELDS):
                                found.append((str(path.relative_to(PACKAGE)), node.name, name))
    assert [entry for entry in found if entry not in NOT_OURS] == []


def test_describe_speaks_each_record_and_refuses_anything_else_by_name():
    equal = compare_outputs(torch.ones(3), torch.ones(3))
    differ = compare_outputs(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 2.0, 4.0]))
    assert describe(equal) == "equal"
    assert describe(differ).startswith("DIFFER (1 of 3 elements off;")
    value = HostValue(0, "l_table_", 1, "global", "TABLE", "cpu", (4,), SourceLine("m.py", 3, "f", "y = x + TABLE"))
    assert describe(value) == "TABLE (a global, on cpu, used at m.py:3)"
    line = SourceLine("m.py", 4, "f", "out = attend(q, k, v)")
    kernel = CpuKernel(0, "forward", "sdpa", "aten._scaled_dot_product_flash_attention_for_cpu", line)
    finding = Finding("cpu kernel", "sdpa", kernel.function, line, kernel, kernel.rule)
    said = f"  m.py:4: out = attend(q, k, v)\n      {kernel.function} is a kernel for the CPU [{kernel.rule}]\n      write instead: {CPU_KERNEL_FIX}"
    assert describe(finding) == said
    verdict = Verdict("cpu", "differ", differ)
    assert describe(verdict) == verdict_text(verdict) == f"the graph on XLA DIFFERS from CPU ({describe(differ)})"
    assert verdict_text(verdict, place="hostdev:0").startswith("the graph on hostdev:0 DIFFERS")
    with pytest.raises(neurondev.InvalidOptionError, match="describe takes one of neurondev's records .*Comparison.* not Tensor"):
        describe(torch.ones(1))


@pytest.mark.xla
def test_the_card_the_json_and_the_headline_say_each_records_one_sentence(seed_explained):
    data = json.loads(seed_explained.to_json())
    program = seed_explained.program
    section = seed_explained.sections[0]
    assert data["program"]["rewritten"]["text"] == describe(program.rewritten)
    assert data["graphs"][0]["cpu_verdict"]["text"] == verdict_text(section.cpu_verdict)
    headline = seed_explained.summary()
    assert describe(program.as_written) in headline and values_text(program.rewritten) in describe(program.rewritten)
    card = seed_explained._repr_html_()
    assert values_text(program.rewritten) in card and verdict_text(section.cpu_verdict, figures=True) in card
    assert describe(seed_explained.traces) in card and "natively on XLA" in describe(seed_explained.traces)
