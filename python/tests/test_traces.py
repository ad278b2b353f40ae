"""Traces: gen, read_trace, write_trace, import_trace, load_trace."""

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

import swaplab


def test_gen_writes_the_patterns_references(tmp):
    # seq:pages=10 wraps after 10 pages: 25 references are 0..9, 0..9, 0..4.
    meta = swaplab.gen("seq:pages=10", "s.parquet", count=25)
    assert (meta["count"], meta["distinct_pages"], meta["writes"]) == (25, 10, 0)
    t = swaplab.read_trace("s.parquet")
    expect = list(range(10)) * 2 + list(range(5))
    assert t.column("page").to_pylist() == expect
    # Read independently of swaplab's Python code: pyarrow on the file.
    assert pq.read_table("s.parquet").column("page").to_pylist() == expect
    md = json.loads(t.schema.metadata[b"swaplab.trace"])
    assert md["count"] == 25 and md["page_size"] == 4096
    # Counts as strings, as on the command line.
    assert swaplab.gen(["uniform:pages=100", "loop:pages=5"], "u.parquet", count="2k")["count"] == 2000


def test_write_trace_round_trips_numpy_and_lists(tmp):
    pages = np.array([7, 3, 7, 9, 3, 3], dtype=np.uint64)
    writes = np.array([1, 0, 0, 1, 0, 1], dtype=bool)
    meta = swaplab.write_trace(pages, writes, path="w.parquet", page_size=8192, source="unit test")
    assert (meta["count"], meta["distinct_pages"], meta["writes"], meta["page_size"]) == (6, 3, 3, 8192)
    assert meta["source"] == {"kind": "imported", "path": "unit test", "format": "python", "options": {}}
    # The extension returns the objects themselves: the same metadata as the file's.
    from swaplab import _swaplab

    assert _swaplab.trace_meta("w.parquet") == meta
    assert swaplab.load_trace("w.parquet").source == meta["source"]
    # The metadata's own dict form of a source is kept as given.
    src = {"kind": "captured", "command": ["./a.out", "-n", "3"]}
    assert swaplab.write_trace([1, 2], path="s.parquet", source=src)["source"] == src
    t = pq.read_table("w.parquet")
    assert t.column("page").to_pylist() == [7, 3, 7, 9, 3, 3]
    assert t.column("write").to_pylist() == [True, False, False, True, False, True]
    # Dense ids in first-use order: 7 -> 0, 3 -> 1, 9 -> 2.
    assert t.column("id").to_pylist() == [0, 1, 0, 2, 1, 1]
    # A plain list of ints and no writes.
    swaplab.write_trace([5, 6, 5], path="l.parquet")
    t = swaplab.read_trace("l.parquet")
    assert t.column("page").to_pylist() == [5, 6, 5]
    assert t.column("write").to_pylist() == [False] * 3
    # More than one writer batch (64 Ki references).
    big = np.arange(200_000, dtype=np.uint64) % 1000
    w = big % 3 == 0
    assert swaplab.write_trace(big, w, path="b.parquet")["writes"] == int(w.sum())
    t = swaplab.read_trace("b.parquet")
    assert np.array_equal(t.column("page").to_numpy(), big)
    assert np.array_equal(t.column("write").to_numpy(zero_copy_only=False), w)


def test_text_traces_are_read_without_import(tmp):
    (tmp / "t.txt").write_text("# a comment\n0x10 w\n16\n17 read\n\n0x10, r\n")
    t = swaplab.read_trace("t.txt")
    assert t.column("page").to_pylist() == [16, 16, 17, 16]
    assert t.column("write").to_pylist() == [True, False, False, False]
    meta = swaplab.import_trace("t.txt", "t.parquet")
    assert (meta["count"], meta["distinct_pages"], meta["writes"]) == (4, 2, 1)
    assert swaplab.read_trace("t.parquet").column("page").to_pylist() == [16, 16, 17, 16]


def test_csv_import_names_its_columns(tmp):
    (tmp / "c.csv").write_text("ts,lbn,op\n1,100,r\n2,200,w\n3,100,w\n")
    meta = swaplab.import_trace("c.csv", "c.parquet", header=True, id_column="lbn", op_column="op",
                                time_column="ts")
    assert (meta["count"], meta["distinct_pages"], meta["writes"], meta["has_time"]) == (3, 2, 2, True)
    t = swaplab.read_trace("c.parquet")
    assert t.column("page").to_pylist() == [100, 200, 100]
    assert t.column("time_ns").to_pylist() == [1_000_000_000, 2_000_000_000, 3_000_000_000]
    # Reading the CSV directly says how to convert it.
    with pytest.raises(swaplab.SwaplabError, match="a CSV needs its columns named"):
        swaplab.read_trace("c.csv")


def test_load_trace_from_tables_equals_the_file(tmp):
    swaplab.gen("zipf:pages=500:alpha=0.9:writes=0.25", "z.parquet", count=20_000, seed=3)
    f = swaplab.load_trace("z.parquet")
    tbl = swaplab.read_trace("z.parquet")
    for other in (swaplab.load_trace(tbl), swaplab.load_trace(tbl.to_pandas()),
                  swaplab.load_trace({"page": tbl.column("page").to_numpy(),
                                      "write": tbl.column("write").to_numpy(zero_copy_only=False)})):
        assert (len(other), other.distinct, other.writes) == (len(f), f.distinct, f.writes)
        p1, w1 = f.to_arrays()
        p2, w2 = other.to_arrays()
        assert np.array_equal(p1, p2) and np.array_equal(w1, w2)
    assert "20000 references" in repr(f)
