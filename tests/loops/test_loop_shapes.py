"""Real loops of the shapes training and serving jobs have, each watched, each verdict the loops page's rule gives by
hand from the step table (tests/loops/test_verdict.py holds the rule against an oracle). On the host device, as a
native device runs them (dynamo's compiles are what is new there), and on XLA where XLA's programs decide."""

from __future__ import annotations

import io

import pytest
import torch

import neurondev


@pytest.fixture(scope="module")
def device():
    return neurondev.host_device()


@pytest.fixture(autouse=True)
def fresh_dynamo():
    """Each loop compiles afresh: the lambdas below share code objects across tests, and dynamo keeps their code."""
    torch._dynamo.reset()


def model(device, seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)).to(device)


def trainer(net, *, lr=0.1):
    optimizer = torch.optim.SGD(net.parameters(), lr=lr)
    forward = torch.compile(lambda x: net(x).pow(2).mean(), backend="aot_eager", dynamic=False)

    def step(x):
        loss = forward(x)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss

    return step, optimizer


def verdict_of(watched):
    steady = watched.record.steady
    return steady.kind, steady.after, steady.exit_code


def test_a_validation_after_training_is_outside_the_loop_and_the_loop_stays_steady(device):
    """8 synced steps, then one call of another compiled function after the loop: it was 'dynamo keeps compiling from
    step 8 to the end', exit 1 (a false failure of every train-then-validate script)."""
    net = model(device)
    step, _ = trainer(net)
    validate = torch.compile(lambda x: net(x).sum(), backend="aot_eager", dynamic=False)  # another lambda, another function
    with neurondev.watch() as watched:
        for _ in range(8):
            step(torch.randn(6, 8, device=device))
        validate(torch.randn(3, 8, device=device))
    assert verdict_of(watched) == ("nothing", 1, 0) and len(watched.record.steps) == 8
    assert [(c.outside, c.event.function) for c in watched.record.compiles if c.outside] == [
        ("after the loop", "test_a_validation_after_training_is_outside_the_loop_and_the_loop_stays_steady.<locals>.<lambda>")
    ]
    assert "After the loop: 1 dynamo compile(s)" in watched.summary() and "not part of the verdict" in watched.summary()


def test_each_mark_ends_a_step_and_what_follows_the_last_is_after_the_loop(device):
    net = model(device)
    step, _ = trainer(net)
    with neurondev.watch() as watched:
        for _ in range(6):
            step(torch.randn(6, 8, device=device))
            watched.step()
        step(torch.randn(3, 8, device=device))  # after the last mark: outside (a recompile, reported)
    assert len(watched.record.steps) == 6 and "6 step(s) you marked" in watched.summary()
    assert verdict_of(watched) == ("nothing", 1, 0)
    assert [c.outside for c in watched.record.compiles if c.kind == "recompile"] == ["after the loop"]


def test_an_eval_every_k_steps_at_another_batch_size_is_a_first_compile_of_its_own_and_steady(device):
    net = model(device)
    step, _ = trainer(net)
    evaluate = torch.compile(lambda x: net(x).sum(), backend="aot_eager", dynamic=False)
    with neurondev.watch() as watched:
        for number in range(1, 13):
            step(torch.randn(6, 8, device=device))
            if number % 4 == 0:
                with torch.no_grad():
                    evaluate(torch.randn(32, 8, device=device))
    assert [c.kind for c in watched.record.compiles] == ["first", "first"]
    assert verdict_of(watched)[0] == "nothing" and verdict_of(watched)[2] == 0


@pytest.mark.parametrize("extra", ["item every 3", "checkpoint every 3", "clip reading the norm"])
def test_host_reads_checkpoints_and_clipping_on_a_cadence_compile_nothing_new(device, extra):
    net = model(device)
    step, optimizer = trainer(net)
    with neurondev.watch() as watched:
        for number in range(1, 10):
            loss = step(torch.randn(6, 8, device=device))
            if extra == "item every 3" and number % 3 == 0:
                loss.item()
            elif extra == "checkpoint every 3" and number % 3 == 0:
                torch.save({"model": net.state_dict(), "optimizer": optimizer.state_dict()}, io.BytesIO())
            elif extra == "clip reading the norm":
                torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0).item()
    assert verdict_of(watched) == ("nothing", 1, 0)
    if extra == "item every 3":
        assert [s.native.syncs for s in watched.record.steps] == [1 if n % 3 == 0 else 0 for n in range(1, 10)]


def test_a_short_last_batch_recompiles_once_and_the_second_epoch_shows_the_loop_steady(device):
    net = model(device)
    step, _ = trainer(net)
    epoch = [6, 6, 6, 3]
    with neurondev.watch() as watched:
        for rows in epoch * 2:
            step(torch.randn(rows, 8, device=device))
    assert verdict_of(watched) == ("steady", 4, 0) and watched.record.steady.counted == (4,)


def test_a_short_last_batch_in_a_single_epoch_is_a_late_recompile_not_a_failure(device):
    net = model(device)
    step, _ = trainer(net)
    with neurondev.watch() as watched:
        for rows in (6, 6, 6, 6, 3):
            step(torch.randn(rows, 8, device=device))
    assert verdict_of(watched) == ("late", 5, 0)
    assert "A recompile late in the loop, at step 5 of 5" in watched.summary()
    assert any(advice.cause == "changing size" for advice in watched.advice)  # pad it, or drop_last


