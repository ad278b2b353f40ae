"""Type stubs of swaplab's Rust extension (swaplab._swaplab). Most users
call the wrappers in swaplab/__init__.py, which return DataFrames."""

from typing import List, Optional, Tuple

import numpy as np
import numpy.typing as npt

class SwaplabError(ValueError):
    """An error of swaplab, with the swaplab command line's message."""

class Trace:
    """A trace loaded for simulation (pages renumbered densely)."""

    def __len__(self) -> int: ...
    @property
    def distinct(self) -> int: ...
    @property
    def page_size(self) -> int: ...
    @property
    def writes(self) -> int: ...
    @property
    def source_json(self) -> str: ...
    def to_arrays(self) -> Tuple[npt.NDArray[np.uint64], npt.NDArray[np.bool_]]: ...

def load_trace(path: str) -> Trace: ...
def trace_from_arrays(
    pages: npt.NDArray[np.uint64],
    writes: Optional[npt.NDArray[np.bool_]] = None,
    page_size: int = 4096,
    source: Optional[str] = None,
) -> Trace: ...
def write_trace(
    path: str,
    pages: npt.NDArray[np.uint64],
    writes: Optional[npt.NDArray[np.bool_]] = None,
    page_size: int = 4096,
    source: Optional[str] = None,
) -> str: ...
def trace_meta(path: str) -> Optional[str]: ...
def gen(
    patterns: List[str],
    output: str,
    count: Optional[str] = None,
    seed: int = 42,
    interleave: bool = False,
) -> str: ...
def import_trace(
    input: str,
    output: str,
    format: Optional[str] = None,
    id_column: str = "0",
    header: bool = False,
    delimiter: str = ",",
    op_column: Optional[str] = None,
    time_column: Optional[str] = None,
    time_unit_ns: int = 1_000_000_000,
    page_size: int = 4096,
    instructions: bool = False,
) -> str: ...
def sim(
    trace: Trace,
    policies: str = "all",
    mem: str = "10%,25%,50%",
    seed: int = 42,
    prefetch: Optional[str] = None,
    hints: Optional[str] = None,
    refs_per_ms: int = 1000,
    save: Optional[str] = None,
    trace_path: Optional[str] = None,
    threads: Optional[int] = None,
) -> str: ...
def mrc_curves(
    trace: Trace,
    points: int = 20,
    mem: Optional[str] = None,
    full: bool = False,
    shards: Optional[float] = None,
    shards_size: Optional[int] = None,
    policies: Optional[str] = None,
    seed: int = 42,
) -> str: ...
def parse_policies(list: str) -> List[str]: ...
def list_policies() -> str: ...
def list_prefetchers() -> str: ...
def catalog_home() -> str: ...
def catalog_runs(home: Optional[str] = None, limit: int = 1000) -> str: ...
def catalog_sweeps(home: Optional[str] = None, limit: int = 1000) -> str: ...
def run_record(id: int, home: Optional[str] = None) -> str: ...
def sweep_record(id: int, home: Optional[str] = None) -> str: ...
def catalog_import_sweep(
    command: List[str], spec_json: str, runs_json: str, home: Optional[str] = None
) -> str: ...
def version() -> str: ...
