"""Type stubs of swaplab's Rust extension (swaplab._swaplab). Most users
call the wrappers in swaplab/__init__.py, which return DataFrames.

Results are Python objects: what ``json.loads`` gives for the command
line's ``--json`` output (dicts, lists, strings, numbers, None). A list
argument (``Items``) is a list (or other iterable) of strings and
integers, or one string, which may be comma-joined as on the command line
(``"lru,arc"``)."""

import os
from typing import Any, Dict, Iterable, List, Optional, Tuple, Union

import numpy as np
import numpy.typing as npt

Items = Union[str, int, Iterable[Union[str, int]]]
_Path = Union[str, os.PathLike[str]]

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
    def source(self) -> Dict[str, Any]: ...
    def to_arrays(self) -> Tuple[npt.NDArray[np.uint64], npt.NDArray[np.bool_]]: ...

def load_trace(path: _Path) -> Trace: ...
def trace_from_arrays(
    pages: npt.NDArray[np.uint64],
    writes: Optional[npt.NDArray[np.bool_]] = None,
    page_size: int = 4096,
    source: Union[None, str, Dict[str, Any]] = None,
) -> Trace: ...
def write_trace(
    path: _Path,
    pages: npt.NDArray[np.uint64],
    writes: Optional[npt.NDArray[np.bool_]] = None,
    page_size: int = 4096,
    source: Union[None, str, Dict[str, Any]] = None,
) -> Dict[str, Any]: ...
def trace_meta(path: _Path) -> Optional[Dict[str, Any]]: ...
def gen(
    patterns: Items,
    output: _Path,
    count: Union[None, int, str] = None,
    seed: int = 42,
    interleave: bool = False,
) -> Dict[str, Any]: ...
def import_trace(
    input: _Path,
    output: _Path,
    format: Optional[str] = None,
    id_column: Union[str, int] = "0",
    header: bool = False,
    delimiter: str = ",",
    op_column: Union[None, str, int] = None,
    time_column: Union[None, str, int] = None,
    time_unit_ns: int = 1_000_000_000,
    page_size: int = 4096,
    instructions: bool = False,
) -> Dict[str, Any]: ...
def sim(
    trace: Trace,
    policies: Items = "all",
    mem: Items = "10%,25%,50%",
    seed: int = 42,
    prefetch: Optional[Items] = None,
    hints: Optional[_Path] = None,
    refs_per_ms: int = 1000,
    save: Optional[_Path] = None,
    trace_path: Optional[_Path] = None,
    threads: Optional[int] = None,
    device: Optional[Items] = None,
    fault_path: Optional[Items] = None,
    base_time: Optional[float] = None,
) -> List[Dict[str, Any]]: ...
def sim_stream(
    path: _Path,
    policies: Items = "all",
    mem: Items = "10%,25%,50%",
    seed: int = 42,
    threads: Optional[int] = None,
    spill_dir: Optional[_Path] = None,
) -> List[Dict[str, Any]]: ...
def mrc_curves(
    trace: Trace,
    points: int = 20,
    mem: Optional[Items] = None,
    full: bool = False,
    shards: Optional[float] = None,
    shards_size: Optional[int] = None,
    policies: Optional[Items] = None,
    seed: int = 42,
) -> Dict[str, Any]: ...
def parse_policies(list: Items) -> List[str]: ...
def split_list(list: Items, what: str) -> List[str]: ...
def list_policies() -> List[Dict[str, Any]]: ...
def list_prefetchers() -> List[Dict[str, Any]]: ...
def catalog_home() -> str: ...
def catalog_runs(home: Optional[_Path] = None, limit: int = 1000) -> List[Dict[str, Any]]: ...
def catalog_sweeps(home: Optional[_Path] = None, limit: int = 1000) -> List[Dict[str, Any]]: ...
def run_record(id: int, home: Optional[_Path] = None) -> Dict[str, Any]: ...
def sweep_record(id: int, home: Optional[_Path] = None) -> Dict[str, Any]: ...
def catalog_import_sweep(
    command: List[str],
    spec: Dict[str, Any],
    runs: List[Dict[str, Any]],
    home: Optional[_Path] = None,
) -> Dict[str, Any]: ...
def version() -> str: ...
