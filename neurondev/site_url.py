"""Where the documentation site is, for every finding's link: ``NEURONDEV_DOCS_URL`` (checked), or this checkout's site."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["docs_url"]


def docs_url() -> str:
    """Where the documentation site is, ending in '/': ``NEURONDEV_DOCS_URL`` when set (a served or hosted copy of the
    site), else the site ``make docs`` (or ``neurondev docs``) builds in this checkout, as a ``file://`` URL."""
    given = os.environ.get("NEURONDEV_DOCS_URL")
    if given:
        _check_docs_url(given)
        return given if given.endswith("/") else f"{given}/"
    return (Path(__file__).resolve().parent.parent / "site").as_uri() + "/"


def _check_docs_url(given: str) -> None:
    """InvalidOptionError unless ``given`` is an http, https or file URL, or a path relative to the page (a site
    beside a report, a notebook's ``../``), with no space, quote or control character: it goes into every link."""
    from urllib.parse import urlsplit

    from neurondev.errors import InvalidOptionError

    scheme = urlsplit(given).scheme.lower()
    unsafe = any(character.isspace() or not character.isprintable() or character in "\"'<>`" for character in given)
    if unsafe or scheme not in ("", "http", "https", "file"):
        raise InvalidOptionError(
            f"NEURONDEV_DOCS_URL is an http, https or file URL of the documentation site (or a path relative to the page), with "
            f"no space, quote or control character; got {given!r}: e.g. NEURONDEV_DOCS_URL=https://docs.example/neurondev/"
        )
