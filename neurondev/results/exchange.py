"""Where the ranks of a torchrun job meet at the end: torchrun's own store (or files), never a collective.

A rank posts its record under a key; rank 0 reads them. Nothing here joins a process group or waits on another
rank in a collective, so no rank can be held by one that raised, exited or was killed: torchrun's agent hosts a
TCP store for its job (``TORCHELASTIC_USE_AGENT_STORE``), a new one for every restart, which each rank reaches
as a client at ``MASTER_ADDR:MASTER_PORT``. Launchers without it get a folder beside the output, named after the
job (and cleaned up), whose stale files are ignored. A rank under ``neurondev watch`` also beats (a counter
it raises twice a second from a thread of its own): rank 0 tells a rank still running from one that ended
without a word (its beat stopped, and on the same host its process is gone).
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["BEAT_SECONDS", "Absent", "Beat", "Exchange", "FolderExchange", "StoreExchange", "collect", "exchange_for"]

BEAT_SECONDS = 0.5
_QUIET_SECONDS = 5.0  # a rank whose beat has not moved for this long has ended (its beat thread runs while its script does)
_NEVER_SEEN_SECONDS = 60.0  # a rank that never beat: started its watch later than this, or never


class Exchange:
    """A place keys are posted to and read from, by every rank of one job."""

    def post(self, key: str, value: str) -> None:
        raise NotImplementedError

    def read(self, key: str) -> str | None:
        raise NotImplementedError

    def beat(self, key: str) -> int:
        """Raise the counter at ``key`` by one; its new value."""
        raise NotImplementedError

    def remove(self, keys: list[str]) -> None:
        raise NotImplementedError

    def another(self) -> Exchange:
        """A second connection to the same place (one per thread)."""
        return self


class StoreExchange(Exchange):
    """torchrun's agent store, reached as a client; keys under ``/neurondev/<attempt>/``."""

    def __init__(self, host: str, port: int, attempt: str, *, timeout: float = 30.0) -> None:
        from torch.distributed import TCPStore

        self._where = (host, port, attempt, timeout)
        self._store = TCPStore(host, port, is_master=False, timeout=datetime.timedelta(seconds=timeout), wait_for_workers=False)
        self._prefix = f"/neurondev/attempt_{attempt}/"

    def post(self, key: str, value: str) -> None:
        self._store.set(self._prefix + key, value)

    def read(self, key: str) -> str | None:
        full = self._prefix + key
        return self._store.get(full).decode() if self._store.check([full]) else None

    def beat(self, key: str) -> int:
        return int(self._store.add(self._prefix + key, 1))

    def remove(self, keys: list[str]) -> None:
        for key in keys:
            self._store.delete_key(self._prefix + key)

    def another(self) -> Exchange:
        host, port, attempt, timeout = self._where
        return StoreExchange(host, port, attempt, timeout=timeout)


class FolderExchange(Exchange):
    """Files in a folder every rank can write to; a file older than this job is someone else's."""

    def __init__(self, folder: Path, *, since: float) -> None:
        self.folder, self._since = folder, since
        folder.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        return self.folder / key.replace("/", "-")

    def post(self, key: str, value: str) -> None:
        path = self._path(key)
        staged = path.with_name(f".{path.name}.{os.getpid()}")
        staged.write_text(value, encoding="utf-8")
        staged.replace(path)  # whole, or not there

    def read(self, key: str) -> str | None:
        path = self._path(key)
        try:
            return path.read_text(encoding="utf-8") if path.stat().st_mtime >= self._since else None
        except FileNotFoundError:
            return None

    def beat(self, key: str) -> int:
        count = int(self.read(key) or 0) + 1
        self.post(key, str(count))
        return count

    def remove(self, keys: list[str]) -> None:
        for key in keys:
            self._path(key).unlink(missing_ok=True)
        if self.folder.is_dir() and not any(self.folder.iterdir()):
            self.folder.rmdir()


