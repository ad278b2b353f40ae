"""The package type-checks: mypy with python/pyproject.toml's [tool.mypy]
(strict) on python/swaplab, the extension's types from _swaplab.pyi.
scripts/setup.sh installs mypy and pandas-stubs into target/pyenv."""

import importlib.metadata
import subprocess
import sys

from conftest import ROOT, facility_missing


def test_mypy_finds_no_type_errors():
    for tool in ("mypy", "pandas-stubs"):
        try:
            importlib.metadata.version(tool)
        except importlib.metadata.PackageNotFoundError:
            facility_missing(tool, "pip install mypy pandas-stubs (scripts/setup.sh installs them)")
    p = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", "pyproject.toml",
         "--cache-dir", str(ROOT / "target" / "mypy-cache")],
        cwd=ROOT / "python", capture_output=True, text=True,
    )
    assert p.returncode == 0, f"mypy found type errors:\n{p.stdout}{p.stderr}"
    assert "Success: no issues found" in p.stdout, p.stdout
