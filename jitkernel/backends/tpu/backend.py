"""The TPU backends: `tpu` (a Google TPU through JAX's XLA) and `tpu-interpret` (the same
lowering compiled by XLA for JAX's CPU platform, so that CI, which has no accelerator, runs the
equivalence suite on it).

A program is lowered once to a JAX function (backends/tpu/lowering.py), traced and compiled
ahead of time with 64-bit types enabled for that computation only (`jax.enable_x64`: NumPy's
float64 and int64 are never narrowed, and JAX's own default, elsewhere in the process, is left
as the user set it). A call transfers the arguments, runs the executable, raises NumPy's
exception for a failed check, and returns NumPy arrays.

This module imports JAX only when a backend is compiled for, so that `jk.jit(backend="tpu")`
without JAX says what is missing (`check_available`).
"""
from __future__ import annotations

import importlib.util
import warnings
from typing import Any, ClassVar

import numpy as np

from ... import events
from ...errors import BackendUnavailableError
from ...ir import Program
from ...ir.control_flow import sub_programs
from ...passes.complex_lower import Packed, lower_complex
from ..base import Backend
from .chip_limits import ChipWouldAbort, refuse_chip_aborts
from .device_array import TpuArray, tpu_devices
from .narrow import narrow_float64
from .options import fusion_mode


def _missing_jax(name: str) -> str | None:
    if importlib.util.find_spec("jax") is None:
        return (f"backend {name!r} is not available: it compiles through JAX's XLA, and JAX is not installed "
                "here. Install the `tpu` extra (`pip install 'jitkernel[tpu]'`, which brings jax; on a TPU "
                "machine jax[tpu]); docs/tpu.md")
    return None


# Measured on a TPU v5e (JAX 0.10.2): XLA's float64 on the TPU is a pair of float32 values, with
# float32's exponent range (3e300 becomes inf, 1e-310 becomes 0) and about 48 bits of
# precision: not NumPy's float64. A program holding float64 therefore runs on the host CPU
# through the same XLA lowering, never silently narrowed (docs/tpu.md, "Dtypes on the TPU").
FLOAT64_NOTE = ("jitkernel: {name} computes in float64, which the TPU only emulates with float32's exponent "
                "range (1e300 overflows to inf); it runs on the host CPU through XLA instead. Pass float32 "
                "arrays to run it on the TPU (docs/tpu.md)")


def holds_float64(program: Program) -> bool:
    """Whether any value of the program (sub-programs included) is float64."""
    f64 = np.dtype(np.float64)
    if any(v.aval.dtype == f64 for v in program.invars + program.constvars):
        return True
    for eqn in program.eqns:
        if any(v.aval.dtype == f64 for v in eqn.outputs) or any(holds_float64(p) for p in sub_programs(eqn.params)):
            return True
    return False


