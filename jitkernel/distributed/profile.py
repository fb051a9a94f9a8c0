"""Per-worker profiles of jitted functions over Dask arrays (docs/distributed.md, "Per-worker profiles").

While a profiler listens in the driver (`events.SUBSCRIBERS` non-empty when the graph is built),
every block task of the graph is `recorded_run_block` instead of `worker.run_block`: it times the
block (and the compile or persistent-cache load it needed), counts the bytes of the input blocks
read and the output blocks written, and sends one small record back through Dask's own channel:

- on a `dask.distributed` worker: `Worker.log_event(TOPIC, record)` (the scheduler keeps it;
  the driver reads it with `Client.get_events(TOPIC)`), so a record survives its worker being
  killed after the block ran (the retry shows as the same block run on two workers);
- in the driver's own process (the threaded and synchronous schedulers): published at once as
  a `BlockEvent` to the driver's subscribers;
- in a child process of Dask's multiprocessing scheduler: dropped (that scheduler has no
  channel back but the task's result); documented in docs/distributed.md.

With profiling off the graph is exactly what it was before this module existed: `run_block`,
nothing recorded, nothing checked per task.

The driver turns records into `events.BlockEvent`s and the workers' transfer logs
(`Worker.transfer_incoming_log`, `transfer_outgoing_log`) into `events.WorkerTransferEvent`s when a
profile is drawn (`pull()`, called by `profiler.report`). Clocks: workers stamp records with
`time.time()`; `pull` measures each live worker's offset with `client.run(time.time)` (the
driver's clock read before and after; the offset is applied only when it exceeds half that round
trip, i.e. when it is a real skew and not the measurement's own noise) and maps the driver's wall
clock onto `events.clock()`.
"""
from __future__ import annotations

import contextlib
import itertools
import os
import sys
import threading
import time
import warnings
import weakref
from typing import Any, Iterator

import numpy as np

from .. import events
from . import worker as _worker
from .process_label import dask_worker, worker_label

TOPIC = "jitkernel-blocks"
_SEQ = itertools.count()  # per process: with the pid, tells records apart (pulled once each)

# Driver side: what the graphs built while profiling contained, so transfers can be attributed
# to a function: Dask key name -> jitted function name.
_KEY_FUNCTION: dict[str, tuple[str, float]] = {}  # Dask key name -> (block program token, when registered)
_TOKEN_FUNCTION: dict[str, tuple[str, int]] = {}  # block program token -> (name, function_id)
MAX_KEYS = 10_000
_BUILT: list[tuple[float, str]] = []  # (time.time(), block program token) of graphs built while profiling
_CLIENTS: "weakref.WeakSet[Any]" = weakref.WeakSet()
_SEEN: dict[int, set] = {}  # id(client) -> {(pid, seq)} of records already published
_TRANSFERS_SEEN: dict[int, dict[str, float]] = {}  # id(client) -> worker -> last transfer stop pulled


def function_of(block_name: str) -> str:
    """`f_block2` -> `f`: block programs are named after the jitted function (partition.py)."""
    head, sep, tail = block_name.rpartition("_block")
    return head if sep and tail.isdigit() else block_name


# -- worker side ----------------------------------------------------------------------------------
class _Named:
    def __init__(self, name: Any, address: str) -> None:
        self.name, self.address = name, address


def recorded_run_block(label: str, bp: Any, *blocks: Any) -> tuple[np.ndarray, ...]:
    """`worker.run_block(bp, *blocks)` plus a record of it (see module docstring): `label` names
    the block (`f_block1[0,2]`)."""
    compiles = _worker.compile_log()
    compiles.clear()
    t0 = time.time()
    outs = _worker.run_block(bp, *blocks)
    duration = time.time() - t0
    _send(bp.name, bp.token, label, t0, duration, compiles, sum(np.asarray(b).nbytes for b in blocks),
          sum(o.nbytes for o in outs))
    return outs


def recorded_combine(token: str, x: Any, axis: Any = None, keepdims: bool = False, *, prim: str,
                     backend: str) -> np.ndarray:
    """`worker.combine` (one level of a tree reduction) plus a record of it; `token` names the
    reduction (profile.register_function maps it to the jitted function). The record's block is
    the Dask key of the task on a distributed worker, else a per-process number."""
    compiles = _worker.compile_log()
    compiles.clear()
    t0 = time.time()
    out = _worker.combine(x, axis, keepdims, prim=prim, backend=backend)
    duration = time.time() - t0
    w = dask_worker()
    key = w.get_current_task() if w is not None else None
    label = f"{key[0]}[{','.join(map(str, key[1:]))}]" if isinstance(key, tuple) else str(key or "")
    _send(f"combine_{prim}", token, label or f"combine_{prim}#{next(_SEQ)}", t0, duration, compiles,
          np.asarray(x).nbytes, out.nbytes)
    return out


