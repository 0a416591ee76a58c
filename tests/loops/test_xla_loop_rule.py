"""Loops on XLA under the written rule: a late short batch is judged alike whatever the optimizer (AdamW's second step
makes one more XLA program: warm-up); torch_xla's own analysis names whose sync triggered a program (the bridge's is
no user sync); a dynamic graph that XLA compiles per size is told to bucket, never to add a sync it has."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

import neurondev

pytestmark = pytest.mark.xla


@pytest.mark.parametrize("optimizer", ["SGD", "AdamW"])
def test_a_short_batch_late_in_the_loop_is_judged_alike_whatever_the_optimizer(optimizer):
    """A batch of 5 at step 7 of 10: AdamW said 'dynamo keeps compiling from step 2 to the end' (its step 2 made one XLA
    program) where SGD said 'steady after step 7'."""
    import torch_xla

    from neurondev import xla

    device = xla.device()
    torch._dynamo.reset()  # both cases' lambda is one code object: compiled afresh in each
    torch.manual_seed(0)
    net = torch.nn.Linear(8, 1).to(device)
    opt = getattr(torch.optim, optimizer)(net.parameters(), lr=0.01)
    forward = torch.compile(lambda x: net(x).pow(2).mean(), backend="openxla", dynamic=False)
    with neurondev.watch() as watched:
        for number in range(1, 11):
            loss = forward(torch.randn(5 if number == 7 else 8, 8, device=device))
            opt.zero_grad()
            loss.backward()
            opt.step()
            torch_xla.sync()
    steady = watched.record.steady
    assert steady.kind == "steady" and 7 in steady.counted and steady.after in (7, 8) and steady.exit_code == 0
    assert [c.step for c in watched.record.compiles if c.kind == "recompile"] == [7]


SCRIPT = """
import json, torch, torch_xla
import torch_xla.core.xla_model as xm
import neurondev
from neurondev import xla

device = xla.device()
torch.manual_seed(0)
net = torch.nn.Linear(8, 1).to(device)
opt = torch.optim.SGD(net.parameters(), lr=0.01)
forward = torch.compile(lambda x: net(x).pow(2).mean(), backend="openxla")
with neurondev.watch(xla_analysis=True) as training:
    for _ in range(4):
        loss = forward(torch.randn(8, 8, device=device))
        opt.zero_grad(); loss.backward(); opt.step()
        xm.mark_step()  # the user's sync, through torch_xla's deprecation wrapper (typing_extensions)
programs = [(p.kind, p.file, p.line) for s in training.record.steps for p in s.programs]
head = torch.nn.Linear(8, 1).to(device)
score = torch.compile(lambda x: head(x).sum(), backend="openxla")
with neurondev.watch() as growing:
    for length in range(3, 9):
        x = torch.randn(length, 8, device=device)
        torch._dynamo.mark_dynamic(x, 0)
        score(x)
        torch_xla.sync()
steady = growing.record.steady
print(json.dumps({"programs": programs, "verdict": [steady.kind, steady.side], "advice": [a.cause for a in growing.advice],
                  "dynamo": [c.kind for c in growing.record.compiles], "growing": [(s.number, [p.kind for p in s.programs]) for s in growing.record.steps]}))
"""


def test_whose_sync_made_a_program_comes_from_torch_xlas_frames_and_a_dynamic_graph_is_told_to_bucket(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    environ = {k: v for k, v in os.environ.items() if k != "PJRT_DEVICE"} | {"PJRT_DEVICE": "CPU"}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=environ, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    facts = json.loads(done.stdout.strip().splitlines()[-1])
    kinds = {kind for kind, _, _ in facts["programs"]}
    user = [(file, line) for kind, file, line in facts["programs"] if kind == "user sync"]
    assert "bridge sync" in kinds or "dynamo graph" in kinds, facts["programs"]  # the bridge's syncs: named as its
    mark_step = 1 + SCRIPT.splitlines().index(
        "        xm.mark_step()  # the user's sync, through torch_xla's deprecation wrapper (typing_extensions)"
    )
    assert user and set(user) == {(str(script), mark_step)}, user  # the user's line, not typing_extensions.py's wrapper
    assert facts["dynamo"] == ["first"] and facts["verdict"] == ["keeps compiling", "XLA"]
    assert "program per size" in facts["advice"] and "lazy state growing" not in facts["advice"]


def test_a_trainer_shaped_loop_whose_training_keeps_compiling_fails_however_many_evaluation_calls_end_it():
    """One compiled model called for training (gradients on) and for an evaluation per epoch (off), no sync: XLA
    compiles new programs on every training call (torch_xla's own CompileTime counts them). Judged as one sequence the
    quiet evaluation calls at the end made the verdict `late`, exit 0."""
    import torch_xla

    from neurondev import xla

    device = xla.device()
    torch._dynamo.reset()
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)).to(device)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    model = torch.compile(net, backend="openxla")
    loss_of = lambda x, y: torch.nn.functional.mse_loss(model(x), y)  # noqa: E731
    with neurondev.watch() as watched:
        for _ in range(3):
            for _ in range(4):
                loss_of(torch.randn(4, 8, device=device), torch.randn(4, 1, device=device)).backward()
                opt.step()
                opt.zero_grad()
            torch_xla.sync()  # the evaluation starts from the trained weights, as a trainer's does
            with torch.no_grad():
                for _ in range(2):
                    loss_of(torch.randn(4, 8, device=device), torch.randn(4, 1, device=device)).item()
    record = watched.record
    phases = [step.phase for step in record.steps]
    assert phases == (["training"] * 4 + ["evaluation"] * 2) * 3
    training = [step for step in record.steps if step.phase == "training"]
    numbers = {step.number: step for step in record.steps}
    assert all(numbers[n].xla_compiles for n in record.steady.counted)  # each counted step: torch_xla's own CompileTime
    assert sum(bool(step.xla_compiles) for step in training) > len(training) // 2  # most training calls compiled
    assert [step.xla_compiles for step in record.steps[-2:]] == [0, 0]  # quiet evaluation calls end it
    steady = record.steady
    assert (steady.kind, steady.phase, steady.exit_code) == ("keeps compiling", "training", 1)
    assert steady.counted[-1] == training[-1].number and record.judged_end == 16
    assert "the training calls decide: No steady state: XLA keeps compiling" in watched.summary()
    assert json.loads(watched.to_json())["phase"] == "training"
