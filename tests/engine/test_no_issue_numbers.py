"""The product says what a behaviour is, never which of our issues asked for it: no file a user or a
reader of the code meets (README, docs, pages, callbacks, services, engine, assets, shipped samples,
bench and scripts) cites one of our issue numbers ("issue 18", "Issue 13 item 5", "(#18)").

Upstream citations stay: Pulsar pull requests and issues are named by their repository or their
four- and five-digit numbers ("apache/pulsar#24954", "#24954"), which this scan does not match.
"""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("README.md", "app.py", "Makefile", "docs", "layouts", "callbacks", "dashboard", "engine", "assets",
           "samples", "bench", "scripts")
TEXT = {".py", ".md", ".js", ".css", ".yaml", ".yml", ".json", ".txt", ".ini", ".toml", ".cfg", ".sh", ".html", ""}
#: "issue 18", "Issue 13 item 5", "issues 7", "issue #14", "issue-16"; "(#18)" (a short number in brackets)
OUR_ISSUE = re.compile(r"\bissues?[ -]?(?:no\.? ?)?#?\d+\b|\(#\d{1,3}\)", re.IGNORECASE)


def _product_files():
    for name in PRODUCT:
        p = ROOT / name
        paths = [p] if p.is_file() else sorted(x for x in p.rglob("*") if x.is_file()) if p.is_dir() else []
        for f in paths:
            if f.suffix in TEXT and "__pycache__" not in f.parts:
                yield f


def test_no_product_file_cites_our_issue_numbers():
    files = list(_product_files())
    assert len(files) > 200  # the scan reaches the product
    found = []
    for f in files:
        try:
            text = f.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            for m in OUR_ISSUE.finditer(line):
                found.append(f"{f.relative_to(ROOT)}:{n}: {m.group(0)!r} in {line.strip()[:120]!r}")
    assert not found, "issue numbers in the product (say what the behaviour is instead):\n" + "\n".join(found[:40])


def test_the_scan_tells_our_citations_from_upstream_ones():
    ours = ["Issue 18: broker-0 sheds", "(issue 13 item 1)", "see issue #14", "issues 7", "fixed (#18)", "issue-16"]
    upstream = ["apache/pulsar#24954", "Pulsar PR #24954", "(#24954)", 'java_long_decode("#10")', "range(18)",
                "tissue 5"]
    assert all(OUR_ISSUE.search(s) for s in ours)
    assert not any(OUR_ISSUE.search(s) for s in upstream)