def _send(name: str, token: str, label: str, t0: float, duration: float, compiles: list, bytes_in: int,
          bytes_out: int) -> None:
    """Send one record back: log_event on a distributed worker, published in the driver's process."""
    record = {
        "name": name, "token": token, "block": label, "start": t0, "duration": duration,
        "compile": sum(c[1] for c in compiles), "disk_hit": bool(compiles) and all(c[2] for c in compiles),
        "bytes_in": int(bytes_in), "bytes_out": int(bytes_out),
        "pid": os.getpid(), "thread": threading.current_thread().name, "seq": next(_SEQ),
    }
    w = dask_worker()
    if w is not None:
        record["track"] = worker_label(w)  # not "worker": the scheduler sets that key
        record["address"] = w.address
        w.log_event(TOPIC, record)
    elif events.SUBSCRIBERS:  # the driver's own process: threaded or synchronous scheduler
        record["track"] = f"thread {record['thread']}"
        record["address"] = ""
        offset = time.time() - events.clock()
        for e in _block_events(record, offset):
            events.publish(e)


def combine_token(step: Any) -> str:
    """The token of a tree reduction's combine tasks (the plan keeps its steps, so ids are stable)."""
    return f"combine-{id(step)}"


# -- driver side ----------------------------------------------------------------------------------
@contextlib.contextmanager
def owned_by(jitted: Any) -> Iterator[None]:
    """While tracing/partitioning for `jitted` on this thread: its events published without a
    function_id (the optimiser's) get its id, so the profile shows one row for it, not two."""
    me, name, fid = threading.get_ident(), jitted.__name__, jitted.function_id

    def stamp(e: events.Event) -> None:
        if not e.function_id and e.function == name and threading.get_ident() == me:
            e.function_id = fid
    unsubscribe = events.subscribe(stamp)
    try:
        yield
    finally:
        unsubscribe()


def register_function(plan: Any, jitted: Any) -> None:
    """Remember which jitted function object the block programs of `plan` belong to (records name
    their block program's token), so `%jit_profile f` selects f's blocks and not a namesake's."""
    if len(_TOKEN_FUNCTION) > MAX_KEYS:
        _TOKEN_FUNCTION.clear()
    for step in plan.steps:
        bp = getattr(step, "bp", None)
        token = bp.token if bp is not None else combine_token(step) if hasattr(step, "prim") else None
        if token is not None:
            _TOKEN_FUNCTION[token] = (jitted.__name__, jitted.function_id)


