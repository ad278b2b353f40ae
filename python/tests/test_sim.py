"""Simulation: hand-worked answers, and the CLI's numbers to the last miss."""

import threading
import sys

import numpy as np
import pytest

import swaplab
from conftest import run_json

# The textbook reference string of Belady's anomaly.
BELADY = [1, 2, 3, 4, 1, 2, 5, 1, 2, 3, 4, 5]


def test_belady_string_by_hand():
    df = swaplab.sim({"page": np.array(BELADY, dtype=np.uint64)}, ["fifo", "lru", "opt"], [3, 4])
    misses = {(r.policy, r.capacity): r.minor_faults + r.major_faults for r in df.itertuples()}
    # FIFO: 9 faults with 3 frames, 10 with 4 (the anomaly); LRU: 10 and 8;
    # OPT (Belady's MIN): 7 and 6.
    assert misses == {("fifo", 3): 9, ("fifo", 4): 10, ("lru", 3): 10, ("lru", 4): 8,
                      ("opt", 3): 7, ("opt", 4): 6}
    assert (df.references == 12).all()
    assert list(df.columns[:3]) == ["policy", "capacity", "references"]


def test_sim_equals_the_cli_json(tmp, cli):
    swaplab.gen(["zipf:pages=3000:alpha=0.8:writes=0.3", "loop:pages=800:base=100000"],
                "t.parquet", count=20_000, interleave=True)
    for extra in ([], ["--prefetch", "none,cluster:pc=2,vma"]):
        want = run_json(cli, "sim", "t.parquet", "--policy", "all", "--mem", "10%,25%,300,2M",
                        *extra)
        pf = None if not extra else extra[1].split(",")
        got = swaplab.sim("t.parquet", policies="all", mem=["10%", "25%", 300, "2M"], prefetch=pf)
        # Same columns, same order, same rows, same numbers (NaN where the CLI omits).
        keys = list(dict.fromkeys(k for r in want for k in r))
        assert list(got.columns) == keys
        recs = [{k: v for k, v in r.items() if not (isinstance(v, float) and v != v)}
                for r in got.to_dict("records")]
        assert recs == want


def test_a_streamed_simulation_gives_the_same_rows(tmp, cli):
    # stream=True never holds the trace (swaplab sim --stream): the same rows
    # as the in-memory simulation and as the CLI's streamed one, OPT's next
    # uses from a backward pass spilled to a file.
    swaplab.gen(["zipf:pages=2000:alpha=0.8:writes=0.3", "loop:pages=700:base=100000"],
                "t.parquet", count=15_000, interleave=True)
    pol, mem = ["lru", "clock", "opt", "arc"], ["5%", 300, "50%"]
    want = swaplab.sim("t.parquet", pol, mem)
    got = swaplab.sim("t.parquet", pol, mem, stream=True, spill_dir=str(tmp))
    assert got.attrs["title"] == "swaplab sim --stream"
    assert got.to_dict("records") == want.to_dict("records")
    assert got.to_dict("records") == run_json(
        cli, "sim", "t.parquet", "--stream", "--policy", ",".join(pol), "--mem", "5%,300,50%")
    for kw, msg in (({"prefetch": "vma"}, "drop prefetch"), ({"spill_dir": "."}, None)):
        with pytest.raises(swaplab.SwaplabError, match=msg or "stream=True"):
            swaplab.sim("t.parquet", pol, mem, stream="prefetch" in kw, **kw)
    # another format streams as it is (read once: the pages numbered and
    # their ids spilled first), OPT too; a CSV, whose columns need naming,
    # is refused
    rng = np.random.default_rng(7)
    pages = np.concatenate([rng.zipf(1.3, 6000) % 3000, np.arange(9000) % 1200])
    with open("t.txt", "w") as f:
        f.writelines(f"{p} {'w' if i % 3 == 0 else 'r'}\n" for i, p in enumerate(pages))
    got = swaplab.sim("t.txt", pol, mem, stream=True, spill_dir=str(tmp))
    assert got.to_dict("records") == swaplab.sim("t.txt", pol, mem).to_dict("records")
    with open("t.csv", "w") as f:
        f.write("id,op\n1,r\n")
    with pytest.raises(swaplab.SwaplabError, match="columns named"):
        swaplab.sim("t.csv", pol, mem, stream=True)
    with pytest.raises(swaplab.SwaplabError, match="from its path"):
        swaplab.sim({"page": np.array([1, 2], dtype=np.uint64)}, pol, mem, stream=True)


def test_mrc_equals_the_cli(tmp, cli):
    swaplab.gen("zipf:pages=2000:alpha=0.7", "m.parquet", count=30_000)
    want = run_json(cli, "mrc", "m.parquet", "--points", "7", "--shards", "0.1", "--policy", "clock")
    got = swaplab.mrc("m.parquet", points=7, shards=0.1, policies="clock")
    assert got["mem_pages"].tolist() == want["sizes"]
    for c in want["curves"]:
        assert got[c["name"]].tolist() == c["miss_ratio"]
        if c["mae"] is not None:
            assert got.attrs["mae"][c["name"]] == c["mae"]


