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
    device_stages = ("hlo", "pallas")

    @classmethod
    def check_available(cls, name: str) -> None:
        missing = _missing_jax(name)
        if missing:
            raise BackendUnavailableError(missing)
        if cls.platform != "cpu":
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
        import jax  # optional dependency
        return jax.devices(self.platform)[0]

    def compile(self, program: Program, *, name: str, fastmath: bool = False, disk_cache: bool = True,
                previous: Any = None) -> tuple[Any, dict]:
        import jax  # optional dependency
        from .lowering import lower
        t0 = events.clock()
        # Complex values as (real, imag) float pairs, the CPU backend's own expansion: NumPy's
        # complex semantics decided once (passes/complex_lower.py), complex transcendental
        # functions as NumPy's loops (host steps here), and no complex128 on the chip.
        program, packed = lower_complex(program)
        device, fusion, no_kernels = self.device(), fusion_mode(), ""
        if self.platform == "tpu" and holds_float64(program):
            device, fusion = jax.devices("cpu")[0], "xla"
            no_kernels = "the program runs on the host CPU (float64), where XLA fuses"
            warnings.warn(FLOAT64_NOTE.format(name=name), RuntimeWarning, stacklevel=2)
        specs = [jax.ShapeDtypeStruct(tuple(int(d) for d in v.aval.shape), v.aval.dtype) for v in program.invars]
        # Pallas kernels: compiled by Mosaic on the chip, simulated by Pallas's TPU interpret mode
        # on tpu-interpret (backends/tpu/pallas.py)
        lowered_program = lower(program, fusion, interpret=self.platform != "tpu")
        try:
            staged, executable = self._xla_compile(lowered_program, specs, device)
        except Exception as e:  # noqa: BLE001 - raised again below unless the Pallas kernels caused it
            if not lowered_program.lowering.pallas.rendered():
                raise
            # Mosaic's compile (on the chip only) refused a kernel its lowering took: XLA fuses
            # everything instead, said in as_text("pallas"); another error is raised again here.
            no_kernels = f"the chip's compile refused them ({type(e).__name__}: {str(e).splitlines()[0][:200]})"
            warnings.warn(f"jitkernel: {name}: {no_kernels}; XLA fuses its elementwise steps instead",
                          RuntimeWarning, stacklevel=2)
            lowered_program = lower(program, "xla", interpret=self.platform != "tpu")
            staged, executable = self._xla_compile(lowered_program, specs, device)
        if events.SUBSCRIBERS:
            events.publish(events.CodegenEvent(name, t0, events.clock() - t0, self.name))
        run = TpuExecutable(executable, lowered_program.lowering, device, packed)
        hlo, kernels = staged.as_text(), lowered_program.lowering.pallas.text(no_kernels)
        return run, {"hlo": lambda: hlo, "pallas": lambda: kernels}

    @staticmethod
    def _xla_compile(lowered_program: Any, specs: list, device: Any) -> tuple[Any, Any]:
        import jax  # optional dependency
        with jax.enable_x64(True), jax.default_device(device):
            staged = jax.jit(lowered_program.fn).lower(*specs)
            return staged, staged.compile()


class TpuInterpretBackend(TpuBackend):
    """The TPU lowering on JAX's CPU platform: what CI runs instead of a TPU."""

    name = "tpu-interpret"
    platform = "cpu"


class TpuExecutable:
    """One compiled program: NumPy arrays in, NumPy arrays out, NumPy's exceptions raised."""

    def __init__(self, executable: Any, lowering: Any, device: Any, packed: Packed) -> None:
        self.executable, self.lowering, self.device = executable, lowering, device
        self.packed = packed  # complex arguments and results cross as float (..., 2) views
        self.host_steps = tuple(lowering.host_steps)  # primitives run on the host (docs/tpu.md)

    def __call__(self, arrays: list | tuple) -> list[np.ndarray]:
        import jax  # optional dependency
        self.lowering.exception_slots.clear()
        inputs = [np.asarray(a) for a in arrays]
        for k in self.packed.inputs:
            z = np.ascontiguousarray(inputs[k])
            inputs[k] = z.view(z.real.dtype).reshape(z.shape + (2,))
        with jax.enable_x64(True):
            outs, state = self.executable(*jax.device_put(inputs, self.device))
            self.lowering.checks.raise_for(state)
            results = [np.array(o) for o in outs]
        for k, dtype in self.packed.outputs.items():
            results[k] = results[k].view(dtype).reshape(results[k].shape[:-1])
        return results