def register_graph(token: str, keys: list[str]) -> None:
    """Remember that these Dask key names belong to the block program `token` (transfers are
    attributed by key), and the current distributed client (if any) to pull records from."""
    if len(_KEY_FUNCTION) > MAX_KEYS:
        _KEY_FUNCTION.clear()
    now = time.time()
    for k in keys:
        _KEY_FUNCTION[k] = (token, now)
    if len(_BUILT) > MAX_KEYS:
        del _BUILT[: len(_BUILT) // 2]
    _BUILT.append((time.time(), token))
    client = _default_client()
    if client is not None:
        _CLIENTS.add(client)


def owner(token: str, block_name: str) -> tuple[str, int]:
    """(function name, function_id) of a block program (id 0 where it was not registered)."""
    return _TOKEN_FUNCTION.get(token) or (function_of(block_name), 0)


def _default_client() -> Any:
    if "distributed" not in sys.modules:
        return None
    from distributed import default_client
    try:
        return default_client()
    except ValueError:
        return None


def _block_events(record: dict, offset: float) -> list[events.Event]:
    """A record (stamped with its worker's time.time()) -> its BlockEvent on events.clock():
    `offset` is that worker's time minus events.clock()."""
    function, function_id = owner(record["token"], record["name"])
    start = record["start"] - offset
    return [events.BlockEvent(function, start, record["duration"], function_id=function_id, worker=record["track"],
                              address=record.get("address", ""), pid=record["pid"], thread=record["thread"],
                              block=record["block"], program=record["name"], compile=record["compile"],
                              disk_hit=record["disk_hit"], bytes_in=record["bytes_in"],
                              bytes_out=record["bytes_out"])]


def clock_offsets(client: Any) -> dict[str, float]:
    """Per live worker: its `time.time()` minus the driver's, applied only where it exceeds half
    the round trip of the measurement (else 0: the same clock within what can be measured)."""
    before = time.time()
    theirs = client.run(time.time)
    after = time.time()
    middle, half = (before + after) / 2, (after - before) / 2
    return {w: (t - middle if abs(t - middle) > half else 0.0) for w, t in theirs.items()}


def _key_name(key: Any) -> str:
    return key[0] if isinstance(key, tuple) else str(key)


def built_before(t: float) -> str:
    """The token of the latest graph built while profiling at or before `t` (driver's time.time())."""
    token = ""
    for when, tok in _BUILT:
        if when > t:
            break
        token = tok
    return token


def _transfers(client: Any, offsets: dict[str, float]) -> list[dict]:
    """New entries of every worker's incoming transfer log (between workers) and outgoing log to
    a non-worker (the client), restricted to keys of profiled graphs."""
    def logs(dask_worker: Any) -> dict:
        return {"incoming": list(dask_worker.transfer_incoming_log),
                "outgoing": list(dask_worker.transfer_outgoing_log)}
    seen = _TRANSFERS_SEEN.setdefault(id(client), {})
    out = []
    for address, log in client.run(logs).items():
        last = seen.get(address, 0.0)
        newest = last
        for direction in ("incoming", "outgoing"):
            for entry in log[direction]:
                if entry["stop"] <= last:
                    continue
                newest = max(newest, entry["stop"])
                who = entry.get("who") or ""
                if direction == "outgoing" and who:
                    continue  # to a worker: the receiver's incoming log has it (the client's gets: who is None)
                keys = [_key_name(k) for k in entry.get("keys", {})]
                began = entry["start"] - offsets.get(address, 0.0)  # driver's time.time()
                # a key counts for a function from when its graph was built (an input array
                # gathered before it was passed to f is not f's)
                functions = {owner(_KEY_FUNCTION[k][0], "") for k in keys
                             if k in _KEY_FUNCTION and _KEY_FUNCTION[k][1] <= began}
                if not functions and direction == "outgoing":
                    # results gathered by the client go under Dask's own key (finalize-...), named
                    # after no function: counted for the latest graph built before the gather began
                    token = built_before(began)
                    functions = {owner(token, "")} if token else set()
                if not functions:
                    continue
                source, dest = (who, address) if direction == "incoming" else (address, who or "client")
                out.append({"function": sorted(functions)[0], "start": entry["start"],
                            "duration": entry["stop"] - entry["start"], "source": source,
                            "destination": dest if direction == "incoming" else "client",
                            "nbytes": int(entry.get("total", 0)), "keys": len(keys), "address": address})
        seen[address] = newest
    return out


def pull(client: Any = None) -> int:
    """Publish the records of every client profiled graphs ran on (or of `client`) as jitkernel
    events, each once; returns how many were published. Called by `profiler.report`."""
    clients = [client] if client is not None else list(_CLIENTS)
    default = _default_client()
    if client is None and default is not None and default not in clients:
        clients.append(default)
    published = 0
    for c in clients:
        if getattr(c, "status", "") != "running":
            continue
        try:
            published += _pull_one(c)
        except Exception as e:  # a worker going away mid-pull: say so, the profile stays usable
            warnings.warn(f"jitkernel profile: could not fetch the workers' block records from {c}: "
                          f"{type(e).__name__}: {e}", RuntimeWarning, stacklevel=2)
    return published


def _pull_one(client: Any) -> int:
    seen = _SEEN.setdefault(id(client), set())
    offsets = clock_offsets(client)
    driver_offset = time.time() - events.clock()  # wall clock -> events.clock()
    count = 0
    current = set()
    for _, record in client.get_events(TOPIC):
        ident = (record["pid"], record["seq"])
        current.add(ident)
        if ident in seen:
            continue
        seen.add(ident)
        offset = offsets.get(record.get("address", ""), 0.0) + driver_offset
        for e in _block_events(record, offset):
            events.publish(e)
            count += 1
    seen &= current  # records the scheduler no longer keeps need no memory
    info = client.scheduler_info().get("workers", {})
    label = lambda a: worker_label(_Named(info[a].get("name", a), a)) if a in info else a  # noqa: E731
    for t in _transfers(client, offsets):
        offset = offsets.get(t["address"], 0.0) + driver_offset
        events.publish(events.WorkerTransferEvent(t["function"][0], t["start"] - offset, t["duration"],
                                            function_id=t["function"][1],
                                            worker=label(t["address"]), source=label(t["source"]),
                                            destination=label(t["destination"]), nbytes=t["nbytes"], keys=t["keys"]))
        count += 1
    return count
