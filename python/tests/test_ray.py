"""swaplab.ray on a local Ray cluster of 2 CPUs (started by the fixture)."""

import os

import pandas as pd
import pytest

import swaplab
import swaplab.ray as sray


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("ray")
    a, b = str(d / "a.parquet"), str(d / "b.parquet")
    swaplab.gen(["zipf:pages=3000:alpha=0.8:writes=0.3", "loop:pages=900:base=50000"], a,
                count=12_000, interleave=True, seed=1)
    swaplab.gen("uniform:pages=1500:writes=0.5", b, count=8_000, seed=2)
    return {"a": a, "b": b}


POL = ["lru", "clock:bits=2", "arc", "opt", "s3fifo"]
MEM = ["10%", "25%", 500, "50%", "2M"]


def local(traces, **kw):
    """The single-machine result: swaplab.sim per trace, with a trace column."""
    frames = []
    for name, path in traces.items():
        df = swaplab.sim(path, POL, MEM, **kw)
        df.insert(0, "trace", name)
        frames.append(df)
    return pd.DataFrame(pd.concat(frames, ignore_index=True))


def test_sim_grid_equals_the_single_machine_result(ray_local, traces):
    want = local(traces)
    for ship, group in (("object_store", None), ("object_store", 1), ("path", 2), ("stream", 2)):
        got = sray.sim_grid(traces, POL, MEM, size_group=group, ship=ship)
        pd.testing.assert_frame_equal(pd.DataFrame(got), want, check_exact=True)
    # With prefetchers: the same order (policy, size, prefetcher) and numbers.
    pf = ["none", "cluster:pc=2"]
    got = sray.sim_grid(traces, POL, MEM, prefetch=pf, size_group=2)
    pd.testing.assert_frame_equal(pd.DataFrame(got), local(traces, prefetch=pf), check_exact=True)


def test_a_bad_trace_is_named(ray_local, traces, tmp_path):
    bad = tmp_path / "broken.parquet"
    bad.write_bytes(b"PAR1 not really")
    for ship in ("object_store", "path"):
        with pytest.raises(swaplab.SwaplabError, match=r"trace broken: .*broken.parquet"):
            sray.sim_grid({"a": traces["a"], "broken": str(bad)}, ["lru"], ["10%"], ship=ship)
    with pytest.raises(swaplab.SwaplabError, match="unknown policy"):
        sray.sim_grid(traces, ["nosuch"], ["10%"])


def test_a_killed_worker_is_retried(ray_local, traces, tmp_path):
    marker = str(tmp_path / "killed-once")
    got = sray.sim_grid({"a": traces["a"]}, ["lru"], ["10%", "50%"], _kill_marker=marker)
    # The first attempt's worker died (it left the marker) and the retry
    # gave the right answer.
    assert os.path.exists(marker)
    want = swaplab.sim(traces["a"], ["lru"], ["10%", "50%"])
    assert got["misses" if "misses" in got else "minor_faults"].tolist() == \
        want["misses" if "misses" in want else "minor_faults"].tolist()
    assert got["major_faults"].tolist() == want["major_faults"].tolist()
    # Without retries the same death is an error: the retry is what saved it.
    marker2 = str(tmp_path / "killed-twice")
    with pytest.raises(Exception, match="(?i)worker|died|crash|exit"):
        sray.sim_grid({"a": traces["a"]}, ["lru"], ["10%"], max_retries=0, _kill_marker=marker2)


def test_sweep_needs_the_node_resource_named(ray_local):
    # The fixture's cluster offers one swaplab_node; a task asking for more
    # nodes than exist still runs one at a time (checked in test_ray_sweep).
    assert ray_local.cluster_resources().get(sray.NODE_RESOURCE) == 1


def test_ray_sweep_runs_one_per_node_and_merges_into_the_catalog(ray_local, tmp, root):
    import json
    import subprocess

    cmd = ["sh", "-c", "head -c 20000000 /dev/zero | tail -c 1 >/dev/null"]
    out = sray.sweep(cmd, limits=["256M", "128M"], variants={"default": "", "pc0": "--page-cluster 0"},
                     repeats=1, home=str(tmp / "home"))
    assert len(out["runs"]) == 4
    assert {(r["limit_label"], r["variant"]) for r in out["runs"]} == {
        ("256M", "default"), ("128M", "default"), ("256M", "pc0"), ("128M", "pc0")}
    assert all(r["outcome"] == "ok" and r["sweep_id"] == out["sweep_id"] for r in out["runs"])
    # One node: the runs never overlapped (one swaplab_node resource).
    spans = sorted((r["started_unix_ns"], r["finished_unix_ns"]) for r in out["runs"])
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
    # The pc0 variant's runs ran with vm.page-cluster 0.
    assert {r["options"].get("page_cluster") for r in out["runs"] if r["variant"] == "pc0"} == {0}
    # Merged into the local catalog as one sweep, which the CLI reads.
    cat = swaplab.catalog(tmp / "home")
    assert cat["sweeps"]["id"].tolist() == [out["sweep_id"]]
    assert sorted(cat["runs"]["id"]) == sorted(r["id"] for r in out["runs"])
    env = dict(os.environ, SWAPLAB_HOME=str(tmp / "home"))
    show = subprocess.run([root, "show", f"s{out['sweep_id']}", "--json"], env=env,
                          capture_output=True, text=True, check=True)
    rep = json.loads(show.stdout)
    assert len(rep["cells"]) == 4
    cmp = subprocess.run([root, "compare", f"s{out['sweep_id']}:default", f"s{out['sweep_id']}:pc0"],
                         env=env, capture_output=True, text=True)
    assert cmp.returncode == 0, cmp.stderr
    # The timelines came back with the records.
    assert len(swaplab.timeline(out["runs"][0]["id"], tmp / "home")) >= 2


def test_the_cli_verb_prints_the_grid(traces, cli, tmp):
    # `swaplab ray sim` runs `python -m swaplab.ray sim` (its own local Ray).
    import io
    import subprocess
    import sys

    env = dict(os.environ, SWAPLAB_PYTHON=sys.executable)
    p = subprocess.run([cli, "ray", "sim", traces["b"], "--policy", "lru,arc", "--mem", "10%,50%"],
                       env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    got = pd.read_csv(io.StringIO(p.stdout))
    want = swaplab.sim(traces["b"], ["lru", "arc"], ["10%", "50%"])
    assert got["policy"].tolist() == want["policy"].tolist()
    assert got["major_faults"].tolist() == want["major_faults"].tolist()
    assert (got["trace"] == traces["b"]).all()
    bad = subprocess.run([cli, "ray", "bench"], env=dict(env, SWAPLAB_PYTHON="/nonexistent/python"),
                         capture_output=True, text=True)
    assert bad.returncode == 1 and "cannot start /nonexistent/python" in bad.stderr
