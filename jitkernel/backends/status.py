"""The status word: how compiled code reports NumPy's run-time errors, shared by every backend.

Kernels OR a code into the 32-bit `value` of a StatusWord (LLVM stores on the CPU, device atomics
on the GPU); the first out-of-bounds traced index also stores its value, axis and axis length at
STATUS_INDEX_DETAIL's byte offsets. After a call the runtime raises NumPy's exception for the
codes set (`raise_status`), with NumPy's message.

>>> word = StatusWord()
>>> word.value = STATUS_SORTER
>>> raise_status(word)
Traceback (most recent call last):
    ...
ValueError: Sorter index out of range.
"""
from __future__ import annotations

import ctypes

# Integer power with a negative exponent (NumPy's ValueError).
STATUS_NEGATIVE_POWER = 1
# A traced index outside its axis (fusion/dynamic.py's check kernel, the GPU's gathers and takes).
STATUS_INDEX = 2
STATUS_INDEX_DETAIL = (8, 16, 24)  # byte offsets of the index, axis and axis length (int64s)
STATUS_SORTER = 4  # a searchsorted sorter entry outside the array
STATUS_MESSAGES = {STATUS_NEGATIVE_POWER: (ValueError, "Integers to negative integer powers are not allowed."),
                   STATUS_INDEX: (IndexError, "index out of bounds (a traced index in compiled code)"),
                   STATUS_SORTER: (ValueError, "Sorter index out of range.")}


class StatusWord(ctypes.Structure):
    """The error flags of one call; `addr` is taken once. The first out-of-bounds traced index
    also leaves its value, axis and axis length (STATUS_INDEX_DETAIL), for NumPy's message."""

    _fields_ = [("value", ctypes.c_int32), ("_pad", ctypes.c_int32),
                ("index", ctypes.c_int64), ("axis", ctypes.c_int64), ("size", ctypes.c_int64)]

    def __init__(self) -> None:
        ctypes.Structure.__init__(self)
        self.addr = ctypes.addressof(self)


def merge_status(word: StatusWord, others: list[StatusWord]) -> None:
    """OR the flags of `others` (the words of a split call's threads) into `word`, keeping the
    details of the first out-of-bounds index where `word` has none yet."""
    for other in others:
        if other.value & STATUS_INDEX and not word.value & STATUS_INDEX:
            word.index, word.axis, word.size = other.index, other.axis, other.size
        word.value |= other.value


def raise_status(word: StatusWord) -> None:
    """Clear the word and raise NumPy's exception for the first code set in it, if any."""
    code = word.value
    word.value = 0
    for bit, (exc, msg) in STATUS_MESSAGES.items():
        if code & bit:
            if bit == STATUS_INDEX and isinstance(word, StatusWord):
                msg = f"index {word.index} is out of bounds for axis {word.axis} with size {word.size}"
            raise exc(msg)
