"""Bad input is a SwaplabError with a message saying what to do; nothing
reaches a panic (pyo3's PanicException, or swaplab's "internal error")."""

import os
import random

import numpy as np
import pytest

import swaplab

E = swaplab.SwaplabError


def raises(match, f, *a, **k):
    with pytest.raises(E, match=match) as ei:
        f(*a, **k)
    assert "internal error" not in str(ei.value)
    return str(ei.value)


def test_the_error_type():
    assert issubclass(E, ValueError)


def test_bad_trace_files(tmp):
    raises("nope.parquet: no such file", swaplab.read_trace, "nope.parquet")
    raises("nope.parquet: no such file", swaplab.sim, "nope.parquet")
    (tmp / "empty.parquet").write_bytes(b"")
    raises("the file is empty", swaplab.read_trace, "empty.parquet")
    os.mkdir("d.parquet")
    raises("a directory, not a trace file", swaplab.load_trace, "d.parquet")
    (tmp / "x.bin2").write_bytes(b"hello")
    raises("not a swaplab trace and no known extension", swaplab.read_trace, "x.bin2")
    (tmp / "c.txt").write_text("12\nhello\n")
    raises("c.txt", swaplab.sim, "c.txt")
    # A trace of comments only has no references.
    (tmp / "n.txt").write_text("# nothing\n")
    raises("no references", swaplab.sim, "n.txt")


def test_corrupt_and_truncated_traces_never_panic(tmp):
    swaplab.gen("zipf:pages=300", "ok.parquet", count=5000)
    good = (tmp / "ok.parquet").read_bytes()
    rng = random.Random(7)
    cases = [good[:n] for n in (4, 8, 100, len(good) // 2, len(good) - 8, len(good) - 1)]
    for _ in range(40):
        b = bytearray(good)
        for _ in range(rng.randint(1, 20)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        cases.append(bytes(b))
    cases += [bytes(rng.randrange(256) for _ in range(rng.randint(1, 3000))) for _ in range(20)]
    cases += [b"PAR1" + bytes(100) + b"PAR1"]
    for i, data in enumerate(cases):
        for ext in (".parquet", ".bin", ".txt"):
            p = tmp / f"bad{i}{ext}"
            p.write_bytes(data)
            for f in (swaplab.load_trace, swaplab.read_trace):
                try:
                    f(str(p))
                except E as e:
                    assert "internal error" not in str(e), (p, e)
                    assert str(p.name) in str(e) or "bad" in str(e), (p, e)
                except OSError:
                    # pyarrow reading a native trace whose footer parsed but
                    # whose data did not (reported by pyarrow, not a panic).
                    assert f is swaplab.read_trace
            try:
                swaplab.sim(str(p), ["lru"], ["50%"])
            except E as e:
                assert "internal error" not in str(e), (p, e)


def test_bad_arguments(tmp):
    t = {"page": [1, 2, 3, 1]}
    raises("unknown policy", swaplab.sim, t, ["nosuch"], [2])
    raises("bits=99: expected a whole number from 1 to 8", swaplab.sim, t, ["clock:bits=99"], [2])
    raises("memory size|size", swaplab.sim, t, ["lru"], ["abc"])
    raises("no memory size given", swaplab.sim, t, ["lru"], [])
    raises("no policy given", swaplab.sim, t, [], [2])
    raises("prefetch|unknown", swaplab.sim, t, ["lru"], [2], prefetch="warp")
    raises("cannot read hint file", swaplab.sim, t, ["lru"], [2], hints="missing.toml")
    raises("negative page number", swaplab.sim, {"page": [1, -2]}, ["lru"], [1])
    raises("must hold integers", swaplab.sim, {"page": [1.5, 2.0]}, ["lru"], [1])
    raises("must be 1-D", swaplab.write_trace, np.zeros((2, 2), dtype=np.uint64), path="x.parquet")
    raises("2 pages but 3 write flags", swaplab.write_trace, [1, 2], [True, False, True],
           path="x.parquet")
    raises("2 pages but 1 write flags", swaplab.sim, {"page": [1, 2], "write": [True]}, ["lru"], [1])
    raises("power of two", swaplab.write_trace, [1], path="x.parquet", page_size=3)
    raises("needs path=", swaplab.write_trace, [1])
    raises("no references", swaplab.sim, {"page": []}, ["lru"], [1])
    raises("a trace is a path", swaplab.sim, 42, ["lru"], [1])
    raises("pattern|unknown", swaplab.gen, "warp:pages=3", "g.parquet")
    raises("count|number", swaplab.gen, "seq:pages=3", "g.parquet", count="lots")
    raises("at least one pattern", swaplab.gen, [], "g.parquet")
    raises("format", swaplab.import_trace, __file__, "i.parquet", format="nosuch")
    raises("cannot tell the format", swaplab.import_trace, __file__, "i.parquet")
    raises("no such file", swaplab.import_trace, "missing.csv", "i.parquet")
    (tmp / "c.csv").write_text("a,b\n1,2\n")
    raises("delimiter", swaplab.import_trace, "c.csv", "i.parquet", delimiter=";;")
    raises("shards is a sampling rate", swaplab.mrc, t, shards=2.0)
    raises("shards_size", swaplab.mrc, t, shards_size=0)
    raises("source .*martian.* is not a trace source", swaplab.write_trace, [1], path="x.parquet",
           source={"kind": "martian"})
    raises("source must be a string or a dict, not int", swaplab.write_trace, [1], path="x.parquet",
           source=3)
    assert not (tmp / "x.parquet").exists()


def test_catalog_errors(tmp):
    raises("run 12345|12345", swaplab.run_record, 12345)
    raises("no such trace directory", swaplab.trace_tables, "nowhere")
    os.mkdir("td")
    raises("not a trace directory", swaplab.trace_tables, "td")
