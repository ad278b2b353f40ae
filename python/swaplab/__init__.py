"""swaplab in Python: traces as Arrow tables, page-replacement simulation
and experiments as pandas DataFrames.

>>> import swaplab
>>> swaplab.gen(["zipf:pages=2000:alpha=0.9"], "t.parquet", count=50_000)   # doctest: +SKIP
>>> swaplab.sim("t.parquet", policies=["lru", "clock"], mem=["25%"])        # doctest: +SKIP

Results are pandas DataFrames (the table's name in ``df.attrs["title"]``),
pyarrow Tables, and dicts and lists as ``json.loads`` gives for the
command line's ``--json``. List arguments (policies, memory sizes, ...)
take a list or the command line's comma-joined string.

Everything a function cannot do raises :class:`SwaplabError` (a
``ValueError``) with the message the ``swaplab`` command line prints. The
simulator runs with the GIL released: threads (and Ray tasks, see
:mod:`swaplab.ray`) simulate in parallel. See docs/python.md.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt
import pandas as pd

from . import _swaplab
from ._swaplab import SwaplabError, Trace

__all__ = [
    "SwaplabError",
    "Trace",
    "Record",
    "read_trace",
    "load_trace",
    "write_trace",
    "gen",
    "import_trace",
    "sim",
    "mrc",
    "policies",
    "prefetchers",
    "catalog",
    "catalog_home",
    "run_record",
    "sweep_record",
    "timeline",
    "trace_tables",
    "report",
    "run",
    "sweep",
    "binary",
    "__version__",
]

__version__ = _swaplab.version()

if TYPE_CHECKING:
    import pyarrow as pa

PathLike = Union[str, "os.PathLike[str]"]
TraceLike = Union[PathLike, Trace, Any]
#: A list argument: a list of strings or integers, or the command line's
#: comma-joined string (``"lru,arc"``, ``"10%,25%"``).
Items = Union[str, int, Sequence[Union[str, int]]]


def _frame(rows: Any, title: str) -> pd.DataFrame:
    """A DataFrame of results, named in ``df.attrs["title"]`` (pandas keeps
    ``attrs`` through filtering, selection and copies)."""
    df: pd.DataFrame = pd.DataFrame(rows)
    df.attrs["title"] = title
    return df


class Record(Dict[str, Any]):
    """A run or sweep record (the JSON of ``swaplab show --json``) as a dict,
    with a notebook HTML repr (the key facts and the metrics)."""

    def _repr_html_(self) -> str:
        from html import escape

        rows = []
        for k in ("id", "command", "limit_label", "limit_bytes", "outcome", "status", "dir"):
            if k in self:
                v = self[k]
                if isinstance(v, list):
                    v = " ".join(map(str, v))
                rows.append(f"<tr><th>{escape(k)}</th><td>{escape(str(v))}</td></tr>")
        metrics = self.get("metrics")
        if isinstance(metrics, dict):
            for name, m in sorted(metrics.items()):
                val = m.get("value") if isinstance(m, dict) else m
                unit = m.get("unit", "") if isinstance(m, dict) else ""
                rows.append(
                    f"<tr><th>{escape(name)}</th><td>{escape(str(val))} {escape(unit)}</td></tr>"
                )
        return "<table>" + "".join(rows) + "</table>"


def _path(p: PathLike) -> str:
    if isinstance(p, (str, os.PathLike)):
        return os.fspath(p)
    raise SwaplabError(f"expected a path (str or pathlib.Path), not {type(p).__name__}")


def load_trace(trace: TraceLike) -> Trace:
    """A trace loaded for simulation, from a path (native, oracleGeneral
    ``.bin[.zst]``, ``.txt``), a pyarrow Table or pandas DataFrame with a
    ``page`` column (and optionally ``write``), or a :class:`Trace`."""
    if isinstance(trace, Trace):
        return trace
    if isinstance(trace, (str, os.PathLike)):
        return _swaplab.load_trace(os.fspath(trace))
    cols = _columns(trace)
    if cols is None:
        raise SwaplabError(
            "a trace is a path, a swaplab.Trace, or a table with a 'page' column "
            f"(pyarrow Table, pandas DataFrame, dict of arrays), not {type(trace).__name__}"
        )
    pages, writes, page_size = cols
    return _swaplab.trace_from_arrays(pages, writes, page_size)


def _columns(
    t: Any,
) -> Optional[Tuple[npt.NDArray[np.uint64], Optional[npt.NDArray[np.bool_]], int]]:
    """(pages uint64, writes bool or None, page_size) of a table-like, or None."""
    page_size = 4096
    try:
        import pyarrow as pa

        if isinstance(t, pa.Table):
            md = t.schema.metadata or {}
            meta = md.get(b"swaplab.trace")
            if meta:
                page_size = int(json.loads(meta).get("page_size", 4096))
            t = {n: t.column(n).to_numpy() for n in t.column_names if n in ("page", "write")}
    except ImportError:  # pragma: no cover - pyarrow is a dependency
        pass
    try:
        has_page = "page" in t
    except TypeError:
        return None
    if not has_page:
        return None
    pages = _uint64(t["page"], "page")
    writes = None
    if "write" in t:
        writes = np.ascontiguousarray(np.asarray(t["write"]), dtype=bool)
    return pages, writes, page_size


def _uint64(a: Any, what: str) -> npt.NDArray[np.uint64]:
    """A contiguous uint64 numpy array; no copy when `a` already is one."""
    arr = np.asarray(a)
    if arr.ndim != 1:
        raise SwaplabError(f"{what} must be 1-D, not of shape {arr.shape}")
    if arr.dtype == np.uint64:
        return np.ascontiguousarray(arr)
    if arr.dtype.kind not in "iu":
        if arr.size == 0:
            return np.zeros(0, dtype=np.uint64)
        raise SwaplabError(f"{what} must hold integers (page numbers), not {arr.dtype}")
    if arr.dtype.kind == "i" and arr.size and arr.min() < 0:
        raise SwaplabError(f"{what} holds a negative page number ({int(arr.min())})")
    return np.ascontiguousarray(arr, dtype=np.uint64)


def read_trace(path: PathLike) -> "pa.Table":
    """A trace file as a pyarrow Table (columns ``page``, ``write`` and, in
    native traces, ``id`` and the optional ``time_ns``, ``tid``).

    A native trace is read by pyarrow straight from its Parquet file
    (memory-mapped); other formats (oracleGeneral, txt) are decoded by
    swaplab into numpy arrays the Table wraps without a copy. The trace's
    metadata is the schema's ``swaplab.trace`` key.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    p = _path(path)
    meta = _swaplab.trace_meta(p)  # raises SwaplabError for anything unreadable
    if meta is not None:
        return pq.read_table(p, memory_map=True)
    t = _swaplab.load_trace(p)
    pages, writes = t.to_arrays()
    # The schema's metadata is bytes: the same JSON as a native trace's.
    md = json.dumps(
        {"page_size": t.page_size, "source": t.source, "count": len(t),
         "distinct_pages": t.distinct, "writes": t.writes}
    )
    schema = pa.schema(
        [pa.field("page", pa.uint64(), nullable=False), pa.field("write", pa.bool_(), nullable=False)],
        metadata={"swaplab.trace": md},
    )
    return pa.Table.from_arrays([pa.array(pages), pa.array(writes)], schema=schema)


