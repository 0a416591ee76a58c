"""Model Explorer in a real Chromium: the tiny GPT-2's graphs before and after the pass, and the
node-data table naming the pin nodes with their overlay values, as a person sees them."""

from __future__ import annotations

import html
import re

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

import neurondev

pytestmark = [pytest.mark.browser, pytest.mark.xla, pytest.mark.slow]
pytest.importorskip("model_explorer", reason="the setup installs neurondev[explorer] for the tests")


@pytest.fixture()
def explanation(gpt2_explained):
    return gpt2_explained


def _renderer(page, expression):
    return page.evaluate(
        f"() => {{ const r = window.me_test && window.me_test.renderers; const x = r && r[0]; return x ? {expression} : null }}"
    )


def _providers(page):
    return page.inner_text("body").split("NODE DATA PROVIDERS", 1)[-1].split("Aggregated stats", 1)[0]


# The providers panel's text when its pins overlay has loaded and is shown, read in the same evaluation that matched
# (a second read could see a panel that changed since); false until then.
_PINS_SHOWN = (
    "(() => { const t = ((document.body.innerText.split('NODE DATA PROVIDERS')[1] || '').split('Aggregated stats')[0]);"
    " const table = document.querySelector(\"input[placeholder='regex to filter nodes']\");"
    " return table && /7\\s+pins\\s+visibility(?!_off)/.test(t) ? t : false })()"
)
_PANEL = "(() => (document.body.innerText.split('NODE DATA PROVIDERS')[1] || '').split('Aggregated stats')[0])()"


def _wait(page, expression: str, timeout: int, what: str):
    try:
        return page.wait_for_function(expression, timeout=timeout)
    except PlaywrightTimeout:
        raise AssertionError(f"{what} never came ({timeout // 1000} s); the providers panel read {page.evaluate(_PANEL)[:300]!r}") from None


def test_model_explorer_opens_on_the_pins_with_labels_for_people_and_stops_for_good(browser, explanation, tmp_path, monkeypatch):
    """The page a person sees, then stopping the server: one load, no retry. (Loads that "stalled" before showed
    Model Explorer's panel for a selected node, which it applies or drops by timing: the page asks for none now,
    ``Opening``'s docstring.) The exit hook is watched where the server registers it: garbage collection cannot
    tell, since playwright keeps its callers' frames (and their locals)."""
    import types

    from neurondev.notebook import explorer_server

    hooks = []

    def unregister(hook):  # as atexit's: a hook not registered is fine
        if hook in hooks:
            hooks.remove(hook)

    monkeypatch.setattr(explorer_server, "atexit", types.SimpleNamespace(register=hooks.append, unregister=unregister))
    running = explanation.model_explorer(tmp_path / "model-explorer")
    assert hooks == [running.stop]  # a server left running ends with Python
    try:
        _check_the_page(browser, running.url, explanation)
        assert running.url in html.unescape(running._repr_html_())  # the notebook's frame opens this page
    finally:
        running.stop()
    assert hooks == []  # no exit hook holds the stopped server until Python exits
    running.stop()  # twice is harmless
    assert running.process.poll() is not None


def _check_the_page(browser, url, explanation):
    page = browser.new_context(viewport={"width": 1000, "height": 700}).new_page()
    try:
        page.goto(url)
        _wait(
            page, "document.body.innerText.includes('graph 0 before') && document.body.innerText.includes('Node data')", 60_000, "the page"
        )
        shown = _wait(page, _PINS_SHOWN, 15_000, "the pins overlay").json_value()  # read in the snapshot the wait matched
        _wait(page, "window.me_test && window.me_test.renderers && window.me_test.renderers[0]", 30_000, "the renderer")
        body = page.inner_text("body")
        assert "neurondev GPT2LMHeadModel" in body and "graph 0 before" in body
        for overlay in ("pins", "graph breaks", "crossings", "uploads", "cpu fallbacks", "ran on the device", "first difference"):
            assert overlay in body, overlay
        assert re.search(r"7\s+pins\s+visibility(?!_off)", shown), shown  # the pins overlay, shown, colours the nodes
        expanded = "window.me_test.renderers[0].curModelGraph.nodesById['transformer___group___'].expanded === true"
        _wait(page, expanded, 30_000, "the pins' layer expanded")  # not one collapsed box
        assert _renderer(page, "x.curModelGraph.id") == "graph 0 before"
        # weights by their dotted names, not dynamo's placeholder names: the labels of the graph the page shows
        labels = _renderer(page, "Object.values(x.curModelGraph.nodesById).map(n => n.label)")
        assert "transformer.wte.weight" in labels and not [label for label in labels if "l_fn_modules" in label]
        table = "document.body.innerText.includes('transformer.wte.weight') && document.querySelector(\"input[placeholder='regex to filter nodes']\")"
        _wait(page, table, 60_000, "the node data table with the layer's nodes")  # within 3 s here alone, 20 s+ under the suite's load
        page.locator("input[placeholder='regex to filter nodes']").last.fill("masking_utils")
        pinned = [pin for pin in explanation.pins if pin.source is not None and pin.source.file.endswith("masking_utils.py")]
        label = f"{pinned[0].function} at masking_utils.py:{pinned[0].source.line}"
        row = _wait(
            page, f"(() => {{ const t = document.body.innerText; return t.includes({label!r}) ? t : false }})()", 30_000, "the pin's row"
        )
        rows = row.json_value().split("Node data", 1)[1]
        assert label in rows and "\t1" in rows.split(label, 1)[1].splitlines()[0], rows[:600]  # the pin's row has the pin
        page.locator("text=graph 0 before").first.click()
        _wait(page, "document.body.innerText.includes('graph 0 after')", 30_000, "the graph after")
    finally:
        page.context.close()


def test_without_the_extra_the_calls_say_how_to_install_it(explanation, tmp_path, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_model_explorer(name, *args, **kwargs):
        if name.startswith("model_explorer"):
            raise ImportError("hidden by the test")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_model_explorer)
    with pytest.raises(neurondev.ModelExplorerUnavailableError, match=r"pip install 'neurondev\[explorer\]'"):
        explanation.save_model_explorer(tmp_path)