def test_the_gil_is_released_while_simulating(tmp):
    # With a huge switch interval a thread holding the GIL keeps it until it
    # blocks: the main thread runs during the simulation only if the
    # simulator released the GIL.
    swaplab.gen("uniform:pages=50000", "g.parquet", count=500_000)
    t = swaplab.load_trace("g.parquet")
    started, state = threading.Event(), {"done": False}

    def work():
        started.set()
        swaplab.sim(t, ["lru", "clock"], ["10%", "50%"])
        state["done"] = True

    old = sys.getswitchinterval()
    sys.setswitchinterval(100)
    try:
        th = threading.Thread(target=work)
        th.start()
        started.wait()
        ran_meanwhile = 0
        while not state["done"]:
            ran_meanwhile += 1
            threading.Event().wait(0.001)  # releases the GIL
        th.join()
    finally:
        sys.setswitchinterval(old)
    assert ran_meanwhile > 0


def test_result_tables_are_dataframes_named_in_attrs(tmp):
    import pandas as pd

    df = swaplab.sim({"page": BELADY}, ["lru"], [3])
    assert type(df) is pd.DataFrame
    assert df.attrs["title"] == "swaplab sim"
    html = df._repr_html_()
    assert "<table" in html and ">lru<" in html
    # pandas carries attrs through filtering and selection.
    assert df[df.capacity == 3].attrs["title"] == "swaplab sim"
    assert df[["policy", "major_faults"]].attrs["title"] == "swaplab sim"
    pol = swaplab.policies()
    assert pol.attrs["title"] == "policies"
    assert {"lru", "arc", "linux"} <= set(pol["name"])
    assert "cluster" in set(swaplab.prefetchers()["name"])
    assert swaplab.mrc({"page": BELADY}, points=3).attrs["title"] == "swaplab mrc"


def test_list_arguments_take_lists_or_the_command_lines_strings(tmp):
    t = {"page": BELADY}
    want = swaplab.sim(t, ["fifo", "lru"], [3, 4])
    # Comma-joined strings, tuples, numpy integers: the same rows.
    for policies, mem in (("fifo,lru", "3,4"), (("fifo", "lru"), np.array([3, 4])),
                          (["fifo", "lru"], ["3", 4])):
        got = swaplab.sim(t, policies=policies, mem=mem)
        assert got.equals(want), (policies, mem)
    # One size as an integer.
    one = swaplab.sim(t, "fifo", 4)
    assert (one.minor_faults + one.major_faults).tolist() == [10]
    # The extension itself takes keyword arguments and returns Python objects.
    from swaplab import _swaplab

    rows = _swaplab.sim(swaplab.load_trace(t), policies=["fifo"], mem="3,4")
    assert isinstance(rows, list) and isinstance(rows[0], dict)
    assert [r["minor_faults"] + r["major_faults"] for r in rows] == [9, 10]
    assert _swaplab.parse_policies("lru, clock:bits=2") == ["lru", "clock:bits=2"]
    assert _swaplab.split_list(["10%", 500], what="memory size") == ["10%", "500"]
    assert _swaplab.split_list(" 10%, 2M ,", what="memory size") == ["10%", "2M"]


def test_bad_list_arguments_say_what_to_give(tmp):
    t = {"page": BELADY}
    with pytest.raises(swaplab.SwaplabError,
                       match=r"memory size: give a string .* or a list of them; not a float \(1.5\)"):
        swaplab.sim(t, ["lru"], 1.5)
    with pytest.raises(swaplab.SwaplabError, match=r"policy: .*not a list holding a bool \(True\)"):
        swaplab.sim(t, ["lru", True], [3])
    with pytest.raises(swaplab.SwaplabError, match=r"no policy given: give at least one"):
        swaplab.sim(t, " , ", [3])
    with pytest.raises(swaplab.SwaplabError, match=r"count: give one value"):
        swaplab.gen("seq:pages=3", "g.parquet", count=[1, 2])


def test_devices_equal_the_cli_json(tmp, cli):
    """device=, fault_path= and base_time= give the CLI's device and time
    columns to the last microsecond."""
    swaplab.gen(["zipf:pages=2000:alpha=0.8:writes=0.3"], "d.parquet", count=20_000)
    want = run_json(cli, "sim", "d.parquet", "--policy", "lru,linux", "--mem", "25%",
                    "--device", "ssd,hdd", "--fault-path", "kernel,pfa", "--base-time", "2")
    got = swaplab.sim("d.parquet", policies=["lru", "linux"], mem="25%", device=["ssd", "hdd"],
                      fault_path="kernel,pfa", base_time=2)
    recs = [{k: v for k, v in r.items() if not (isinstance(v, float) and v != v)}
            for r in got.to_dict("records")]
    assert recs == want
    assert len(recs) == 2 * 2 * 2


def test_fault_path_without_a_device_is_refused_clearly():
    with pytest.raises(swaplab.SwaplabError, match="give device= too"):
        swaplab.sim({"page": BELADY}, ["lru"], [3], fault_path="pfa")
    with pytest.raises(swaplab.SwaplabError, match="device"):
        swaplab.sim({"page": BELADY}, ["lru"], [3], device="floppy")
