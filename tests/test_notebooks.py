"""The tutorial notebooks run top to bottom on the real XLA device and show what they promise."""

from __future__ import annotations

from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def execute(name: str):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
    nbclient.NotebookClient(notebook, kernel_name="python3", timeout=600, resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    return notebook


def outputs_of(notebook, mime: str) -> list[str]:
    return [
        output.get("data", {}).get(mime) or output.get("text", "")
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.outputs
        if mime in output.get("data", {}) or (mime == "text/plain" and output.get("output_type") == "stream")
    ]


@pytest.mark.xla
@pytest.mark.slow
def test_frozen_devices_on_xla_notebook_shows_the_break_the_fix_and_the_comparison():
    notebook = execute("01_frozen_devices_on_xla.ipynb")
    errors = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs if o.output_type == "error"]
    assert errors == []
    html = "\n".join(outputs_of(notebook, "text/html"))
    text = "\n".join(outputs_of(notebook, "text/plain"))
    assert "frozen" in html and "torch.empty" in html
    assert "before: ran on xla:0: 1 graph break(s): copy_" in text
    assert "after:  ran on xla:0: 0 graph break(s)" in text
    assert any("<svg" in svg for svg in outputs_of(notebook, "image/svg+xml"))
    assert "FakeTensor Device Propagation" in html and "neurondev" in html
    assert "Expected XLA tensor" in html and "[to, to_1, to_2]" in html
