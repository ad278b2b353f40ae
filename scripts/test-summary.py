#!/usr/bin/env python3
"""The suite's results, read from one folder, into its summary line.

Every test of the suite ends as a record in target/test-results/:

* a Rust test binary (host or guest) as libtest's JSON events, NAME.json
  (scripts/test-runner on the host, scripts/kernels.sh in the guests), with
  NAME.skips (the `SKIP test: reason [facility]` lines of crates/testkit)
  and NAME.status (the binary's exit status);
* the Python tests the same way, pytest.json, .skips and .status
  (python/tests/conftest.py writes libtest's events);
* what the harness itself checks (the build, the system state after the
  suite, a guest that did not report) as events of the same JSON format,
  harness.json (`--event`).

A folder's path below the results folder names where its tests ran
(`guest/6.12/on-file`: the 6.12 guest, MGLRU on, swap file).

  test-summary.py --one FILE.json        one binary's counts (test-runner)
  test-summary.py --counts DIR           the failures (with their output)
                                         and the counts of the tests below
                                         DIR (a guest's configuration)
  test-summary.py --event FILE NAME ok|failed [MESSAGE]
                                         append one harness event
  test-summary.py DIR [--seconds S]      the summary: failures with their
                                         output, skips with their reasons,
                                         the slowest tests and binaries
                                         (all of them in DIR/times.txt), and
                                         "N passed, N failed, N skipped";
                                         exits 1 when a test failed

A test skipped for a missing facility returns early, and libtest counts it
as passed: it is counted as skipped here (its name is in NAME.skips). A
test libtest started and never ended (the binary crashed or was killed) is
a failure, and so is a binary that exited non-zero without a failed test.
`#[ignore]`d tests are measurements run by hand (`--ignored`): counted
apart, neither passed nor skipped.
"""
import json
import os
import sys


class Suite:
    """One test binary's (or pytest's) tests: name -> outcome, seconds, output."""

    def __init__(self, label):
        self.label = label
        self.tests = {}  # name -> [outcome, seconds, output]
        self.skips = {}  # name -> reason
        self.seconds = 0.0
        self.notes = []  # failures that are no test's (a crash)

    def counts(self):
        c = {"passed": 0, "failed": len(self.notes), "skipped": 0, "ignored": 0}
        for name, (outcome, _, _) in self.tests.items():
            if outcome == "ok" and name in self.skips:
                c["skipped"] += 1
            elif outcome == "ok":
                c["passed"] += 1
            elif outcome == "skipped":
                c["skipped"] += 1
            elif outcome == "ignored":
                c["ignored"] += 1
            else:
                c["failed"] += 1
        return c


def read_skips(path):
    skips = {}
    if os.path.exists(path):
        for line in open(path, errors="replace"):
            if line.startswith("SKIP ") and ": " in line:
                name, reason = line[5:].rstrip("\n").split(": ", 1)
                skips[name] = reason
    return skips


def read_libtest(path, label):
    """libtest's JSON events. Other output, the prints of a test's child
    processes to the binary's stdout, is passed over, also where it starts
    the line of an event (a child's "test x ... " without its newline)."""
    s = Suite(label)
    started = []
    decoder = json.JSONDecoder()
    for line in open(path, errors="replace"):
        at = line.find('{ "type": ')
        if at < 0:
            continue
        try:
            e, _ = decoder.raw_decode(line, at)
        except ValueError:
            continue
        if e.get("type") == "suite" and "exec_time" in e:
            s.seconds += float(e["exec_time"])
        if e.get("type") != "test":
            continue
        name, event = e.get("name", "?"), e.get("event")
        if event == "started":
            started.append(name)
            continue
        outcome = {"ok": "ok", "failed": "failed", "ignored": "ignored", "timeout": None}.get(event)
        if outcome is None:
            continue
        s.tests[name] = [outcome, float(e.get("exec_time", 0.0)), e.get("stdout", "")]
    for name in started:
        if name not in s.tests:
            s.tests[name] = ["failed", 0.0, "started, never ended: the binary crashed or was killed"]
    base = path[: -len(".json")]
    s.skips = read_skips(base + ".skips")
    if os.path.exists(base + ".status"):
        status = open(base + ".status").read().strip()
        if status != "0" and s.counts()["failed"] == 0:
            s.notes.append("exited with status %s and no failed test: it crashed or did not start "
                           "(its output is in the log above)" % status)
    return s


