"""neurondev docs: the documentation site, built from this checkout when missing, opened in a browser or served."""

from __future__ import annotations

import argparse
import functools
import http.server
import os
import subprocess
import sys
from pathlib import Path

from neurondev.errors import InvalidOptionError

__all__ = ["add_docs_command", "build_site"]

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "site"


def add_docs_command(commands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    docs = commands.add_parser(
        "docs",
        help="the documentation site: build it if missing, then open it (or a rule's page) or serve it",
        description="Opens site/index.html (or rules/CODE.html) in your browser, building the site with mkdocs first when this "
        "checkout has none. --serve serves it on 127.0.0.1 instead (search needs http://: from disk the search box says so), until Ctrl-C. Set NEURONDEV_DOCS_URL "
        "to where you serve it, and every finding's url points there.",
    )
    docs.add_argument("rule", nargs="?", metavar="CODE", help="a rule's page (ND101) rather than the front page")
    docs.add_argument("--build", action="store_true", help="build the site again even when it exists")
    docs.add_argument("--serve", action="store_true", help="serve the site over HTTP on 127.0.0.1 until Ctrl-C")
    docs.add_argument("--port", type=int, default=8000, help="the port --serve listens on (default: %(default)s; 0: any free one)")
    docs.add_argument("--no-open", action="store_true", help="print the page's address, do not open a browser")
    docs.set_defaults(run=run_docs)
    return docs


def run_docs(options: argparse.Namespace) -> int:
    page = _page(options.rule)
    if options.port < 0 or options.port > 65535:
        raise InvalidOptionError(f"--port is a port number (0 to 65535; 0: any free one), got {options.port}")
    if options.build or not (SITE / "index.html").is_file():
        _build()
    if options.serve:
        return _serve(page, options.port, opening=not options.no_open)
    address = (SITE / page).as_uri()
    print(address, flush=True)
    if not options.no_open:
        import webbrowser

        webbrowser.open(address)
    return 0


def _page(rule: str | None) -> str:
    if rule is None:
        return "index.html"
    from neurondev.rulebook import RULES

    code = rule.strip().upper()
    if code not in {r.code for r in RULES}:
        raise InvalidOptionError(f"neurondev docs takes a rule's code (neurondev.rules() lists them: ND101 ... ND412), got {rule!r}")
    return f"rules/{code}.html"


def _build() -> None:
    """The site into site/, as make docs builds it, saying so (it takes a few seconds)."""
    print(f"building the documentation site into {SITE} (mkdocs, about 10 s)", file=sys.stderr, flush=True)
    build_site(SITE)


def build_site(folder: Path) -> None:
    """mkdocs build --strict into ``folder``, as make docs does; a clear error where this is no checkout with mkdocs,
    or where the build fails (mkdocs's own words)."""
    if not (ROOT / "mkdocs.yml").is_file():
        raise InvalidOptionError(
            "this neurondev is installed without its documentation's sources: build the site in a checkout (make docs), or set "
            "NEURONDEV_DOCS_URL to where it is served"
        )
    environ = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-d", str(folder)],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
    )
    if built.returncode != 0:
        raise InvalidOptionError(f"mkdocs could not build the site (pip install -e '.[docs]' installs it): {built.stderr.strip()[-3000:]}")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    """The site's files, quietly; a missing path answered with the site's own 404 page (its links from the root)."""

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (http.server's name)
        pass

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        page = Path(self.directory) / "404.html"
        if code != 404 or not page.is_file():
            super().send_error(code, message, explain)
            return
        body = page.read_text(encoding="utf-8").replace("<head>", '<head><base href="/">', 1).encode("utf-8")
        self.send_response(404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


def _serve(page: str, port: int, *, opening: bool) -> int:
    handler = functools.partial(_Quiet, directory=str(SITE))
    try:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    except OSError as error:
        raise InvalidOptionError(f"cannot listen on 127.0.0.1:{port} ({error.strerror}): pass --port with a free port, or 0") from None
    address = f"http://127.0.0.1:{server.server_address[1]}/{page}"
    print(f"{address}   (Ctrl-C stops it; NEURONDEV_DOCS_URL=http://127.0.0.1:{server.server_address[1]}/ links findings here)", flush=True)
    if opening:
        import webbrowser

        webbrowser.open(address)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
