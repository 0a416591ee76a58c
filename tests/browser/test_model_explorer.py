"""Model Explorer in a real Chromium: the tiny GPT-2's graphs before and after the pass, and the
node-data table naming the pin nodes with their overlay values, as a person sees them."""

from __future__ import annotations

import contextlib
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


_PINS_LOADED = (
    "(() => { const t = document.body.innerText.split('NODE DATA PROVIDERS')[1] || '';"
    " return /7\\s+pins\\s+visibility(?!_off)/.test(t.split('Aggregated stats')[0]) })()"
)


def _open_with_pins_shown(browser, url, attempts=6):
    """A page of ``url`` whose pins overlay has loaded, shown, and its providers panel. Now and then
    Model Explorer's page never fills in the overlays it lists (each shows "-" while its server stream
    stays open; 1 load in 6 measured here, more under load: 4 tries all stuck once in a clean-clone run), and opening the URL again in the same
    page fails the same way: each attempt is a fresh browser context, the stuck one closed, as a user
    would open a new tab. The last attempt's page is returned for the caller's assertions to show."""
    for attempt in range(attempts):
        context = browser.new_context(viewport={"width": 1000, "height": 700})
        page = context.new_page()
        page.goto(url)
        with contextlib.suppress(PlaywrightTimeout):
            page.wait_for_function(
                "document.body.innerText.includes('graph 0 before') && document.body.innerText.includes('Node data')", timeout=60_000
            )
            page.wait_for_function(_PINS_LOADED, timeout=10_000)  # a page that loads fills them in within 2 s here
            return page, _providers(page)
        if attempt + 1 < attempts:
            context.close()
    return page, _providers(page)


def test_model_explorer_opens_on_the_pins_with_labels_for_people_and_stops_for_good(browser, explanation, tmp_path, monkeypatch):
    """One server (each start is a Python importing Model Explorer): the page a person sees, then stopping it.
    The exit hook is watched where the server registers it: garbage collection cannot tell, since playwright
    keeps its callers' frames (and their locals)."""
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
    finally:
        running.stop()
    assert "open the link in a new tab" in running._repr_html_()  # what to do when Model Explorer misses its overlays
    assert hooks == []  # no exit hook holds the stopped server until Python exits
    running.stop()  # twice is harmless
    assert running.process.poll() is not None


def _check_the_page(browser, url, explanation):
    page, shown = _open_with_pins_shown(browser, url)
    page.wait_for_function("window.me_test && window.me_test.renderers && window.me_test.renderers[0]", timeout=30_000)
    body = page.inner_text("body")
    assert "neurondev GPT2LMHeadModel" in body and "graph 0 before" in body
    for overlay in ("pins", "graph breaks", "crossings", "uploads", "cpu fallbacks", "ran on the device", "first difference"):
        assert overlay in body, overlay
    assert re.search(r"7\s+pins\s+visibility(?!_off)", shown), shown  # the pins overlay, shown, colours the nodes
    page.wait_for_function(
        "window.me_test.renderers[0].curModelGraph.nodesById['transformer___group___'].expanded === true", timeout=30_000
    )  # the layer that holds the pins opens expanded, not as one collapsed box
    assert _renderer(page, "x.curModelGraph.id") == "graph 0 before"
    assert "l_fn_modules" not in page.inner_text("body")  # weights by their dotted names, not dynamo's placeholder names
    assert "transformer.wte.weight" in page.inner_text("body")
    page.locator("input[placeholder='regex to filter nodes']").last.fill("masking_utils")
    pinned = [pin for pin in explanation.pins if pin.source is not None and pin.source.file.endswith("masking_utils.py")]
    first = pinned[0]
    label = f"{first.function} at masking_utils.py:{first.source.line}"
    page.wait_for_function(f"document.body.innerText.includes({label!r})", timeout=30_000)
    table = page.inner_text("body").split("Node data", 1)[1]
    assert label in table and "\t1" in table.split(label, 1)[1].splitlines()[0], table[:600]  # the pin's row has the pin
    page.locator("text=graph 0 before").first.click()
    page.wait_for_selector("text=graph 0 after", timeout=30_000)
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