class TpuBackend(Backend):
    """The graph IR of a program as one XLA computation on a TPU (docs/tpu.md)."""

    name = "tpu"
    platform: ClassVar[str] = "tpu"  # JAX's platform the executable runs on
    device_arrays = True  # results stay on the chip as jk.DeviceArray (backends/tpu/device_array.py)
    device_stages = ("hlo", "pallas")

    @classmethod
    def check_available(cls, name: str) -> None:
        missing = _missing_jax(name)
        if missing:
            raise BackendUnavailableError(missing)
        if cls.platform != "cpu" and not tpu_devices():
            import jax  # optional dependency
            try:
                found = jax.devices(cls.platform)
            except RuntimeError:
                found = []
            if not found:
                raise BackendUnavailableError(
                    f"backend {name!r} is not available: JAX {jax.__version__} finds no TPU on this machine "
                    f"(its devices: {', '.join(str(d) for d in jax.devices())}). Use backend='tpu-interpret' "
                    "(the same lowering, compiled by XLA for this CPU) or backend='cpu'; docs/tpu.md")

    def device(self) -> Any:
        """The JAX device the executable runs on (an emulated TPU's is JAX's CPU device)."""
        import jax  # optional dependency
        if self.platform == "tpu":
            return tpu_devices()[0].backing
        return jax.devices(self.platform)[0]

    def compile(self, program: Program, *, name: str, fastmath: bool = False, disk_cache: bool = True,
                previous: Any = None) -> tuple[Any, dict]:
        t0 = events.clock()
        # Complex values as (real, imag) float pairs, the CPU backend's own expansion: NumPy's
        # complex semantics decided once (passes/complex_lower.py), complex transcendental
        # functions as NumPy's loops (host steps here), and no complex128 on the chip.
        program, packed = lower_complex(narrow_float64(program))
        device = self.device()
        if device.platform == "tpu" and holds_float64(program):
            return self._compile_on_host(program, packed, name, t0, FLOAT64_NOTE.format(name=name), "float64")
        try:
            return self._compile_for(program, packed, device, fusion_mode(), "", name, t0)
        except ChipWouldAbort as refused:
            # what XLA would get holds a type the chip's compiler aborts on (chip_limits.py)
            return self._compile_on_host(program, packed, name, t0, refused.note(name), refused.what)

    def _compile_on_host(self, program: Program, packed: Packed, name: str, t0: float, note: str,
                         why: str) -> tuple[Any, dict]:
        """The program compiled by XLA for the host CPU instead of the chip, with a warning (`note`)."""
        import jax  # optional dependency
        warnings.warn(note, RuntimeWarning, stacklevel=3)
        return self._compile_for(program, packed, jax.devices("cpu")[0], "xla",
                                 f"the program runs on the host CPU ({why}), where XLA fuses", name, t0)

    def _compile_for(self, program: Program, packed: Packed, device: Any, fusion: str, no_kernels: str, name: str,
                     t0: float) -> tuple[Any, dict]:
        """Lower, compile (XLA) and wrap the program for `device`, the chip or the host CPU."""
        import jax  # optional dependency
        from .lowering import lower
        guard = device.platform == "cpu"  # XLA's CPU code contracts a * b + c (rules_elementwise._multiply)
        # Pallas kernels: compiled by Mosaic on the chip, simulated by Pallas's TPU interpret mode
        # on the CPU (backends/tpu/pallas.py)
        interpret = device.platform != "tpu"
        specs = [jax.ShapeDtypeStruct(tuple(int(d) for d in v.aval.shape), v.aval.dtype) for v in program.invars]
        if guard:
            specs.append(jax.ShapeDtypeStruct((), np.float64))  # the run-time -0.0 (lowering.py)
        lowered_program = lower(program, fusion, interpret=interpret, contraction_guard=guard)
        try:
            hlo, executable = self._xla_compile(lowered_program, specs, device)
        except ChipWouldAbort:
            raise  # (not a kernel's doing: the whole program goes to the host, `compile`)
        except Exception as e:  # noqa: BLE001 - raised again below unless the Pallas kernels caused it
            if not lowered_program.lowering.pallas.rendered():
                raise
            # Mosaic's compile (on the chip only) refused a kernel its lowering took: XLA fuses
            # everything instead, said in as_text("pallas"); another error is raised again here.
            no_kernels = f"the chip's compile refused them ({type(e).__name__}: {str(e).splitlines()[0][:200]})"
            warnings.warn(f"jitkernel: {name}: {no_kernels}; XLA fuses its elementwise steps instead",
                          RuntimeWarning, stacklevel=2)
            lowered_program = lower(program, "xla", interpret=interpret, contraction_guard=guard)
            hlo, executable = self._xla_compile(lowered_program, specs, device)
        if events.SUBSCRIBERS:
            events.publish(events.CodegenEvent(name, t0, events.clock() - t0, self.name))
        on_device = None
        if self.device_arrays:
            on_device = next((d for d in tpu_devices() if d.backing == device), None)
        wide = any(np.dtype(v.aval.dtype).itemsize == 8 for v in program.invars)
        run = TpuExecutable(executable, lowered_program.lowering, device, packed, name, on_device, wide)
        kernels = lowered_program.lowering.pallas.text(no_kernels)
        return run, {"hlo": lambda: hlo, "pallas": lambda: kernels}

    @staticmethod
    def _xla_compile(lowered_program: Any, specs: list, device: Any) -> tuple[str, Any]:
        """(the lowered computation's StableHLO text, XLA's executable of it), compiled in this
        process: the TPU backends keep no disk entries (`compile`'s `disk_cache` has no effect). JAX
        restores a saved executable only through `serialize_executable`, which is a pickle, and
        loading a pickle from a directory runs whatever code its writer chose (docs/tpu.md, "No
        persistent cache"); JAX's own compilation cache (`jax_compilation_cache_dir`) stores raw
        XLA executables instead, for a user who enables it in a directory of their own."""
        import jax  # optional dependency
        with jax.enable_x64(True), jax.default_device(device):
            staged = jax.jit(lowered_program.fn).lower(*specs)
            text = staged.as_text()
            if device.platform == "tpu":
                refuse_chip_aborts(text)
            return text, staged.compile()


