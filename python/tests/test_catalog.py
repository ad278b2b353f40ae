"""Experiments (root): run, the catalog, records, timelines, trace tables.
Run under the shared lock (scripts/test.sh takes it)."""

import subprocess

import pyarrow as pa

import swaplab

CMD = ["sh", "-c", "head -c 30000000 /dev/zero | tail -c 1 >/dev/null"]


def test_run_lands_in_the_catalog(tmp, root):
    out = swaplab.run(CMD, mem_limit="256M", home=tmp / "home")
    (rec,) = out["runs"]
    assert rec["outcome"] == "ok" and rec["exit_code"] == 0
    assert rec["limit_bytes"] == 256 << 20
    cat = swaplab.catalog(tmp / "home")
    runs = cat["runs"]
    assert runs["id"].tolist() == [rec["id"]]
    assert runs["command"].tolist() == [" ".join(CMD)]
    assert runs["limit_bytes"].tolist() == [256 << 20]
    # The metrics are columns, with the record's values.
    assert runs["wall_ns"].tolist() == [rec["metrics"]["wall_ns"]["value"]]
    # The record read back through the catalog is the one run returned.
    back = swaplab.run_record(rec["id"], tmp / "home")
    assert back["command"] == CMD and back["dir"] == rec["dir"]
    assert "<table>" in back._repr_html_()
    # The 20 Hz timeline: at least the first and last samples.
    tl = swaplab.timeline(rec["id"], tmp / "home")
    assert len(tl) >= 2
    # A repeat group is a sweep row.
    swaplab.run(CMD, mem_limit="256M", repeat=2, home=tmp / "home")
    sw = swaplab.catalog(tmp / "home")["sweeps"]
    assert sw["kind"].tolist() == ["repeat"]
    assert len(swaplab.sweep_record(int(sw["id"][0]), tmp / "home")["runs"]) == 2


def test_run_errors_are_the_clis(tmp, root):
    import pytest

    with pytest.raises(swaplab.SwaplabError, match="mem-limit|limit"):
        swaplab.run(CMD, mem_limit="lots", home=tmp / "home")


def test_trace_tables(tmp, root):
    subprocess.run([root, "trace", "-o", "tdir", "--", *CMD], check=True, capture_output=True)
    t = swaplab.trace_tables("tdir")
    assert {"faults", "swaps", "regions", "sites", "meta"} <= set(t)
    assert isinstance(t["faults"], pa.Table)
    # The fault table's rows are the faults the trace's metadata counts.
    assert t["faults"].num_rows > 0
