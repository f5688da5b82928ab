"""Plans: run them serially, by shard, or on a Dask cluster.

A plan is a list of run specifications (dicts that serialize to the JSON of
the Rust runner's ``RunSpec``: ``{"kind": "characterization", ...}``,
``{"kind": "design", ...}`` (see :mod:`zonelab.study`), ``{"kind":
"calibrate", ...}`` or ``{"kind": "znsplus", ...}``). A run may need the
results of others (a calibration job throttled to a share of its standalone
rate needs that standalone run): those run first, and are stored like any
other run. Every run yields one
stored line, ``{"key": ..., "spec": ..., "result": ...}``, written by the
Rust side, so the same spec gives the same bytes wherever it runs. A
:class:`Store` (a directory of JSON Lines files, the same format as
``zonelab reproduce characterization --store``) keeps finished runs, and a
rerun skips them.

:func:`run` executes a plan on Dask distributed: a local cluster of worker
processes by default, or the cluster at ``address``. Each run is one task,
retried ``retries`` times when it fails, and run elsewhere when its worker
dies; a run's task depends on the tasks of the runs it needs; the results
come back in plan order, identical to :func:`run_serial`.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from . import _native
from ._native import ZonelabError

__all__ = [
    "Store",
    "key",
    "needs",
    "shard",
    "run_serial",
    "run",
    "characterization_plan",
    "render_characterization",
    "calibrate_plan",
    "render_calibrate",
    "znsplus_plan",
    "render_znsplus",
]

Spec = Mapping[str, Any]


def _spec_json(spec: Spec) -> str:
    if not isinstance(spec, Mapping):
        raise ZonelabError(f"a run specification is a dict, got {spec!r}")
    return json.dumps(dict(spec))


def key(spec: Spec) -> str:
    """The store key of a run specification (a stable hash computed by the Rust runner)."""
    return _native.spec_key(_spec_json(spec))


def needs(spec: Spec) -> List[Dict[str, Any]]:
    """The specifications whose results ``spec`` takes as input (usually none)."""
    return [json.loads(s) for s in _native.spec_needs(_spec_json(spec))]


def run_line(spec_json: str, *needed_lines: str) -> str:
    """Runs one specification (JSON text), given the stored lines of the runs
    it needs (or none: they run here first): the stored line. What a Dask task runs."""
    return _native.run_spec(spec_json, list(needed_lines))


def shard(plan: Sequence[Spec], index: int, count: int) -> List[Spec]:
    """Shard ``index`` of ``count`` (``--shard index/count``): positions index, index + count, ..."""
    if not (isinstance(index, int) and isinstance(count, int) and 0 <= index < count):
        raise ZonelabError(f"shard '{index}/{count}': use INDEX/COUNT with 0 <= INDEX < COUNT, e.g. 0/4")
    return [s for p, s in enumerate(plan) if p % count == index]


class Store:
    """A result store directory: every ``*.jsonl`` in it is read; this writer appends to ``file_name``."""

    def __init__(self, directory: "os.PathLike[str] | str", file_name: str = "sweep.jsonl") -> None:
        self.directory = os.fspath(directory)
        os.makedirs(self.directory, exist_ok=True)
        self.path = os.path.join(self.directory, file_name)
        self.lines: Dict[str, str] = {}
        for name in sorted(os.listdir(self.directory)):
            if name.endswith(".jsonl"):
                self._read(os.path.join(self.directory, name))

    def _read(self, path: str) -> None:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        rows = text.split("\n")
        for number, line in enumerate(rows, 1):
            if not line.strip():
                continue
            try:
                stored = json.loads(line)
                stored_key = stored["key"]
            except (ValueError, KeyError, TypeError) as e:
                # A writer killed mid-line leaves a partial last line: that run reruns.
                if number == len(rows) and not text.endswith("\n"):
                    continue
                raise ZonelabError(f"{path}: line {number}: not a stored run: {e}") from None
            self.lines.setdefault(stored_key, line)

    def __contains__(self, run_key: str) -> bool:
        return run_key in self.lines

    def __len__(self) -> int:
        return len(self.lines)

    def add(self, line: str) -> None:
        """Appends a stored line (flushed at once)."""
        run_key = json.loads(line)["key"]
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(line + "\n")
        self.lines[run_key] = line


def _pending(plan: Sequence[Spec], store: Optional[Store]) -> Tuple[List[str], List[str], Dict[str, str]]:
    """The plan's keys, its specs' JSON, and the lines already stored."""
    specs = [_spec_json(s) for s in plan]
    keys = [_native.spec_key(s) for s in specs]
    done = {k: store.lines[k] for k in keys if store is not None and k in store}
    return keys, specs, done


def _in_order(keys: List[str], lines: Dict[str, str], raw: bool) -> List[Any]:
    ordered = [lines[k] for k in keys]
    return ordered if raw else [json.loads(line) for line in ordered]


def _needed(spec_json: str) -> List[Tuple[str, str]]:
    """(key, spec JSON) of each run ``spec_json`` needs."""
    return [(_native.spec_key(n), n) for n in _native.spec_needs(spec_json)]


def run_serial(plan: Sequence[Spec], store: Optional[Store] = None, *, raw: bool = False) -> List[Any]:
    """Runs the plan here, one run after another: the stored runs in plan order
    (dicts, or the lines themselves with ``raw=True``). Runs the plan's runs
    need that neither the plan before them nor the store holds run first, and
    are stored too."""
    keys, specs, lines = _pending(plan, store)

    def ensure(run_key: str, spec: str, depth: int) -> str:
        if run_key not in lines:
            if depth > _DEPTH_MAX:
                raise ZonelabError(f"run {run_key}: runs need runs more than {_DEPTH_MAX} deep")
            needed = [ensure(k, s, depth + 1) for k, s in _needed(spec)]
            lines[run_key] = run_line(spec, *needed)
            if store is not None:
                store.add(lines[run_key])
        return lines[run_key]

    for run_key, spec in zip(keys, specs):
        ensure(run_key, spec, 0)
    return _in_order(keys, lines, raw)


# How deep runs may need runs that need runs (as the Rust runner).
_DEPTH_MAX = 4


def run(
    plan: Sequence[Spec],
    *,
    address: Optional[str] = None,
    client: Any = None,
    n_workers: int = 2,
    retries: int = 3,
    store: Optional[Store] = None,
    raw: bool = False,
    on_result: Optional[Callable[[int, int], None]] = None,
) -> List[Any]:
    """Runs the plan on Dask distributed: the stored runs in plan order.

    ``client`` is a ``distributed.Client`` to use; else ``address`` names a
    running scheduler (``"tcp://host:8786"``); else a local cluster of
    ``n_workers`` single-threaded worker processes starts and stops here.
    Runs the store holds are not run again; each finished run is added to
    it as it arrives. ``on_result(done, total)`` is called after each.
    """
    from dask.distributed import Client, LocalCluster, as_completed

    keys, specs, lines = _pending(plan, store)
    todo = [(k, s) for k, s in zip(keys, specs) if k not in lines]
    owned: List[Any] = []
    if client is None:
        if address is not None:
            client = Client(address)
        else:
            cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=None)
            owned.append(cluster)
            client = Client(cluster)
        owned.insert(0, client)
    try:
        # Each run's task key is its store key: the same run is one task however often it is asked for.
        futures: Dict[str, Any] = {}

        def submit(run_key: str, spec: str, depth: int) -> Any:
            if run_key not in futures:
                if depth > _DEPTH_MAX:
                    raise ZonelabError(f"run {run_key}: runs need runs more than {_DEPTH_MAX} deep")
                # Stored inputs go in as lines; the others as their tasks, which Dask runs first.
                needed = [lines[k] if k in lines else submit(k, s, depth + 1) for k, s in _needed(spec)]
                futures[run_key] = client.submit(
                    run_line, spec, *needed, key=f"zonelab-run-{run_key}", retries=retries, pure=False
                )
            return futures[run_key]

        for run_key, spec in todo:
            submit(run_key, spec, 0)
        total = len(futures)
        for done, future in enumerate(as_completed(list(futures.values())), 1):
            line = future.result()
            lines[json.loads(line)["key"]] = line
            if store is not None:
                store.add(line)
            if on_result is not None:
                on_result(done, total)
    finally:
        for thing in owned:
            thing.close()
    return _in_order(keys, lines, raw)


def characterization_plan(quick: bool = True, only: str = "") -> List[Dict[str, Any]]:
    """The plan of ``zonelab reproduce characterization`` (``--quick``, ``--only``)."""
    return [json.loads(s) for s in _native.characterization_plan(bool(quick), only)]


def render_characterization(results: Sequence[Any], out: "os.PathLike[str] | str", *, force: bool = False) -> str:
    """Writes the characterization's CSVs, plots and summary into ``out`` from
    stored runs (plan order): the summary table, as the CLI prints it. ``out``
    must be new or empty unless ``force`` (as ``--out`` and ``--force``)."""
    lines = [r if isinstance(r, str) else json.dumps(r) for r in results]
    return _native.characterization_render(lines, os.fspath(out), bool(force))


def _lines(results: Sequence[Any]) -> List[str]:
    return [r if isinstance(r, str) else json.dumps(r) for r in results]


def calibrate_plan(
    measurements: "os.PathLike[str] | str",
    device: Any = "zn540",
    *,
    only: str = "",
    runtime_ms: int = 1000,
) -> List[Dict[str, Any]]:
    """The plan of ``zonelab calibrate`` (``--only``, ``--runtime-ms``): the
    standalone runs that throttled jobs need, then one run per simulated job."""
    from . import _resolve_device

    spec = json.dumps(_resolve_device(device))
    return [json.loads(s) for s in _native.calibrate_plan(os.fspath(measurements), spec, only, int(runtime_ms))]


def render_calibrate(
    results: Sequence[Any],
    measurements: "os.PathLike[str] | str",
    out: "os.PathLike[str] | str",
    device: Any = "zn540",
    *,
    only: str = "",
    runtime_ms: int = 1000,
    force: bool = False,
) -> Dict[str, Any]:
    """Writes what ``zonelab calibrate`` writes into ``out`` from the stored
    runs of :func:`calibrate_plan` (same arguments, plan order): report.json as
    a dict. ``out`` must be new or empty unless ``force``."""
    from . import _resolve_device

    spec = json.dumps(_resolve_device(device))
    text = _native.calibrate_render(
        os.fspath(measurements), spec, only, int(runtime_ms), _lines(results), os.fspath(out), bool(force)
    )
    return json.loads(text)


def znsplus_plan(
    quick: bool = True, *, fs_bytes: Optional[int] = None, write_per_fs: Optional[float] = None
) -> List[Dict[str, Any]]:
    """The plan of ``zonelab reproduce znsplus`` (``--quick``), or at another
    scale: a file system of ``fs_bytes``, ``write_per_fs`` of it written per run."""
    return [json.loads(s) for s in _native.znsplus_plan(bool(quick), fs_bytes, write_per_fs)]


def render_znsplus(
    results: Sequence[Any],
    quick: bool = True,
    *,
    fs_bytes: Optional[int] = None,
    write_per_fs: Optional[float] = None,
) -> List[Dict[str, str]]:
    """The figures and tables of ``zonelab reproduce znsplus`` from the stored
    runs of :func:`znsplus_plan` (same scale, plan order): ``name``, ``csv``
    and ``table`` (markdown, zonelab against the paper) of each."""
    outputs = _native.znsplus_render(_lines(results), bool(quick), fs_bytes, write_per_fs)
    return [{"name": n, "csv": c, "table": t} for n, c, t in outputs]
