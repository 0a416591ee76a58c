"""mkdocs hooks for the documentation site: a page per rule from neurondev.rulebook, the rules' index, and each command's help."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent
CARDS = ROOT / "docs" / "rules" / "cards"


def _rules() -> Any:
    from neurondev import rulebook

    return rulebook


def on_config(config: Any) -> Any:
    """The nav's Rules section lists the index and then every rule's page, by code."""
    rulebook = _rules()
    pages = ["rules/index.md", *({rule.code: f"rules/{rule.code}.md"} for rule in rulebook.RULES)]
    config["nav"] = [{"Rules": pages} if isinstance(item, dict) and "Rules" in item else item for item in config["nav"]]
    return config


def on_files(files: Files, config: Any) -> Files:
    rulebook = _rules()
    files.append(File.generated(config, "rules/index.md", content=_index(rulebook)))
    for rule in rulebook.RULES:
        files.append(File.generated(config, f"rules/{rule.code}.md", content=_page(rulebook, rule)))
    files.append(File.generated(config, "reference/commands.md", content=_commands()))
    return files


def _index(rulebook: Any) -> str:
    rows = "\n".join(f"| [{r.code}]({r.code}.md) | `{r.name}` | {rulebook.SCENARIOS[r.scenario]} | {r.summary} |" for r in rulebook.RULES)
    return (
        "# Rules\n\nEvery kind of finding neurondev reports has a stable code, as ruff's and mypy's do. "
        "`neurondev.rules()` returns this table; each finding in a card, in `check`'s failure and in the JSON of "
        '`explain`, `check` and `watch` carries its `"rule"`. `check(..., select=..., ignore=...)`, '
        "`neurondev check --select/--ignore` and the pytest marker take codes or their prefixes (`ND1`, `ND205`).\n\n"
        "| rule | name | scenario | summary |\n| --- | --- | --- | --- |\n" + rows + "\n"
    )


def _page(rulebook: Any, rule: Any) -> str:
    parts = [
        f"# {rule.code}: {rule.name}\n",
        f"*{rulebook.SCENARIOS[rule.scenario]}*\n",
        f"## What it is\n\n{rule.summary[0].upper()}{rule.summary[1:]}.\n",
        f"## What it costs\n\n- **On XLA:** {rule.xla}.\n- **On a native device:** {rule.native}.\n",
        f"## How to fix it\n\n{rule.fix[0].upper()}{rule.fix[1:]}.\n",
    ]
    if rule.example:
        parts.append(f"## A minimal example\n\n```python\n{rule.example}```\n")
        card = CARDS / f"{rule.code}.txt"
        if card.exists():
            parts.append(f"What neurondev says (`scripts/make_rule_cards.py`, a real run):\n\n```text\n{card.read_text()}```\n")
    parts.append(
        f'## Selecting it\n\n```python\nneurondev.check(fn, *inputs, ignore=("{rule.code}",))   # leave it out\n'
        f'neurondev.check(fn, *inputs, select=("{rule.code}",))   # check only it\n```\n\n[All rules](index.md)\n'
    )
    return "\n".join(parts)


def _commands() -> str:
    import os

    from neurondev.cli.command import _parser as parser

    os.environ["COLUMNS"] = "100"

    top = parser()
    parts = ["# Commands' help\n\nThe help of `neurondev` and of each of its commands, as the installed command prints it.\n"]
    parts.append(f"## neurondev\n\n```text\n{top.format_help()}```\n")
    for action in top._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                parts.append(f"## neurondev {name}\n\n```text\n{sub.format_help()}```\n")
    return "\n".join(parts)
