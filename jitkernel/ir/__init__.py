"""Graph IR: types, programs, the primitive registry, printer and verifier."""
from .program import Eqn, Program, Var, live_variables
from .types import SUPPORTED_DTYPES, AType, check_dtype
from .printer import format_program
from .verify import verify_program
from . import primitives
from . import control_flow  # noqa: F401  (registers cond / while_loop / fori_loop / scan)
from . import dynamic_slice  # noqa: F401  (registers dynamic_slice / dynamic_update_slice)
from . import symdim_prims  # noqa: F401  (registers dot_sum and where_valid)
from . import arrayfn_prims  # noqa: F401  (registers take_static, raise_if)
from . import index_prims  # noqa: F401  (registers the gather / scatter primitives)
from . import update_prims  # noqa: F401 - registers update_slice
from . import library_prims  # noqa: F401  (registers the library primitives)
from . import complex_prims  # noqa: E402,F401  (registers the complex primitives)
from . import datadep_prims  # noqa: E402,F401  (registers datadep_call: data-dependent shapes)
from . import transform_prims  # noqa: E402,F401  (registers stop_gradient)
from . import custom_prims  # noqa: E402,F401  (registers custom_jvp_call / custom_vjp_call)
from . import debug_prims  # noqa: E402,F401  (registers debug_callback: jk.debug.print)

__all__ = ["AType", "Eqn", "Program", "Var", "live_variables", "SUPPORTED_DTYPES", "check_dtype", "format_program",
           "verify_program", "primitives"]
