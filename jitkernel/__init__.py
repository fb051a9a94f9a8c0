"""jitkernel: NumPy code traced into one IR, fused, and compiled with LLVM (CPU).

>>> import numpy as np, jitkernel as jk
>>> @jk.jit
... def f(x):
...     return np.tanh(x).sum()
>>> float(f(np.zeros(4, np.float32)))
0.0
"""
from __future__ import annotations

from . import events
from .api import CacheLimitWarning, Jitted, Lowered, Recompilation, jit, make_ir
from .config import config
from .errors import (BackendUnavailableError, CompileError, ContainerMutationError, InPlaceUpdateError,
                     IRVerificationError, JitError, TracedRandomError, TracerArrayConversionError, TracerBoolConversionError, TracerError,
                     TracerIntegerConversionError, UnsupportedOperationError)
from .interpreter import eval_program
from . import numpy as numpy  # jk.numpy; it also registers the functions a Tracer's methods call
from .benchmarking import BenchmarkRecord, benchmark
from . import lax  # jk.lax: cond, switch, while_loop, fori_loop, scan
from . import array_api  # jk.array_api: the array API standard's namespace (x.__array_namespace__() in jit)
from . import debug  # jk.debug: print, callback (run time, inside compiled code; docs/debugging.md)
from . import sharding  # jk.sharding: Mesh, PartitionSpec (P), NamedSharding (docs/distributed.md)
from .sharding import ShardedArray, dask_devices, device_put, devices, visualize_sharding
from . import device_array as device_array  # jk.DeviceArray, GPU devices (docs/gpu.md, "Device arrays and synchronisation")
from .device_array import DeviceArray
from . import random as random  # jk.random: explicit keys, JAX's threefry bits (not in __all__: `import *` must not shadow stdlib random)
from .transforms import (ArgumentNotWrittenWarning, BatchingError, CustomDerivativeError, GradientCheckError,
                         GradientError, check_grads, custom_jvp, custom_vjp, grad, hessian, jacfwd, jacrev, jvp,
                         stop_gradient, value_and_grad, vjp, vmap)

from ._version import __version__
from .backends import check_backend_name as _check_backend_name

if config.default_backend != "cpu":  # JITKERNEL_BACKEND: an unknown name fails now, naming the variable
    try:
        _check_backend_name(config.default_backend)
    except ValueError as _e:
        raise ValueError(f"environment variable JITKERNEL_BACKEND: {_e}") from None

__all__ = ["jit", "make_ir", "lax", "array_api", "debug", "sharding", "ShardedArray", "devices", "dask_devices", "device_put",
           "visualize_sharding", "DeviceArray", "benchmark", "BenchmarkRecord",
           "grad", "value_and_grad", "vjp", "jvp", "jacfwd", "jacrev", "hessian", "vmap", "stop_gradient", "check_grads",
           "custom_jvp", "custom_vjp", "CustomDerivativeError", "ArgumentNotWrittenWarning", "GradientCheckError",
           "GradientError", "BatchingError", "Jitted", "Lowered", "Recompilation", "CacheLimitWarning", "config", "events", "eval_program",
           "JitError", "BackendUnavailableError", "TracerError", "TracerBoolConversionError", "TracerIntegerConversionError",
           "TracerArrayConversionError", "UnsupportedOperationError", "InPlaceUpdateError", "TracedRandomError", "CompileError",
           "IRVerificationError", "ContainerMutationError", "__version__"]


def load_ipython_extension(ipython):  # pragma: no cover - exercised by the notebook tests
    """`%load_ext jitkernel`: hand over to the magics package (imported lazily)."""
    from jitkernel.magics import load_ipython_extension as load
    return load(ipython)


def unload_ipython_extension(ipython):  # pragma: no cover
    from jitkernel.magics import unload_ipython_extension as unload
    return unload(ipython)
