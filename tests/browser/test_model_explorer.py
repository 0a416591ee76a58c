"""Model Explorer in a real Chromium: the tiny GPT-2's graphs before and after the pass, and the
node-data table naming the pin nodes with their overlay values, as a person sees them."""

from __future__ import annotations

import pytest

import neurondev
from neurondev import testing

pytestmark = [pytest.mark.browser, pytest.mark.xla, pytest.mark.slow]
pytest.importorskip("model_explorer", reason="the setup installs neurondev[explorer] for the tests")


@pytest.fixture(scope="module")
def explanation():
    model, args, kwargs = testing.tiny_gpt2()
    return neurondev.explain(model, *args, **kwargs, quiet=True)


@pytest.fixture()
def server(explanation, tmp_path):
    running = explanation.model_explorer(tmp_path / "model-explorer")
    yield running
    running.stop()


def test_the_graphs_and_the_pin_overlay_show_in_model_explorer(server, page, explanation):
    page.goto(server.url)
    page.wait_for_function(
        "document.body.innerText.includes('graph 0 before') && document.body.innerText.includes('Node data')", timeout=90_000
    )
    body = page.inner_text("body")
    assert "neurondev GPT2LMHeadModel" in body and "graph 0 before" in body
    for overlay in ("pins", "graph breaks", "crossings", "uploads", "cpu fallbacks", "ran on xla"):
        assert overlay in body, overlay
    page.locator("input[placeholder='regex to filter nodes']").last.fill("arange")
    page.wait_for_function("document.body.innerText.includes('batch_arange')", timeout=30_000)
    table = page.inner_text("body").split("Node data", 1)[1]
    pinned = [pin.node for pin in explanation.pins if "arange" in pin.node]
    for name in pinned:
        assert f"{name}\t1" in table, (name, table[:600])
    page.locator("text=graph 0 before").first.click()
    page.wait_for_selector("text=graph 0 after", timeout=30_000)


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
