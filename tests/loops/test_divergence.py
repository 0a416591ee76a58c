"""Where ranks differ, read from their watch JSON: compiles by function and step, and a step's device costs."""

from __future__ import annotations

from neurondev.loops.divergence import divergences
from neurondev.results.jobs import job, merged


def rank(number, compiles=(), steps=()):
    return {"rank": number, "compiles": list(compiles), "steps": list(steps)}


def compile_row(kind, step, function="f", **cause):
    return {"kind": kind, "step": step, "function": function, "file": "/x/train.py", "line": 7, "cause": "first compile", **cause}


def step_row(step, **counts):
    base = {"step": step, "xla_compiles": None, "fallbacks": None, "copies_to_host": None}
    return base | counts


def test_identical_ranks_do_not_diverge():
    same = [compile_row("first", 1), compile_row("recompile", 3, cause="changing size", value="x", before="4", after="3")]
    assert divergences([rank(0, same), rank(1, same), rank(2, same)]) == ()


def test_a_branch_only_one_rank_takes_is_a_first_compile_of_that_rank_alone():
    found = divergences([rank(0, [compile_row("first", 1)]), rank(1, [compile_row("first", 1), compile_row("first", 2, function="g")])])
    (only,) = found
    assert (only.kind, only.function, only.step, only.ranks, only.others, only.compiles) == ("compile", "g", 2, (1,), (0,), True)
    assert only.rule == "ND412" and only.causes[0].line == 7


def test_a_new_xla_program_or_a_fallback_on_one_rank_is_named_with_where_it_was():
    steps = [step_row(1, xla_compiles=1, fallbacks=0), step_row(2, xla_compiles=0, fallbacks=0)]
    odd = [step_row(1, xla_compiles=1, fallbacks=0), step_row(2, xla_compiles=1, fallbacks=2, device_lines="2 x aten::nonzero at t.py:9")]
    found = divergences([rank(0, steps=steps), rank(1, steps=odd)])
    assert [(d.kind, d.step, d.ranks, d.compiles) for d in found] == [("xla program", 2, (1,), True), ("fallback", 2, (1,), False)]
    assert found[1].causes[0].where == "2 x aten::nonzero at t.py:9" and found[1].causes[0].count == 2


def test_a_rank_that_copies_more_often_than_the_others_is_named_though_every_rank_copies():
    from neurondev.render.job_card import divergence_text

    ranks = [rank(n, steps=[step_row(1, copies_to_host=1), step_row(2, copies_to_host=copies)]) for n, copies in enumerate((1, 3, 1))]
    (found,) = divergences(ranks)
    assert (found.kind, found.step, found.ranks, found.others, found.more, found.compiles) == ("copy to host", 2, (1,), (0, 2), True, False)
    assert [(c.rank, c.count) for c in found.causes] == [(0, 1), (1, 3), (2, 1)] and found.to_dict()["more"] is True
    assert divergence_text(found).startswith("step 2: rank 1 copied to the host more often than ranks 0, 2 (")
    same = [rank(n, steps=[step_row(1, copies_to_host=2, fallbacks=1)]) for n in range(2)]
    assert divergences(same) == ()


def test_a_rank_that_sent_nothing_is_named_missing_with_why():
    from neurondev.render.job_card import ranks_summary
    from neurondev.results.exchange import Absent

    data, found = merged([rank(0, [compile_row("first", 1)]) | {"summary": "s"}, None, None], [Absent(2, "ended", pid=77)])
    assert [d["rank"] for d in data["ranks"]] == [0] and found == ()
    assert data["missing"] == [
        {"rank": 1, "why": "no record", "seconds": None, "pid": None},
        {"rank": 2, "why": "ended", "seconds": None, "pid": 77},
    ]
    said = ranks_summary(data, found)
    assert "rank 2 sent no record (its process ended without one: killed by a signal, or os._exit; pid 77)" in said
    lines = said.splitlines()
    assert said.startswith("Watched 1 of 3 rank(s)") and lines[1].startswith("  rank 1 sent no record")  # the missing first
    assert lines[-1] == "Only rank 0 reported: no ranks to compare." and "do not diverge" not in said
    two, none = merged(
        [rank(0, [compile_row("first", 1)]) | {"summary": "s"}, rank(1, [compile_row("first", 1)]) | {"summary": "s"}, None], []
    )
    assert ranks_summary(two, none).splitlines()[-1].startswith("The ranks that reported (0, 1) do not diverge:")


def test_ranks_that_compile_another_graph_at_the_same_step_diverge_by_hash_and_the_same_graphs_do_not():
    from neurondev.render.job_card import divergence_text

    def graph(*hashes):
        return [compile_row("first", 1, function="f", graph_hashes=list(hashes))]

    found = divergences([rank(0, graph("aa")), rank(1, graph("bb")), rank(2, graph("aa"))])
    (other,) = found
    assert (other.kind, other.step, other.function, other.ranks, other.others, other.compiles) == (
        "other graph",
        1,
        "f",
        (1,),
        (0, 2),
        True,
    )
    assert [(c.rank, c.graphs) for c in other.causes] == [(0, ("aa",)), (1, ("bb",)), (2, ("aa",))]
    assert divergence_text(other).startswith("step 1: rank 1 compiled another graph of f than ranks 0, 2 (rank 0: graph aa at train.py:7")
    assert other.to_dict()["causes"][1]["graphs"] == ["bb"]
    assert divergences([rank(n, graph("aa", "cc")) for n in range(2)]) == ()
    assert divergences([rank(0, graph()), rank(1, graph("bb"))]) == ()  # a record without hashes (an older JSON) compares nothing