def write_trace(
    pages: Any,
    writes: Any = None,
    path: Optional[PathLike] = None,
    page_size: int = 4096,
    source: Optional[Union[str, Dict[str, Any]]] = None,
) -> Dict[str, Any]:
    """Writes a native trace (Parquet) from any integer array-like of page
    numbers and optional write flags; returns the trace's metadata.

    A contiguous ``numpy.uint64`` array is read in place (no copy).
    ``source`` describes where the references came from: a string (kept as
    an imported source of format ``python``) or the metadata's own dict
    form.
    """
    if path is None:
        raise SwaplabError("write_trace needs path= (the .parquet file to write)")
    p = _uint64(pages, "pages")
    w = None if writes is None else np.ascontiguousarray(np.asarray(writes), dtype=bool)
    if w is not None and w.ndim != 1:
        raise SwaplabError(f"writes must be 1-D, not of shape {w.shape}")
    return _swaplab.write_trace(_path(path), p, writes=w, page_size=int(page_size), source=source)


def gen(
    patterns: Union[str, Sequence[str]],
    output: PathLike,
    count: Optional[Union[int, str]] = None,
    seed: int = 42,
    interleave: bool = False,
) -> Dict[str, Any]:
    """``swaplab gen``: writes a synthetic trace; returns its metadata.

    ``patterns`` as on the command line (``"zipf:pages=1M:alpha=0.9"``,
    ``"loop:pages=200:count=20k"``, ...); ``count`` an int or ``"10M"``.
    """
    return _swaplab.gen(patterns, _path(output), count=count, seed=int(seed),
                        interleave=bool(interleave))


