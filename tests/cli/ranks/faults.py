"""Run by torchrun, with or without ``neurondev watch``: a small training loop with one fault injected (argv[1]).

Cases: clean (DDP, every rank alike); raises (rank 1 raises at step 3 while the others wait in DDP's all-reduce);
blocked (rank 1 raises at step 3 while rank 0 waits in C++ for a key rank 1 never sets: torchrun stops it with SIGTERM);
exits (rank 1 calls sys.exit(3) at step 3, rank 0 sys.exit(0)); killed (rank 1 is SIGKILLed at step 3); early (no DDP: rank 1 stops
2 steps early); ragged (DDP and Adam: the last rank's last batch is 4 rows where the others have 6, and the group
is destroyed at the end); one-destroys (only rank 0 destroys the group); no-group (no process group at all);
branch (the rank, a Python int, decides a branch of the compiled function: the ranks compile different graphs);
item (hostdev, no group: rank 0 reads the loss with .item() every step, the others never); compiled-ddp (torch.compile over DDP);
restart (no group: rank 1 raises at step 3 of torchrun's first attempt only; run with --max-restarts 1); stuck (no
group: at step 3 every rank writes its pid, then blocks forever in native code holding Python's lock,
as a DDP teardown that deadlocks does: no Python signal handler can run).
"""

import os
import signal
import sys

import torch

CASE = sys.argv[1]
STEPS = 6


def device():
    if CASE == "item":
        import neurondev

        return neurondev.host_device()
    return torch.device("cpu")


def wait_forever():
    """Block in C++, the GIL released, for a key nobody sets (as a rank waits in a collective a dead rank never joins)."""
    import datetime

    from torch.distributed import TCPStore

    store = TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), is_master=False, wait_for_workers=False)
    store.wait(["never set"], datetime.timedelta(hours=1))


def stuck_holding_the_gil(rank):
    """A mutex locked twice by one thread, called through ctypes.PyDLL (which keeps Python's lock): blocked for good."""
    import ctypes
    from pathlib import Path

    Path(f"pids.{rank}").write_text(f"{os.getpid()}")
    libc = ctypes.PyDLL(None)
    mutex = ctypes.create_string_buffer(64)
    libc.pthread_mutex_init(mutex, None)
    libc.pthread_mutex_lock(mutex)
    libc.pthread_mutex_lock(mutex)


def main():
    import torch.distributed as dist

    rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    here = device()
    if CASE not in ("no-group", "item", "restart", "stuck"):
        dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 1).to(here)
    ddp = CASE in ("clean", "raises", "blocked", "exits", "killed", "ragged", "one-destroys")
    if CASE == "compiled-ddp":
        from torch.nn.parallel import DistributedDataParallel

        trained = torch.compile(DistributedDataParallel(model), backend="eager")
    elif ddp:
        from torch.nn.parallel import DistributedDataParallel

        trained = DistributedDataParallel(torch.compile(model, backend="eager"))
    elif CASE == "branch":
        trained = torch.compile(lambda x: model(x) * 2 if rank == 0 else model(x) + 1, backend="eager")
    else:
        trained = torch.compile(model, backend="eager")
    optimizer = (torch.optim.Adam if CASE == "ragged" else torch.optim.SGD)(model.parameters(), lr=0.1)
    steps = STEPS - 2 if CASE == "early" and rank == 1 else STEPS
    for step in range(1, steps + 1):
        rows = 4 if CASE == "ragged" and rank == size - 1 and step == steps else 6
        x = torch.randn(rows, 8).to(here)
        if CASE == "blocked" and step == 3:
            if rank == 1:
                raise RuntimeError("rank 1 failed at step 3")
            wait_forever()
        if CASE == "stuck" and step == 3:
            stuck_holding_the_gil(rank)
        if CASE == "exits" and rank == 0 and step == 3:
            sys.exit(0)  # a clean exit mid-loop: said as exited, not as the script's end
        if rank == 1 and step == 3:
            if CASE == "restart" and os.environ["TORCHELASTIC_RESTART_COUNT"] == "0":
                raise RuntimeError("rank 1 failed at step 3 of the first attempt")
            if CASE == "raises":
                raise RuntimeError("rank 1 failed at step 3")
            if CASE == "exits":
                sys.exit(3)
            if CASE == "killed":
                os.kill(os.getpid(), signal.SIGKILL)
        loss = trained(x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if CASE == "item" and rank == 0:
            print(f"step {step}: loss {loss.item():.4f}")
    if CASE == "one-destroys":
        if rank == 0:
            dist.destroy_process_group()
    elif CASE not in ("no-group", "item", "restart", "stuck"):
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
