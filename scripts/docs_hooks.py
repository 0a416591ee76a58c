"""mkdocs hooks for the documentation site: a page per rule from neurondev.rulebook and the files beside the pages
(docs/rules/examples/, cards/, related.toml), the rules' index, and each command's help."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

import tomllib
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent
CARDS = ROOT / "docs" / "rules" / "cards"
RELATED = ROOT / "docs" / "rules" / "related.toml"


def _rules() -> Any:
    from neurondev import rulebook

    return rulebook


def on_config(config: Any) -> Any:
    """The nav's Rules section lists the index and then every rule's page, by code and name (ND101 frozen-device-pin)."""
    rulebook = _rules()
    pages = ["rules/index.md", *({f"{rule.code} {rule.name}": f"rules/{rule.code}.md"} for rule in rulebook.RULES)]
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
        '`explain`, `check` and `watch` carries its `"rule"` and its page\'s `"url"` (`NEURONDEV_DOCS_URL`, else this '
        "site as `make docs` or `neurondev docs` builds it in the checkout). `check(..., select=..., ignore=...)`, "
        "`neurondev check --select/--ignore` and the pytest marker take codes or their prefixes (`ND1`, `ND205`).\n\n"
        "The codes come in four blocks: ND1xx from the graph traced on CPU, ND2xx from a run on the device, ND3xx from "
        "your program under torch.compile on the device, ND4xx from a loop (`neurondev.watch`). ND401-ND408 name the "
        "cause of a recompile, one code per cause dynamo's guards tell apart; ND409 is left free for the next such cause, "
        "and ND410-ND412 are what a loop shows beyond one compile's cause. A code is never reused for another finding.\n\n"
        "| rule | name | scenario | summary |\n| --- | --- | --- | --- |\n" + rows + "\n"
    )


def _page(rulebook: Any, rule: Any) -> str:
    parts = [
        f"# {rule.code}: {rule.name}\n",
        f"*{rulebook.SCENARIOS[rule.scenario]}*\n",
        f"## What it is\n\n{_sentence(rule.summary)}\n",
        f"## What it costs\n\n- **On XLA:** {_sentence(rule.xla)}\n- **On a native device:** {_sentence(rule.native)}\n",
        f"## How to fix it\n\n{_sentence(rule.fix)}\n",
        *_example(rule),
        _selecting(rule),
    ]
    related = related_rules().get(rule.code, [])
    if related:
        parts.append(
            "## Related rules\n\n" + "\n".join(f"- [{code}]({code}.md) {rulebook.rule_named(code).name}" for code in related) + "\n"
        )
    parts.append("[All rules](index.md)\n")
    return "\n".join(parts)


def related_rules() -> dict[str, list[str]]:
    """{rule code: the codes its page links to}, from docs/rules/related.toml."""
    return tomllib.loads(RELATED.read_text())


def _sentence(text: str) -> str:
    """The text as a sentence: a capital when it begins with a word, never when it begins with code (device=x.device,
    torch.compile: a capital would change what a reader types)."""
    first = text.split(" ", 1)[0]
    start = text[0].upper() if first.isalpha() else text[0]
    return f"{start}{text[1:]}" + ("" if text.endswith((".", ")")) else ".")


def _example(rule: Any) -> list[str]:
    """The example file, the call that runs it and what neurondev says (a real run), then the file to use instead."""
    from neurondev.rule_runs import example as example_of

    example = example_of(rule.code)
    where = example.path.relative_to(ROOT).as_posix()
    run = f"`{example.command}`" if example.command else f"`python {where}`"
    parts = [f"## Example\n\n[`{where}`](examples/{example.path.name}), run with {run}:\n\n```python\n{example.path.read_text()}```\n"]
    card = CARDS / f"{rule.code}.txt"
    if example.needs:
        parts.append(f"This example needs {example.needs}, which the project's machines do not have: it is shown, not run.\n")
    elif card.exists():
        parts.append(
            f"What neurondev says (`scripts/make_rule_cards.py`, a real run; the suite runs it again):\n\n```text\n{card.read_text()}```\n"
        )
    checked = "" if example.needs else " The suite runs it and checks that it reports nothing of this rule."
    instead = example.instead.relative_to(ROOT).as_posix()
    parts.append(
        f"## Use instead\n\nThe same program, fixed ([`{instead}`](examples/{example.instead.name})).{checked}\n\n"
        f"```python\n{example.instead.read_text()}```\n"
    )
    return parts


def _selecting(rule: Any) -> str:
    """How to leave the rule out or check only it, with the call that reports it."""
    code = rule.code
    if code == "ND412":
        return (
            "## Selecting it\n\nA torchrun job's divergence decides `torchrun -m neurondev watch`'s exit code (1); the "
            "job's JSON (`--json`) lists it under `\"divergence\"`. Each rank's own findings are ND4xx of its own.\n"
        )
    if rule.scenario == "loop":
        return (
            f"## Selecting it\n\nLoops are watched, not checked: `neurondev.watch()` reports {code} among its findings "
            f'(`watched.to_dict()["findings"]`, `neurondev watch --json`), and its verdict decides the exit code of '
            "`neurondev watch` (the rule in [Loops](../how-to/loops.md#the-rule)).\n\n"
            f'```python\nwith neurondev.watch() as watched:\n    ...   # the loop\nfound = [f for f in watched.to_dict()["findings"] if f["rule"] == "{code}"]\n```\n'
        )
    return (
        f'## Selecting it\n\n```python\nneurondev.check(fn, *inputs, ignore=("{code}",))   # leave it out\n'
        f'neurondev.check(fn, *inputs, select=("{code}",))   # check only it\n```\n'
    )


def _commands() -> str:
    import os

    from neurondev.cli.command import build_parser as parser

    os.environ["COLUMNS"] = "100"

    top = parser()
    parts = ["# Commands' help\n\nThe help of `neurondev` and of each of its commands, as the installed command prints it.\n"]
    parts.append(f"## neurondev\n\n```text\n{top.format_help()}```\n")
    for action in top._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                parts.append(f"## neurondev {name}\n\n```text\n{sub.format_help()}```\n")
    return "\n".join(parts)


# mkdocs-jupyter's template loads the ipywidgets renderer from unpkg.com on every notebook's page; the site asks
# nothing of the network, so the loader goes and each widget's view says where it works.
_WIDGET_LOADER = re.compile(r"<script>\s*\(function\(\) \{\s*function addWidgetsRenderer\(\).*?</script>", re.S)
_WIDGET_VIEW = re.compile(r'<script type="application/vnd\.jupyter\.widget-view\+json">.*?</script>', re.S)
_WIDGET_NOTE = (
    '<p class="nd-widget-note"><em>An interactive widget: it runs in JupyterLab or Jupyter Notebook when you run the '
    "notebook (this page is static and fetches nothing).</em></p>"
)


def on_post_page(output: str, page: Any, config: Any) -> str:
    """A notebook's page without the widget renderer fetched from the network, each widget view as a note."""
    if "addWidgetsRenderer" not in output:
        return output
    return _WIDGET_VIEW.sub(_WIDGET_NOTE, _WIDGET_LOADER.sub("", output))


_ROOTED = re.compile(r'(href|src)="/(?!/)')


def on_post_build(config: Any) -> None:
    """The 404 page with links relative to the site's root, where it lies: styled when opened from disk (material writes
    them from '/', the root of a file:// URL's disk); ``neurondev docs --serve`` serves it at a missing path with its
    base at the root."""
    page = Path(config["site_dir"]) / "404.html"
    if page.is_file():
        page.write_text(_ROOTED.sub(r'\1="', page.read_text(encoding="utf-8")), encoding="utf-8")
