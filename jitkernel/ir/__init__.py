"""Graph IR: types, programs, the primitive registry, printer and verifier."""
from .program import Eqn, Program, Var, live_variables
from .types import SUPPORTED_DTYPES, AType, check_dtype
from .printer import format_program
from .verify import verify_program
from . import primitives
from . import complex_prims  # noqa: E402  (registers the complex primitives)

__all__ = ["AType", "Eqn", "Program", "Var", "live_variables", "SUPPORTED_DTYPES", "check_dtype", "format_program",
           "verify_program", "primitives"]
