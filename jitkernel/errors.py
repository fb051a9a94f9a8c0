"""The exceptions jitkernel raises. Every one names its cause; all derive from `JitError`
except where NumPy itself would raise a builtin type (ValueError for shapes, TypeError for dtypes)."""
from __future__ import annotations


class JitError(Exception):
    """Base class of jitkernel's own errors."""


class TracerError(JitError):
    """A traced value was used in a way that needs its concrete value."""


class TracerBoolConversionError(TracerError, TypeError):
    """`if`, `while`, `and`, `or`, `not` or `bool()` on a traced array."""


class TracerIntegerConversionError(TracerError, TypeError):
    """`int()`, `float()`, `operator.index()` on a traced array."""


class TracerArrayConversionError(TracerError, TypeError):
    """`np.asarray()` (or any NumPy call that needs concrete data) on a traced array."""


class UnsupportedOperationError(JitError, NotImplementedError):
    """A NumPy function, method or argument that jitkernel does not (yet) compile."""


class UnsupportedAttributeError(UnsupportedOperationError, AttributeError):
    """An ndarray attribute or method that traced arrays do not have (`.strides`, `.flat`,
    `.view(dtype)`, ...): a jitkernel error that is an AttributeError too, so `hasattr()` and
    `getattr(x, name, default)` keep working."""


class CompileError(JitError):
    """The backend could not compile a program (invalid LLVM IR, missing symbols, ...)."""


class IRVerificationError(JitError):
    """A Program broke an IR invariant (types, SSA, shapes); a bug in a pass or a rule."""


class BackendUnavailableError(JitError):
    """A backend was asked for that this machine or build cannot run (e.g. "cuda" with no GPU,
    CUDA toolkit or PyCUDA); raised by `jk.jit(..., backend=...)`, or at the first call when
    `jk.config.default_backend` names it."""


class InPlaceUpdateError(UnsupportedOperationError):
    """An augmented assignment (`G += x`) on a NumPy array captured from outside the jitted
    function (a global, an attribute, an array another name refers to): NumPy would change an
    array that outlives the call, and a captured array is a constant of the compiled program.
    Writes into traced arrays (arguments, views, arrays made inside) follow NumPy and are
    written back (docs/numpy-support.md "In-place updates and views")."""


class ContainerMutationError(UnsupportedOperationError):
    """A jitted function changed a dict or list ARGUMENT itself (`d["y"] = ...`, `lst.append(...)`,
    `del d[k]`): the compiled program never runs the Python code again, so the caller's container
    could not end as plain Python leaves it; raised at the trace, naming the argument and the line
    (trace/container_arguments.py). Writes into arrays inside containers are written back."""


class TracedRandomError(UnsupportedOperationError):
    """`np.random` (or the `random` module) was used while tracing: the sample would be frozen
    into the compiled program as a constant, so every call would return the same numbers."""
