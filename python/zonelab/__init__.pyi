import os
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

import pandas

from . import study as study, sweep as sweep

class ZonelabError(ValueError): ...

Size = Union[int, str]

def presets() -> List[str]: ...

class Device:
    spec: Dict[str, Any]
    def __init__(
        self,
        preset: str = "zn540",
        *,
        zones: Optional[int] = None,
        zone_size: Optional[Size] = None,
        zone_capacity: Optional[Size] = None,
        max_open: Optional[int] = None,
        max_active: Optional[int] = None,
        conventional_zones: Optional[int] = None,
        lba_bytes: Optional[int] = None,
        data: bool = False,
        set: Optional[Mapping[str, Any]] = None,
        capacity: Optional[Size] = None,
    ) -> None: ...
    def submit(self, command: Mapping[str, Any]) -> Dict[str, Any]: ...
    def submit_all(self, commands: Iterable[Mapping[str, Any]]) -> List[Dict[str, Any]]: ...
    def identify(self) -> Dict[str, Any]: ...
    def report_zones(
        self, slba: int = 0, filter: str = "all", max: Optional[int] = None, partial: bool = False
    ) -> List[Dict[str, Any]]: ...
    def write(
        self, slba: int, nlb: int, *, pid: Optional[int] = None, fua: bool = False, pattern: Optional[int] = None
    ) -> Dict[str, Any]: ...
    def ruh_status(self) -> List[Dict[str, Any]]: ...
    def ruh_update(self, pids: Sequence[int]) -> Dict[str, Any]: ...
    def fdp_events(self, pid: int, kinds: Sequence[str], enable: bool = True) -> Dict[str, Any]: ...
    def fdp_logs(self) -> Dict[str, Any]: ...
    @property
    def clock_ns(self) -> int: ...
    def config_toml(self) -> str: ...

def run_fio(
    job: Union[None, str, os.PathLike[str]] = None,
    options: Union[None, Mapping[str, Any], Sequence[Mapping[str, Any]]] = None,
    device: Union[str, Mapping[str, Any], Device] = "zn540",
    *,
    seed: int = 0,
    scheduler: str = "none",
    plus: bool = False,
) -> Dict[str, Any]: ...
def fs_bench(**options: Any) -> Dict[str, Any]: ...
def to_frame(result: Any) -> pandas.DataFrame: ...
def calibrate(
    measurements: Union[str, os.PathLike[str]],
    device: Union[str, Mapping[str, Any], Device] = "zn540",
    *,
    only: str = "",
    out: Union[None, str, os.PathLike[str]] = None,
    force: bool = False,
    runtime_ms: int = 1000,
    threads: Optional[int] = None,
    fit: Union[None, str, Sequence[str]] = None,
    folds: int = 5,
    max_evals: int = 60,
    fit_tail_weight: float = 1.0,
) -> Dict[str, Any]: ...
