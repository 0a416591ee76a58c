"""The card and the explorer inside a real JupyterLab, in Chromium: run the cells, click a pin, toggle, copy its fix."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = [pytest.mark.xla, pytest.mark.browser, pytest.mark.slow]

CELLS = [
    """import torch, neurondev

def two_pins(x):
    a = torch.zeros(4, device=x.device)
    b = torch.arange(4, device=x.device)
    return a + x + b

ex = neurondev.explain(two_pins, torch.randn(4), quiet=True)
ex""",
    "explorer = ex.explore()\nexplorer",
]
TOKEN = "neurondev-test-token"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture()
def lab(tmp_path):
    import nbformat  # here, not at collection (jsonschema's import costs a worker 2.8 s)

    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code) for code in CELLS])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, tmp_path / "explain.ipynb")
    port = free_port()
    environ = dict(
        os.environ,
        JUPYTER_CONFIG_DIR=str(tmp_path / "config"),
        JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    )
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        f"--port={port}",
        f"--ServerApp.token={TOKEN}",
        "--ServerApp.ip=127.0.0.1",
        "--allow-root",
        f"--ServerApp.root_dir={tmp_path}",
        "--LabApp.news_url=",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    with open(tmp_path / "lab.log", "w") as log:
        server = subprocess.Popen(command, env=environ, stdout=log, stderr=subprocess.STDOUT)
        try:
            _wait_until_up(port, server, tmp_path / "lab.log")
            yield f"http://127.0.0.1:{port}"
        finally:
            # Asked to stop: JupyterLab shuts its kernel down gracefully, and the kernel's Python removes what it made
            # at exit (killed, the kernel exits when it sees its parent gone, leaving torch_xla's temporary folder).
            server.terminate()  # 0.8 s with the suite's exit settings (measured)
            server.wait(timeout=60)


def _wait_until_up(port: int, server: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"jupyter lab exited: {log.read_text()[-2000:]}")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={TOKEN}", timeout=2)
            return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"jupyter lab did not start: {log.read_text()[-2000:]}")


def run_all_cells(page) -> None:
    page.wait_for_selector(".jp-Notebook .cm-content", timeout=120_000)
    page.get_by_text("Python 3 (ipykernel) | Idle").wait_for(timeout=120_000)  # the kernel is up
    page.locator(".jp-Notebook .jp-Cell .cm-content").first.click()
    for _ in CELLS:
        page.keyboard.press("Shift+Enter")


def test_the_card_and_the_explorer_work_in_jupyterlab(page, lab, tmp_path):
    page.goto(f"{lab}/lab/tree/explain.ipynb?token={TOKEN}")
    try:
        check_card_and_explorer(page)
    except Exception:
        page.screenshot(path=str(tmp_path / "jupyterlab-failure.png"))
        raise


def check_card_and_explorer(page) -> None:
    run_all_cells(page)
    card = page.locator(".jp-OutputArea-output .neurondev-card").first
    card.wait_for(timeout=180_000)
    headline = card.locator(".nd-headline").first.inner_text()
    assert "2 frozen device pin(s) (torch.zeros at In[1]:4, torch.arange at In[1]:5)" in headline, headline
    assert card.locator("figure.nd-before svg").count() == 1

    explorer = page.locator(".neurondev-explorer")
    explorer.wait_for(timeout=120_000)
    program = explorer.locator(".nd-explorer-program table.nd-program")
    assert "as written (openxla)" in program.inner_text() and "agrees with CPU" in program.inner_text()
    select = explorer.locator("select").first
    select.select_option(index=1)  # pick the second pin, as a click in the list does
    detail = explorer.locator(".nd-pin-detail")
    detail.filter(has_text="torch.arange").wait_for(timeout=30_000)
    assert "b = torch.arange(4, device=x.device)" in detail.locator(".nd-source").inner_text()

    explorer.locator(".widget-toggle-buttons button", has_text="after").click()
    after = explorer.locator(".nd-picture.nd-after")
    after.wait_for(timeout=30_000)
    assert "rewritten: cpu → xla" in after.locator("svg g.node text").all_text_contents()
    check_the_fix_is_verified_from_the_cell_and_copied(page, card, explorer)
    check_both_themes(page, card)


def check_the_fix_is_verified_from_the_cell_and_copied(page, card, explorer) -> None:
    """The function lives in a cell: its fix is verified from the cell's source; the button copies it."""
    fixes = card.locator(".nd-card-fix").first
    assert "a = x.new_zeros(4, dtype=torch.get_default_dtype())" in fixes.inner_text() and "verified" in fixes.inner_text()
    explorer.locator("select").first.select_option(index=0)
    fix = explorer.locator(".nd-fix")
    fix.wait_for(timeout=30_000)
    assert fix.locator(".nd-fixed").inner_text().strip() == "a = x.new_zeros(4, dtype=torch.get_default_dtype())"
    assert "(verified)" in fix.inner_text()
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    fix.locator("button.nd-copy").click()
    fix.locator("button.nd-copy", has_text="Copied").wait_for(timeout=10_000)
    assert page.evaluate("navigator.clipboard.readText()") == "a = x.new_zeros(4, dtype=torch.get_default_dtype())"


def luminance(css_colour: str) -> float:
    red, green, blue = (float(v) for v in css_colour[css_colour.index("(") + 1 :].rstrip(")").split(",")[:3])
    return (0.2126 * red + 0.7152 * green + 0.0722 * blue) / 255


def check_both_themes(page, card) -> None:
    """The card follows JupyterLab's theme through its CSS variables: dark text on light, then light on dark."""
    style = "e => [getComputedStyle(e).color, getComputedStyle(e).backgroundColor]"
    colour, background = card.evaluate(style)
    assert luminance(colour) < 0.4 < luminance(background)
    page.locator(".lm-MenuBar-itemLabel", has_text="Settings").click()
    page.locator(".lm-Menu-itemLabel", has_text="Theme").first.hover()
    page.locator(".lm-Menu-itemLabel").get_by_text("JupyterLab Dark", exact=True).click()
    page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'", timeout=30_000)
    page.wait_for_timeout(500)
    colour, background = card.evaluate(style)
    assert luminance(colour) > 0.6 > 0.4 > luminance(background)
