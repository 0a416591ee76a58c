"""Where a job's ranks meet: torchrun's store (a real TCPStore here) or files; rank 0 waits for a rank while it lives
and names why one never reported (its process gone, its beat stopped, never seen, timed out), on a clock of the test's."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest

from neurondev.results.exchange import Absent, FolderExchange, StoreExchange, collect, exchange_for


class Clock:
    """A clock collect() naps on: each nap moves it on, so a wait of minutes takes no time."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def nap(self, seconds: float) -> None:
        self.now = round(self.now + seconds, 6)


def folder_exchange(tmp_path) -> FolderExchange:
    return FolderExchange(tmp_path / "meet", since=time.time() - 60)


def gone_pid() -> int:
    """The pid of a process that has ended."""
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    return int(done.stdout)


def started(exchange, rank: int, *, pid: int, host: str | None = None) -> None:
    exchange.post(f"started/{rank}", json.dumps({"pid": pid, "host": host or socket.gethostname()}))


def test_files_post_read_beat_and_clean_up_and_a_file_older_than_the_job_is_not_read(tmp_path):
    meet = folder_exchange(tmp_path)
    meet.post("record/1", "{}")
    assert meet.read("record/1") == "{}" and meet.read("record/0") is None
    assert [meet.beat("beat/1") for _ in range(3)] == [1, 2, 3]
    stale = meet.folder / "record-2"
    stale.write_text('{"from": "a job before"}')
    os.utime(stale, (time.time() - 3600, time.time() - 3600))
    assert meet.read("record/2") is None
    meet.remove(["record/1", "beat/1", "record/2"])
    assert not meet.folder.exists()


def test_torchruns_store_is_used_when_its_agent_hosts_one(tmp_path):
    from torch.distributed import TCPStore

    master = TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False)
    environ = {"TORCHELASTIC_USE_AGENT_STORE": "True", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(master.port)}
    meet = exchange_for(environ, tmp_path, since=0)
    assert isinstance(meet, StoreExchange)
    meet.post("record/0", '{"rank": 0}')
    assert meet.another().read("record/0") == '{"rank": 0}' and master.get("/neurondev/attempt_0/record/0") == b'{"rank": 0}'
    assert [meet.beat("beat/0"), meet.beat("beat/0")] == [1, 2]
    meet.remove(["record/0"])
    assert meet.read("record/0") is None
    assert not list(tmp_path.iterdir())  # nothing written beside the output


def test_without_an_agent_store_the_folder_is_named_after_the_job_and_an_unreachable_store_falls_back_to_it(tmp_path):
    named = exchange_for({"MASTER_ADDR": "h", "MASTER_PORT": "29500", "TORCHELASTIC_RUN_ID": "none"}, tmp_path, since=0)
    assert isinstance(named, FolderExchange) and named.folder.name == ".neurondev-ranks-h-29500-none"
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    environ = {"TORCHELASTIC_USE_AGENT_STORE": "True", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
    assert isinstance(exchange_for(environ, tmp_path, since=0, store_timeout=1.0), FolderExchange)


def test_every_rank_that_posted_is_collected_in_rank_order(tmp_path):
    meet = folder_exchange(tmp_path)
    for rank in (2, 0, 1):
        meet.post(f"record/{rank}", json.dumps({"rank": rank}))
    clock = Clock()
    records, absent = collect(meet, 3, timeout=None, beats=True, clock=clock, nap=clock.nap)
    assert [r["rank"] for r in records] == [0, 1, 2] and absent == [] and clock.now == 1000.0


def test_a_rank_on_this_host_whose_process_is_gone_is_named_at_once_and_a_live_one_is_waited_for(tmp_path):
    meet = folder_exchange(tmp_path)
    meet.post("record/0", "{}")
    dead = gone_pid()
    started(meet, 1, pid=dead)
    started(meet, 2, pid=os.getpid())  # alive: waited for until the timeout
    clock = Clock()
    records, absent = collect(meet, 3, timeout=30, beats=True, clock=clock, nap=clock.nap)
    assert records[1:] == [None, None]
    assert absent == [Absent(1, "ended", pid=dead), Absent(2, "timed out", seconds=30.0)]


def test_a_rank_elsewhere_is_given_up_when_its_beat_stops_and_one_never_seen_after_a_minute(tmp_path):
    meet = folder_exchange(tmp_path)
    meet.post("record/0", "{}")
    started(meet, 1, pid=1, host="another-host")
    meet.beat("beat/1")
    clock = Clock()
    _, absent = collect(meet, 3, timeout=None, beats=True, clock=clock, nap=clock.nap)
    assert [(a.rank, a.why) for a in absent] == [(1, "ended"), (2, "never seen")]
    assert 60 <= clock.now - 1000.0 < 61  # rank 1 after 5 s of silence, rank 2 after a minute unseen


def test_a_rank_that_posts_after_it_was_judged_gone_is_collected(tmp_path):
    meet = folder_exchange(tmp_path)
    started(meet, 0, pid=gone_pid())
    original = meet.read

    def read(key):  # the record lands between the first look and the verdict
        if key == "started/0":
            meet.post("record/0", '{"rank": 0}')
        return original(key)

    meet.read = read
    clock = Clock()
    records, absent = collect(meet, 1, timeout=None, beats=True, clock=clock, nap=clock.nap)
    assert records == [{"rank": 0}] and absent == []


def test_without_beats_a_block_waits_for_every_rank_until_its_timeout(tmp_path):
    meet = folder_exchange(tmp_path)
    meet.post("record/1", "{}")
    clock = Clock()
    records, absent = collect(meet, 2, timeout=600, beats=False, clock=clock, nap=clock.nap)
    assert records == [None, {}] and absent == [Absent(0, "no beat", seconds=600.0)]


@pytest.mark.parametrize("world", [0, 1])
def test_a_world_with_no_other_rank_needs_no_wait(tmp_path, world):
    meet = folder_exchange(tmp_path)
    if world:
        meet.post("record/0", "{}")
    clock = Clock()
    assert collect(meet, world, timeout=None, beats=True, clock=clock, nap=clock.nap) == ([{}] * world, [])
