"""NumPy's run-time errors inside one XLA computation: a small *check state* threaded through the
lowered program in program order, returned with the outputs, and raised on the host after the
call (an XLA computation cannot raise).

The state is five scalars: the status word of backends/status.py (`STATUS_*` codes OR-ed in),
the index detail of the first out-of-bounds index (value, axis, length: NumPy's message), and
the id of the first failed *site*, a check whose exception is built on the host (`raise_if`'s
exception and message, or the exception a host step raised). Loops carry the state; because
every check reads the state the previous one left, the first failure in program order is the
one raised, as NumPy raises the first.
"""
from __future__ import annotations

from typing import Any, Callable

import jax.numpy as jnp
import numpy as np

from ..status import STATUS_INDEX, StatusWord, raise_status

_WORD, _SITE, _INDEX, _AXIS, _SIZE = range(5)


def initial_state() -> tuple:
    return (jnp.int32(0), jnp.int32(0), jnp.int64(0), jnp.int64(0), jnp.int64(0))


class Checks:
    """The check state of one lowering and the host side of its sites."""

    def __init__(self) -> None:
        self.state: tuple = ()  # set by `start`, inside the traced computation
        self.used = False  # whether any check was recorded
        self.sites: list[Callable[[], Exception]] = []  # site id - 1 -> builds its exception

    def start(self) -> None:
        self.state = initial_state()

    def status(self, bad: Any, code: int) -> None:
        """OR `code` into the status word where any element of `bad` holds."""
        self.used = True
        word = self.state[_WORD] | jnp.where(jnp.any(bad), jnp.int32(code), jnp.int32(0))
        self.state = (word,) + self.state[1:]

    def index(self, bad: Any, index: Any, axis: int, size: int) -> None:
        """An out-of-bounds index (0-d `bad`): sets STATUS_INDEX and, if it is the first,
        keeps the index the user wrote, the axis and its length for NumPy's message."""
        self.used = True
        first = bad & ((self.state[_WORD] & STATUS_INDEX) == 0)
        word = self.state[_WORD] | jnp.where(bad, jnp.int32(STATUS_INDEX), jnp.int32(0))
        keep = lambda new, old: jnp.where(first, jnp.asarray(new, jnp.int64), old)  # noqa: E731
        self.state = (word, self.state[_SITE], keep(index, self.state[_INDEX]),
                      keep(axis, self.state[_AXIS]), keep(size, self.state[_SIZE]))

    def site(self, bad: Any, exception: Callable[[], Exception]) -> None:
        """A check raising `exception()` on the host when the 0-d `bad` holds (the first only)."""
        self.used = True
        self.sites.append(exception)
        site = jnp.int32(len(self.sites))
        first = bad & (self.state[_SITE] == 0)
        self.state = (self.state[_WORD], jnp.where(first, site, self.state[_SITE])) + self.state[2:]

    def packed(self) -> Any:
        """The state as one int64 vector (one output buffer, not five), or None when unused:
        each extra output of a TPU computation costs a buffer (measured: five scalar outputs
        added 0.15 ms to a 1.4 ms copy on a v5e)."""
        if not self.used:  # no check recorded: the program returns no state
            return None
        return jnp.stack([jnp.asarray(v, jnp.int64) for v in self.state])

    def raise_for(self, values: Any) -> None:
        """On the host, after the call: NumPy's exception for the first failure, if any."""
        if values is None:
            return
        word, site, index, axis, size = (int(v) for v in np.asarray(values))
        if site:
            raise self.sites[site - 1]()
        status = StatusWord()  # the CPU runtime's word: one place words NumPy's messages
        status.value, status.index, status.axis, status.size = word, index, axis, size
        raise_status(status)