def test_ranks_whose_xla_programs_differ_at_a_step_diverge_by_torch_xlas_hash():
    found = divergences(
        [
            rank(0, steps=[step_row(1, xla_compiles=1, xla_programs=["p1"])]),
            rank(1, steps=[step_row(1, xla_compiles=1, xla_programs=["p2"])]),
        ]
    )
    (other,) = found
    assert (other.kind, other.ranks, other.others, other.compiles) == ("other xla program", (1,), (0,), True)
    same = [rank(n, steps=[step_row(1, xla_compiles=1, xla_programs=["p1"])]) for n in range(2)]
    assert divergences(same) == ()


def test_a_rank_that_syncs_where_the_others_do_not_or_more_often_is_named():
    found = divergences([rank(0, steps=[step_row(1, syncs=1, device_lines="1 sync(s) at t.py:9")]), rank(1, steps=[step_row(1, syncs=0)])])
    (sync,) = found
    assert (sync.kind, sync.ranks, sync.others, sync.compiles) == ("sync", (0,), (1,), False)
    assert sync.causes[0].where == "1 sync(s) at t.py:9"
    (more,) = divergences([rank(0, steps=[step_row(1, syncs=3)]), rank(1, steps=[step_row(1, syncs=1)])])
    assert (more.kind, more.more, more.ranks) == ("sync", True, (0,))


def test_a_rank_that_ran_fewer_steps_is_named_with_every_ranks_count_after_the_steps():
    from neurondev.render.job_card import divergence_text

    ranks = [
        rank(n, [compile_row("first", 2)] if n == 0 else [], steps=[step_row(s) for s in range(1, count + 1)])
        for n, count in enumerate((3, 1, 3))
    ]
    found = divergences(ranks)
    assert [d.kind for d in found] == ["compile", "steps"]  # a step's divergences first, the counts last
    steps = found[-1]
    assert (steps.step, steps.ranks, steps.others, steps.compiles) == (None, (1,), (0, 2), False)
    assert [(c.rank, c.count) for c in steps.causes] == [(0, 3), (1, 1), (2, 3)]
    assert divergence_text(steps) == "rank 1 ran fewer steps than ranks 0, 2 (rank 0: 3; rank 1: 1; rank 2: 3)"


def test_a_job_is_read_from_torchruns_environment():
    assert job({"RANK": "1", "WORLD_SIZE": "4", "TORCHELASTIC_RUN_ID": "r"}).__dict__ == {"rank": 1, "world": 4, "run_id": "r"}
    assert job({"RANK": "0", "WORLD_SIZE": "1"}) is None and job({}) is None and job({"RANK": "a", "WORLD_SIZE": "2"}) is None


def test_a_recompile_one_rank_makes_alone_carries_every_fact_of_its_cause_in_its_json():
    """The job's JSON, key by key: what a CI reading it relies on (the mutation run found these keys unread)."""
    cause = {"cause": "changing size", "rule": "ND405", "value": "x", "before": "4", "after": "3", "measure": "size", "dim": 0}
    ragged = [compile_row("first", 1), compile_row("recompile", 4, line=9, **cause)]
    found = divergences([rank(0, [compile_row("first", 1)]), rank(1, ragged), rank(2, [compile_row("first", 1)])])
    assert [d.to_dict() for d in found] == [
        {
            "rule": "ND412",
            "kind": "recompile",
            "step": 4,
            "function": "f",
            "ranks": [1],
            "others": [0, 2],
            "causes": [{"rank": 1, **cause, "file": "/x/train.py", "line": 9}],
            "more": False,
        }
    ]


def test_graphs_that_differ_at_the_same_step_name_the_odd_ranks_with_every_ranks_hashes():
    rows = [compile_row("first", 1, graph_hashes=hashes) for hashes in (["a"], ["b"], ["a"], [])]
    found = divergences([rank(n, [row]) for n, row in enumerate(rows)])
    assert [d.to_dict() for d in found] == [
        {
            "rule": "ND412",
            "kind": "other graph",
            "step": 1,
            "function": "f",
            "ranks": [1],
            "others": [0, 2, 3],
            "causes": [
                {"rank": n, "file": "/x/train.py", "line": 7, "graphs": graphs} for n, graphs in enumerate((["a"], ["b"], ["a"], []))
            ],
            "more": False,
        }
    ]
    same = [rank(n, [compile_row("first", 1, graph_hashes=["a"])]) for n in range(2)]
    assert divergences(same) == () and divergences([rank(n, [compile_row("first", 1)]) for n in range(2)]) == ()


