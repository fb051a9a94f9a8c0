"""Per-worker tracks of a profile: block tasks of jitted functions over Dask arrays
(`events.BlockEvent`) and the transfers Dask made for them (`events.WorkerTransferEvent`), as sent
back by the workers (jitkernel/distributed/profile.py).

A record's *track* is where it ran: `f @ worker 0 127.0.0.1:40211` for a block of `f` on that
worker, `f` itself for everything that ran in this process's jitted calls. A transfer is drawn on
the track of the worker that received it (the sender's for transfers to the client).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .records import _row_of
from .report import format_bytes, format_ms

WORKER_PHASES = ("block", "worker transfer")


def track(record: dict[str, Any]) -> str:
    """The timeline row of a record (see module docstring)."""
    return _row_of(record)


@dataclass
class WorkerRow:
    """What one worker did for one function: block tasks, compiles among them, seconds, bytes."""

    function: str
    worker: str
    blocks: int = 0
    compiles: int = 0
    disk_hits: int = 0
    compile: float = 0.0
    run: float = 0.0
    bytes_in: int = 0
    bytes_out: int = 0
    retried: int = 0  # blocks of this function that ran on more than one worker


def worker_rows(records: list[dict[str, Any]]) -> list[WorkerRow]:
    """One row per (function, worker) in order of first appearance."""
    rows: dict[tuple[str, str], WorkerRow] = {}
    runs: dict[tuple[str, str], set[str]] = {}  # (function, block) -> workers it ran on
    for r in records:
        if r["phase"] != "block":
            continue
        d = r["details"]
        row = rows.setdefault((r["function"], d["worker"]), WorkerRow(r["function"], d["worker"]))
        row.blocks += 1
        row.run += r["duration"] - d["compile"]
        if d["compile"]:
            row.compiles += 1
            row.disk_hits += bool(d["disk_hit"])
            row.compile += d["compile"]
        row.bytes_in += d["bytes_in"]
        row.bytes_out += d["bytes_out"]
        runs.setdefault((r["function"], d["block"]), set()).add(d["worker"])
    for (function, _), workers in runs.items():
        if len(workers) > 1:
            for w in workers:
                rows[(function, w)].retried += 1
    return list(rows.values())


def retried_blocks(records: list[dict[str, Any]]) -> dict[tuple[str, str], list[str]]:
    """(function, block) -> the workers it ran on, for blocks that ran on more than one (a retry
    after a worker was lost, or Dask running a task again)."""
    runs: dict[tuple[str, str], list[str]] = {}
    for r in records:
        if r["phase"] == "block":
            runs.setdefault((r["function"], r["details"]["block"]), []).append(r["details"]["worker"])
    return {k: v for k, v in runs.items() if len(set(v)) > 1}


def transfer_totals(records: list[dict[str, Any]]) -> dict[tuple[str, str, str], tuple[int, int]]:
    """(function, source, destination) -> (bytes, transfers)."""
    out: dict[tuple[str, str, str], tuple[int, int]] = {}
    for r in records:
        if r["phase"] == "worker transfer":
            d = r["details"]
            key = (r["function"], d["source"], d["destination"])
            n, k = out.get(key, (0, 0))
            out[key] = (n + d["nbytes"], k + 1)
    return out


def text_lines(records: list[dict[str, Any]]) -> list[str]:
    """The per-worker section of a report's text (empty without worker records)."""
    rows = worker_rows(records)
    if not rows:
        return []
    lines = ["per worker (block tasks of jitted functions over Dask arrays):"]
    for row in rows:
        compiles = f"{row.compiles} compile(s)" + (f" ({row.disk_hits} from disk)" if row.disk_hits else "")
        retried = f", {row.retried} block(s) also run elsewhere (retry)" if row.retried else ""
        lines.append(f"  {row.function} @ {row.worker}: {row.blocks} block(s), {compiles} {format_ms(row.compile)} ms, "
                     f"run {format_ms(row.run)} ms, read {format_bytes(row.bytes_in)}, wrote "
                     f"{format_bytes(row.bytes_out)}{retried}")
    for (function, source, dest), (n, k) in transfer_totals(records).items():
        lines.append(f"  {function}: {source} -> {dest}: {format_bytes(n)} in {k} transfer(s)")
    for (function, block), workers in retried_blocks(records).items():
        lines.append(f"  {function}: block {block} ran on {', '.join(workers)}")
    return lines


def worker_notes(records: list[dict[str, Any]]) -> list[str]:
    """Lines under the timeline: bytes moved between workers and to the client, and retried blocks."""
    lines = [f"bytes moved for {function}: {source} -> {dest}: {format_bytes(n)} ({k} transfer(s))"
             for (function, source, dest), (n, k) in transfer_totals(records).items()]
    retried = retried_blocks(records)
    lines += [f"retried: {function} block {block} ran on {', '.join(workers)}"
              for (function, block), workers in list(retried.items())[:8]]
    if len(retried) > 8:
        lines.append(f"... and {len(retried) - 8} more retried block(s)")
    return lines
