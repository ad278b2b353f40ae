"""Fixtures of swaplab's Python tests (run by scripts/test.sh, or
`target/pyenv/bin/pytest python/tests` after scripts/setup.sh)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import swaplab

ROOT = Path(__file__).resolve().parents[2]
CI = os.environ.get("CI") == "true"


def facility_missing(what: str, how: str):
    """Skips for a missing facility, or fails on CI (where it must be there)."""
    if CI:
        pytest.fail(f"{what} is missing on CI: {how}")
    pytest.skip(f"{what} is missing ({how})")


@pytest.fixture(scope="session")
def cli() -> str:
    """The swaplab binary of this checkout (scripts/test.sh builds it)."""
    for prof in ("debug", "release"):
        p = ROOT / "target" / prof / "swaplab"
        if p.is_file():
            return str(p)
    pytest.fail("target/debug/swaplab is not built: cargo build -p swaplab")


@pytest.fixture
def tmp(tmp_path, monkeypatch):
    """A temporary working directory with its own catalog ($SWAPLAB_HOME)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SWAPLAB_HOME", str(tmp_path / "home"))
    return tmp_path


def run_json(cli: str, *args: str):
    import json

    p = subprocess.run([cli, *args, "--json"], capture_output=True, text=True, check=True)
    return json.loads(p.stdout)


@pytest.fixture
def root(cli, monkeypatch):
    """Root with a cgroup memory controller (real runs), the checkout's binary."""
    if os.geteuid() != 0:
        facility_missing("root", "real runs need root: run the tests as root")
    if not (Path("/sys/fs/cgroup/memory").is_dir() or Path("/sys/fs/cgroup/cgroup.controllers").exists()):
        facility_missing("a memory cgroup", "mount the cgroup memory controller")
    monkeypatch.setenv("SWAPLAB_BIN", cli)
    return cli


@pytest.fixture(scope="module")
def ray_local():
    """A local Ray cluster of 2 CPUs offering one swaplab_node."""
    try:
        import ray
    except ImportError:
        facility_missing("ray", "pip install ray (scripts/setup.sh installs it into target/pyenv)")
    ray.init(
        num_cpus=2,
        resources={"swaplab_node": 1},
        include_dashboard=False,
        log_to_driver=False,
    )
    yield ray
    ray.shutdown()
