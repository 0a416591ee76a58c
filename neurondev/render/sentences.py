"""The sentence a user reads for each record, gathered: ``describe(record)`` with every family of sentences loaded
(each registers the records it says), and the families' own functions. Records are plain data; each family says one
kind of fact: values (``value_words``), runs on the device (``run_words``), what a trace found (``trace_words``),
verified fixes (``fix_check_words``), a loop's findings (``watch_words``), the runtime (``runtime_words``) and a
check's findings (``finding_words``)."""

from __future__ import annotations

from neurondev.render.describe import describe
from neurondev.render.finding_words import finding_detail, finding_fix, unseen_text
from neurondev.render.fix_check_words import check_text, note_text, why_text
from neurondev.render.run_words import skip_text
from neurondev.render.runtime_words import runtime_info_text, runtime_text
from neurondev.render.trace_words import capture_note_text
from neurondev.render.value_words import left_out_text, mismatch_text, not_compared_text, reason_text, values_text, verdict_text
from neurondev.render.watch_words import cause_words

__all__ = [
    "capture_note_text",
    "cause_words",
    "check_text",
    "describe",
    "finding_detail",
    "finding_fix",
    "left_out_text",
    "mismatch_text",
    "not_compared_text",
    "note_text",
    "reason_text",
    "runtime_info_text",
    "runtime_text",
    "skip_text",
    "unseen_text",
    "values_text",
    "verdict_text",
    "why_text",
]
