"""neurondev docs: builds the site when the checkout has none, prints (or opens) a rule's page, serves the site."""

from __future__ import annotations

import argparse
import subprocess
import sys
import urllib.request

import pytest

from neurondev.cli import docs_site

pytestmark = pytest.mark.docs


def test_a_checkout_without_a_site_gets_one_built_and_the_rules_page_named(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(docs_site, "SITE", tmp_path / "site")
    options = argparse.Namespace(rule="nd205", build=False, serve=False, port=8000, no_open=True)
    assert docs_site.run_docs(options) == 0
    page = tmp_path / "site" / "rules" / "ND205.html"
    assert capsys.readouterr().out.strip() == page.as_uri()
    assert "ND205: cpu-fallback" in page.read_text()


def test_served_the_site_answers_with_the_rules_page_until_stopped():
    served = subprocess.Popen(
        [sys.executable, "-m", "neurondev", "docs", "ND101", "--serve", "--port", "0", "--no-open"], stdout=subprocess.PIPE, text=True
    )
    try:
        address = served.stdout.readline().split()[0]
        assert address.startswith("http://127.0.0.1:") and address.endswith("/rules/ND101.html")
        with urllib.request.urlopen(address, timeout=60) as answer:
            assert "ND101: frozen-device-pin" in answer.read().decode()
    finally:
        served.terminate()
        served.wait(timeout=60)
