"""Simulation grids and real-run sweeps on a Ray cluster.

* :func:`sim_grid` — one Ray task per (trace, policy, group of memory
  sizes); each trace is put in the object store once (numpy arrays, shared
  by the tasks of a node without a copy) or read by the tasks from a shared
  path; the rows come back in the order of :func:`swaplab.sim`, with the
  same numbers. A task whose worker dies is retried (``max_retries``); a
  trace that cannot be read is a :class:`swaplab.SwaplabError` naming it.
* :func:`sweep` — real ``swaplab run`` s spread over the nodes, at most one
  per node at a time (each node offers the custom resource
  ``swaplab_node: 1``), merged into the local catalog as one sweep.
* ``python -m swaplab.ray bench`` — one worker against two on this machine.

Ray is optional: ``pip install 'swaplab[ray]'``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import pandas as pd

import swaplab
from swaplab import Items, SwaplabError, _swaplab

__all__ = ["sim_grid", "sweep", "bench", "NODE_RESOURCE"]

#: The custom resource each node offers once (`ray start --resources
#: '{"swaplab_node": 1}'`): a real run takes it, so a node runs one at a time.
NODE_RESOURCE = "swaplab_node"


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise SwaplabError(
            "swaplab.ray needs Ray: pip install 'ray>=2.9' (or pip install './python[ray]')"
        ) from None
    return ray


def _names(traces: Any) -> List[Tuple[str, Any]]:
    if isinstance(traces, Mapping):
        return [(str(k), v) for k, v in traces.items()]
    if isinstance(traces, (str, os.PathLike)):
        traces = [traces]
    out = []
    for t in traces:
        if not isinstance(t, (str, os.PathLike)):
            raise SwaplabError(
                "traces is a list of paths or a dict {name: path, Table or DataFrame}; "
                f"an unnamed {type(t).__name__} needs a name (use a dict)"
            )
        out.append((os.fspath(t), t))
    return out


def _policy_list(policies: Items) -> List[str]:
    """One policy per task, named as the results name it (fails here, before
    any task starts, for an unknown policy)."""
    return _swaplab.parse_policies(policies)


def _groups(sizes: List[str], size_group: Optional[int]) -> List[List[str]]:
    n = len(sizes) if not size_group else int(size_group)
    if n < 1:
        raise SwaplabError(f"size_group must be at least 1, not {size_group}")
    return [sizes[i : i + n] for i in range(0, len(sizes), n)]


def _sim_task(
    name: str,
    trace: Any,
    policy: str,
    mem: List[str],
    prefetch: Optional[List[str]],
    seed: int,
    kill_marker: Optional[str],
    threads: int = 1,
    stream: bool = False,
) -> List[Dict[str, Any]]:
    """One task: a trace (arrays from the object store, or a path), one
    policy, a group of sizes. Runs in a Ray worker."""
    if kill_marker is not None and not os.path.exists(kill_marker):
        # Fault injection for the tests: the first attempt's worker dies.
        open(kill_marker, "w").close()
        os._exit(1)
    try:
        if stream:
            rows = _swaplab.sim_stream(trace, policies=policy, mem=mem, seed=seed,
                                       threads=threads)
        else:
            if isinstance(trace, tuple):
                pages, writes, page_size = trace
                t = _swaplab.trace_from_arrays(pages, writes, page_size)
            else:
                t = _swaplab.load_trace(trace)
            rows = _swaplab.sim(t, policies=policy, mem=mem, seed=seed, prefetch=prefetch,
                                threads=threads)
    except SwaplabError as e:
        raise SwaplabError(f"trace {name}: {e}") from None
    return [{"trace": name, **r} for r in rows]


def sim_grid(
    traces: Any,
    policies: Items = "all",
    mem: Items = ("10%", "25%", "50%"),
    prefetch: Optional[Items] = None,
    seed: int = 42,
    size_group: Optional[int] = None,
    ship: str = "object_store",
    max_retries: int = 3,
    num_cpus: float = 1,
    _kill_marker: Optional[str] = None,
) -> pd.DataFrame:
    """Simulates every (trace, policy, size[, prefetcher]) on the Ray
    cluster (``ray.init()`` first; without it Ray starts a local one) and
    returns one DataFrame: a ``trace`` column, then exactly the rows and
    columns :func:`swaplab.sim` returns for each trace, in its order.

    ``traces``: paths, or ``{name: path | pyarrow Table | DataFrame}``.
    ``size_group``: sizes per task (default: all of a policy's sizes in one
    task). ``ship="object_store"`` reads each trace once on this machine
    and puts its arrays in the object store (every node then maps them
    once); ``ship="path"`` lets every task read the path itself (a shared
    file system); ``ship="stream"`` lets every task stream its native trace
    from the path a row group at a time (``swaplab sim --stream``: memory for
    the distinct pages only, for traces larger than a worker's memory; no
    prefetch). A task whose worker dies is retried up to
    ``max_retries`` times; a bad trace is a SwaplabError naming it.
    """
    ray = _ray()
    import numpy as np

    if ship not in ("object_store", "path", "stream"):
        raise SwaplabError(f"ship is 'object_store', 'path' or 'stream', not {ship!r}")
    if ship == "stream" and prefetch is not None:
        raise SwaplabError("ship='stream' simulates policies and sizes only: drop prefetch")
    named = _names(traces)
    if not named:
        raise SwaplabError("no trace given")
    pol = _policy_list(policies)
    sizes = _swaplab.split_list(mem, "memory size")
    pf = None if prefetch is None else _swaplab.split_list(prefetch, "prefetcher")
    groups = _groups(sizes, size_group)

    shipped: List[Tuple[str, Any]] = []
    for name, t in named:
        if ship in ("path", "stream"):
            if not isinstance(t, (str, os.PathLike)):
                raise SwaplabError(f"trace {name}: ship={ship!r} needs a path, not a {type(t).__name__}")
            shipped.append((name, os.fspath(t)))
            continue
        try:
            tr = swaplab.load_trace(t)
        except SwaplabError as e:
            raise SwaplabError(f"trace {name}: {e}") from None
        pages, writes = tr.to_arrays()
        # Page numbers in first-use order reproduce the same dense trace.
        shipped.append((name, ray.put((np.asarray(pages), np.asarray(writes), tr.page_size))))

    # One simulation thread per CPU the task holds: the parallelism is Ray's.
    threads = max(1, int(num_cpus))
    task = ray.remote(_sim_task).options(
        num_cpus=num_cpus, max_retries=max_retries, retry_exceptions=False
    )
    refs = []
    for name, t in shipped:
        for p in pol:
            for g in groups:
                refs.append(
                    task.remote(name, t, p, g, pf, int(seed), _kill_marker, threads,
                                ship == "stream")
                )
    rows: List[Dict[str, Any]] = []
    try:
        for part in ray.get(refs):
            rows.extend(part)
    except ray.exceptions.RayTaskError as e:
        cause = getattr(e, "cause", None)
        if isinstance(cause, SwaplabError):
            raise SwaplabError(str(cause)) from None
        if isinstance(e, SwaplabError):  # Ray's RayTaskError(SwaplabError)
            raise SwaplabError(str(e).strip().splitlines()[-1].split("SwaplabError: ", 1)[-1]) from None
        raise
    return swaplab._frame(rows, "swaplab.ray.sim_grid")


def _run_task(cmd: List[str], limit: str, flags: List[str]) -> Dict[str, Any]:
    """One real run on this node (`swaplab run --json`, in a scratch catalog
    that is removed afterwards): its records, the node's name and the
    timelines' bytes."""
    import platform
    import shutil
    import tempfile

    home = tempfile.mkdtemp(prefix="swaplab-ray-")
    try:
        out = swaplab.run(cmd, mem_limit=limit, home=home, **_flag_dict(flags))
        timelines = []
        for r in out.get("runs", []):
            p = os.path.join(r["dir"], "timeline.parquet")
            timelines.append(open(p, "rb").read() if os.path.exists(p) else None)
        return {"runs": out.get("runs", []), "node": platform.node(), "timelines": timelines}
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _flag_dict(flags: List[str]) -> Dict[str, Any]:
    """`--page-cluster 0 --swap file:1G` → {"page_cluster": "0", "swap": [...]}."""
    out: Dict[str, Any] = {}
    i = 0
    while i < len(flags):
        f = flags[i]
        if not f.startswith("--"):
            raise SwaplabError(f"variant flags are --name VALUE pairs; {f!r} is not one")
        key = f[2:].replace("-", "_")
        val: Any = True
        if i + 1 < len(flags) and not flags[i + 1].startswith("--"):
            val = flags[i + 1]
            i += 1
        if key == "swap":
            out.setdefault("swap", []).append(val)
        else:
            out[key] = val
        i += 1
    return out


