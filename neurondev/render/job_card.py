"""A torchrun job's watch in words and on one card: the ranks side by side, and where they diverge."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from neurondev.loops.causes import Cause
from neurondev.loops.divergence import RankCause, RankDivergence
from neurondev.render.card_style import CSS
from neurondev.render.card_style import escape as _e
from neurondev.render.sentences import cause_words
from neurondev.rulebook import rule_named

__all__ = ["absent_text", "divergence_text", "ended_text", "ranks_card", "ranks_report", "ranks_summary"]


def _ranks(ranks: tuple[int, ...]) -> str:
    return f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {', '.join(map(str, ranks))}"


def _cause_text(cause: RankCause) -> str:
    """What one rank did: a compile's cause and line, the graphs it made, or a step's count and where."""
    if cause.graphs is not None:
        at = f" at {Path(cause.file).name}:{cause.line}" if cause.file else ""
        return f"{_ranks((cause.rank,))}: {'graph' if len(cause.graphs) == 1 else 'graphs'} {', '.join(cause.graphs) or 'none'}{at}"
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
    "sync": "synced with the host",
}
_OTHER = {
    "other graph": "compiled another graph of {function} than",
    "other xla program": "made another XLA program than",
    "steps": "ran fewer steps than",
}


def divergence_text(divergence: RankDivergence) -> str:
    """'step 4: rank 1 recompiled Linear.forward and rank 0 did not (rank 1: args[0] was 4 ... at train.py:45 [ND405])'."""
    causes = "; ".join(_cause_text(cause) for cause in divergence.causes)
    step = f"step {divergence.step}: " if divergence.step is not None else ""
    if divergence.kind in _OTHER:
        did = _OTHER[divergence.kind].format(function=divergence.function)
        return f"{step}{_ranks(divergence.ranks)} {did} {_ranks(divergence.others)} ({causes})"
    did = _DID[divergence.kind].format(function=divergence.function)
    step = step.removesuffix(": ") or "no step"
    if divergence.more:
        return f"{step}: {_ranks(divergence.ranks)} {did} more often than {_ranks(divergence.others)} ({causes})"
    return f"{step}: {_ranks(divergence.ranks)} {did} and {_ranks(divergence.others)} did not ({causes})"


def ranks_summary(merged: Mapping[str, Any], divergences: tuple[RankDivergence, ...]) -> str:
    """Rank 0's summary of the job: one line per rank, then each divergence."""
    lines = [
        f"Watched {len(merged['ranks'])} of {merged.get('world_size', len(merged['ranks']))} rank(s) of a torchrun job{attempt_text(merged)}:"
    ]
    missing = merged.get("missing") or []
    for gone in missing:  # first: nothing below is about them
        lines.append(f"  rank {gone['rank']} sent no record ({absent_text(gone)})")
    for data in merged["ranks"]:
        lines.append(f"  rank {data['rank']}{ended_text(data.get('ended'))}: {data['summary']}")
    if not divergences:
        lines.append(_alike(merged, missing))
    else:
        rule = rule_named("ND412")
        lines.append(f"The ranks diverge [{rule.code}, {rule.url}]:")
        lines.extend(f"  {divergence_text(d)}" for d in divergences)
    return "\n".join(lines)


def attempt_text(merged: Mapping[str, Any]) -> str:
    """Which attempt of a job torchrun restarted this is, with how each earlier one ended ('' for a first attempt)."""
    attempt = merged.get("attempt") or 0
    if not attempt:
        return ""
    earlier = [f"attempt {e.get('attempt')}: {_attempt_ending(e)}" for e in merged.get("earlier_attempts") or []]
    kept = f"; {', '.join(earlier)} (in the JSON's earlier_attempts)" if earlier else "; no report of the earlier attempts"
    return f" (attempt {attempt}, after {attempt} restart(s) by torchrun{kept})"


def _attempt_ending(job: Mapping[str, Any]) -> str:
    """How an attempt ended, by its ranks: those that did not finish, each with how."""
    unfinished = [
        f"rank {data['rank']}{ended_text(data.get('ended'))}"
        for data in job.get("ranks", [])
        if (data.get("ended") or {}).get("how") != "finished"
    ]
    gone = [f"rank {m['rank']} sent no record" for m in job.get("missing", [])]
    return ", ".join([*gone, *unfinished]) or "every rank finished"


def _alike(merged: Mapping[str, Any], missing: list[Any]) -> str:
    """That the ranks compared do not diverge, naming them when some sent nothing (no claim about those)."""
    said = "each ran the same steps, compiled the same graphs, and copied, synced and fell back alike."
    if not missing:
        return f"The ranks do not diverge: {said}"
    reported = [data["rank"] for data in merged["ranks"]]
    if len(reported) < 2:
        return f"Only {_ranks(tuple(reported)) if reported else 'no rank'} reported: no ranks to compare."
    return f"The ranks that reported ({', '.join(map(str, reported))}) do not diverge: {said}"


