"""Collectives on the host device across processes under torchrun (gloo refuses its tensors): each gives
the values it gives on CPU (one job: gloo's on CPU tensors beside the host device's), and DDP and FSDP2 train two steps
with the losses they have on CPU."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.todays_torch  # both torches pass it: make test runs it once, with today's torch

RANKS = Path(__file__).parent / "ranks"


def torchrun(procs: int, script: str, *args: str) -> None:
    """``torchrun --standalone --nproc-per-node procs script args``, failing the test with its output."""
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={procs}", str(RANKS / script), *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env={"OMP_NUM_THREADS": "1", **_environ()})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]


def _environ() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "PJRT_DEVICE"}


def ranks(prefix: Path, procs: int) -> list[dict]:
    return [torch.load(f"{prefix}.{rank}") for rank in range(procs)]


@pytest.mark.parametrize("procs", [3])  # three: a ring's previous and next rank differ, each rank's split is its own
def test_each_collective_and_exchange_on_host_device_tensors_gives_what_gloo_gives_on_cpu(tmp_path, procs):
    """float32, bf16 and int64, blocking and async_op=True; isend/irecv in a ring and batch_isend_irecv (a pipeline's
    exchange: it deadlocked when isend waited); all_to_all and all_to_all_single with uneven splits (MoE routing: no
    backend had them). One job: each rank runs them on CPU tensors through gloo, then on the host device's."""
    torchrun(procs, "collectives.py", str(tmp_path / "ranks"))
    for rank, saved in enumerate(ranks(tmp_path / "ranks", procs)):
        cpu, host = saved["cpu"], saved["hostdev"]
        assert host["devices"] == ["hostdev"] and cpu["devices"] == ["cpu"]
        assert saved["backend"] == "hostdev:hostdev" and saved["unnamed"] == "undefined"  # picked by init_process_group() itself
        assert saved["named"] == {"cpu": "gloo", "hostdev": "hostdev"}
        tensors = sorted(name for name, value in cpu.items() if isinstance(value, torch.Tensor))
        assert len(tensors) == 3 * (2 * 8 + 2) and sorted(name for name in host if isinstance(host[name], torch.Tensor)) == tensors
        for name in tensors:
            assert host[name].dtype == cpu[name].dtype and torch.equal(host[name], cpu[name]), (rank, name, host[name], cpu[name])
    first = ranks(tmp_path / "ranks", procs)[0]["cpu"]
    assert torch.equal(first["all_reduce float32"], torch.arange(6.0) * sum(range(1, procs + 1)))  # the values are the sums
    assert torch.equal(first["broadcast int64 async"], torch.full((4,), procs - 1))
    assert torch.equal(first["isend/irecv float32"], torch.full((3,), float(procs)))  # from the previous rank, procs - 1
    # rank 0 gets i + 1 rows from each rank i: that rank's first rows, numbered from 100 * i
    expected = torch.cat([torch.arange(float(i + 1)) + 100 * i for i in range(procs)])
    assert torch.equal(first["all_to_all_single float32"], expected)


def test_a_model_trains_two_steps_under_ddp_and_fsdp2_across_two_ranks_on_the_host_device_as_on_cpu(tmp_path):
    torchrun(2, "training.py", "cpu", str(tmp_path / "cpu"))
    torchrun(2, "training.py", "hostdev", str(tmp_path / "hostdev"))
    for wrapper in ("ddp", "fsdp2"):
        for cpu, host in zip(ranks(tmp_path / "cpu", 2), ranks(tmp_path / "hostdev", 2)):
            cpu, host = cpu[wrapper], host[wrapper]
            assert (host["device"], cpu["device"]) == ("hostdev", "cpu"), wrapper
            assert torch.equal(host["losses"], cpu["losses"]) and torch.equal(host["weight"], cpu["weight"]), wrapper
        first, second = (saved[wrapper] for saved in ranks(tmp_path / "hostdev", 2))
        assert not torch.equal(first["losses"], second["losses"])  # each rank its own batches
        assert torch.equal(first["weight"], second["weight"])  # one model: the gradients were averaged


def test_explain_on_each_rank_finds_the_frozen_copy_and_the_pass_removes_it_leaving_the_collectives_own(tmp_path):
    """The seed's collective case on the host device with two ranks: on every rank the buffer is frozen to the CPU
    and its copy_ copies to the host; after the pass only the collective's own copies are left, said to be its."""
    torchrun(2, "explain.py", str(tmp_path / "explained"))
    collective = "_c10d_functional.reduce_scatter_tensor"
    for rank, found in enumerate(ranks(tmp_path / "explained", 2)):
        assert found["pins"] == [("output", "torch.empty", "cpu")], rank
        assert [(f, c) for f, c, _ in found["before"]] == [("Tensor.copy_", None), (collective, collective)], found["before"]
        assert [(f, c) for f, c, _ in found["after"]] == [(collective, collective)], found["after"]
        assert found["values"] is True and torch.equal(found["output"], found["expected"]) and found["program"] is True
