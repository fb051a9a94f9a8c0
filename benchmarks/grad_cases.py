"""Functions for benchmarks/grad_vs_jax.py: (name, source using `np`, (x, y) inputs)."""
# Each case: (name, source of a function f(x, y) using `np` and `lax`, input builder)
# The same source runs with np=numpy under jitkernel and np=jax.numpy under JAX.
import numpy
R = numpy.random.default_rng(0)
A = R.standard_normal((3, 4))
B = R.standard_normal((3, 4))
P = numpy.abs(R.standard_normal((3, 4))) + 0.5
M = R.standard_normal((4, 4)) + 4 * numpy.eye(4)
V = R.standard_normal(4)
I = numpy.array([2, 0, 2, 1])
CASES = [
    ("sin_cos", "np.sum(np.sin(x) * np.cos(y))", (A, B)),
    ("tanh_exp", "np.sum(np.tanh(x) * np.exp(y * 0.3))", (A, B)),
    ("log_sqrt", "np.sum(np.log(x) + np.sqrt(x) * y)", (P, B)),
    ("pow", "np.sum(x ** y)", (P, B)),
    ("pow_const", "np.sum(x ** 3 + x ** 0.5)", (P, B)),
    ("div", "np.sum(x / (y * y + 1.0))", (A, B)),
    ("max_ties", "np.sum(np.maximum(x, np.round(x)))", (numpy.array([1.0, 2.0, 2.5, -1.0]), B)),
    ("reduce_max_ties", "np.max(np.array([1.0, 3.0, 3.0, 2.0]) * x)", (numpy.ones(4), B)),
    ("reduce_max_axis", "np.sum(np.max(x, axis=1) * np.min(y, axis=0).sum())", (A, B)),
    ("prod", "np.sum(np.prod(x, axis=0))", (numpy.array([[1.0, 0.0, 2.0], [3.0, 4.0, 0.0]]), B)),
    ("prod_two_zeros", "np.prod(x)", (numpy.array([0.0, 2.0, 0.0, 3.0]), B)),
    ("matmul", "np.sum(np.tanh(x @ y.T) ** 2)", (A, B)),
    ("matvec", "np.sum((x @ np.ones(4)) * y[:, 0])", (A, B)),
    ("softmax_xent", "-np.sum(np.log(np.exp(x) / np.sum(np.exp(x), axis=1, keepdims=True)) * y)", (A, numpy.abs(B))),
    ("logsumexp", "np.sum(np.log(np.sum(np.exp(x - np.max(x, axis=1, keepdims=True)), axis=1)) + np.max(x, axis=1))", (A, B)),
    ("where", "np.sum(np.where(x > 0, x * y, -x))", (A, B)),
    ("abs", "np.sum(np.abs(x) * y)", (A, B)),
    ("slice", "np.sum(x[:, 1:3] * y[::-1, ::2][:, :2])", (A, B)),
    ("concat", "np.sum(np.concatenate([x, y * 2], axis=0) ** 2)", (A, B)),
    ("transpose_reshape", "np.sum(x.T.reshape(2, 6) * y.reshape(2, 6))", (A, B)),
    ("gather_rep", "np.sum(x[:, np.array([2, 0, 2, 1])] * y)", (A, B)),
    ("cumsum", "np.sum(np.cumsum(x, axis=1) * y)", (A, B)),
    ("mean_var", "np.mean(x) * np.var(y)", (A, B)),
    ("arctan2_hypot", "np.sum(np.arctan2(x, y) + np.hypot(x, y))", (A, B)),
    ("inv", "np.sum(np.linalg.inv(x) * y)", (M, M.T)),
    ("solve", "np.sum(np.linalg.solve(x, y[:, 0]))", (M, M)),
    ("det", "np.linalg.det(x) * np.sum(y)", (M, M)),
    ("expm1_log1p", "np.sum(np.expm1(x) * np.log1p(np.abs(y)))", (A, B)),
    ("square_recip", "np.sum(np.square(x) + np.reciprocal(y * y + 1))", (A, B)),
    ("clip", "np.sum(np.clip(x, -0.5, 0.5) * y)", (A, B)),
    ("sort", "np.sum(np.sort(x, axis=1) * y)", (A, B)),
    ("norm", "np.linalg.norm(x) + np.sum(y)", (A, B)),
    ("float32_mix", "np.sum(np.tanh(x.astype(np.float32)) * y.astype(np.float32))", (A, B)),
    # Ties and singular points (docs/transformations.md "Derivatives at special points")
    ("fmin_recip_inf", "np.sum(1 / np.fmin(x, y))", (numpy.array([0.0, 1.0]), numpy.array([1.0, 0.0]))),
    ("fmax_tie", "np.sum(np.fmax(x, y) * 3.0)", (numpy.array([1.0, 2.0, -1.0]), numpy.array([1.0, 0.5, -1.0]))),
    ("minimum_tie", "np.sum(np.minimum(x, y) ** 2)", (numpy.array([1.0, 2.0, -1.0]), numpy.array([1.0, 0.5, -1.0]))),
    ("maximum_recip_inf", "np.sum(1 / np.maximum(x, y))", (numpy.array([0.0, -1.0]), numpy.array([-1.0, 0.0]))),
    ("where_inf_branch", "np.sum(np.where(x > 0, np.log(np.abs(x) + 1), y * x))", (numpy.array([0.0, 1.0, -2.0]), numpy.array([1.0, 2.0, 3.0]))),
    ("clip_at_bounds", "np.sum(np.clip(x, -1.0, 1.0) * y)", (numpy.array([-1.0, 1.0, 0.5, 2.0]), numpy.array([1.0, 2.0, 3.0, 4.0]))),
    ("power_zero_at_zero", "np.sum(x ** 0 + y ** 0.0)", (numpy.array([0.0, 1.5]), numpy.array([0.0, -2.0]))),
    ("power_base_zero", "np.sum(x ** y)", (numpy.array([0.0, 0.0, 2.0]), numpy.array([2.0, 1.0, 3.0]))),
    ("sort_ties", "np.sum(np.sort(x) * y)", (numpy.array([1.0, 3.0, 1.0, 2.0]), numpy.array([1.0, 2.0, 3.0, 4.0]))),
    ("max_reduce_ties_axis", "np.sum(np.max(x, axis=0) * y[0])", (numpy.array([[1.0, 2.0], [1.0, 0.0]]), numpy.array([[2.0, 3.0]]))),
    ("median_ties", "np.median(x) * np.sum(y)", (numpy.array([1.0, 2.0, 2.0, 5.0]), numpy.array([1.0, 2.0]))),
    ("power_mixed_zero_exponent", "np.sum(x ** y)", (numpy.array([2.0, 3.0]), numpy.array([0.0, 0.0]))),
    ("div_neg_zero", "np.sum(y / (x * x + 1.0))", (numpy.array([-0.0, 0.0]), numpy.array([1.0, 2.0]))),
    # Ufuncs and functions written over other primitives
    ("logaddexp", "np.sum(np.logaddexp(x, y))", (A, B)),
    ("logaddexp_tie", "np.sum(np.logaddexp(x, y))", (numpy.array([0.5, -2.0]), numpy.array([0.5, -2.0]))),
    ("logaddexp2", "np.sum(np.logaddexp2(x, y) * 2.0)", (A, B)),
    ("deg_rad", "np.sum(np.deg2rad(x) * np.rad2deg(y) + np.radians(x) - np.degrees(y))", (A, B)),
    ("fabs", "np.sum(np.fabs(x) * y)", (A, B)),
    ("heaviside", "np.sum(np.heaviside(x, 0.5) * y + x)", (A, B)),
    ("float_power", "np.sum(np.float_power(x, y))", (P, B)),
    ("ldexp", "np.sum(np.ldexp(x, 3) * y)", (A, B)),
    ("frexp_mantissa", "np.sum(np.frexp(x)[0] * y)", (A, B)),
    ("modf_frac", "np.sum(np.modf(x)[0] * y + np.modf(y)[1])", (A * 3, B)),
    ("sinc", "np.sum(np.sinc(x) * y)", (numpy.array([0.0, 0.5, -1.5, 2.25]), V)),
    ("trapezoid", "np.trapezoid(x * y, axis=1).sum()", (A, B)),
    ("polyval", "np.sum(np.polyval(x[0], y))", (A, B)),
    ("nan_to_num", "np.sum(np.nan_to_num(np.log(x)) * y)", (numpy.array([0.0, 1.0, 2.0, 3.0]), V)),
    ("vecdot", "np.sum(np.vecdot(x, y))", (A, B)),
    ("matvec", "np.sum(np.matvec(x, y[0]))", (A, B)),
    ("vecmat", "np.sum(np.vecmat(x[:, 0], y))", (A, B)),
    ("logaddexp_reduce", "np.logaddexp.reduce(x, axis=1).sum() + np.sum(y)", (A, B)),
]
