"""Vector math through glibc's libmvec.

LLVM vectorises loops that call `sinf`/`expf`/... only if it knows a vector variant; llvmlite
0.50 has no `-vector-library` switch, so each call site gets the `vector-function-abi-variant`
attribute naming libmvec's variants (cookbook §4: exp(sin(x)) over 1e7 floats, 92 ms -> 8.9 ms).
llvmlite.ir cannot emit string attributes, hence the text patch. Where libmvec is missing (another
libc or architecture) or lacks a variant, calls stay scalar: slower, still correct.
"""
from __future__ import annotations

import functools
import re

import llvmlite.binding as llvm

# Our IR's call targets -> (libm scalar name, element type, number of arguments).
_TARGETS: dict[str, tuple[str, str, int]] = {}
for _ty, _suffix, _f in (("float", "f32", "f"), ("double", "f64", "")):
    for _name in ("sin", "cos", "exp", "exp2", "log", "log2", "log10"):
        _TARGETS[f"llvm.{_name}.{_suffix}"] = (_name + _f, _ty, 1)
    _TARGETS[f"llvm.pow.{_suffix}"] = ("pow" + _f, _ty, 2)
    for _name in ("tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
                  "expm1", "log1p", "cbrt"):
        _TARGETS[_name + _f] = (_name + _f, _ty, 1)
    for _name in ("atan2", "hypot"):
        _TARGETS[_name + _f] = (_name + _f, _ty, 2)

# x86-64 vector function ABI: ISA letter, required CPU feature, register width in bits.
_ISAS = (("e", "avx512f", 512), ("d", "avx2", 256), ("b", "sse4.2", 128))


@functools.lru_cache(maxsize=None)
def _available_isas() -> tuple[tuple[str, int], ...]:
    """The (ISA letter, vector bits) usable here: CPU features present and libmvec loadable."""
    if "x86_64" not in llvm.get_process_triple():
        return ()
    try:
        llvm.load_library_permanently("libmvec.so.1")
    except RuntimeError:
        return ()
    features = llvm.get_host_cpu_features()
    return tuple((letter, bits) for letter, feature, bits in _ISAS if features.get(feature, False))


def _variants(scalar: str, ty: str, nargs: int) -> list[tuple[int, str]]:
    lanes_per_bit = 32 if ty == "float" else 64
    out = []
    for letter, bits in _available_isas():
        vf = bits // lanes_per_bit
        name = f"_ZGV{letter}N{vf}{'v' * nargs}_{scalar}"
        if llvm.address_of_symbol(name):
            out.append((vf, name))
    return out


def available() -> bool:
    return bool(_available_isas())


def prefer_full_width(ir_text: str) -> str:
    """Ask for 512-bit vectors where the CPU has AVX-512: LLVM's cost model defaults to 256-bit
    on these cores, which halves the width of libmvec calls and of every elementwise loop."""
    if not _has_avx512():
        return ir_text
    return re.sub(r"^(define [^\n]*\)(?: noinline)?) nounwind", r'\1 nounwind "prefer-vector-width"="512"',
                  ir_text, flags=re.M)


@functools.lru_cache(maxsize=None)
def _has_avx512() -> bool:
    return bool(llvm.get_host_cpu_features().get("avx512f", False))


def annotate(ir_text: str) -> str:
    """Attach libmvec variants to every vectorisable math call in `ir_text` and ask for
    full-width vectors."""
    ir_text = prefer_full_width(ir_text)
    if not available():
        return ir_text
    decls: list[str] = []
    used: list[str] = []
    for n, (target, (scalar, ty, nargs)) in enumerate(sorted(_TARGETS.items())):
        pattern = re.compile(rf'(call [^\n]*@"?{re.escape(target)}"?\([^)\n]*\))')
        if not pattern.search(ir_text):
            continue
        variants = _variants(scalar, ty, nargs)
        if not variants:
            continue
        tag = f"#{900 + n}"
        ir_text = pattern.sub(rf"\1 {tag}", ir_text)
        abi = ",".join(f"_ZGV_LLVM_N{vf}{'v' * nargs}_{target}({name})" for vf, name in variants)
        decls.append(f'attributes {tag} = {{ "vector-function-abi-variant"="{abi}" }}')
        for vf, name in variants:
            vec = f"<{vf} x {ty}>"
            decls.append(f"declare {vec} @{name}({', '.join([vec] * nargs)})")
            used.append(f"ptr @{name}")
    if used:
        # Keep the declarations alive until the loop vectoriser has run.
        decls.append(f'@llvm.compiler.used = appending global [{len(used)} x ptr] [{", ".join(used)}], '
                     'section "llvm.metadata"')
    return ir_text + "\n" + "\n".join(decls) + "\n"
