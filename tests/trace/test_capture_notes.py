"""A capture's notes are kinds with their facts; render says each (golden sentences), and the JSON gives both."""

from __future__ import annotations

import neurondev
from neurondev.trace.capture_notes import CAPTURE_NOTE_KINDS, CaptureNote


def test_every_kind_of_note_has_its_own_words_from_its_facts():
    notes = [
        CaptureNote(kind, name="step", original="Net", path="args[0]", dims=(0, 2), error="TypeError: no copy")
        for kind in CAPTURE_NOTE_KINDS
    ]
    said = {note.kind: neurondev.describe(note) for note in notes}
    assert len(set(said.values())) == len(CAPTURE_NOTE_KINDS)
    assert said["already compiled"] == "step was already compiled with torch.compile: its original Net was traced"
    assert said["dynamic marks kept"].startswith("input args[0]: dimension(s) [0, 2] marked dynamic by you stay dynamic")
    assert said["arguments copied apart"].startswith("could not copy the arguments together (TypeError: no copy)")
    assert [note.no_graph for note in notes].count(True) == 2


def test_an_explanations_json_gives_each_note_its_kind_facts_and_words():
    def ones(x):
        return x.new_ones(3)

    import json

    import torch

    x = torch.randn(5)
    torch._dynamo.mark_dynamic(x, 0)
    ex = neurondev.explain(ones, x, run=False, quiet=True)
    (note,) = json.loads(ex.to_json())["notes"]
    assert (note["kind"], note["path"], note["dims"]) == ("dynamic marks kept", "args[0]", [0])
    assert note["text"] == neurondev.describe(ex.notes[0])
