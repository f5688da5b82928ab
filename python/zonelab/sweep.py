"""Plans: run them serially, by shard, or on a Dask cluster.

A plan is a list of run specifications (dicts that serialize to the JSON of
the Rust runner's ``RunSpec``: ``{"kind": "characterization", ...}`` or
``{"kind": "design", ...}``, see :mod:`zonelab.study`). Every run yields one
stored line, ``{"key": ..., "spec": ..., "result": ...}``, written by the
Rust side, so the same spec gives the same bytes wherever it runs. A
:class:`Store` (a directory of JSON Lines files, the same format as
``zonelab reproduce characterization --store``) keeps finished runs, and a
rerun skips them.

:func:`run` executes a plan on Dask distributed: a local cluster of worker
processes by default, or the cluster at ``address``. Each run is one task,
retried ``retries`` times when it fails, and run elsewhere when its worker
dies; the results come back in plan order, identical to :func:`run_serial`.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from . import _native
from ._native import ZonelabError

__all__ = ["Store", "key", "shard", "run_serial", "run", "characterization_plan", "render_characterization"]

Spec = Mapping[str, Any]


def _spec_json(spec: Spec) -> str:
    if not isinstance(spec, Mapping):
        raise ZonelabError(f"a run specification is a dict, got {spec!r}")
    return json.dumps(dict(spec))


def key(spec: Spec) -> str:
    """The store key of a run specification (a stable hash computed by the Rust runner)."""
    return _native.spec_key(_spec_json(spec))


def run_line(spec_json: str) -> str:
    """Runs one specification (JSON text): the stored line. What a Dask task runs."""
    return _native.run_spec(spec_json)


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


def run_serial(plan: Sequence[Spec], store: Optional[Store] = None, *, raw: bool = False) -> List[Any]:
    """Runs the plan here, one run after another: the stored runs in plan order
    (dicts, or the lines themselves with ``raw=True``)."""
    keys, specs, lines = _pending(plan, store)
    for run_key, spec in zip(keys, specs):
        if run_key in lines:
            continue
        lines[run_key] = run_line(spec)
        if store is not None:
            store.add(lines[run_key])
    return _in_order(keys, lines, raw)


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
        unique = dict(todo)
        futures = [
            client.submit(run_line, spec, key=f"zonelab-run-{run_key}", retries=retries, pure=False)
            for run_key, spec in unique.items()
        ]
        for done, future in enumerate(as_completed(futures), 1):
            line = future.result()
            lines[json.loads(line)["key"]] = line
            if store is not None:
                store.add(line)
            if on_result is not None:
                on_result(done, len(futures))
    finally:
        for thing in owned:
            thing.close()
    return _in_order(keys, lines, raw)


def characterization_plan(quick: bool = True, only: str = "") -> List[Dict[str, Any]]:
    """The plan of ``zonelab reproduce characterization`` (``--quick``, ``--only``)."""
    return [json.loads(s) for s in _native.characterization_plan(bool(quick), only)]


def render_characterization(results: Sequence[Any], out: "os.PathLike[str] | str") -> str:
    """Writes the characterization's CSVs, plots and summary into ``out`` from
    stored runs (plan order): the summary table, as the CLI prints it."""
    lines = [r if isinstance(r, str) else json.dumps(r) for r in results]
    return _native.characterization_render(lines, os.fspath(out))