def sweep(
    cmd: Union[str, Sequence[str]],
    limits: Items = ("100%", "50%"),
    variants: Optional[Dict[str, str]] = None,
    repeats: int = 3,
    nodes: Optional[int] = None,
    home: Optional[str] = None,
    max_retries: int = 0,
) -> Dict[str, Any]:
    """Real runs over the cluster, merged into the local catalog as one
    sweep. Every (limit, variant, repeat) is one ``swaplab run`` on a node
    holding the ``swaplab_node`` resource (so a node runs one at a time; its
    swaplab journal restores it), in a scratch catalog there; the records
    (with the node's kernel and machine in ``env``) and timelines come back
    and become runs of a new sweep in the catalog at ``home`` (default
    $SWAPLAB_HOME), so ``swaplab show s<id>``, ``compare`` and ``report``
    work on it. ``nodes`` caps how many nodes run at once.

    Returns ``{"sweep_id": id, "runs": [records], "nodes": [names]}``.
    A ``%`` limit is measured against the command's peak on each run's node
    (an unlimited calibration run first, there).
    """
    ray = _ray()
    import shlex

    argv = [cmd] if isinstance(cmd, str) else [str(c) for c in cmd]
    if not argv:
        raise SwaplabError("sweep needs a command")
    avail = int(ray.cluster_resources().get(NODE_RESOURCE, 0))
    if avail < 1:
        raise SwaplabError(
            f"no node offers the {NODE_RESOURCE!r} resource: start each node with "
            f"`ray start --resources '{{\"{NODE_RESOURCE}\": 1}}'` (or ray.init(resources="
            f"{{'{NODE_RESOURCE}': 1}}) on one machine)"
        )
    vs = dict(variants or {"default": ""})
    flags = {v: shlex.split(f) for v, f in vs.items()}
    for f in flags.values():
        _flag_dict(f)  # a bad variant fails before any run
    lim = _swaplab.split_list(limits, "limit")
    task = ray.remote(_run_task).options(
        num_cpus=0, resources={NODE_RESOURCE: 1}, max_retries=max_retries
    )
    # Repeat-major round-robin over (variant, limit), as `swaplab sweep`.
    cells = [(r, l, v) for r in range(int(repeats)) for v in vs for l in lim]
    width = min(avail, nodes or avail)
    done_cells: List[Tuple[Tuple[int, str, str], Dict[str, Any]]] = []
    pending: List[Any] = []
    meta: Dict[Any, Tuple[int, str, str]] = {}
    for cell in cells:
        if len(pending) >= width:
            done, pending = ray.wait(pending, num_returns=1)
            done_cells += _collect(ray, done, meta)
        ref = task.remote(argv, cell[1], flags[cell[2]])
        meta[ref] = cell
        pending.append(ref)
    done_cells += _collect(ray, pending, meta)

    spec: Dict[str, Any] = {
        "limits": lim,
        "repeat": int(repeats),
        "variants": [{"name": v, "args": vs[v]} for v in vs],
        "order": "repeat-major round-robin over (variant, limit) cells, spread over Ray nodes",
        "ray": {"nodes": sorted({o["node"] for _, o in done_cells})},
    }
    imports, timelines = [], []
    for (r, l, v), o in done_cells:
        for rec, tl in zip(o["runs"], o["timelines"]):
            if rec.get("role") == "calibrate":
                continue
            imports.append({"record": rec, "variant": v, "repeat_idx": r, "node": o["node"]})
            timelines.append(tl)
    h = None if home is None else os.fspath(home)
    res = _swaplab.catalog_import_sweep(argv, spec, imports, h)
    for (rid, d), tl in zip(res["runs"], timelines):
        if tl is not None:
            with open(os.path.join(d, "timeline.parquet"), "wb") as out:
                out.write(tl)
    runs = [dict(swaplab.run_record(rid, h), node=i["node"])
            for (rid, _), i in zip(res["runs"], imports)]
    return {"sweep_id": res["sweep_id"], "runs": runs, "nodes": spec["ray"]["nodes"]}


