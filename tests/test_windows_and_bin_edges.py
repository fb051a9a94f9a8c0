"""Window functions, np.fft.fftfreq / rfftfreq and np.histogram_bin_edges inside jit: windows
and frequencies of a static length are NumPy's own constants (a traced spacing d is traced);
histogram_bin_edges comes from the histogram library step (NumPy's edges bit for bit, its
run-time ValueError for a non-finite range), string bin rules refused clearly."""
from __future__ import annotations

import numpy as np
import pytest

import jitkernel as jk
from emulator_suite import emulator_backends
from helpers import HOST_BACKENDS, check

X = np.array([3.0, 1.0, 2.0, 7.0, -1.0, 2.5])


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("window", [np.bartlett, np.blackman, np.hamming, np.hanning])
@pytest.mark.parametrize("m", [0, 1, 2, 7, 8])
def test_windows_of_a_static_length(backend, window, m):
    check(lambda x: x[0] * window(m), X, backend=backend)
    check(lambda x: window(m), X, backend=backend)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_kaiser_of_static_arguments_and_window_times_data(backend):
    check(lambda x: (np.kaiser(6, 8.6), np.kaiser(1, 3.0), x * np.kaiser(6, 0.0)), X, backend=backend)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_fftfreq_rfftfreq(backend):
    check(lambda x: (np.fft.fftfreq(6), np.fft.fftfreq(7, 0.25), np.fft.rfftfreq(6, 0.5), np.fft.rfftfreq(7)),
          X, backend=backend)
    check(lambda x: (np.fft.fftfreq(6, x[0]), np.fft.rfftfreq(5, x[1])), X, backend=backend)  # traced d


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("fn", [
    lambda a: np.histogram_bin_edges(a),
    lambda a: np.histogram_bin_edges(a, 3),
    lambda a: np.histogram_bin_edges(a, 4, range=(0, 5)),
    lambda a: np.histogram_bin_edges(a, 4, range=(0.0, np.float32(5))),
    lambda a: np.histogram_bin_edges(a.astype(np.int32), 4),
    lambda a: np.histogram_bin_edges(a.astype(np.float32), 5),
    lambda a: np.histogram_bin_edges(a, [0, 1, 5]),
    lambda a: np.histogram_bin_edges(a, a[:3] * 0 + np.array([0.0, 1.0, 2.0])),
    lambda a: np.histogram_bin_edges(a * 0 + 2, 2),                 # one value: range +- 0.5
    lambda a: np.histogram_bin_edges(a, 3, weights=a),
], ids=["default", "int", "range", "range-float32", "int32", "float32", "list", "traced-edges", "flat", "weights"])
def test_histogram_bin_edges(backend, fn):
    check(fn, X, backend=backend, rtol=0, atol=0)


def test_histogram_bin_edges_errors():
    with pytest.raises(ValueError, match="autodetected range of \\[nan, nan\\] is not finite"):
        jk.jit(lambda a: np.histogram_bin_edges(a))(np.array([1.0, np.nan]))
    with pytest.raises(jk.errors.UnsupportedOperationError, match="bins='auto' chooses the number of bins"):
        jk.jit(lambda a: np.histogram_bin_edges(a, "auto"))(X)
    for fn in (lambda a: np.histogram_bin_edges(a, 0), lambda a: np.histogram_bin_edges(a, 3, range=(5, 0))):
        with pytest.raises(ValueError):
            fn(X)
        with pytest.raises(ValueError):
            jk.jit(fn)(X)


@pytest.mark.parametrize("backend", emulator_backends())
def test_on_the_emulated_gpu(backend):
    check(lambda x: (x * np.hanning(6), np.fft.rfftfreq(6, x[0])),  # histogram has no CUDA step
          X.astype(np.float32), backend=backend)
