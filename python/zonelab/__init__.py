"""zonelab from Python: a deterministic, virtual-time simulator of NVMe ZNS SSDs.

The package wraps the same Rust code as the ``zonelab`` command line:

* :func:`presets` lists the device presets; :class:`Device` is a device built
  from a preset and the CLI's device options, driven one trace command at a
  time (the JSON of ``zonelab exec``, docs/trace-format.md);
* :func:`run_fio` runs fio jobs (``zonelab run``), :func:`fs_bench` a
  file-system workload (``zonelab fs-bench``);
* :func:`to_frame` turns any of their results into a pandas DataFrame;
* :mod:`zonelab.sweep` runs plans (lists of run specifications) serially, by
  shard, or on a Dask cluster, and :mod:`zonelab.study` builds the management
  design-space plan.

Errors are :class:`ZonelabError` (a ``ValueError``) carrying the CLI's message.
Simulation releases the GIL, so Python threads can run devices in parallel.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from . import _native
from ._native import ZonelabError
from . import study, sweep  # noqa: E402  (after ZonelabError: they import it)

# Pickled by reference as zonelab.ZonelabError, so errors cross Dask's process boundaries.
ZonelabError.__module__ = "zonelab"

__all__ = [
    "ZonelabError",
    "Device",
    "presets",
    "run_fio",
    "fs_bench",
    "calibrate",
    "to_frame",
    "study",
    "sweep",
]

Size = Union[int, str]


def presets() -> List[str]:
    """The built-in device presets (``zonelab device list``)."""
    return list(_native.presets())


def _text(value: Any) -> str:
    """A Python value as the CLI's text for it (``True`` -> ``true``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _device_spec(
    preset: str = "zn540",
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
) -> Dict[str, Any]:
    """The device options as the run specifications' JSON (``DeviceSpec``)."""
    if not isinstance(preset, str):
        raise ZonelabError(f"preset: expected a preset name or a TOML file path, got {preset!r}")
    spec: Dict[str, Any] = {"preset": preset, "data": bool(data)}
    for name, value in (
        ("zones", zones),
        ("max_open", max_open),
        ("max_active", max_active),
        ("conventional_zones", conventional_zones),
        ("lba_bytes", lba_bytes),
    ):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ZonelabError(f"{name}: expected a non-negative integer, got {value!r}")
        spec[name] = value
    for name, value in (("zone_size", zone_size), ("zone_capacity", zone_capacity), ("capacity", capacity)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise ZonelabError(f"{name}: expected bytes (int) or a size such as '64m', got {value!r}")
        spec[name] = str(value)
    if set:
        spec["set"] = [[str(path), _text(value)] for path, value in set.items()]
    return spec


def _resolve_device(device: Union[str, Mapping[str, Any], "Device"]) -> Dict[str, Any]:
    if isinstance(device, Device):
        return dict(device.spec)
    if isinstance(device, str):
        return _device_spec(device)
    if isinstance(device, Mapping):
        return _device_spec(**device)
    raise ZonelabError(f"device: expected a preset name, a dict of Device options or a Device, got {device!r}")


class Device:
    """A simulated ZNS SSD, driven one command at a time.

    The keyword arguments are the CLI's device options (``zonelab exec
    --help``): ``preset`` is a preset name (:func:`presets`) or the path of a
    TOML device file; sizes take ints (bytes) or the CLI's text (``"64m"``);
    ``set`` maps configuration paths to values (``--set PATH=VALUE``), e.g.
    ``{"management.finish.design": "pad"}``; ``capacity`` (``--capacity``)
    shrinks the namespaces and the flash together, e.g. ``"64g"``.

    Commands are the trace format's JSON objects as dicts and run as the
    lines of one ``zonelab exec`` trace would: each is submitted when the
    previous one completed (at once after an ``"async": True`` one, or at
    ``at_ns`` when later). :meth:`submit` returns the result ``zonelab exec``
    prints for the line.
    """

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
    ) -> None:
        self.spec = _device_spec(
            preset,
            zones,
            zone_size,
            zone_capacity,
            max_open,
            max_active,
            conventional_zones,
            lba_bytes,
            data,
            set,
            capacity=capacity,
        )
        self._native = _native.Device(json.dumps(self.spec))

    def submit(self, command: Mapping[str, Any]) -> Dict[str, Any]:
        """Runs one command (a trace line as a dict); its result dict."""
        if not isinstance(command, Mapping):
            raise ZonelabError(f"a command is a dict such as {{'op': 'identify'}}, got {command!r}")
        return json.loads(self._native.submit(json.dumps(dict(command))))

    def submit_all(self, commands: Iterable[Mapping[str, Any]]) -> List[Dict[str, Any]]:
        """Runs commands one after another: their results."""
        return [self.submit(c) for c in commands]

    def identify(self) -> Dict[str, Any]:
        """Identify Namespace (zoned): LBA size, zone size and capacity, limits."""
        return self.submit({"op": "identify"})

    def report_zones(
        self, slba: int = 0, filter: str = "all", max: Optional[int] = None, partial: bool = False
    ) -> List[Dict[str, Any]]:
        """Zone Management Receive: the zone descriptors from ``slba`` on."""
        command: Dict[str, Any] = {"op": "report_zones", "slba": slba, "filter": filter, "partial": partial}
        if max is not None:
            command["max"] = max
        result = self.submit(command)
        if result.get("status") != "success":
            raise ZonelabError(f"report_zones failed: {result}")
        return result["zones"]

    def write(
        self, slba: int, nlb: int, *, pid: Optional[int] = None, fua: bool = False, pattern: Optional[int] = None
    ) -> Dict[str, Any]:
        """Write ``nlb`` blocks at ``slba``; ``pid`` is the FDP placement identifier (the Data Placement
        directive), ``pattern`` the byte written in data mode. The result dict of the command."""
        command: Dict[str, Any] = {"op": "write", "slba": slba, "nlb": nlb, "fua": fua}
        if pid is not None:
            command["pid"] = pid
        if pattern is not None:
            command["pattern"] = pattern
        return self.submit(command)

    def ruh_status(self) -> List[Dict[str, Any]]:
        """I/O Management Receive, Reclaim Unit Handle Status (FDP): per placement identifier its handle
        (``pid``, ``ruhid``) and what is left of its reclaim unit (``ruamw``, LBAs)."""
        return self._fdp({"op": "ruh_status"})["handles"]

    def ruh_update(self, pids: Sequence[int]) -> Dict[str, Any]:
        """I/O Management Send, Reclaim Unit Handle Update (FDP): each named placement identifier's handle
        moves to an empty reclaim unit. The result dict (a bad identifier: ``invalid_placement_handle_list``)."""
        return self.submit({"op": "ruh_update", "pids": list(pids)})

    def fdp_events(self, pid: int, kinds: Sequence[str], enable: bool = True) -> Dict[str, Any]:
        """Set Features, FDP Events: the handle ``pid`` names reports (or stops reporting) the event
        ``kinds`` (``ru_not_fully_written``, ``invalid_placement_identifier``, ``media_reallocated``)."""
        return self.submit({"op": "fdp_events", "pid": pid, "kinds": list(kinds), "enable": enable})

    def fdp_logs(self) -> Dict[str, Any]:
        """Every FDP log: ``config``, ``stats`` (host, media and erased bytes, ``write_amplification``),
        ``usage`` per handle, ``host_events`` and ``controller_events``."""
        result = self._fdp({"op": "fdp_logs"})
        return {key: result[key] for key in ("config", "stats", "usage", "host_events", "controller_events")}

    def _fdp(self, command: Dict[str, Any]) -> Dict[str, Any]:
        """An FDP command whose result the caller unpacks: a failure (no FDP) raises."""
        result = self.submit(command)
        if result.get("status") != "success":
            raise ZonelabError(f"{command['op']} failed: {result}")
        return result

    @property
    def clock_ns(self) -> int:
        """The simulated time at which the next command is submitted."""
        return self._native.clock_ns

    def config_toml(self) -> str:
        """The device's whole configuration as TOML (``zonelab device show``)."""
        return self._native.config_toml()

    def __repr__(self) -> str:
        return f"zonelab.Device({self.spec!r}, clock_ns={self.clock_ns})"


