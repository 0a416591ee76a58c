"""Every module of the render, report and xla folders has a test module of its own, or names the one that tests it."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("render", "report", "report/fixes", "runs", "xla", "native", "devices", "devices/host")
# A module tested through an entry point rather than on its own: the test module that does, and the
# call (or import) through which it reaches the module.
TESTED_BY = {
    "render/display": ("tests/report/test_explain.py", "_repr_html_"),  # the views an Explanation calls
    "render/drawing": ("tests/render/test_focus.py", "svg_or_reason"),
    "render/svg": ("tests/render/test_dot.py", "render_svg"),
    "render/describe": ("tests/render/test_sentences.py", "describe("),  # each family's sentences, through describe
    "render/value_words": ("tests/render/test_sentences.py", "values_text"),
    "render/run_words": ("tests/xla/test_run.py", "describe(record)"),
    "render/trace_words": ("tests/runs/test_traces.py", "describe(comparison)"),
    "render/fix_check_words": ("tests/report/fixes/test_verify.py", "why_text"),
    "render/runtime_words": ("tests/devices/test_runtimes.py", "runtime_text"),
    "render/finding_words": ("tests/render/test_findings_said.py", "finding_detail"),
    "render/card_style": ("tests/render/test_html.py", "escape"),
    "render/html_pins": ("tests/render/test_html.py", "fix_block"),
    "render/html_program": ("tests/browser/test_report_in_chromium.py", "table.nd-program"),
    "render/html_runs": ("tests/report/test_explain.py", "Traced natively on XLA"),
    "render/watch": ("tests/loops/test_watch.py", "_repr_html_"),  # a Watch's card and summary
    "render/time_spent": ("tests/loops/test_costs.py", "nd-time-strip"),  # the costliest lines, the strip and the table
    "render/trace_events": ("tests/loops/test_costs.py", "save_trace("),  # the trace-event file, read back by HTA
    "render/job_card": ("tests/cli/test_watch_faults.py", '"--html", str(card)'),  # a torchrun job's card, each fault
    "native/marks": ("tests/devices/host/test_collectives.py", "_c10d_functional.reduce_scatter_tensor"),  # a collective's copies
    "report/model": ("tests/report/test_explain.py", "neurondev.explain("),
    "report/pipeline": ("tests/report/test_explain.py", "rerun("),
    "report/stages": ("tests/report/test_explain.py", "neurondev.explain("),  # every stage, in order, by explain
    "report/stage_records": ("tests/report/test_explain.py", "neurondev.explain("),
    "report/fixes/edits": ("tests/report/fixes/test_spelling.py", "from neurondev.report.fixes.edits import"),
    "report/fixes/statements": ("tests/report/fixes/test_spelling.py", "golden"),  # every fix kind, on the golden file of user code
    "report/fixes/call_edits": ("tests/report/fixes/test_spelling.py", "golden"),
    "report/fixes/spell_constructors": ("tests/report/fixes/test_spelling.py", "golden"),
    "report/fixes/spell_moves": ("tests/report/fixes/test_spelling.py", "golden"),
    "report/fixes/trace_checks": ("tests/report/fixes/test_verify.py", 'FixCheck("pins left"'),
    "report/fixes/device_checks": ("tests/report/fixes/test_verify.py", 'FixCheck("host value"'),
    "report/fixes/patch": ("tests/report/fixes/test_files.py", "patch("),
    "report/findings": ("tests/report/test_check.py", "neurondev.check("),
    "report/fixes/records": ("tests/test_frozen_records.py", "Fix"),
    "xla/compiler": ("tests/integrations/test_backend.py", 'backend="neurondev"'),
    "runs/graph": ("tests/xla/test_run.py", "neurondev.run_on_xla("),
    "runs/interface": ("tests/runs/test_first_difference.py", "driver=XlaDriver()"),
    "runs/placement": ("tests/xla/test_run_inputs.py", "run_on_xla("),
    "xla/driver": ("tests/runs/test_first_difference.py", "from neurondev.xla.driver import XlaDriver"),
    "native/device": ("tests/native/test_explain_native.py", "target=device"),
    "native/compiled_graphs": ("tests/native/test_explain_native.py", "program.as_written.ok"),
    "native/choice": ("tests/native/test_runtime_record.py", "NEURONDEV_ACCOUNTING"),  # both accountings, against the device's log
    "native/events": ("tests/native/test_runtime_record.py", "driver.accounting.events"),
    "native/logged": ("tests/native/test_runtime_record.py", "NEURONDEV_ACCOUNTING"),
    "devices/compiler": ("tests/integrations/test_backend.py", 'backend="neurondev"'),
    "devices/drivers": ("tests/runs/test_traces.py", "neurondev.compare_traces("),
    "devices/verbs": ("tests/runs/test_traces.py", "neurondev.compare_traces("),
    "devices/host/device_module": ("tests/devices/test_host_device.py", "torch.manual_seed(1)"),
    "devices/host/loader": ("tests/devices/test_host_device.py", "neurondev.host_device("),
    "devices/host/dynamo_interface": ("tests/devices/test_host_device.py", "get_interface_for_device"),
    "runs/state": ("tests/runs/test_program.py", "DIFFERS from CPU in what it writes"),
    "runs/program_records": ("tests/runs/test_program.py", ".program."),
    "runs/program_failures": ("tests/runs/test_program.py", '"host-only call between graphs"'),
    "runs/run_records": ("tests/xla/test_run.py", "from neurondev.runs.run_records import"),
}


def modules():
    for folder in FOLDERS:
        for path in sorted((ROOT / "neurondev" / folder).glob("*.py")):
            if path.name != "__init__.py":
                yield f"{folder}/{path.stem}", path


@pytest.mark.parametrize(("module", "path"), list(modules()), ids=[name for name, _ in modules()])
def test_each_module_has_a_test_module(module, path):
    own = ROOT / "tests" / Path(module).parent / f"test_{path.stem}.py"
    if own.is_file():
        assert module not in TESTED_BY, f"{module} has {own.name}: drop it from TESTED_BY"
        return
    assert module in TESTED_BY, f"neurondev/{module}.py has no tests/{Path(module).parent}/test_{path.stem}.py"
    test_file, through = TESTED_BY[module]
    assert through in (ROOT / test_file).read_text(), f"{test_file} no longer reaches {module} through {through!r}"
