"""Views, copies and argument layouts: whether a view of an argument
(ravel, reshape, transpose, slicing, view(), asarray, astype(copy=False), ...) is a view or a copy
is decided by the argument's real layout, as NumPy decides it, and a write through it reaches the
caller's array exactly when NumPy's does (docs/numpy-support.md, "Views, copies and argument
layouts")."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jitkernel as jk
from emulator_suite import DRAWN_BACKENDS, emulator_backends

SETTINGS = settings(max_examples=500, deadline=None, derandomize=True, database=None, print_blob=False)

# Each layout makes a fresh array (called once for jitkernel and once for NumPy).
LAYOUTS = {
    "C": lambda: np.arange(12.).reshape(3, 4),
    "F": lambda: np.asfortranarray(np.arange(12.).reshape(3, 4)),
    "rows_strided": lambda: np.arange(24.).reshape(6, 4)[::2],
    "cols_strided": lambda: np.arange(24.).reshape(3, 8)[:, ::2],
    "rows_reversed": lambda: np.arange(12.).reshape(3, 4)[::-1],
    "cols_reversed": lambda: np.arange(12.).reshape(3, 4)[:, ::-1],
    "empty": lambda: np.zeros((0, 3)),
    "empty_F": lambda: np.asfortranarray(np.zeros((3, 0))),
    "one_row": lambda: np.arange(4.).reshape(1, 4),
    "one_col": lambda: np.arange(4.).reshape(4, 1),
    "one_col_strided": lambda: np.arange(8.).reshape(8, 1)[::2],
    "one_row_F": lambda: np.asfortranarray(np.arange(4.).reshape(1, 4)),
    "vector": lambda: np.arange(5.),
    "vector_strided": lambda: np.arange(10.)[::2],
    "vector_reversed": lambda: np.arange(5.)[::-1],
    "3d_permuted": lambda: np.arange(24.).reshape(2, 3, 4).transpose(1, 0, 2),
    "3d_F": lambda: np.asfortranarray(np.arange(24.).reshape(2, 3, 4)),
}


def _other_shape(a):
    return a.shape[::-1] if a.ndim > 1 else (-1, 1)


VIEWS = {
    "ravel": lambda a: a.ravel(),
    "np.ravel": lambda a: np.ravel(a),
    "reshape(-1)": lambda a: a.reshape(-1),
    "reshape(other)": lambda a: a.reshape(_other_shape(a)),
    "flatten": lambda a: a.flatten(),
    "T": lambda a: a.T,
    "transpose": lambda a: np.transpose(a),
    "swapaxes": lambda a: a.swapaxes(0, -1),
    "squeeze": lambda a: a.squeeze(),
    "expand_dims": lambda a: np.expand_dims(a, 0),
    "slice": lambda a: a[1:],
    "step_slice": lambda a: a[::-2],
    "ellipsis": lambda a: a[...],
    "view()": lambda a: a.view(),
    "asarray": lambda a: np.asarray(a),
    "astype(copy=False)": lambda a: a.astype(a.dtype, copy=False),
    "astype(copy=True)": lambda a: a.astype(a.dtype),
    "np.astype(copy=False)": lambda a: np.astype(a, a.dtype, copy=False),
    "np.array(copy=None)": lambda a: np.array(a, copy=None),
    "np.array": lambda a: np.array(a),
    "T.reshape(-1)": lambda a: a.T.reshape(-1),
    "T.ravel": lambda a: a.T.ravel(),
    "T.reshape(other)": lambda a: a.T.reshape(_other_shape(a.T)),
    "broadcast_to": lambda a: np.broadcast_to(a, (2,) + a.shape),
    "diagonal": lambda a: a.diagonal(1) if a.ndim >= 2 else a[...],  # a read-only view
    "np.diagonal(axes)": lambda a: np.diagonal(a, 0, -1, 0) if a.ndim >= 2 else a[...],
    "flip": lambda a: np.flip(a),
    "moveaxis": lambda a: np.moveaxis(a, 0, -1),
    "real": lambda a: a.real,
    "ascontiguousarray": lambda a: np.ascontiguousarray(a),
    "asfortranarray": lambda a: np.asfortranarray(a),
    "atleast_2d": lambda a: np.atleast_2d(a),
}


def _set_first(v, a):
    if v.size:
        v[(0,) * v.ndim] = -3.0


def _fill(v, a):
    v[...] = 7.0


def _add(v, a):
    v += 1.0


def _write_base(v, a):
    a[...] = a * 2.0 + 1.0  # the other direction: the base is written after the view was made


WRITES = {"set_first": _set_first, "fill": _fill, "add": _add, "write_base": _write_base}


def make(view, write):
    def f(a):
        v = view(a)
        write(v, a)
        return v, a * 1.0  # v itself: a view of the argument is returned as that view
    return f


def _outcome(fn, a):
    try:
        return fn(a), None
    except Exception as e:  # noqa: BLE001 - the exception type is compared with NumPy's
        return None, e


def check_against_numpy(jitted, plain, layout):
    mine, expected = LAYOUTS[layout](), LAYOUTS[layout]()
    got, err = _outcome(jitted, mine)
    want, np_err = _outcome(plain, expected)
    if np_err is not None:
        assert err is not None and isinstance(err, type(np_err)), (err, np_err)
        return
    assert err is None, err
    for g, w in zip(got, want):
        assert np.shape(g) == np.shape(w)
        np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(mine, expected)  # the caller's array ends as NumPy leaves it
    view, expected_view = got[0], want[0]
    assert np.shares_memory(view, mine) == np.shares_memory(expected_view, expected)
    assert view.flags.writeable == expected_view.flags.writeable
    if expected_view.flags.writeable and expected_view.size:
        view[...] = 42.0  # after the call: a write through the result reaches the caller as in NumPy
        expected_view[...] = 42.0
        np.testing.assert_array_equal(mine, expected)


@SETTINGS
@given(layout=st.sampled_from(sorted(LAYOUTS)), view=st.sampled_from(sorted(VIEWS)),
       write=st.sampled_from(sorted(WRITES)), backend=st.sampled_from(DRAWN_BACKENDS))
def test_views_of_arguments_write_through_as_numpy(layout, view, write, backend):
    """Layouts x view functions x writes through the view (or through the base): the results and
    the caller's array after the call are NumPy's."""
    f = make(VIEWS[view], WRITES[write])
    check_against_numpy(jk.jit(f, backend=backend), f, layout)


@SETTINGS
@given(layouts=st.lists(st.sampled_from(sorted(LAYOUTS)), min_size=2, max_size=5),
       view=st.sampled_from(sorted(VIEWS)), write=st.sampled_from(sorted(WRITES)),
       backend=st.sampled_from(DRAWN_BACKENDS))
def test_one_function_called_on_layouts_in_turn(layouts, view, write, backend):
    """The same jitted function called on a sequence of layouts: a program traced for one layout
    never serves another whose view-or-copy answer differs (a C-ordered argument decided
    ascontiguousarray's 'the array itself' and that program then served F-ordered calls)."""
    f = make(VIEWS[view], WRITES[write])
    jitted = jk.jit(f, backend=backend)
    for layout in layouts:
        check_against_numpy(jitted, f, layout)


@pytest.mark.parametrize("backend", DRAWN_BACKENDS + emulator_backends())
@pytest.mark.parametrize("view,write,layout", [
    ("ravel", "fill", "F"), ("ravel", "fill", "cols_strided"), ("reshape(-1)", "add", "rows_reversed"),
    ("T.reshape(-1)", "fill", "F"), ("astype(copy=False)", "set_first", "C"), ("view()", "add", "F"),
])
def test_hand_cases_on_every_backend(backend, view, write, layout):
    f = make(VIEWS[view], WRITES[write])
    check_against_numpy(jk.jit(f, backend=backend), f, layout)


@pytest.mark.parametrize("backend", DRAWN_BACKENDS)
def test_a_new_layout_retraces_and_the_fast_path_checks_it(backend):
    """One jitted function called with the same shape and dtype in several layouts (each twice,
    so the warm fast path is taken): each call decides view-or-copy by its own argument's layout."""
    f = make(VIEWS["ravel"], WRITES["fill"])
    jitted = jk.jit(f, backend=backend)
    for layout in ["C", "C", "F", "F", "C", "rows_reversed", "rows_reversed", "F", "C"]:
        check_against_numpy(jitted, f, layout)
    reasons = [r for rec in jitted.recompilations() for r in rec.reasons]
    assert len(reasons) == 2 and all(r.startswith("a: strides ") for r in reasons), reasons


@pytest.mark.parametrize("backend", DRAWN_BACKENDS)
def test_a_layout_free_function_compiles_once_for_every_layout(backend):
    """A function whose views do not depend on the layout keeps one entry for every layout."""
    jitted = jk.jit(lambda a: a.T + 1.0, backend=backend)
    for layout in ["C", "F", "rows_reversed", "cols_strided"]:
        a = LAYOUTS[layout]()
        np.testing.assert_array_equal(jitted(a), a.T + 1.0)
    assert jitted.cache_size() == 1
    assert jitted.last_compiled().program.layout_guard == ()


@pytest.mark.parametrize("backend", DRAWN_BACKENDS)
def test_no_copy_spellings_return_the_array_itself(backend):
    """astype(a.dtype, copy=False), np.asarray(a) and a.view() write through to the caller."""
    def f(a):
        np.asarray(a)[0] += 1.0
        a.astype(a.dtype, copy=False)[1] += 1.0
        a.view()[2] += 1.0
        np.astype(a, a.dtype, copy=False)[3] += 1.0
        return a.astype(a.dtype, copy=False) is a
    a = np.zeros(5)
    assert bool(jk.jit(f, backend=backend)(a))
    np.testing.assert_array_equal(a, [1.0, 1.0, 1.0, 1.0, 0.0])
