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


def test_a_rank_that_sent_nothing_is_named_missing():
    data, found = merged([rank(0, [compile_row("first", 1)]), None])
    assert data["missing"] == [1] and [d["rank"] for d in data["ranks"]] == [0] and found == ()


def test_a_job_is_read_from_torchruns_environment():
    assert job({"RANK": "1", "WORLD_SIZE": "4", "TORCHELASTIC_RUN_ID": "r"}).__dict__ == {"rank": 1, "world": 4, "run_id": "r"}
    assert job({"RANK": "0", "WORLD_SIZE": "1"}) is None and job({}) is None and job({"RANK": "a", "WORLD_SIZE": "2"}) is None
