"""Each rule's minimal example, run as a user runs it, yields that rule, and its page shows what neurondev said."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from neurondev import rulebook

ROOT = Path(__file__).resolve().parents[2]


def _script():
    spec = importlib.util.spec_from_file_location("make_rule_cards", ROOT / "scripts" / "make_rule_cards.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.xla
def test_every_rules_example_yields_its_rule_and_its_committed_card_is_what_neurondev_says_today():
    script = _script()
    examples = script.examples()
    assert len(examples) >= 12, "the rules with a minimal example"
    said = script.cards(examples)
    for code, text in said.items():
        assert f"[{code}]" in text or f"'{code}'" in text, f"{code}'s example did not yield {code}:\n{text}"
    stale = [code for code, text in said.items() if (script.CARDS / f"{code}.txt").read_text() != text]
    assert not stale, f"cards out of date (run scripts/make_rule_cards.py {' '.join(stale)})"


def test_every_card_belongs_to_a_rule_with_an_example():
    with_example = {rule.code for rule in rulebook.RULES if rule.example}
    assert {card.stem for card in (ROOT / "docs" / "rules" / "cards").glob("*.txt")} == with_example
