"""Rules: a stable code for every kind of finding, on the records, in the JSON of explain, check and watch, and
chosen by check's select/ignore, its command and its pytest marker."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
import torch

import neurondev
from neurondev import rulebook
from neurondev.gallery.patterns import seed_function
from neurondev.loops.causes import Cause
from neurondev.runs.program_records import ProgramFailure


def test_every_rule_has_a_unique_code_and_name_and_says_what_it_costs_and_how_to_fix_it():
    table = neurondev.rules()
    assert list(table.columns) == ["rule", "name", "scenario", "summary", "url"]
    assert list(table.itertuples(index=False, name=None)) == [
        (rule.code, rule.name, rulebook.SCENARIOS[rule.scenario], rule.summary, rule.url) for rule in rulebook.RULES
    ]
    assert len(table) == 34 and table["rule"].iloc[0] == "ND101" and table["rule"].iloc[-1] == "ND412"
    assert table["rule"].is_unique and table["name"].is_unique
    assert all(re.fullmatch(r"ND[1-4]\d\d", code) for code in table["rule"])
    assert all(url.endswith(f"rules/{code}.html") for code, url in zip(table["rule"], table["url"]))
    assert all(rule.xla and rule.native and rule.fix and rule.summary for rule in rulebook.RULES)


def test_every_kind_a_record_can_have_maps_to_its_own_rule():
    assert {kind: rulebook.rule_of("pin", kind) for kind in ("frozen", "literal", "variable", "unknown", "assertion")} == {
        "frozen": "ND101",
        "literal": "ND102",
        "variable": "ND103",
        "unknown": "ND104",
        "assertion": "ND105",
    }
    kinds = ("mixed devices at compile time", "default device ignored under torch.compile", "host-only call between graphs")
    failures = [ProgramFailure(kind, "compile", "RuntimeError", "m").rule for kind in (*kinds, "wrong device at run time", "other")]
    assert failures == ["ND301", "ND302", "ND303", "ND304", "ND305"]
    causes = ("python number", "flag", "library value", "cache growth", "changing size", "prompt to decode", "recompile limit", "other")
    assert [Cause(kind, None, None, None).rule for kind in causes] == [f"ND40{n}" for n in range(1, 9)]
    assert Cause("first compile", None, None, None).rule is None  # a first compile is no finding


def test_a_prefix_selects_every_rule_it_starts_as_ruff_reads_codes():
    assert rulebook.selected("ND101", ("ND1",), ()) and rulebook.selected("ND101", ("ND10",), ()) and rulebook.selected("ND101", None, ())
    assert not rulebook.selected("ND101", ("ND2",), ()) and not rulebook.selected("ND101", ("ND102",), ())
    assert not rulebook.selected("ND101", ("ND1",), ("ND10",)) and rulebook.selected("ND111", ("ND1",), ("ND10",))
    assert [rule.code for rule in rulebook.RULES if rulebook.selected(rule.code, ("ND3",), ("ND305",))] == [f"ND30{n}" for n in range(1, 5)]


@pytest.mark.xla
def test_selecting_by_a_prefix_checks_every_rule_it_starts():
    with pytest.raises(neurondev.DevicePinsError) as raised:
        neurondev.check(seed_function, torch.randn(64), select=("ND1",))
    assert [finding.rule for finding in raised.value.findings] == ["ND101"]


@pytest.mark.xla
def test_check_passes_when_the_only_finding_is_ignored_and_fails_on_it_otherwise():
    x = torch.randn(64)
    with pytest.raises(neurondev.DevicePinsError) as raised:
        neurondev.check(seed_function, x)
    assert [finding.rule for finding in raised.value.findings] == ["ND101"] and "[ND101]" in str(raised.value)
    neurondev.check(seed_function, x, ignore=("ND101",))
    neurondev.check(seed_function, x, ignore=("ND1",))  # a prefix, as ruff reads it
    neurondev.check(seed_function, x, select=("ND3",))


@pytest.mark.xla
def test_selecting_a_device_rule_runs_the_graph_and_finds_the_break_with_its_line():
    with pytest.raises(neurondev.DevicePinsError) as raised:
        neurondev.check(seed_function, torch.randn(64), select=("ND201",))
    (found,) = raised.value.findings
    assert found.rule == "ND201" and found.code == "out.copy_(torch.relu(x) * 2)"
    explained = neurondev.explain(seed_function, torch.randn(64), quiet=True)
    assert [b.node for b in explained.before[0].graph_breaks] == [found.node]  # the break torch_xla's metrics counted


@pytest.mark.xla
def test_the_json_of_explain_carries_a_schema_and_every_finding_with_its_rule(seed_explained):
    data = json.loads(seed_explained.to_json())
    assert data["schema"] == 3
    rules = [finding["rule"] for finding in data["findings"]]
    assert rules[0] == "ND101" and "ND201" in rules
    assert all(finding["text"] and finding["url"].endswith(f"rules/{finding['rule']}.html") for finding in data["findings"])
    (pin,) = data["graphs"][0]["pins"]
    assert pin["rule"] == "ND101" and seed_explained.pin_table()["rule"].tolist() == ["ND101"]
    pin_finding = data["findings"][0]
    assert (pin_finding["node"], pin_finding["line"], pin_finding["kind"]) == (pin["node"], pin["line"], "frozen")


def test_the_json_of_a_watch_carries_each_recompile_with_its_rule():
    step = torch.compile(lambda x, lr: x * lr, backend="eager")
    with neurondev.watch() as watched:
        for lr in (0.1, 0.2, 0.3):
            step(torch.ones(4), lr)
    data = json.loads(watched.to_json())
    assert data["schema"] == 3
    # torch 2.9 recompiles for 0.2 and 0.3; torch 2.13 makes lr dynamic at its first recompile (one graph for the rest)
    recompiles = [(row["rule"], row["value"], row["before"]) for row in data["compiles"][1:]]
    assert data["compiles"][0]["rule"] is None and recompiles[0] == ("ND401", "lr", "0.1")
    causes = [f for f in data["findings"] if f["rule"] != "ND411"]
    assert [(f["rule"], f["value"], f["before"]) for f in causes] == recompiles
    # a loop that compiled at every step never settled: the verdict is a finding of its own, with no line
    never = [(f["rule"], f["verdict"], f["since"], f["where"]) for f in data["findings"] if f["rule"] == "ND411"]
    assert never == ([("ND411", "keeps compiling", 2, None)] if data["steady_state"] == "never" else [])


@pytest.mark.xla
def test_the_command_takes_rule_codes_and_its_json_names_them(tmp_path):
    base = [sys.executable, "-m", "neurondev", "check", "neurondev/gallery/patterns.py:seed_function", "--input", "randn(64)"]
    failing = subprocess.run([*base, "--json"], capture_output=True, text=True, timeout=600)
    assert failing.returncode == 1
    data = json.loads(failing.stdout)
    assert data["schema"] == 3 and [f["rule"] for f in data["findings"]] == ["ND101"]
    passing = subprocess.run([*base, "--ignore", "ND101", "--select", "ND1,ND3"], capture_output=True, text=True, timeout=600)
    assert passing.returncode == 0, passing.stdout + passing.stderr


@pytest.mark.xla
def test_each_card_links_its_findings_to_their_rules_pages(seed_explained):
    card = seed_explained._repr_html_()
    assert f'href="{rulebook.rule_named("ND101").url}"' in card and ">ND201</a>" in card
    step = torch.compile(lambda x, n: x * n, backend="eager")
    with neurondev.watch() as watched:
        for n in (2, 3):
            step(torch.ones(2), n)
    assert f'href="{rulebook.rule_named("ND401").url}"' in watched._repr_html_()


def test_a_rules_page_is_under_the_docs_url_a_user_sets_or_in_this_checkouts_site(monkeypatch):
    from pathlib import Path

    monkeypatch.setenv("NEURONDEV_DOCS_URL", "https://docs.example/neurondev")
    assert rulebook.docs_url() == "https://docs.example/neurondev/" and rulebook.rule_named("ND101").url.startswith(
        "https://docs.example/neurondev/"
    )
    monkeypatch.setenv("NEURONDEV_DOCS_URL", "https://docs.example/neurondev/")  # a slash already there is kept, not doubled
    assert rulebook.docs_url() == "https://docs.example/neurondev/"
    monkeypatch.delenv("NEURONDEV_DOCS_URL")
    site = Path(rulebook.__file__).resolve().parent.parent / "site"
    assert rulebook.docs_url() == site.as_uri() + "/"


def test_a_code_no_rule_has_is_a_key_error_naming_it():
    with pytest.raises(KeyError, match="ND999"):
        rulebook.rule_named("ND999")
