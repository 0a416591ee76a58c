"""Take the README's and the docs' pictures in real Chromium: the seed example's card, the focus view of a
32-layer Llama, the tiny GPT-2 in Model Explorer, the watch card of a decode loop, and the card of a torchrun job
whose last rank fails (docs/how-to/ranks.md).

    .venv/bin/python scripts/make_picture.py                 # all five
    .venv/bin/python scripts/make_picture.py model-explorer  # one
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import neurondev
from neurondev import examples, testing

ASSETS = Path(__file__).resolve().parent.parent / "assets"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--use-gl=swiftshader", "--enable-unsafe-swiftshader"]


def card(browser) -> Path:
    fn, args, kwargs = examples.get("seed").build()
    explanation = neurondev.explain(fn, *args, **kwargs, quiet=True)
    with tempfile.TemporaryDirectory() as folder:
        page = browser.new_page(viewport={"width": 1200, "height": 900}, device_scale_factor=1)
        page.goto(explanation.save_html(Path(folder) / "report.html").as_uri())
        page.locator(".neurondev-card").screenshot(path=str(ASSETS / "explain-card.png"))
    return ASSETS / "explain-card.png"


def deep_focus_view(browser) -> Path:
    model, args, kwargs = testing.tiny_llama(32, hidden=256, heads=4, kv_heads=2, intermediate=512)
    explanation = neurondev.explain(model, *args, **kwargs, quiet=True)
    with tempfile.TemporaryDirectory() as folder:
        svg = explanation.save_svg(Path(folder) / "before.svg", "before")
        frame = Path(folder) / "frame.html"
        frame.write_text(f'<html><body style="margin:0;background:#fff"><img id="g" src="{svg.name}" style="width:1400px"></body></html>')
        page = browser.new_page(viewport={"width": 1400, "height": 1000}, device_scale_factor=1)
        page.goto(frame.as_uri())
        page.locator("#g").screenshot(path=str(ASSETS / "focus-view-32-layers.png"))
    return ASSETS / "focus-view-32-layers.png"


def model_explorer(browser) -> Path:
    model, args, kwargs = testing.tiny_gpt2()
    explanation = neurondev.explain(model, *args, **kwargs, quiet=True)
    with tempfile.TemporaryDirectory() as folder:
        server = explanation.model_explorer(Path(folder) / "model-explorer")
        try:
            page = browser.new_page(viewport={"width": 1500, "height": 950}, device_scale_factor=1)
            page.goto(server.url)
            page.wait_for_function(
                "document.body.innerText.includes('graph 0 before') && document.body.innerText.includes('Node data')", timeout=90_000
            )
            page.wait_for_function(  # it opens on the findings: the layer that holds the pins expanded
                "window.me_test && window.me_test.renderers && window.me_test.renderers[0]"
                " && window.me_test.renderers[0].curModelGraph.nodesById['transformer___group___'].expanded === true",
                timeout=30_000,
            )
            page.locator("input[placeholder='regex to filter nodes']").last.fill("masking_utils")
            page.wait_for_function("document.body.innerText.includes('at masking_utils.py:')", timeout=30_000)
            page.wait_for_timeout(1500)  # the layout's animation settles
            page.screenshot(path=str(ASSETS / "model-explorer.png"))
        finally:
            server.stop()
    return ASSETS / "model-explorer.png"


def watch_card(browser) -> Path:
    """A tiny Llama's decode loop with the default cache, a watched forward: compiles on every step, then the limit."""
    import torch

    from neurondev import xla

    device = xla.device()
    model, (ids,), _ = testing.tiny_llama(2)
    model = model.to(device)
    watched = neurondev.watch(torch.compile(model.forward, backend="openxla"))
    model.forward = watched
    model.generate(ids.to(device), max_new_tokens=16, do_sample=False)
    with tempfile.TemporaryDirectory() as folder:
        page = browser.new_page(viewport={"width": 1000, "height": 900}, device_scale_factor=1)
        page.goto(watched.save_html(Path(folder) / "watch.html").as_uri())
        page.locator(".neurondev-card").screenshot(path=str(ASSETS / "watch-card.png"))
    return ASSETS / "watch-card.png"


def failed_rank_card(browser) -> Path:
    """The gallery's two-rank job with its last rank raising at step 3, watched under torchrun: rank 0's card."""
    import os
    import subprocess

    from neurondev.gallery import ragged_ranks

    with tempfile.TemporaryDirectory() as folder:
        command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2", "-m", "neurondev", "watch"]
        command += ["--html", f"{folder}/ranks.html", ragged_ranks.__file__, "--fail-at", "3"]
        environ = {k: v for k, v in os.environ.items() if k != "PJRT_DEVICE"} | {"OMP_NUM_THREADS": "1"}
        subprocess.run(command, cwd=folder, env=environ, capture_output=True, timeout=300)
        page = browser.new_page(viewport={"width": 1100, "height": 900}, device_scale_factor=1)
        page.goto(Path(folder, "ranks.html").as_uri())
        page.locator(".neurondev-card").screenshot(path=str(ASSETS / "failed-rank-card.png"))
    return ASSETS / "failed-rank-card.png"


PICTURES = {
    "card": card,
    "focus-view": deep_focus_view,
    "model-explorer": model_explorer,
    "watch": watch_card,
    "failed-rank": failed_rank_card,
}


def main(names: list[str]) -> None:
    from playwright.sync_api import sync_playwright

    ASSETS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=shutil.which("chromium"), args=CHROMIUM_ARGS)
        for name in names or list(PICTURES):
            print(PICTURES[name](browser))
        browser.close()


if __name__ == "__main__":
    main(sys.argv[1:])
