"""A peer library (Numba, JAX) in another interpreter, as a line-oriented JSON server.

The peers are not dependencies of jitkernel and live in their own virtualenv
(`--peer-python`), so each peer benchmark has a small server script (loops_numba.py,
transforms_jax.py) that this client starts, greets and asks one JSON request per line.
A peer that cannot start is reported as the reason its column is skipped, never as a failure.
"""
from __future__ import annotations

import json
import os
import subprocess


class PeerServer:
    """The server `script` (next to this file) run by `python`; `what` names the library for
    the skip message. `version` and `error` come from the server's first line."""

    def __init__(self, python: str | None, script: str, what: str) -> None:
        self.proc, self.version, self.error = None, None, None
        if not python:
            self.error = f"no --peer-python (a Python with {what})"
            return
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), script)
        try:
            self.proc = subprocess.Popen([python, path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL, text=True, bufsize=1)
            hello = json.loads(self.proc.stdout.readline())
        except Exception as e:  # noqa: BLE001 - reported as the reason for the skip
            self.error, self.proc = f"peer failed to start: {e}", None
            return
        self.version, self.error = hello.get("version"), hello.get("error")
        if self.error:
            self.close()

    def request(self, request: dict) -> dict:
        self.proc.stdin.write(json.dumps(request) + "\n")
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        if self.proc is not None:
            self.proc.stdin.close()
            self.proc.wait(timeout=60)
            self.proc = None
