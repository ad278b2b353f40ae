"""docs/python.md's examples run as written: its ```python blocks are
executed in order, in one namespace, in an empty directory with its own
catalog. A block whose first line is `# needs root` needs root."""

import os
import re
from pathlib import Path

import pytest

from conftest import ROOT, facility_missing

DOC = ROOT / "docs" / "python.md"


def blocks():
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


def test_the_doc_has_examples():
    bs = blocks()
    assert len(bs) >= 6
    assert any("swaplab.ray" in b for b in bs) and any("swaplab.sim(" in b for b in bs)


def test_the_examples_run(tmp, cli, monkeypatch):
    try:
        import ray  # noqa: F401
    except ImportError:
        facility_missing("ray", "pip install ray")
    if os.geteuid() != 0:
        facility_missing("root", "the catalog example runs a program as root")
    monkeypatch.setenv("SWAPLAB_BIN", cli)
    ns: dict = {}
    for i, code in enumerate(blocks()):
        try:
            exec(compile(code, f"{DOC}:block{i + 1}", "exec"), ns)
        except Exception as e:
            pytest.fail(f"docs/python.md block {i + 1} failed: {type(e).__name__}: {e}\n{code}")
