"""What an explanation's findings cost in the graphs' runs on the device, in seconds torch_xla's own clocks gave each node
(the programs it compiled and executed, its transfers to the host): one row per graph, run and line."""

from __future__ import annotations

from typing import Any

__all__ = ["RUN_COST_COLUMNS", "run_cost_rows"]

RUN_COST_COLUMNS = ("graph", "run", "rule", "where", "cause", "clock", "seconds", "share")


def run_cost_rows(explanation: Any) -> list[dict[str, Any]]:
    """Each timed node of each graph's measured call, before the pass (the graph as traced, its pins) and after, the
    costliest first; a graph break is its rule and line, another node its line (or name); ``share``: of its run."""
    rows = []
    for section in explanation.sections:
        for run, record in (("before", section.before), ("after", section.after)):
            if record is None or not record.node_seconds:
                continue
            breaks = {found.node: found for found in record.graph_breaks}
            whole = sum(record.node_seconds.values())
            for node, seconds in record.node_seconds.items():
                found = breaks.get(node)
                rows.append({
                    "graph": section.key.label,
                    "run": run,
                    "rule": found.rule if found is not None else None,
                    "where": found.where if found is not None and found.source is not None else _where(section, run, node),
                    "cause": "graph break (the pending graph runs, its values go to the host)" if found is not None else "the graph's own programs",
                    "clock": "torch_xla",
                    "seconds": seconds,
                    "share": seconds / whole if whole > 0 else 0.0,
                })  # fmt: skip
    return sorted(rows, key=lambda row: -row["seconds"])


def _where(section: Any, run: str, node: str) -> str:
    """A node's line (``model.py:12``), else its name in the graph."""
    from neurondev.trace.source import source_of

    graph = section.traced if run == "before" else section.rewritten
    found = next((n for n in graph.graph.nodes if n.name == node), None)
    line = source_of(found) if found is not None else None
    return line.where if line is not None else node
