"""The saved report as a person sees it in Chromium: headline, both graphs drawn, the pin table, pixels."""

from __future__ import annotations

import pytest
from PIL import Image

pytestmark = [pytest.mark.xla, pytest.mark.browser]


def open_report(page, explanation, tmp_path):
    path = explanation.save_html(tmp_path / "report.html")
    blocked = []
    page.route(
        "**/*",
        lambda route: route.continue_() if route.request.url.startswith("file:") else (blocked.append(route.request.url), route.abort()),
    )
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    return blocked


def assert_not_blank(page, tmp_path):
    shot = tmp_path / "shot.png"
    page.screenshot(path=str(shot), full_page=True)
    image = Image.open(shot).convert("L")
    colours = image.getcolors(maxcolors=1 << 16) or []
    assert image.size[1] > 600 and len(colours) > 50  # text, tables and two drawn graphs, not a blank page


def test_the_seed_report_shows_the_headline_both_graphs_and_the_pin_table(page, tmp_path, seed_explained):
    blocked = open_report(page, seed_explained, tmp_path)
    assert blocked == []  # nothing but the file itself was asked for
    program = page.locator(".nd-program-line").inner_text()
    assert program.startswith("Your program on XLA (torch.compile): as written (openxla) runs") and "neurondev backend runs" in program
    written, rewritten = (cell.inner_text() for cell in page.locator("table.nd-program tr").nth(1).locator("td").all())
    assert written == "runs" and rewritten == "runs"
    headline = page.locator(".nd-headline").first.inner_text()
    assert "1 frozen device pin(s)" in headline and "1 graph break(s) on xla:0" in headline
    assert "the rewrite changed no values; the graph on XLA agrees with CPU" in page.locator(".nd-headline").nth(1).inner_text()
    before, after = page.locator("figure.nd-before svg"), page.locator("figure.nd-after svg")
    assert before.count() == 1 and after.count() == 1
    assert before.bounding_box()["width"] > 200 and after.bounding_box()["height"] > 200
    texts = before.locator("g.node text").all_text_contents()
    assert "out" in texts and "device=cpu (frozen)" in texts and "on cpu" in texts
    assert "rewritten: cpu → xla" in after.locator("g.node text").all_text_contents()
    rows = page.locator("table.nd-pins tr")
    assert rows.count() == 2 and "torch.empty" in rows.nth(1).inner_text() and "new_empty" in rows.nth(1).inner_text()
    fix = page.locator(".nd-card-fix").first
    assert fix.locator(".nd-fix-head").inner_text().endswith("verified")
    removed, added = fix.locator(".nd-del").inner_text(), fix.locator(".nd-add").inner_text()
    assert "device=x.device" in removed and added.strip() == "+ out = x.new_empty(64, dtype=torch.float32)"
    assert_not_blank(page, tmp_path)


@pytest.mark.slow
def test_the_gpt2_report_draws_a_readable_focus_view_with_every_pin(page, tmp_path, gpt2_explained):
    explanation = gpt2_explained
    open_report(page, explanation, tmp_path)
    assert "fails on xla:0 at position_embeds" in page.locator(".nd-headline").first.inner_text()
    texts = page.locator("figure.nd-before svg g.node text").all_text_contents()
    for pin in (p.node for p in explanation.pins):
        assert pin in texts, pin
    assert any("not shown" in t for t in texts)  # the focus view, not all 154 nodes
    assert page.locator("figure.nd-before svg g.node").count() < 60
    lines = {(pin.where, pin.function) for pin in explanation.pins}
    assert page.locator("table.nd-pins tr").count() == 1 + len(lines)  # one row per line of code
    assert page.locator("details.nd-all-pins summary").inner_text() == f"Every pin ({len(explanation.pins)})"
    assert page.locator("details.nd-all-pins table tr").count() == 1 + len(explanation.pins)
    assert_not_blank(page, tmp_path)