def _fio_args(options: Union[None, Mapping[str, Any], Sequence[Mapping[str, Any]]]) -> List[str]:
    """fio options as its command line: each dict is one job (``--name`` first)."""
    if options is None:
        return []
    jobs = [options] if isinstance(options, Mapping) else list(options)
    args: List[str] = []
    for job in jobs:
        if not isinstance(job, Mapping):
            raise ZonelabError(f"options: expected a dict of fio options (or a list of them), got {job!r}")
        items = sorted(job.items(), key=lambda kv: kv[0] != "name")
        for name, value in items:
            if value is True or value is None:
                args.append(f"--{name}")
            elif value is False:
                continue
            else:
                args.append(f"--{name}={value}")
    return args


def _job_files(job: Union[None, str, "os.PathLike[str]"]) -> List[Tuple[str, str]]:
    if job is None:
        return []
    text = os.fspath(job)
    if "\n" not in text and os.path.isfile(text):
        with open(text, encoding="utf-8") as f:
            return [(text, f.read())]
    if "\n" not in text and text.endswith(".fio"):
        raise ZonelabError(f"job file {text}: no such file")
    return [("job", text)]


def run_fio(
    job: Union[None, str, "os.PathLike[str]"] = None,
    options: Union[None, Mapping[str, Any], Sequence[Mapping[str, Any]]] = None,
    device: Union[str, Mapping[str, Any], Device] = "zn540",
    *,
    seed: int = 0,
    scheduler: str = "none",
    plus: bool = False,
) -> Dict[str, Any]:
    """Runs fio jobs on a fresh device: fio's JSON report as a dict.

    ``job`` is a job file's text or path; ``options`` are fio options as a
    dict (``{"name": "w", "rw": "write", "bs": "4k", "time_based": True}``)
    or a list of dicts, one per job, as on fio's command line. ``device`` is
    a preset name, a dict of :class:`Device` options or a :class:`Device`
    (only its options are used: the jobs run on a new device). ``seed``,
    ``scheduler`` (``none``, ``mq-deadline``, ``zinc``) and ``plus`` (fio's
    ``json+``) are ``zonelab run``'s ``--seed``, ``--scheduler`` and
    ``--output-format``.
    """
    spec = _resolve_device(device)
    report = _native.run_fio(json.dumps(spec), _job_files(job), _fio_args(options), int(seed), scheduler, bool(plus))
    return json.loads(report)