def ended_text(ended: Mapping[str, Any] | None) -> str:
    """' (raised RuntimeError, exit 2)', ' (stopped by torchrun: SIGTERM)', '' for a rank that finished."""
    if not ended or ended.get("how") == "finished":
        return ""
    if ended["how"] == "terminated":
        return f" (stopped by torchrun: {ended.get('signal')}, the record up to then)"
    if ended["how"] == "raised":
        return f" (raised {ended.get('exception')}, exit {ended.get('code')})"
    return f" (exited with code {ended.get('code')}: sys.exit before the script's end)"


_ABSENT = {
    "ended": "its process ended without one: killed by a signal, or os._exit",
    "never seen": "it never began its watch, or ended before it",
    "timed out": "still running after {seconds} s (--ranks-timeout)",
    "no beat": "it sent nothing in {seconds} s",
    "no record": "it sent nothing",
}


def absent_text(gone: Mapping[str, Any]) -> str:
    """Why a rank sent no record (``results.exchange.Absent`` as JSON), with its pid where known."""
    said = _ABSENT.get(gone.get("why", "no record"), gone.get("why", "")).format(seconds=gone.get("seconds"))
    return said + (f"; pid {gone['pid']}" if gone.get("pid") else "")


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
        said = f'<p class="{"nd-bad" if merged.get("missing") else "nd-good"}">{_e(_alike(merged, merged.get("missing") or []))}</p>'
    gone = "".join(f"<li>rank {m['rank']}: no record ({_e(absent_text(m))})</li>" for m in merged.get("missing") or [])
    said = (f'<h4>Ranks that sent no record</h4><ul class="nd-missing">{gone}</ul>' if gone else "") + said
    failed = [data for data in merged["ranks"] if (data.get("ended") or {}).get("how", "finished") != "finished"]
    css = "nd-bad" if any(d.compiles for d in divergences) or failed or merged.get("missing") else "nd-good"
    return (
        f'<style>{CSS}</style><div class="neurondev-card nd-ranks"><h3>neurondev watch: {len(merged["ranks"])} of '
        f"{merged.get('world_size', len(merged['ranks']))} ranks reported{_e(attempt_text(merged))}</h3>"
        f'<p class="nd-headline"><span class="{css}">{_e(_headline(divergences, merged))}</span></p>'
        f'<table class="nd-table nd-ranks-table"><tr><th></th>{header}</tr>{rows}</table>{said}</div>'
    )


def _headline(divergences: tuple[RankDivergence, ...], merged: Mapping[str, Any]) -> str:
    """How the job ended (ranks that did not finish, or sent nothing) and how the ranks compiled."""
    ended = [f"rank {data['rank']}{ended_text(data.get('ended'))}" for data in merged["ranks"] if ended_text(data.get("ended"))]
    ended += [f"rank {gone['rank']} sent no record" for gone in merged.get("missing") or []]
    compiling = [d for d in divergences if d.compiles]
    if compiling:
        said = f"{len(compiling)} place(s) where the ranks compile differently"
    else:
        said = "The ranks compile alike" + (f"; {len(divergences)} other difference(s)" if divergences else "")
    return "; ".join([*ended, said[0].lower() + said[1:]]) if ended else said


def _ending(data: Mapping[str, Any]) -> str:
    """How one rank's script ended, with the line and message of what it raised."""
    ended = data.get("ended") or {}
    raised = data.get("raised") or {}
    if ended.get("how") == "raised" and raised.get("file"):
        return f"raised {raised['exception']} at {Path(raised['file']).name}:{raised['line']}: {raised['message'][:90]}"
    return ended_text(ended).strip(" ()") or "finished"


def _count(kind: str) -> Any:
    return lambda data: sum(1 for row in data.get("compiles", ()) if row.get("kind") == kind)


def _total(column: str) -> Any:
    return lambda data: sum(row.get(column) or 0 for row in data.get("steps", ()))


_COLUMNS = (
    ("ended", _ending),
    ("steps", lambda data: len(data.get("steps", ()))),
    ("first compiles", _count("first")),
    ("recompiles", _count("recompile")),
    ("steady after step", lambda data: data.get("steady_state") if data.get("reached_steady_state") else "never"),
    ("XLA programs", _total("xla_compiles")),
    ("copies to host", _total("copies_to_host")),
    ("CPU fallbacks", _total("fallbacks")),
    ("syncs", _total("syncs")),
)


def ranks_report(merged: Mapping[str, Any], divergences: tuple[RankDivergence, ...]) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>neurondev watch: ranks</title></head>'
        f'<body style="margin: 24px">{ranks_card(merged, divergences)}</body></html>\n'
    )