def import_trace(
    input: PathLike,
    output: PathLike,
    format: Optional[str] = None,
    id_column: Union[str, int] = 0,
    header: bool = False,
    delimiter: str = ",",
    op_column: Optional[Union[str, int]] = None,
    time_column: Optional[Union[str, int]] = None,
    time_unit_ns: int = 1_000_000_000,
    page_size: int = 4096,
    instructions: bool = False,
) -> Dict[str, Any]:
    """``swaplab import``: converts another tool's trace (oracleGeneral,
    csv, txt, lackey, perf) into a native trace; returns its metadata."""
    return _swaplab.import_trace(
        _path(input), _path(output), format=format, id_column=id_column, header=bool(header),
        delimiter=delimiter, op_column=op_column, time_column=time_column,
        time_unit_ns=int(time_unit_ns), page_size=int(page_size), instructions=bool(instructions),
    )


def sim(
    trace: TraceLike,
    policies: Items = "all",
    mem: Items = ("10%", "25%", "50%"),
    prefetch: Optional[Items] = None,
    device: Optional[Items] = None,
    seed: int = 42,
    hints: Optional[PathLike] = None,
    refs_per_ms: int = 1000,
    save: Optional[PathLike] = None,
    threads: Optional[int] = None,
    fault_path: Optional[Items] = None,
    base_time: Optional[float] = None,
    stream: bool = False,
    spill_dir: Optional[PathLike] = None,
) -> pd.DataFrame:
    """``swaplab sim --json`` as a pandas DataFrame: a row per (policy,
    memory size[, prefetcher]), with the CLI's columns (policy, capacity,
    references, hits, minor_faults, major_faults, swap_outs, evictions,
    prefetch_*, miss_ratio, bytes_per_page[, prefetch, accuracy, coverage]).

    ``policies``: names with parameters (``"clock:bits=2"``) or ``"all"``;
    ``mem``: pages (int), bytes (``"16M"``) or shares of the footprint
    (``"25%"``); ``prefetch``: swap readahead models (``"none"``,
    ``"cluster:pc=3"``, ``"vma"``, ``"leap"``). The GIL is released while
    simulating. ``device``: swap device models as ``swaplab sim --device``
    (``"ssd"``, ``"hdd"``, ``"zram"``, ``"remote"``, ``"hybrid:ssd+hdd"``,
    ``"file:this"`` — the profile ``swaplab calibrate`` saved — or a
    profile path), with ``fault_path`` (``"kernel"``, ``"pfa"``) and
    ``base_time`` (the unlimited run time, s, for a predicted run time):
    adds the CLI's device and time columns. ``save`` writes the result as
    ``swaplab sim --save`` does, for :func:`report` and ``swaplab compare``.
    ``threads``: simulation threads of this call (default: one per core).
    ``stream=True`` (``swaplab sim --stream``): ``trace`` is the path of a
    trace, read a row group at a time and never held (memory for the
    distinct pages only; OPT's next uses, and the ids of a trace of another
    format such as oracleGeneral or txt, spilled under ``spill_dir``, by
    default the trace's directory); the same rows, for policies and sizes
    only (no prefetch, device, hints or save).
    """
    if stream:
        if not isinstance(trace, (str, os.PathLike)):
            raise SwaplabError(
                f"stream=True reads a native trace from its path, not a {type(trace).__name__}"
            )
        given = {"prefetch": prefetch, "device": device, "hints": hints, "save": save,
                 "fault_path": fault_path, "base_time": base_time}
        extra = [k for k, v in given.items() if v is not None]
        if extra:
            raise SwaplabError(
                f"stream=True simulates policies and sizes only: drop {', '.join(extra)} "
                "(they need the trace in memory) or drop stream"
            )
        rows = _swaplab.sim_stream(
            _path(trace), policies=policies, mem=mem, seed=int(seed),
            threads=None if threads is None else int(threads),
            spill_dir=None if spill_dir is None else _path(spill_dir),
        )
        return _frame(rows, "swaplab sim --stream")
    elif spill_dir is not None:
        raise SwaplabError("spill_dir is for stream=True")
    t = load_trace(trace)
    rows = _swaplab.sim(
        t, policies=policies, mem=mem, seed=int(seed), prefetch=prefetch,
        hints=None if hints is None else _path(hints), refs_per_ms=int(refs_per_ms),
        save=None if save is None else _path(save),
        trace_path=os.fspath(trace) if isinstance(trace, (str, os.PathLike)) else None,
        threads=None if threads is None else int(threads), device=device, fault_path=fault_path,
        base_time=None if base_time is None else float(base_time),
    )
    return _frame(rows, "swaplab sim")