def fs_bench(**options: Any) -> Dict[str, Any]:
    """Runs a file-system workload on a fresh ZNS+-aware file system: the JSON
    report of ``zonelab fs-bench --output-format json``.

    Options are ``zonelab fs-bench``'s with underscores: ``workload``
    (fileserver, varmail, tpcc, ycsb-a, ycsb-f), ``recycling``, ``medium``
    (tlc, mlc, znand), ``chips``, ``lanes``, ``fs_size``, ``utilization``,
    ``write``, ``threads``, ``copyback``, ``copyback_aware``, ``plugging``
    (lba, ppa), ``seed``.
    """
    return json.loads(_native.fs_bench(json.dumps(options)))


def calibrate(
    measurements: Union[str, "os.PathLike[str]"],
    device: Union[str, Mapping[str, Any], Device] = "zn540",
    *,
    only: str = "",
    out: Union[None, str, "os.PathLike[str]"] = None,
    force: bool = False,
    runtime_ms: int = 1000,
    threads: Optional[int] = None,
    fit: Union[None, str, Sequence[str]] = None,
    folds: int = 5,
    max_evals: int = 60,
    fit_tail_weight: float = 1.0,
) -> Dict[str, Any]:
    """``zonelab calibrate``: reruns the rows of a measurements file
    (docs/measurements.md) on the device and returns report.json as a dict
    (``summary``: error per group; ``rows``: predicted vs measured per row;
    :func:`to_frame` of ``report["rows"]`` tabulates them). ``only`` selects
    rows as ``--only`` does; rows.csv, report.md, the plots and the job files
    (``jobs/``) go to ``out`` (a temporary directory when absent). As with
    ``--out``, a directory that holds files is refused unless ``force``,
    which replaces only an earlier zonelab run's results.

    ``fit`` fits device parameters as ``--fit`` does (``--set`` paths, a list
    or a comma-separated string, e.g. ``["controller.write_ns"]``), with
    ``folds``-fold cross-validation (0 or 1: none) and at most ``max_evals``
    loss evaluations per fit, the tail rows (p90 and above) weighing
    ``fit_tail_weight`` in its loss against 1 for the rest: report.json's ``extra`` is then the fit's
    summary (``params`` with ``start`` and ``fitted``, losses, ``cv_loss``),
    and ``out`` holds ``fitted.toml`` (load it with ``Device(preset=...)``
    or ``--device``).
    """
    import tempfile

    threads = threads if threads is not None else (os.cpu_count() or 1)
    spec = json.dumps(_resolve_device(device))
    if fit is None:
        params: List[str] = []
    elif isinstance(fit, str):
        params = [p.strip() for p in fit.split(",") if p.strip()]
    else:
        params = [str(p) for p in fit]
    if fit is not None and not params:
        raise ZonelabError("--fit needs at least one parameter")
    for name, value in (("folds", folds), ("max_evals", max_evals), ("runtime_ms", runtime_ms), ("threads", threads)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ZonelabError(f"{name}: expected a non-negative integer, got {value!r}")
    weight_ok = isinstance(fit_tail_weight, (int, float)) and not isinstance(fit_tail_weight, bool)
    if not weight_ok or not 0 < fit_tail_weight < float("inf"):
        raise ZonelabError(f"fit_tail_weight: expected a positive number, got {fit_tail_weight!r}")

    def native(directory: str) -> str:
        return _native.calibrate(
            os.fspath(measurements),
            spec,
            only,
            directory,
            bool(force),
            runtime_ms,
            threads,
            params,
            folds,
            max_evals,
            float(fit_tail_weight),
        )

    if out is None:
        with tempfile.TemporaryDirectory(prefix="zonelab-calibrate-") as tmp:
            text = native(tmp)
    else:
        text = native(os.fspath(out))
    return json.loads(text)


def to_frame(result: Any) -> "pandas.DataFrame":  # noqa: F821
    """A result as a pandas DataFrame.

    * a fio or fs-bench report (a dict with ``"jobs"``): a row per job, nested
      fields flattened (``write.iops``, ``read.clat_ns.mean``);
    * a list of command results (:meth:`Device.submit`): a row per command;
    * a command result with ``"zones"`` (report zones): a row per zone;
    * stored runs of a sweep (dicts with ``"spec"`` and ``"result"``): a row
      per run, ``spec.*`` and ``result.*`` columns;
    * anything else JSON-like: :func:`pandas.json_normalize` of it.
    """
    import pandas as pd

    if isinstance(result, Mapping) and isinstance(result.get("jobs"), list):
        return pd.json_normalize(result["jobs"], sep=".")
    if isinstance(result, Mapping) and isinstance(result.get("zones"), list):
        return pd.DataFrame(result["zones"])
    if isinstance(result, Mapping):
        return pd.json_normalize([result], sep=".")
    rows = list(result)
    return pd.json_normalize(rows, sep=".")
