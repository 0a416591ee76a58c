"""The documentation site as `make docs` builds it: strict, a page per rule with its example and the code to use
instead, every link naming a file that exists (notebooks' links too), nothing fetched from the network; in Chromium
offline, from file:// as from a server, a rule's page renders, the tutorials ask for nothing outside the site and the
site's search finds a rule by its code."""

from __future__ import annotations

import functools
import html.parser
import http.server
import re
import threading
from pathlib import Path

import pytest

import neurondev

pytestmark = [pytest.mark.docs]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site built as `make docs` builds it (--strict), into a folder of the test's own."""
    from neurondev.cli.docs_site import build_site

    folder = tmp_path_factory.mktemp("site")
    build_site(folder)  # neurondev docs's own build: a warning or a broken link raises, with mkdocs's words
    return folder


def test_the_site_builds_strict_with_a_page_per_rule_named_after_its_code(site):
    rules = neurondev.rules()
    assert len(rules) >= 30 and rules["rule"].is_unique
    index = (site / "rules" / "index.html").read_text()
    for code, name in zip(rules["rule"], rules["name"]):
        page = (site / "rules" / f"{code}.html").read_text()
        assert f"{code}: {name}" in page and "How to fix it" in page and "Example" in page and "Use instead" in page
        assert f"{code} {name}" in index  # the navigation names each rule
        costs = re.search(r"On XLA:</strong>(.*?)</li>\s*<li><strong>On a native device:</strong>(.*?)</li>", page, re.S)
        assert costs is not None and costs[1].strip() != costs[2].strip(), f"{code}: one cost for both stacks"
    assert all(f'href="{code}.html"' in index for code in rules["rule"])
    assert "ND409 is left free" in index
    for page in ("getting-started", "reference/api", "reference/commands", "architecture", "tutorials/01_quickstart", "how-to/ci-guard"):
        assert (site / f"{page}.html").exists(), page


def test_a_rule_page_shows_what_its_example_made_neurondev_say_and_how_to_select_it(site):
    import tomllib

    from neurondev import rulebook

    related = tomllib.loads((ROOT / "docs" / "rules" / "related.toml").read_text())
    assert set(related) <= {rule.code for rule in rulebook.RULES} >= {code for codes in related.values() for code in codes}
    for code in ("ND101", "ND405", "ND412"):
        page = (site / "rules" / f"{code}.html").read_text()
        card = (ROOT / "docs" / "rules" / "cards" / f"{code}.txt").read_text()
        assert card.splitlines()[-1] in _text(page), code  # the card, as the real run printed it
        assert all(f'href="{linked}.html"' in page for linked in related[code])
        for name in (f"{code}.py", f"{code}_instead.py"):  # each file's lines, included from the file, and a link to it
            example = ROOT / "docs" / "rules" / "examples" / name
            assert f'href="examples/{name}"' in page and (site / "rules" / "examples" / name).read_text() == example.read_text()
            assert all(line in _text(page) for line in example.read_text().splitlines()), name
    assert "neurondev.watch()" in (site / "rules" / "ND405.html").read_text()  # a loop's rule comes from watch, not check
    assert "torchrun --nproc-per-node 2 -m neurondev watch docs/rules/examples/ND412.py" in (site / "rules" / "ND412.html").read_text()
    assert "needs torch-neuronx" in (site / "rules" / "ND206.html").read_text()  # shown, not run: said so
    what = _text((site / "rules" / "ND101.html").read_text())  # code keeps its case: a capital would change what is typed
    assert "device=x.device frozen to the trace device" in what and "Device=x.device" not in what


def test_the_api_reference_holds_the_signatures_docstrings_and_the_commands_their_help(site):
    api = (site / "reference" / "api.html").read_text()
    text = _text(api)
    assert "neurondev.explain(fn, *args, target=None" in text and "neurondev.check(fn, *args" in text
    assert "select" in api and "DevicePinsError" in api and "neurondev.watch(" in text
    members = re.findall(r'id="(neurondev\.[\w.]+)"', api)
    assert "neurondev.Explanation.patch" in members and not [m for m in members if "._" in m]  # public names only: no dunder
    assert " at 0x" not in api  # no object's address: the page is the same build after build
    # the result classes' public methods, inherited from their displays and data, each with its own entry
    entries = ("transfer_table", "fallback_table", "pin_table", "save_html", "summary")
    assert all(re.search(rf"\b{method}\([^)]*\)\s*¶", text) for method in entries), "an Explanation method without its entry"
    assert "across_ranks(folder='.', *, timeout=600.0)" in text and "neurondev.host_device(fallback=())" in text
    commands = (site / "reference" / "commands.html").read_text()
    assert "--select" in commands and "neurondev watch" in commands