def mrc(
    trace: TraceLike,
    points: int = 20,
    mem: Optional[Items] = None,
    full: bool = False,
    shards: Optional[float] = None,
    shards_size: Optional[int] = None,
    policies: Optional[Items] = None,
    seed: int = 42,
) -> pd.DataFrame:
    """``swaplab mrc``: miss-ratio curves as a DataFrame: ``mem_pages`` and
    a column per curve (``lru (exact)``, ``shards rate=R``, policies). The
    SHARDS curves' mean absolute error is in ``df.attrs["mae"]``."""
    t = load_trace(trace)
    out = _swaplab.mrc_curves(
        t, points=int(points), mem=mem, full=bool(full), shards=shards, shards_size=shards_size,
        policies=policies, seed=int(seed),
    )
    rows: Dict[str, Any] = {"mem_pages": out["sizes"]}
    for c in out["curves"]:
        rows[c["name"]] = c["miss_ratio"]
    df = _frame(rows, "swaplab mrc")
    df.attrs["mae"] = {c["name"]: c["mae"] for c in out["curves"] if c["mae"] is not None}
    return df


def policies() -> pd.DataFrame:
    """The simulator's policies and their parameters, as a DataFrame."""
    return _frame(_swaplab.list_policies(), "policies")


def prefetchers() -> pd.DataFrame:
    """The simulator's swap readahead models, as a DataFrame."""
    return _frame(_swaplab.list_prefetchers(), "prefetchers")


def catalog_home() -> str:
    """The catalog's directory ($SWAPLAB_HOME, or /var/lib/swaplab for root)."""
    return _swaplab.catalog_home()


_RUN_COLUMNS = [
    "id", "sweep_id", "variant", "limit_label", "limit_bytes", "repeat_idx", "role",
    "status", "outcome", "exit_code", "started_unix_ns", "finished_unix_ns", "command", "dir",
]


def catalog(home: Optional[PathLike] = None, limit: int = 100_000) -> Dict[str, pd.DataFrame]:
    """The catalog as DataFrames: ``{"runs": ..., "sweeps": ...}``.

    ``runs`` has a row per run (its catalog columns, the command as one
    string, and a column per metric); ``sweeps`` a row per sweep or repeat
    group. ``home`` defaults to :func:`catalog_home`.
    """
    h = None if home is None else _path(home)
    runs = _swaplab.catalog_runs(h, int(limit))
    rows = []
    for r in runs:
        row = {k: r.get(k) for k in _RUN_COLUMNS}
        row["command"] = " ".join(r.get("command") or [])
        row["kernel"] = ((r.get("env") or {}).get("kernel")) if isinstance(r.get("env"), dict) else None
        for name, m in (r.get("metrics") or {}).items():
            row[name] = m.get("value") if isinstance(m, dict) else m
        rows.append(row)
    sweeps = _swaplab.catalog_sweeps(h, int(limit))
    for s in sweeps:
        s["command"] = " ".join(s.get("command") or [])
        s["spec"] = json.dumps(s.get("spec"))
    return {
        "runs": _frame(rows if rows else {k: [] for k in _RUN_COLUMNS}, "runs"),
        "sweeps": _frame(sweeps if sweeps else {"id": [], "kind": [], "status": []}, "sweeps"),
    }


