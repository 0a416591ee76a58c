"""Model Explorer's local server for an Explanation: started on loopback, embedded in a notebook, stopped."""

from __future__ import annotations

import atexit
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING

from neurondev._paths import scratch_folder
from neurondev.errors import ModelExplorerUnavailableError
from neurondev.render.card_style import escape
from neurondev.render.model_explorer import ModelExplorerFiles, save_model_explorer

if TYPE_CHECKING:
    from neurondev.report.model import ExplanationData

__all__ = ["ModelExplorerServer", "open_model_explorer", "free_port"]

_START_SECONDS = 60


class ModelExplorerServer:
    """A running Model Explorer showing an Explanation's graphs and overlays.

    ``url`` opens it in a browser; in a notebook the object displays as an embedded frame;
    ``stop()`` ends the server (also done when Python exits).
    """

    def __init__(self, files: ModelExplorerFiles, process: subprocess.Popen, port: int, log: Path) -> None:
        self.files, self.process, self.port, self.log = files, process, port, log
        atexit.register(self.stop)  # a server left running ends with Python; stop() unregisters it

    @property
    def url(self) -> str:
        """The page that opens the graphs with their overlays, on the findings (``ModelExplorerFiles.url``)."""
        return self.files.url(self.port)

    @property
    def home(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def stop(self) -> None:
        """End the server (and forget the exit hook: a stopped server holds nothing until Python exits)."""
        atexit.unregister(self.stop)
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()

    def __repr__(self) -> str:
        state = "running" if self.process.poll() is None else "stopped"
        return f"<Model Explorer {state} at {self.home}: {self.files.graphs.parent}>"

    def _repr_html_(self) -> str:
        url = escape(self.url)
        return (
            f'<iframe src="{url}" width="100%" height="640" style="border:1px solid #d0d7de"></iframe>'
            f'<p>Model Explorer at <a href="{url}" target="_blank">{url}</a> (graphs in {escape(str(self.files.graphs.parent))}); '
            "stop it with <code>.stop()</code>.</p>"
        )


def open_model_explorer(explanation: ExplanationData, folder: str | Path | None = None, *, port: int | None = None) -> ModelExplorerServer:
    """Save the files (into ``folder``; by default a temporary one, removed when Python exits) and start Model Explorer on them."""
    command_path = shutil.which("model-explorer") or str(Path(sys.executable).with_name("model-explorer"))
    if not Path(command_path).exists():
        raise ModelExplorerUnavailableError("Model Explorer is an optional extra: pip install 'neurondev[explorer]'")
    files = save_model_explorer(explanation, folder or scratch_folder("neurondev-model-explorer-"))
    port = port or free_port()
    log = files.graphs.parent / "model-explorer.log"
    with open(log, "w") as out:
        command = [command_path, *files.command(port)[1:]]
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    server = ModelExplorerServer(files, process, port, log)
    _wait_until_serving(server)
    return server


def _wait_until_serving(server: ModelExplorerServer) -> None:
    deadline = time.monotonic() + _START_SECONDS
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise ModelExplorerUnavailableError(f"Model Explorer exited: {server.log.read_text()[-1500:]}")
        try:
            urllib.request.urlopen(server.home, timeout=2)
            return
        except OSError:
            time.sleep(0.5)
    server.stop()
    raise ModelExplorerUnavailableError(f"Model Explorer did not start within {_START_SECONDS} s: {server.log.read_text()[-1500:]}")


def free_port() -> int:
    """A free TCP port on the loopback address (the one helper for it: Model Explorer, the gloo group)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