def test_xla_programs_that_differ_at_the_same_step_and_a_rank_that_stops_early():
    programs = [step_row(1, xla_compiles=1, xla_programs=hashes) for hashes in (["p"], ["p"], ["q"])]
    found = divergences([rank(n, steps=[row, step_row(2)]) for n, row in enumerate(programs)])
    assert [d.to_dict() for d in found] == [
        {
            "rule": "ND412",
            "kind": "other xla program",
            "step": 1,
            "function": None,
            "ranks": [2],
            "others": [0, 1],
            "causes": [{"rank": n, "graphs": graphs} for n, graphs in enumerate((["p"], ["p"], ["q"]))],
            "more": False,
        }
    ]
    assert divergences([rank(n, steps=[step_row(1, xla_compiles=1, xla_programs=["p"])]) for n in range(2)]) == ()
    short = divergences(
        [rank(0, steps=[step_row(1), step_row(2)]), rank(1, steps=[step_row(1)]), rank(2, steps=[step_row(1), step_row(2)])]
    )
    assert [d.to_dict() for d in short] == [
        {
            "rule": "ND412",
            "kind": "steps",
            "step": None,
            "function": None,
            "ranks": [1],
            "others": [0, 2],
            "causes": [{"rank": 0, "count": 2}, {"rank": 1, "count": 1}, {"rank": 2, "count": 2}],
            "more": False,
        }
    ]


def test_a_sync_or_a_fallback_one_rank_makes_alone_and_the_order_compiles_first_then_by_step():
    ranks = [
        rank(0, [compile_row("first", 1)], steps=[step_row(1, syncs=0), step_row(2, syncs=0, fallbacks=1)]),
        rank(
            1,
            [compile_row("first", 1), compile_row("first", 2, function="g")],
            steps=[step_row(1, syncs=2, device_lines="t.py:3"), step_row(2, syncs=0, fallbacks=3)],
        ),
    ]
    found = divergences(ranks)
    assert [(d.kind, d.step, d.ranks, d.others, d.more) for d in found] == [
        ("sync", 1, (1,), (0,), False),
        ("compile", 2, (1,), (0,), False),
        ("fallback", 2, (1,), (0,), True),
    ]
    assert found[0].to_dict()["causes"] == [{"rank": 1, "count": 2, "where": "t.py:3"}]
    assert found[2].to_dict()["causes"] == [{"rank": 0, "count": 1}, {"rank": 1, "count": 3}]


def test_a_rank_that_sent_no_steps_or_compiles_and_where_each_cost_was_are_read_from_what_was_sent():
    """A rank's JSON without steps or compiles (it ended before its first) is a rank of no steps, not an error; the
    lines torch_xla named for a new program and the device's lines for a fallback are each divergence's where."""
    bare = {"rank": 2}
    ranks = [
        rank(0, [compile_row("first", 1)], steps=[step_row(1, xla_compiles=0, fallbacks=1, device_lines="t.py:4")]),
        rank(
            1,
            [compile_row("first", 1)],
            steps=[step_row(1, xla_compiles=1, xla_triggers="user sync at t.py:8", fallbacks=2, device_lines="t.py:5")],
        ),
        bare,
    ]
    found = divergences(ranks)
    assert [(d.kind, d.step, d.ranks) for d in found] == [
        ("compile", 1, (0, 1)),
        ("xla program", 1, (1,)),
        ("fallback", 1, (1,)),
        ("steps", None, (2,)),
    ]
    assert [c.where for c in found[1].causes] == ["user sync at t.py:8"]
    assert [(c.rank, c.where) for c in found[2].causes] == [(0, "t.py:4"), (1, "t.py:5")]


def test_every_divergence_is_kept_when_one_step_has_several_and_another_an_odd_program():
    """Divergences of earlier steps and functions stay when a later one is another graph or another program."""
    ranks = [
        rank(
            0,
            [compile_row("first", 1, function="g"), compile_row("first", 2, graph_hashes=["a"])],
            steps=[step_row(1, syncs=1), step_row(2, xla_compiles=1, xla_programs=["p"])],
        ),
        rank(
            1, [compile_row("first", 2, graph_hashes=["b"])], steps=[step_row(1, syncs=0), step_row(2, xla_compiles=1, xla_programs=["q"])]
        ),
    ]
    found = divergences(ranks)
    assert [(d.kind, d.step, d.function, d.ranks) for d in found] == [
        ("compile", 1, "g", (0,)),
        ("sync", 1, None, (0,)),
        ("other graph", 2, "f", (1,)),
        ("other xla program", 2, None, (1,)),
    ]


def test_at_one_step_a_compile_is_listed_before_a_recompile_whatever_order_the_rank_wrote_them():
    ragged = [compile_row("first", 1), compile_row("recompile", 2, cause="changing size"), compile_row("first", 2, function="g")]
    found = divergences([rank(0, [compile_row("first", 1)]), rank(1, ragged)])
    assert [(d.kind, d.step, d.function) for d in found] == [("compile", 2, "g"), ("recompile", 2, "f")]