def run_record(id: int, home: Optional[PathLike] = None) -> Record:
    """One run's whole record (``swaplab show ID --json``) as a dict."""
    h = None if home is None else _path(home)
    return Record(_swaplab.run_record(int(id), h))


def sweep_record(id: int, home: Optional[PathLike] = None) -> Record:
    """A sweep's catalog row and its runs' records: ``{"sweep": ..., "runs": [...]}``."""
    h = None if home is None else _path(home)
    return Record(_swaplab.sweep_record(int(id), h))


def timeline(id: int, home: Optional[PathLike] = None) -> pd.DataFrame:
    """A run's 20 Hz timeline (memory, swap, PSI, faults over time) as a DataFrame."""
    import pyarrow.parquet as pq

    rec = run_record(id, home)
    p = Path(rec["dir"]) / "timeline.parquet"
    if not p.exists():
        raise SwaplabError(
            f"run {id} has no timeline ({p} is missing): it failed before it started, "
            "or was recorded by a swaplab without timelines"
        )
    return _frame(pq.read_table(p).to_pandas(), f"timeline of run {id}")


def trace_tables(dir: PathLike) -> Dict[str, Any]:
    """The tables of a trace directory (``swaplab trace``): faults, swaps,
    regions, sites, allocations, processes — each a pyarrow Table, keyed
    by name; the directory's ``meta.json`` under ``"meta"``."""
    import pyarrow.parquet as pq

    d = Path(_path(dir))
    if not d.is_dir():
        raise SwaplabError(f"{d}: no such trace directory (write one with `swaplab trace`)")
    if not (d / "meta.json").exists():
        raise SwaplabError(
            f"{d}: not a trace directory (no meta.json); write one with "
            "`swaplab trace -o DIR -- CMD`"
        )
    out: Dict[str, Any] = {"meta": json.loads((d / "meta.json").read_text())}
    for f in sorted(d.glob("*.parquet")):
        try:
            out[f.stem] = pq.read_table(f)
        except Exception as e:  # pyarrow's errors name the file's problem
            raise SwaplabError(f"{f}: not a readable Parquet table ({e})") from None
    return out


def binary() -> str:
    """The ``swaplab`` executable that :func:`run` and :func:`sweep` use:
    $SWAPLAB_BIN, else ``swaplab`` on PATH, else the one built in this
    checkout (target/release, then target/debug)."""
    env = os.environ.get("SWAPLAB_BIN")
    if env:
        if not os.access(env, os.X_OK):
            raise SwaplabError(f"SWAPLAB_BIN={env} is not an executable file")
        return env
    found = shutil.which("swaplab")
    if found:
        return found
    root = Path(__file__).resolve().parent.parent.parent
    for prof in ("release", "debug"):
        cand = root / "target" / prof / "swaplab"
        if cand.is_file() and os.access(cand, os.X_OK):
            return str(cand)
    raise SwaplabError(
        "the swaplab binary was not found: build it with `cargo build --release -p swaplab` "
        "in the checkout, put it on PATH, or set SWAPLAB_BIN"
    )


def _settings(
    swap: Union[None, str, Sequence[str]],
    extra: Dict[str, Any],
) -> List[str]:
    args: List[str] = []
    for s in [swap] if isinstance(swap, str) else list(swap or []):
        args += ["--swap", str(s)]
    for k, v in extra.items():
        if v is None or v is False:
            continue
        flag = "--" + k.replace("_", "-")
        args += [flag] if v is True else [flag, str(v)]
    return args


