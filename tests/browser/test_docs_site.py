"""The documentation site as `make docs` builds it: strict, a page per rule, and, in Chromium offline, a rule's page
renders and the site's search finds a rule by its code."""

from __future__ import annotations

import functools
import http.server
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import neurondev

pytestmark = [pytest.mark.docs]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site built as `make docs` builds it (--strict), into a folder of the test's own."""
    folder = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-d", str(folder)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    return folder


def test_the_site_builds_strict_with_a_page_per_rule_named_after_its_code(site):
    rules = neurondev.rules()
    assert len(rules) >= 30 and rules["rule"].is_unique
    for code, name in zip(rules["rule"], rules["name"]):
        page = (site / "rules" / code / "index.html").read_text()
        assert f"{code}: {name}" in page and "What it costs" in page and "How to fix it" in page
    index = (site / "rules" / "index.html").read_text()
    assert all(f'href="../rules/{code}/"' in index or f'href="{code}/"' in index for code in rules["rule"])
    for page in ("getting-started", "reference/api", "reference/commands", "architecture", "tutorials/01_quickstart", "how-to/ci-guard"):
        assert (site / page / "index.html").exists(), page


def test_the_api_reference_holds_the_docstrings_and_the_commands_their_help(site):
    api = (site / "reference" / "api" / "index.html").read_text()
    assert "neurondev.check" in api and "select" in api and "DevicePinsError" in api
    commands = (site / "reference" / "commands" / "index.html").read_text()
    assert "--select" in commands and "neurondev watch" in commands


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 (http.server's name)
        pass


@pytest.fixture(scope="module")
def served(site):
    """The built site over HTTP on this machine (the search's worker needs http://, not file://)."""
    handler = functools.partial(_Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


def _offline(page, root: str) -> list[str]:
    blocked: list[str] = []
    page.route(
        "**/*",
        lambda route: route.continue_() if route.request.url.startswith(root) else (blocked.append(route.request.url), route.abort()),
    )
    return blocked


def _search(page, query: str, result) -> None:
    """Type ``query`` key by key, as a person does (the search reads key presses), and again until a result shows:
    keys typed before the search's worker has indexed the site are not searched for."""
    from playwright.sync_api import TimeoutError as SearchTimeout

    box = page.locator("input.md-search__input")
    box.press_sequentially(query)
    for _ in range(24):
        try:
            result.wait_for(timeout=5_000)
            return
        except SearchTimeout:
            box.press("Backspace")
            box.press_sequentially(query[-1])
    result.wait_for(timeout=5_000)  # the last try fails with playwright's own message


@pytest.mark.browser
def test_a_rules_page_renders_and_search_finds_a_rule_by_its_code_offline(page, served):
    blocked = _offline(page, served)
    page.goto(f"{served}rules/ND205/")
    assert page.locator("h1").first.inner_text().startswith("ND205: cpu-fallback")
    assert page.locator("article").inner_text().count("On a native device") == 1
    page.goto(served)
    page.locator("label.md-search__icon, .md-search__input").first.click()
    result = page.locator(".md-search-result__item a").first
    _search(page, "ND205", result)
    assert "rules/ND205/" in result.get_attribute("href")
    result.click()
    page.wait_for_url("**/rules/ND205/**")
    assert blocked == []  # nothing outside the site was asked for
