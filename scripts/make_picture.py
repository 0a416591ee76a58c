"""Take assets/explain-card.png: the seed example's explain() card, screenshotted in real Chromium."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import neurondev
from neurondev import examples

ASSETS = Path(__file__).resolve().parent.parent / "assets"


def main() -> None:
    from playwright.sync_api import sync_playwright

    fn, args, kwargs = examples.get("seed").build()
    explanation = neurondev.explain(fn, *args, **kwargs, quiet=True)
    with tempfile.TemporaryDirectory() as folder, sync_playwright() as playwright:
        page_path = explanation.save_html(Path(folder) / "report.html")
        browser = playwright.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1200, "height": 900}, device_scale_factor=1)
        page.goto(page_path.as_uri())
        ASSETS.mkdir(exist_ok=True)
        page.locator(".neurondev-card").screenshot(path=str(ASSETS / "explain-card.png"))
        browser.close()
    print(ASSETS / "explain-card.png")


if __name__ == "__main__":
    main()