def exchange_for(environ: Mapping[str, str], folder: Path, *, since: float, store_timeout: float = 30.0) -> Exchange:
    """torchrun's store when its agent hosts one (reached within ``store_timeout`` seconds), else a folder in ``folder``
    named after the job."""
    if environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True" and environ.get("MASTER_ADDR") and environ.get("MASTER_PORT"):
        try:
            attempt = environ.get("TORCHELASTIC_RESTART_COUNT", "0")
            return StoreExchange(environ["MASTER_ADDR"], int(environ["MASTER_PORT"]), attempt, timeout=store_timeout)
        except (RuntimeError, ValueError, OSError):  # the agent's store is gone or unreachable: files instead
            pass
    job = "-".join(environ.get(name, "") for name in ("MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID")).strip("-")
    return FolderExchange(folder / f".neurondev-ranks-{job or 'job'}", since=since)


class Beat:
    """A rank's heartbeat: its pid and host posted once, then a counter raised every ``BEAT_SECONDS`` until ``stop``."""

    def __init__(self, exchange: Exchange, rank: int) -> None:
        self._exchange, self._rank = exchange.another(), rank
        self._stopped = threading.Event()
        exchange.post(f"started/{rank}", json.dumps({"pid": os.getpid(), "host": socket.gethostname()}))
        self._thread = threading.Thread(target=self._run, name="neurondev-beat", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stopped.wait(BEAT_SECONDS):
            try:
                self._exchange.beat(f"beat/{self._rank}")
            except Exception:  # the store went with its job: nothing left to tell
                return

    def stop(self) -> None:
        self._stopped.set()


@dataclasses.dataclass(frozen=True)
class Absent:
    """A rank rank 0 has no record from, and why: ``ended`` (its beat stopped and, on this host, its process is gone:
    killed by a signal, or ``os._exit``), ``never seen`` (it never beat: it ended before its watch began, or never
    ran one), ``timed out`` (still running after ``seconds``), ``no beat`` (a watch block: it never reported in
    ``seconds``)."""

    rank: int
    why: str
    seconds: float | None = None
    pid: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def collect(
    exchange: Exchange,
    world: int,
    *,
    timeout: float | None,
    beats: bool,
    clock: Callable[[], float] = time.monotonic,
    nap: Callable[[float], None] = time.sleep,
) -> tuple[list[dict[str, Any] | None], list[Absent]]:
    """Every rank's record (``record/<rank>``), in rank order, and why each missing one is missing. With ``beats``,
    a rank is waited for while it beats (or, on this host, while its process lives), then given up on; without,
    every rank is waited for until ``timeout``. ``timeout`` (None: no limit) bounds the whole wait."""
    start = clock()
    found: dict[int, dict[str, Any]] = {}
    absent: dict[int, Absent] = {}
    last_beat: dict[int, tuple[str | None, float]] = dict.fromkeys(range(world), (None, start))
    while len(found) + len(absent) < world:
        now = clock()
        for rank in range(world):
            if rank in found or rank in absent:
                continue
            text = exchange.read(f"record/{rank}")
            if text is not None:
                found[rank] = json.loads(text)
            elif timeout is not None and now - start >= timeout:
                absent[rank] = Absent(rank, "timed out" if beats else "no beat", seconds=round(now - start, 1))
            elif beats:
                gone = _ended(exchange, rank, last_beat, now)
                late = exchange.read(f"record/{rank}") if gone is not None else None  # posted, then ended, meanwhile
                if late is not None:
                    found[rank] = json.loads(late)
                elif gone is not None:
                    absent[rank] = gone
        if len(found) + len(absent) < world:
            nap(0.1)
    return [found.get(rank) for rank in range(world)], [absent[rank] for rank in sorted(absent)]


def _ended(exchange: Exchange, rank: int, last_beat: dict[int, tuple[str | None, float]], now: float) -> Absent | None:
    """Absent when ``rank`` has ended without a record (on this host: its process is gone; elsewhere: its beat has
    not moved for a while, or never began), None while it may still report."""
    beat = exchange.read(f"beat/{rank}")
    seen, since = last_beat[rank]
    if beat != seen:
        last_beat[rank] = (beat, now)
        return None
    started = exchange.read(f"started/{rank}")
    place = json.loads(started) if started else {}
    pid = place.get("pid")
    if place.get("host") == socket.gethostname():
        return None if _alive(pid) else Absent(rank, "ended", pid=pid)  # held or slow, but there; or gone
    if beat is None:
        return Absent(rank, "never seen", pid=pid) if now - since >= _NEVER_SEEN_SECONDS else None
    return Absent(rank, "ended", pid=pid) if now - since >= _QUIET_SECONDS else None


def _alive(pid: Any) -> bool:
    if not isinstance(pid, int):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
