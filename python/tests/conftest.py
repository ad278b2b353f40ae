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


# The suite's one result format: with SWAPLAB_PYTEST_JSON=PATH (set by
# scripts/test.sh), each test's outcome is written as libtest's JSON events
# (`cargo test -- --format json`), and each skip's reason as
# `SKIP name: reason` in PATH's .skips file, as scripts/test-runner writes
# them for a Rust test binary; scripts/test-summary.py reads both alike.
# Names are `tests.test_file::test_name`.
_RESULTS = os.environ.get("SWAPLAB_PYTEST_JSON")
_times: dict = {}
_done: set = set()


def _name(nodeid: str) -> str:
    path, _, rest = nodeid.partition("::")
    mod = path.rsplit("/", 2)[-2:]
    return "%s.%s::%s" % (mod[0], mod[-1].removesuffix(".py"), rest)


def _emit(event: dict) -> None:
    import json

    # libtest's spacing, `{ "type": `, which the summary looks for.
    with open(_RESULTS, "a") as f:
        f.write("{ " + json.dumps(event)[1:] + "\n")


def pytest_sessionstart(session):
    if _RESULTS:
        for p in (_RESULTS, _RESULTS.removesuffix(".json") + ".skips"):
            open(p, "w").close()
        _emit({"type": "suite", "event": "started"})


def pytest_runtest_logreport(report):
    if not _RESULTS:
        return
    name = _name(report.nodeid)
    _times[name] = _times.get(name, 0.0) + report.duration
    if name in _done:
        if report.failed:  # a teardown error after the test passed
            _emit({"type": "test", "event": "failed", "name": name,
                   "exec_time": _times[name], "stdout": report.longreprtext})
        return
    final = report.when == "call" or report.failed or report.skipped
    if not final:
        return
    _done.add(name)
    _emit({"type": "test", "event": "started", "name": name})
    event = {"type": "test", "event": "failed" if report.failed else "ok", "name": name,
             "exec_time": _times[name]}
    if report.failed:
        event["stdout"] = report.longreprtext
    if report.skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        with open(_RESULTS.removesuffix(".json") + ".skips", "a") as f:
            f.write("SKIP %s: %s\n" % (name, reason.removeprefix("Skipped: ")))
    _emit(event)


def pytest_sessionfinish(session, exitstatus):
    if _RESULTS:
        _emit({"type": "suite", "event": "ok" if exitstatus == 0 else "failed",
               "exec_time": sum(_times.values())})
