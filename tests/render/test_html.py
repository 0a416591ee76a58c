"""The card's HTML pieces: one escape, each fix as a small diff (as written over fixed) with its verdict beside its line."""

from __future__ import annotations

import dataclasses
import re

import pytest

from neurondev.render.card_style import escape
from neurondev.render.html_pins import fix_block
from neurondev.render.sentences import why_text
from neurondev.report.fixes.records import FixCheck

pytestmark = pytest.mark.xla


@pytest.fixture()
def seed(seed_explained):
    return seed_explained


def test_one_escape_for_text_and_none_is_nothing():
    assert escape(None) == "" and escape("<b>a & 'b'</b>") == "&lt;b&gt;a &amp; &#x27;b&#x27;&lt;/b&gt;" and escape(3) == "3"


def test_a_verified_fix_is_the_statement_as_written_over_the_fixed_one_with_its_verdict_beside_the_line(seed):
    (fix,) = seed.fixes
    block = fix_block(fix)
    head = re.search(r'<div class="nd-fix-head"><b>(.*?)</b> <span class="nd-good">(.*?)</span></div>', block)
    assert head is not None and head.groups() == ("patterns.py:39", "verified")
    removed, added = re.findall(r'<span class="nd-del">(.*?)</span>', block), re.findall(r'<span class="nd-add">(.*?)</span>', block)
    assert removed == ["- out = torch.empty(64, dtype=torch.float32, device=x.device)"]
    assert added == ["+ out = x.new_empty(64, dtype=torch.float32)"]
    assert '<details class="nd-why">' in block and escape(why_text(fix)) in block


def test_a_fix_without_a_spelling_shows_the_advice_in_place_of_the_fixed_line_and_long_code_wraps(seed):
    (fix,) = seed.fixes
    long = "out = torch.empty(" + ", ".join(["64"] * 60) + ", device=x.device)"
    block = fix_block(dataclasses.replace(fix, before=long, after=None, check=FixCheck("no spelling"), advice="use the backend <here>"))
    assert '<span class="nd-muted">no spelling</span>' in block and "# use the backend &lt;here&gt;" in block
    assert "nd-add" not in block and escape(long) in block
    card = seed._repr_html_()
    assert re.search(r"pre\.nd-fixdiff \{ white-space: pre-wrap; overflow-wrap: anywhere;", card)  # a long statement wraps
    assert "Fixes in your code (1 of 1 verified)" in card and block.count("nd-card-fix") == 1
