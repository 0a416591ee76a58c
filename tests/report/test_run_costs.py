"""An explanation's cost table: each graph break of the graph as traced, by its rule and line, with the seconds
torch_xla's own clocks gave its node in the measured call; none left after the pass."""

from __future__ import annotations

import pytest

import neurondev
from neurondev import examples
from neurondev.report.run_costs import RUN_COST_COLUMNS

pytestmark = pytest.mark.xla


def test_each_graph_break_is_a_row_with_its_rule_line_and_seconds_and_the_rewritten_graph_breaks_nowhere():
    fn, args, kwargs = examples.get("seed").build()
    ex = neurondev.explain(fn, *args, **kwargs, quiet=True)
    table = ex.cost_table()
    assert list(table.columns) == list(RUN_COST_COLUMNS) and list(table["seconds"]) == sorted(table["seconds"], reverse=True)
    breaks = [(b.rule, b.where) for record in ex.before for b in record.graph_breaks]
    rows = table[table["rule"].notna()]
    assert breaks and sorted(zip(rows["rule"], rows["where"])) == sorted(breaks) and (rows["seconds"] > 0).all()
    assert set(rows["run"]) == {"before"} and not any(record.graph_breaks for record in ex.after)
    for _, shares in table.groupby(["graph", "run"])["share"]:
        assert shares.sum() == pytest.approx(1.0)