@pytest.mark.parametrize("as_tensor", [False, True], ids=["float", "tensor"])
def test_a_learning_rate_warm_up_recompiles_while_it_changes_as_a_float_and_never_as_a_tensor(device, as_tensor):
    net = model(device)
    step = torch.compile(lambda x, lr: net(x).pow(2).mean() * lr, backend="aot_eager", dynamic=False)
    rates = [0.1 * min(1.0, (n + 1) / 4) for n in range(10)]  # warms up over 4 steps, then constant
    with neurondev.watch() as watched:
        for rate in rates:
            step(torch.randn(6, 8, device=device), torch.tensor(rate, device=device) if as_tensor else rate)
    if as_tensor:
        assert verdict_of(watched) == ("nothing", 1, 0)
    else:
        assert verdict_of(watched) == ("steady", 4, 0) and watched.record.steady.counted == (2, 3, 4)
        assert [advice.cause for advice in watched.advice] == ["python number"]


def test_bucketed_lengths_cycling_compile_each_bucket_once(device):
    net = torch.nn.Linear(8, 8).to(device)
    step = torch.compile(lambda x: net(x).sum(), backend="aot_eager", dynamic=False)
    with neurondev.watch() as watched:
        for number in range(12):
            step(torch.randn((16, 32, 64)[number % 3], 8, device=device))
    assert verdict_of(watched) == ("steady", 3, 0) and watched.record.steady.counted == (2, 3)  # a recompile is never warm-up


def test_train_and_eval_toggles_are_two_graphs_then_steady(device):
    net = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Dropout(0.5)).to(device)
    step = torch.compile(lambda x: net(x).sum(), backend="aot_eager", dynamic=False)
    with neurondev.watch() as watched:
        for number in range(8):
            net.train(number % 2 == 0)
            step(torch.randn(4, 8, device=device))
    assert verdict_of(watched) == ("steady", 2, 0) and watched.record.steady.counted == (2,)  # the eval graph: a recompile


def test_a_new_size_every_k_steps_recurs_and_fails_with_its_period(device):
    net = torch.nn.Linear(8, 8).to(device)
    step = torch.compile(lambda x: net(x).sum(), backend="aot_eager", dynamic=False)
    with neurondev.watch() as watched:
        for number in range(1, 15):
            step(torch.randn(4 + number // 4, 8, device=device))  # a new size at steps 4, 8, 12
    steady = watched.record.steady
    assert (steady.kind, steady.period, steady.since, steady.exit_code) == ("recurring", 4, 4, 1)


def test_a_size_that_grows_every_step_keeps_compiling_and_at_dynamos_limit_gives_up(device):
    net = torch.nn.Linear(8, 8).to(device)
    step = torch.compile(lambda x: net(x).sum(), backend="aot_eager", dynamic=False)
    with neurondev.watch() as growing:
        for rows in range(1, 6):
            step(torch.randn(rows, 8, device=device))
    assert (growing.record.steady.kind, growing.record.steady.since, growing.record.steady.exit_code) == ("keeps compiling", 2, 1)
    limit = torch._dynamo.config.recompile_limit
    with neurondev.watch() as limited:
        for rows in range(10, 10 + limit + 3):
            step(torch.randn(rows, 8, device=device))
    assert limited.record.steady.kind == "limit" and limited.record.steady.exit_code == 1


def _decode_ids_past(ids, past, weight):
    x = torch.nn.functional.one_hot(ids, 8).float() @ weight
    past = torch.cat([past, x], dim=1)
    return past.sum(dim=1).argmax(-1, keepdim=True), past


def _decode_hf_names(input_ids, past_key_values, weight):
    x = torch.nn.functional.one_hot(input_ids, 8).float() @ weight
    past_key_values = torch.cat([past_key_values, x], dim=1)
    return past_key_values.sum(dim=1).argmax(-1, keepdim=True), past_key_values


@pytest.mark.parametrize("decode", [_decode_ids_past, _decode_hf_names])
def test_advice_comes_from_what_a_size_does_never_from_the_arguments_name(device, decode):
    """A decode loop: the prompt (5 tokens), then one token a step onto a cache that grows by one. Named `ids, past`
    it was told to pad to buckets or drop the short last batch; named as transformers names them, to use a static cache."""
    weight = torch.randn(8, 8, device=device)
    step = torch.compile(decode, backend="aot_eager", dynamic=False)
    with neurondev.watch() as watched:
        ids, past = torch.randint(0, 8, (1, 5), device=device), torch.zeros(1, 0, 8, device=device)
        for _ in range(6):
            ids, past = step(ids, past, weight)
    causes = [(c.cause.kind, c.cause.before, c.cause.after) for c in watched.record.compiles[1:]]
    assert causes == [("prompt to decode", "5", "1")] + [("cache growth", str(n), str(n + 1)) for n in range(5, 9)]
    assert [a.cause for a in watched.advice] == ["cache growth"] and watched.record.steady.kind == "keeps compiling"


def test_a_size_that_changes_by_one_once_is_no_growing_cache(device):
    net = torch.nn.Linear(8, 8).to(device)
    step = torch.compile(lambda x: net(x).sum(), backend="aot_eager", dynamic=False)
    with neurondev.watch() as watched:
        for rows in (4, 4, 4, 5, 5, 5, 5, 5):  # one change, by one: a new batch size
            step(torch.randn(rows, 8, device=device))
    assert [c.cause.kind for c in watched.record.compiles[1:]] == ["changing size"]