def _call(args: List[str], home: Optional[PathLike]) -> Any:
    env = dict(os.environ)
    if home is not None:
        env["SWAPLAB_HOME"] = _path(home)
    # --json right after the verb: everything after `--` is the command.
    argv = [binary(), args[0], "--json", *args[1:]]
    p = subprocess.run(argv, capture_output=True, text=True, env=env)
    try:
        out = json.loads(p.stdout) if p.stdout.strip() else None
    except json.JSONDecodeError:
        out = None
    if out is None:
        lines = [x for x in p.stderr.splitlines() if not x.startswith("swaplab: warning: ")]
        err = "\n".join(lines).strip()
        err = err[len("swaplab: error: "):] if err.startswith("swaplab: error: ") else err
        raise SwaplabError(err or f"swaplab {' '.join(args)} failed with status {p.returncode}")
    return out


def report(sources: Union[PathLike, int, Sequence[Union[PathLike, int]]], out: PathLike,
           title: Optional[str] = None) -> str:
    """``swaplab report``: one HTML page of runs (ids), sweeps (``"s3"``),
    saved simulations (``sim(..., save=...)``), trace directories; returns
    the page's path. Opens in a notebook with
    ``IPython.display.IFrame(path, 900, 600)``."""
    srcs = [sources] if isinstance(sources, (str, int, os.PathLike)) else list(sources)
    if not srcs:
        raise SwaplabError("report needs at least one source (a run id, s<sweep id>, a saved result)")
    args = [binary(), "report", *[os.fspath(s) if isinstance(s, os.PathLike) else str(s) for s in srcs],
            "-o", _path(out)]
    if title:
        args += ["--title", title]
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        err = p.stderr.strip()
        raise SwaplabError(err[len("swaplab: error: "):] if err.startswith("swaplab: error: ") else err)
    return _path(out)


def run(
    cmd: Union[str, Sequence[str]],
    mem_limit: Optional[Union[str, int]] = None,
    swap: Union[None, str, Sequence[str]] = None,
    repeat: int = 1,
    home: Optional[PathLike] = None,
    **settings: Any,
) -> Record:
    """``swaplab run --json`` (root): runs ``cmd`` in a memory cgroup with
    ``mem_limit`` (``"64M"``, ``"50%"`` of its peak) and ``swap``
    (``"file:512M"``, ``"zram:1G"``); ``settings`` are the other run flags
    (``swappiness=10``, ``page_cluster=0``, ``thp="never"``,
    ``timeout="30s"``). Returns ``{"runs": [records], ...}``; everything
    the run changed on the system is restored by the swaplab process's
    journal, also when Python is interrupted.
    """
    argv = [cmd] if isinstance(cmd, str) else list(cmd)
    if not argv:
        raise SwaplabError("run needs a command, e.g. ['swaplab-workload', 'qsort', '--size', '64M']")
    args = ["run"]
    if mem_limit is not None:
        args += ["--mem-limit", str(mem_limit)]
    args += ["--repeat", str(int(repeat))] + _settings(swap, settings) + ["--", *map(str, argv)]
    return Record(_call(args, home))


def sweep(
    cmd: Union[str, Sequence[str]],
    limits: Items = ("100%", "75%", "50%", "25%"),
    variants: Optional[Dict[str, str]] = None,
    repeats: int = 5,
    swap: Union[None, str, Sequence[str]] = None,
    home: Optional[PathLike] = None,
    **settings: Any,
) -> Record:
    """``swaplab sweep --json`` (root): ``cmd`` at each limit × variant ×
    repeat, interleaved; returns the sweep's report (cells, medians,
    slowdowns). ``variants`` maps a name to run flags (``{"pc0":
    "--page-cluster 0"}``)."""
    argv = [cmd] if isinstance(cmd, str) else list(cmd)
    if not argv:
        raise SwaplabError("sweep needs a command")
    lim = ",".join(_swaplab.split_list(limits, "limit"))
    args = ["sweep", "--limits", lim, "--repeat", str(int(repeats))]
    for name, flags in (variants or {}).items():
        args += ["--variant", f"{name}={flags}"]
    args += _settings(swap, settings) + ["--", *map(str, argv)]
    return Record(_call(args, home))