def read_all(top):
    suites = []
    for d, dirs, files in sorted(os.walk(top)):
        dirs.sort()
        where = os.path.relpath(d, top)
        for f in sorted(files):
            p = os.path.join(d, f)
            label = f.rsplit(".", 1)[0] if where == "." else "%s: %s" % (where, f.rsplit(".", 1)[0])
            if f.endswith(".json"):
                suites.append(read_libtest(p, label))
    return suites


def line(c):
    s = "%d passed, %d failed, %d skipped" % (c["passed"], c["failed"], c["skipped"])
    if c.get("ignored"):
        s += " (%d ignored: measurements run by hand with --ignored)" % c["ignored"]
    return s


def tail(text, n=40):
    lines = text.rstrip("\n").split("\n")
    cut = len(lines) - n
    return (["    (%d lines before)" % cut] if cut > 0 else []) + ["    " + x for x in lines[-n:]]


def failures(s):
    """(what, output) of each failure of a suite."""
    out = [("%s: %s" % (s.label, note), "") for note in s.notes]
    for name, (outcome, _, text) in sorted(s.tests.items()):
        if outcome == "failed":
            out.append(("%s: %s" % (s.label, name), text))
    return out


def summary(top, seconds):
    suites = read_all(top)
    total = {"passed": 0, "failed": 0, "skipped": 0, "ignored": 0}
    fails, skips, times = [], [], []
    for s in suites:
        for k, v in s.counts().items():
            total[k] += v
        fails += failures(s)
        for name, (_, secs, _) in sorted(s.tests.items()):
            times.append((secs, s.label, name))
        for name, reason in sorted(s.skips.items()):
            if name in s.tests:
                skips.append("%s: %s: %s" % (s.label, name, reason))
    times.sort(reverse=True)
    with open(os.path.join(top, "times.txt"), "w") as f:
        f.write("# seconds, binary (test-results path), and test; binaries first\n")
        for s in sorted(suites, key=lambda s: -s.seconds):
            f.write("%8.1f  %s\n" % (s.seconds, s.label))
        for secs, label, name in times:
            f.write("%8.1f  %s: %s\n" % (secs, label, name))
    by_binary = sorted(suites, key=lambda s: -s.seconds)
    print("slowest test binaries (all, and every test, in %s):" % os.path.join(top, "times.txt"))
    for s in by_binary[:6]:
        print("  %7.1f s  %s" % (s.seconds, s.label))
    print("slowest tests:")
    for secs, label, name in times[:8]:
        print("  %7.1f s  %s: %s" % (secs, label, name))
    if fails:
        print("failed tests:")
        for what, out in fails:
            print("  " + what)
            if out.strip():
                print("\n".join(tail(out)))
    if skips:
        print("skipped tests:")
        for s in skips:
            print("  " + s)
    print(line(total) + ("" if seconds is None else " (%s s)" % seconds))
    return 1 if total["failed"] else 0


def event(path, name, outcome, message):
    """One harness check as a libtest event (a failure carries its message
    as the test's output)."""
    e = {"type": "test", "name": name, "event": outcome, "exec_time": 0.0}
    if message:
        e["stdout"] = message
    with open(path, "a") as f:
        f.write(json.dumps(e) + "\n")


def main(argv):
    if len(argv) >= 2 and argv[0] == "--one":
        s = read_libtest(argv[1], os.path.basename(argv[1])[: -len(".json")])
        print("  %s: %s (%.1f s)" % (s.label, line(s.counts()), s.seconds))
        return 0
    if len(argv) >= 4 and argv[0] == "--event":
        if argv[3] not in ("ok", "failed"):
            sys.exit("--event FILE NAME ok|failed [MESSAGE]: the outcome is ok or failed, not %r" % argv[3])
        event(argv[1], argv[2], argv[3], " ".join(argv[4:]))
        return 0
    if len(argv) == 2 and argv[0] == "--counts":
        suites = read_all(argv[1])
        total = {"passed": 0, "failed": 0, "skipped": 0, "ignored": 0}
        for s in suites:
            for k, v in s.counts().items():
                total[k] += v
            for what, out in failures(s):
                print("  " + what)
                if out.strip():
                    print("\n".join(tail(out)))
        print(line(total))
        return 0
    if len(argv) in (1, 3) and (len(argv) == 1 or argv[1] == "--seconds"):
        return summary(argv[0], argv[2] if len(argv) == 3 else None)
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
