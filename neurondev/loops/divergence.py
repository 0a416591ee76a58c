"""Where the ranks of a job differ: per function and step, which ranks compiled, recompiled, made a new XLA
program, compiled another graph (or XLA program) than the others, fell back, copied or synced while the others did
not (or more often), and how many steps each ran, each with its cause and line (from their watch JSON)."""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from neurondev.rulebook import Ruled

__all__ = ["COMPILING", "RankCause", "RankDivergence", "divergences"]

# A rank that compiles alone leaves the others waiting in a collective; ranks that compile different programs run
# different collectives (or the same ones in another order), and a job hangs on that.
COMPILING = ("compile", "recompile", "xla program", "other graph", "other xla program")
_STEP_COUNTS = {"xla program": "xla_compiles", "fallback": "fallbacks", "copy to host": "copies_to_host", "sync": "syncs"}


@dataclasses.dataclass(frozen=True)
class RankCause:
    """What one rank did at a divergence: its rank, the compile's cause with its facts and the line dynamo
    compiled (a compile), or the count and the lines of the step's device costs (a program, a fallback, a copy)."""

    rank: int
    cause: str | None = None
    rule: str | None = None
    value: str | None = None
    before: str | None = None
    after: str | None = None
    measure: str | None = None
    dim: int | None = None
    file: str | None = None
    line: int | None = None
    count: int | None = None
    where: str | None = None
    graphs: tuple[str, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            key: list(value) if isinstance(value, tuple) else value for key, value in dataclasses.asdict(self).items() if value is not None
        }


@dataclasses.dataclass(frozen=True)
class RankDivergence(Ruled):
    """One place the ranks differ: a ``kind`` (``compile``, ``recompile``, ``xla program``, ``other graph``, ``other xla
    program``, ``fallback``, ``copy to host``, ``sync``, ``steps``) at a ``function`` (None for a step's device costs)
    and ``step`` (None for ``steps``); ``ranks`` did it, ``others`` did not; ``causes`` says what each of ``ranks`` did.
    ``more``: every rank fell back, copied or synced, ``ranks`` more often than ``others`` (``causes`` then has every
    rank's count). ``other graph``: every rank compiled there, ``ranks`` a graph other than ``others``' (``causes``
    has every rank's graph hashes). ``steps``: ``ranks`` ran fewer steps than ``others`` (every rank's count).
    ``compiles``: a divergence in what the ranks compile."""

    RECORD: ClassVar[str] = "rank divergence"

    kind: str
    step: int | None
    function: str | None
    ranks: tuple[int, ...]
    others: tuple[int, ...]
    causes: tuple[RankCause, ...] = ()
    more: bool = False

    @property
    def compiles(self) -> bool:
        return self.kind in COMPILING

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "kind": self.kind,
            "step": self.step,
            "function": self.function,
            "ranks": list(self.ranks),
            "others": list(self.others),
            "causes": [cause.to_dict() for cause in self.causes],
            "more": self.more,
        }


def divergences(ranks: Sequence[Mapping[str, Any]]) -> tuple[RankDivergence, ...]:
    """Every place the ranks (each a watch's JSON with its ``rank``) differ, compiles first, in step order."""
    every = tuple(int(data["rank"]) for data in ranks)
    found = [*_compile_divergences(ranks, every), *_step_divergences(ranks, every), *_step_counts(ranks)]
    return tuple(sorted(found, key=lambda d: (d.step if d.step is not None else 1 << 30, COMPILING.index(d.kind) if d.compiles else 9)))


def _compile_divergences(ranks: Sequence[Mapping[str, Any]], every: tuple[int, ...]) -> list[RankDivergence]:
    """Per (kind, function, step): the ranks that compiled there while the others did not."""
    seen: dict[tuple[str, str, int | None], dict[int, dict[str, Any]]] = collections.defaultdict(dict)
    for data in ranks:
        for row in data.get("compiles", ()):
            kind = {"first": "compile", "recompile": "recompile"}.get(row.get("kind"))
            if kind is not None:
                seen[(kind, row["function"], row.get("step"))].setdefault(int(data["rank"]), row)
    found = []
    for (kind, function, step), rows in seen.items():
        if len(rows) == len(every):
            found += _other_graphs(function, step, rows)
            continue
        causes = tuple(_compile_cause(rank, row) for rank, row in sorted(rows.items()))
        found.append(RankDivergence(kind, step, function, tuple(sorted(rows)), _others(every, rows), causes))
    return found