def _collect(
    ray: Any, refs: List[Any], meta: Dict[Any, Tuple[int, str, str]]
) -> List[Tuple[Tuple[int, str, str], Dict[str, Any]]]:
    out = []
    for ref in refs:
        r, l, v = meta[ref]
        try:
            out.append(((r, l, v), ray.get(ref)))
        except ray.exceptions.RayTaskError as e:
            cause = getattr(e, "cause", None)
            raise SwaplabError(f"run (limit {l}, variant {v}, repeat {r}): {cause or e}") from None
    return out


def bench(refs: int = 2_000_000, policies: str = "lru,clock,arc,2q,lirs,fifo,sieve,linux",
          sizes: int = 8) -> Dict[str, float]:
    """Times one simulation grid with one Ray worker, then with two, on a
    generated trace; prints and returns both times and the ratio."""
    ray = _ray()
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "bench.parquet")
        swaplab.gen(["zipf:pages=200k:alpha=0.8:writes=0.3", "loop:pages=30k:base=1000000"],
                    path, count=refs, interleave=True)
        mem = [f"{5 + i * 90 // max(1, sizes - 1)}%" for i in range(sizes)]
        times = {}
        frames = {}
        for n in (1, 2):
            ray.init(num_cpus=n, include_dashboard=False, log_to_driver=False)
            try:
                # Warm-up: start the workers and ship the trace, untimed.
                sim_grid([path], policies="lru", mem=["1%"] * n, size_group=1)
                t0 = time.perf_counter()
                frames[n] = sim_grid([path], policies=policies, mem=mem, size_group=1)
                times[n] = time.perf_counter() - t0
                if n == 2:
                    # Ray's cost per task: tasks that simulate almost nothing.
                    tiny = os.path.join(d, "tiny.parquet")
                    swaplab.gen("seq:pages=10", tiny, count=100)
                    k = 200
                    t0 = time.perf_counter()
                    sim_grid([tiny], policies="fifo", mem=["5"] * k, size_group=1)
                    overhead = (time.perf_counter() - t0) / k
            finally:
                ray.shutdown()
        same = frames[1].equals(frames[2])
        tasks = len(policies.split(",")) * sizes
        print(f"grid: {refs:,} references x {len(policies.split(','))} policies x {sizes} sizes "
              f"= {tasks} tasks")
        print(f"one worker:  {times[1]:.2f} s ({refs * tasks / times[1] / 1e6:.1f} M refs/s)")
        print(f"two workers: {times[2]:.2f} s ({refs * tasks / times[2] / 1e6:.1f} M refs/s)")
        print(f"speed-up: {times[1] / times[2]:.2f}x (target >= 1.6x); identical results: {same}")
        print(f"Ray overhead: {overhead * 1e3:.2f} ms of wall time per task (200 near-empty tasks "
              f"on two workers: {1 / overhead:.0f} tasks/s)")
        return {"one": times[1], "two": times[2], "ratio": times[1] / times[2],
                "task_overhead_s": overhead}


def _main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m swaplab.ray", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("bench", help="one Ray worker against two on a simulation grid")
    b.add_argument("--refs", type=int, default=2_000_000)
    b.add_argument("--policies", default="lru,clock,arc,2q,lirs,fifo,sieve,linux")
    b.add_argument("--sizes", type=int, default=8)
    g = sub.add_parser("sim", help="a simulation grid on a Ray cluster (prints CSV or JSON)")
    g.add_argument("traces", nargs="+")
    g.add_argument("--policy", default="all")
    g.add_argument("--mem", default="10%,25%,50%")
    g.add_argument("--prefetch")
    g.add_argument("--size-group", type=int)
    g.add_argument("--address", help="Ray cluster address (default: start a local one)")
    g.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    try:
        if a.cmd == "bench":
            bench(a.refs, a.policies, a.sizes)
            return 0
        ray = _ray()
        ray.init(address=a.address, include_dashboard=False, log_to_driver=False)
        try:
            df = sim_grid(a.traces, a.policy, a.mem, a.prefetch, size_group=a.size_group)
        finally:
            ray.shutdown()
        print(df.to_json(orient="records", indent=2) if a.json else df.to_csv(index=False), end="")
        return 0
    except SwaplabError as e:
        print(f"swaplab: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(_main())