class TpuInterpretBackend(TpuBackend):
    """The TPU lowering on JAX's CPU platform: what CI runs instead of a TPU. Its results are
    NumPy arrays (the host's memory is the device's)."""

    name = "tpu-interpret"
    platform = "cpu"
    device_arrays = False


class TpuExecutable:
    """One compiled program. Arguments: NumPy arrays (transferred) or TPU device arrays already
    on the chip; results: device arrays on the chip (`tpu`, asynchronous: nothing waits unless
    a run-time check must be read) or NumPy arrays (`tpu-interpret`). NumPy's exceptions are
    raised after the call."""

    def __init__(self, executable: Any, lowering: Any, device: Any, packed: Packed, name: str = "",
                 on_device: Any = None, wide_inputs: bool = True) -> None:
        self.executable, self.lowering, self.device = executable, lowering, device
        self.packed = packed  # complex arguments and results cross as float (..., 2) views
        self.host_steps = tuple(lowering.host_steps)  # primitives run on the host (docs/tpu.md)
        self.name = name
        self.on_device = on_device  # the TpuDevice results stay on, or None: NumPy results
        self.guard = device.platform == "cpu"  # the program takes a run-time -0.0 last (lowering.py)
        self.negative_zero = None  # that argument on the device, made at the first call
        # whether an argument is 64-bit: only then does a call need JAX's x64 mode (a host
        # int64/float64 array would otherwise be narrowed on its way in)
        # (the run-time -0.0 is a float64 already on the device: it needs no x64 mode)
        self.wide_inputs = wide_inputs
        self.out_meta: list | None = None  # the results' (shape, dtype), from the first call

    def _argument(self, a: Any, k: int) -> Any:
        if isinstance(a, TpuArray) and self.on_device is not None \
                and (a.device is self.on_device or a.device == self.on_device):
            if k in self.packed.inputs:  # a complex array on the chip: its (real, imag) pairs
                import jax.numpy as jnp  # optional dependency
                return jnp.stack([jnp.real(a._buffer), jnp.imag(a._buffer)], axis=-1)
            return a._buffer  # already on the chip: no transfer
        a = np.asarray(a)
        if k in self.packed.inputs:
            a = np.ascontiguousarray(a)
            a = a.view(a.real.dtype).reshape(a.shape + (2,))
        return a

    def __call__(self, arrays: list | tuple) -> list:
        # (measured on a v5e, a tiny function on a device array: JAX's own jax.jit dispatch
        # takes 115 us, its compiled executable's call 121 us; what this method adds is kept
        # to the few microseconds below: benchmarks/tpu_dispatch.py)
        if self.host_steps:
            self.lowering.exception_slots.clear()
        inputs = [self._argument(a, k) for k, a in enumerate(arrays)]
        # host arrays go to the executable as they are: its own (C++) call transfers them to
        # the device it was compiled for, 13 us for a tiny call where a jax.device_put of
        # each first took 63 us (measured on tpu-interpret); arrays on the chip cross as
        # their buffers
        if self.guard:
            if self.negative_zero is None:
                import jax  # optional dependency
                with jax.enable_x64(True):
                    self.negative_zero = jax.device_put(np.float64(-0.0), self.device)
            inputs.append(self.negative_zero)
        if self.wide_inputs:  # a 64-bit host array must not be narrowed by JAX's x32 default
            import jax  # optional dependency
            with jax.enable_x64(True):
                outs, state = self.executable(*inputs)
        else:  # (the x64 context costs 6 us a call on the v5e)
            outs, state = self.executable(*inputs)
        if state is not None:
            self.lowering.checks.raise_for(state)
        if self.on_device is not None and not self.packed.outputs:
            if self.out_meta is None:  # static for a compiled executable: read once
                self.out_meta = [(tuple(o.shape), np.dtype(o.dtype)) for o in outs]
            device, name, wrap = self.on_device, self.name, TpuArray._wrap
            return [wrap(o, shape, dtype, device, name) for o, (shape, dtype) in zip(outs, self.out_meta)]
        results = [np.array(o) for o in outs]
        for k, dtype in self.packed.outputs.items():
            pairs = np.ascontiguousarray(results[k])
            results[k] = pairs.view(dtype).reshape(pairs.shape[:-1])
        return results