def _other_graphs(function: str, step: int | None, rows: Mapping[int, Mapping[str, Any]]) -> list[RankDivergence]:
    """Every rank compiled ``function`` at ``step``: the ranks whose graphs differ from the lowest rank's (by hash)."""
    hashes = {rank: tuple(row.get("graph_hashes") or ()) for rank, row in rows.items()}
    first = hashes[min(hashes)]
    if not first or all(graphs == first for graphs in hashes.values() if graphs):
        return []
    odd = tuple(sorted(rank for rank, graphs in hashes.items() if graphs and graphs != first))
    same = tuple(sorted(rank for rank in hashes if rank not in odd))
    causes = tuple(RankCause(rank, file=rows[rank].get("file"), line=rows[rank].get("line"), graphs=hashes[rank]) for rank in sorted(rows))
    return [RankDivergence("other graph", step, function, odd, same, causes)]


def _compile_cause(rank: int, row: Mapping[str, Any]) -> RankCause:
    return RankCause(
        rank,
        cause=row.get("cause"),
        rule=row.get("rule"),
        value=row.get("value"),
        before=row.get("before"),
        after=row.get("after"),
        measure=row.get("measure"),
        dim=row.get("dim"),
        file=row.get("file"),
        line=row.get("line"),
    )


def _step_divergences(ranks: Sequence[Mapping[str, Any]], every: tuple[int, ...]) -> list[RankDivergence]:
    """Per step: the ranks whose step made a new XLA program, fell back or copied to the host where others did not, or
    fell back or copied more often than the others did."""
    found = []
    steps = sorted({row["step"] for data in ranks for row in data.get("steps", ())})
    for step in steps:
        rows = {int(data["rank"]): _row_of(data, step) for data in ranks}
        for kind, column in _STEP_COUNTS.items():
            did = {rank: row for rank, row in rows.items() if row is not None and (row.get(column) or 0) > 0}
            measured = [rank for rank, row in rows.items() if row is not None and row.get(column) is not None]
            if did and len(did) < len(measured):
                causes = tuple(
                    RankCause(rank, count=row[column], where=row.get("xla_triggers") or row.get("device_lines"))
                    for rank, row in sorted(did.items())
                )
                found.append(RankDivergence(kind, step, None, tuple(sorted(did)), _others(every, did), causes))
            elif did and kind not in COMPILING:
                found += _more_often(kind, step, column, did)
            elif did:
                found += _other_programs(step, rows)
    return found


def _other_programs(step: int, rows: Mapping[int, Mapping[str, Any] | None]) -> list[RankDivergence]:
    """Every rank made XLA programs in ``step``: the ranks whose programs (by torch_xla's graph hash) differ from the
    lowest rank's, where torch_xla's analysis gave the hashes."""
    hashes = {rank: tuple(row.get("xla_programs") or ()) for rank, row in rows.items() if row is not None}
    known = {rank: programs for rank, programs in hashes.items() if programs}
    if len(known) < 2:
        return []
    first = known[min(known)]
    odd = tuple(sorted(rank for rank, programs in known.items() if programs != first))
    if not odd:
        return []
    same = tuple(sorted(rank for rank in known if rank not in odd))
    causes = tuple(RankCause(rank, graphs=programs) for rank, programs in sorted(known.items()))
    return [RankDivergence("other xla program", step, None, odd, same, causes)]


def _step_counts(ranks: Sequence[Mapping[str, Any]]) -> list[RankDivergence]:
    """The ranks that ran fewer steps than the others (a rank that stopped early, raised or was stopped)."""
    counts = {int(data["rank"]): len(data.get("steps", ())) for data in ranks}
    most = max(counts.values(), default=0)
    fewer = tuple(sorted(rank for rank, count in counts.items() if count < most))
    if not fewer:
        return []
    causes = tuple(RankCause(rank, count=count) for rank, count in sorted(counts.items()))
    return [RankDivergence("steps", None, None, fewer, tuple(sorted(r for r in counts if r not in fewer)), causes)]


def _more_often(kind: str, step: int, column: str, did: Mapping[int, Mapping[str, Any]]) -> list[RankDivergence]:
    """Every rank fell back or copied in this step: the ranks that did it more often than the fewest, if any."""
    counts = {rank: int(row[column]) for rank, row in did.items()}
    fewest = min(counts.values())
    more = tuple(sorted(rank for rank, count in counts.items() if count > fewest))
    if not more:
        return []
    causes = tuple(RankCause(rank, count=row[column], where=row.get("device_lines")) for rank, row in sorted(did.items()))
    others = tuple(sorted(rank for rank, count in counts.items() if count == fewest))
    return [RankDivergence(kind, step, None, more, others, causes, more=True)]


def _row_of(data: Mapping[str, Any], step: int) -> Mapping[str, Any] | None:
    return next((row for row in data.get("steps", ()) if row["step"] == step), None)


def _others(every: tuple[int, ...], did: Mapping[int, Any]) -> tuple[int, ...]:
    return tuple(rank for rank in every if rank not in did)
