"""A torchrun job's watch in words and on one card: the ranks side by side, and where they diverge."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from neurondev.loops.causes import Cause
from neurondev.loops.divergence import RankCause, RankDivergence
from neurondev.render.html import CSS
from neurondev.render.html import escape as _e
from neurondev.render.sentences import cause_words
from neurondev.rulebook import rule_named

__all__ = ["divergence_text", "ranks_card", "ranks_report", "ranks_summary"]


def _ranks(ranks: tuple[int, ...]) -> str:
    return f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {', '.join(map(str, ranks))}"


def _cause_text(cause: RankCause) -> str:
    """What one rank did: a compile's cause and line, or a step's count and where."""
    if cause.count is not None:
        return f"{_ranks((cause.rank,))}: {cause.count}" + (f" ({cause.where})" if cause.where else "")
    at = f" at {Path(cause.file).name}:{cause.line}" if cause.file else ""
    said = cause_words(Cause(cause.cause or "other", cause.value, cause.before, cause.after, measure=cause.measure, dim=cause.dim))
    rule = f" [{cause.rule}]" if cause.rule else ""
    return f"{_ranks((cause.rank,))}: {said}{at}{rule}"


_DID = {
    "compile": "compiled {function}",
    "recompile": "recompiled {function}",
    "xla program": "made a new XLA program",
    "fallback": "fell back to the CPU",
    "copy to host": "copied to the host",
}


def divergence_text(divergence: RankDivergence) -> str:
    """'step 4: rank 1 recompiled Linear.forward and rank 0 did not (rank 1: args[0] was 4 ... at linear.py:130 [ND405])'."""
    did = _DID[divergence.kind].format(function=divergence.function)
    causes = "; ".join(_cause_text(cause) for cause in divergence.causes)
    step = f"step {divergence.step}" if divergence.step is not None else "no step"
    if divergence.more:
        return f"{step}: {_ranks(divergence.ranks)} {did} more often than {_ranks(divergence.others)} ({causes})"
    return f"{step}: {_ranks(divergence.ranks)} {did} and {_ranks(divergence.others)} did not ({causes})"


def ranks_summary(merged: Mapping[str, Any], divergences: tuple[RankDivergence, ...]) -> str:
    """Rank 0's summary of the job: one line per rank, then each divergence."""
    lines = [f"Watched {len(merged['ranks'])} rank(s) of a torchrun job:"]
    for data in merged["ranks"]:
        lines.append(f"  rank {data['rank']}: {data['summary']}")
    missing = merged.get("missing") or []
    if missing:
        lines.append(f"  no record from {_ranks(tuple(missing))}: it did not reach the end of the watch")
    if not divergences:
        lines.append("The ranks do not diverge: each compiled, copied and fell back at the same steps.")
    else:
        rule = rule_named("ND412")
        lines.append(f"The ranks diverge [{rule.code}, {rule.url}]:")
        lines.extend(f"  {divergence_text(d)}" for d in divergences)
    return "\n".join(lines)


def ranks_card(merged: Mapping[str, Any], divergences: tuple[RankDivergence, ...]) -> str:
    """The ranks side by side (compiles, recompiles, steady state, device costs) and the divergences."""
    header = "".join(f"<th>rank {data['rank']}</th>" for data in merged["ranks"])
    rows = "".join(
        f"<tr><td>{_e(label)}</td>" + "".join(f"<td>{_e(value(data))}</td>" for data in merged["ranks"]) + "</tr>"
        for label, value in _COLUMNS
    )
    rule = rule_named("ND412")
    if divergences:
        items = "".join(f"<li>{_e(divergence_text(d))}</li>" for d in divergences)
        said = f'<h4>Where the ranks diverge (<a href="{_e(rule.url)}">{rule.code}</a>)</h4><ul class="nd-divergence">{items}</ul>'
    else:
        said = '<p class="nd-good">The ranks do not diverge.</p>'
    css = "nd-bad" if any(d.compiles for d in divergences) else "nd-good"
    return (
        f'<style>{CSS}</style><div class="neurondev-card nd-ranks"><h3>neurondev watch: {len(merged["ranks"])} ranks</h3>'
        f'<p class="nd-headline"><span class="{css}">{_e(_headline(divergences))}</span></p>'
        f'<table class="nd-table nd-ranks-table"><tr><th></th>{header}</tr>{rows}</table>{said}</div>'
    )


def _headline(divergences: tuple[RankDivergence, ...]) -> str:
    compiling = [d for d in divergences if d.compiles]
    if compiling:
        return f"{len(compiling)} place(s) where the ranks compile differently"
    return "The ranks compile alike" + (f"; {len(divergences)} other difference(s)" if divergences else "")


def _count(kind: str) -> Any:
    return lambda data: sum(1 for row in data.get("compiles", ()) if row.get("kind") == kind)


def _total(column: str) -> Any:
    return lambda data: sum(row.get(column) or 0 for row in data.get("steps", ()))


_COLUMNS = (
    ("steps", lambda data: len(data.get("steps", ()))),
    ("first compiles", _count("first")),
    ("recompiles", _count("recompile")),
    ("steady after step", lambda data: data.get("steady_state") if data.get("reached_steady_state") else "never"),
    ("XLA programs", _total("xla_compiles")),
    ("copies to host", _total("copies_to_host")),
    ("CPU fallbacks", _total("fallbacks")),
)


def ranks_report(merged: Mapping[str, Any], divergences: tuple[RankDivergence, ...]) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>neurondev watch: ranks</title></head>'
        f'<body style="margin: 24px">{ranks_card(merged, divergences)}</body></html>\n'
    )
