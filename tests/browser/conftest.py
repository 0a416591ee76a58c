"""A real Chromium (Debian's, installed by the setup) driven by playwright; no browser download."""

from __future__ import annotations

import shutil

import pytest

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--use-gl=swiftshader",  # WebGL in software: Model Explorer draws with it
    "--enable-unsafe-swiftshader",
]


@pytest.fixture(scope="session")
def browser():
    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    if executable is None:
        pytest.skip("no Chromium on this machine: scripts/setup.sh installs Debian's chromium as root")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture()
def page(browser):
    context = browser.new_context(viewport={"width": 1300, "height": 1000})
    opened = context.new_page()
    yield opened
    context.close()