def _text(page: str) -> str:
    """A page's text as a reader sees it: no tags (a highlighted block's spans), entities read."""
    return html.unescape(re.sub(r"<[^>]+>", "", page))


class _Links(html.parser.HTMLParser):
    """Every href and src of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.found += [value for name, value in attrs if name in ("href", "src") and value]


def _links(page: Path) -> list[str]:
    parser = _Links()
    parser.feed(page.read_text())
    return parser.found


def test_every_link_of_every_page_names_a_file_that_exists_notebooks_included(site):
    """What a reader opening site/index.html from disk follows: no folder (a listing there), no page missing."""
    broken = []
    for page in site.rglob("*.html"):
        if page.name == "404.html":  # a server's page for a missing one: its links are from the server's root
            continue
        for link in _links(page):
            if re.match(r"[a-z]+:", link) or link.startswith("#"):
                continue
            target = (page.parent / link.split("#")[0].split("?")[0]).resolve()
            if not target.is_file():
                broken.append(f"{page.relative_to(site)} -> {link}")
    assert broken == []
    assert len(list(site.glob("tutorials/*.html"))) >= 8


def test_no_page_fetches_anything_from_the_network(site):
    """mkdocs.yml's promise: the site asks nothing of the network (no CDN script, style, font or widget renderer)."""
    fetching = []
    for page in site.rglob("*.html"):
        text = page.read_text()
        fetching += [
            f"{page.relative_to(site)}: {link}"
            for link in _links(page)
            if link.startswith(("http:", "https:", "//")) and _loads(text, link)
        ]
        fetching += [f"{page.relative_to(site)}: {url}" for url in re.findall(r"https://unpkg\.com[^'\" ]*", text)]
    assert fetching == []


def _loads(text: str, link: str) -> bool:
    """Whether a page loads ``link`` (a script, a style sheet, an image) rather than links to it."""
    return (
        re.search(
            rf'<(script|img|iframe)[^>]*src="{re.escape(link)}"|<link[^>]*href="{re.escape(link)}"[^>]*rel="(stylesheet|preload)"', text
        )
        is not None
    )


@pytest.fixture(scope="module")
def served(site):
    """The built site over HTTP on this machine, by ``neurondev docs --serve``'s handler (the search's worker needs
    http://, not file://)."""
    from neurondev.cli.docs_site import _Quiet

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
    page.goto(f"{served}rules/ND205.html")
    assert page.locator("h1").first.inner_text().startswith("ND205: cpu-fallback")
    assert page.locator("article").inner_text().count("On a native device") == 1
    page.goto(served)
    page.locator("label.md-search__icon, .md-search__input").first.click()
    result = page.locator(".md-search-result__item a").first
    _search(page, "ND205", result)
    assert "rules/ND205.html" in result.get_attribute("href")
    result.click()
    page.wait_for_url("**/rules/ND205.html**")
    assert blocked == []  # nothing outside the site was asked for


@pytest.mark.browser
def test_opened_from_disk_getting_started_and_every_tutorial_open_and_ask_nothing_of_the_network(page, site):
    """As the README says: open site/index.html. Each link followed is a page, not a folder's listing; the search box says how to serve the site."""
    root = site.as_uri() + "/"
    blocked = _offline(page, root)
    page.goto(f"{root}index.html")
    page.locator("nav a", has_text="Getting started").first.click()
    page.wait_for_url("**/getting-started.html")
    assert page.locator("h1").first.inner_text().startswith("Getting started")
    for tutorial in sorted(site.glob("tutorials/0*.html")):
        page.goto(tutorial.as_uri())
        page.wait_for_load_state("load")
        assert "Index of" not in page.title()
    page.goto(f"{root}index.html")  # from disk the browser runs no search worker: the box says how to serve the site
    box = page.locator("input.md-search__input").first
    assert box.get_attribute("placeholder") == "Search needs the site served: neurondev docs --serve"
    assert blocked == []


@pytest.mark.browser
def test_the_404_page_is_styled_opened_from_disk_and_served_at_a_missing_path(page, site, served):
    """material writes the 404 page's links from '/' (the disk's root under file://): they are made relative to the
    site's root, and the server answers a missing path with that page, its base at the root."""
    header = "getComputedStyle(document.querySelector('.md-header')).position"
    page.goto((site / "404.html").as_uri())
    assert page.evaluate(header) == "sticky"  # material's stylesheet applied (unstyled: 'static')
    answer = page.goto(f"{served}how-to/no-such-page.html")
    assert answer is not None and answer.status == 404 and page.evaluate(header) == "sticky"
    assert page.locator("h1").first.inner_text() == "404 - Not found"
