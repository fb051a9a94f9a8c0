"""The user's line while tracing: the innermost frame outside jitkernel and NumPy, the
instruction it is executing, the target of its augmented assignment. Error messages and
warnings name that line; the Tracer's conversions read the instruction (`out[i] = traced`).
"""
from __future__ import annotations

import ast
import dis
import linecache
import os
import sys
from typing import Any

import numpy as np

from ..tracebacks import describe_location

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_NUMPY_DIR = os.path.dirname(os.path.abspath(np.__file__))
_ENGINE_DIRS = (_PACKAGE_DIR + os.sep, _NUMPY_DIR + os.sep)


def _is_engine_file(filename: str) -> bool:
    """jitkernel's own files and NumPy's Python layer (np.sum -> fromnumeric.py): never the
    user's line."""
    return os.path.abspath(filename).startswith(_ENGINE_DIRS)


def read_by_engine() -> bool:
    """Whether the code asking its caller's question is jitkernel's own (not the user's, not
    NumPy's Python layer): two frames up from this function's caller."""
    return sys._getframe(2).f_code.co_filename.startswith(_PACKAGE_DIR + os.sep)


def user_frame(depth: int = 1) -> Any:
    """The innermost frame outside jitkernel (the user's code), or None."""
    frame = sys._getframe(depth)
    while frame is not None and _is_engine_file(frame.f_code.co_filename):
        frame = frame.f_back
    return frame


def user_frame_location() -> str:
    """`file:line: source` of the innermost frame outside jitkernel (the user's code); in a
    notebook `Cell In[2], line 3: source`."""
    frame = user_frame(2)
    if frame is None:
        return "<unknown location>"
    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
    return describe_location(frame.f_code.co_filename, frame.f_lineno) + (f": {line}" if line else "")


def user_instruction(following: bool = False) -> tuple[str, str]:
    """(opname, argrepr) of the instruction the user's frame is executing, e.g. ("BINARY_OP",
    "+=") inside `x += y` or ("STORE_SUBSCR", "") inside `out[0] = v`; with `following`, of the
    instruction after it (the store of an augmented assignment: STORE_FAST for a local);
    ("", "") if unknown."""
    frame = user_frame(2)
    if frame is None:
        return "", ""
    found = False
    for ins in dis.get_instructions(frame.f_code):
        if found:
            return ins.opname, ins.argrepr
        if ins.offset == frame.f_lasti:
            if not following:
                return ins.opname, ins.argrepr
            found = True
    return "", ""


def user_statement_target() -> str | None:
    """The target of the augmented assignment the user's frame is executing (`x1` in
    `x1 += A @ y`, `s.acc` in `s.acc *= 2`), read from the source; None if unknown."""
    frame = user_frame(2)
    if frame is None:
        return None
    try:
        positions = list(frame.f_code.co_positions())[frame.f_lasti // 2]
        start, end, col, end_col = positions
        lines = [linecache.getline(frame.f_code.co_filename, n) for n in range(start, end + 1)]
        if not lines or None in positions:
            return None
        lines[-1] = lines[-1][:end_col]
        lines[0] = lines[0][col:]
        node = ast.parse("".join(lines).strip()).body[0]
    except (IndexError, ValueError, SyntaxError, TypeError):
        return None
    return ast.unparse(node.target) if isinstance(node, ast.AugAssign) else None
