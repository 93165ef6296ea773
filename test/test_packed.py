"""kernels/packed.view: a shaped view of a flat buffer, against NumPy's reshape of the same slice."""
import gc

import numpy as np
import pytest
from numba import njit

from dyn_control.kernels.packed import Packed, field2, field3, field4, view

pytestmark = pytest.mark.kernels


@njit(cache=True)
def _views(flat, start):
    return (view(flat, start, (5,)), view(flat, start, (2, 3)), view(flat, start, (2, 3, 2)),
            view(flat, start, (1, 2, 3, 2)))


@njit(cache=True)
def _write(flat, start, value):
    a = view(flat, start, (3, 4))
    for i in range(3):
        for j in range(4):
            a[i, j] = value + 10 * i + j


@njit(cache=True)
def _detached(n):
    flat = np.arange(float(n))
    return view(flat, 2, (2, 2))    # the only reference to flat's memory after the return


@njit(cache=True)
def _fields(flat, offsets):
    return (field2(flat, offsets, 1, 2, 3), field3(flat, offsets, 2, 2, 1, 2),
            field4(flat, offsets, 0, 1, 1, 2, 2))


@pytest.mark.parametrize("dtype", [np.float64, np.int64])
@pytest.mark.parametrize("start", [0, 3, 14])
def test_views_equal_numpy_reshape(dtype, start):
    flat = np.arange(40, dtype=dtype) * 3 - 7
    for got in _views(flat, start):
        expected = flat[start:start + got.size].reshape(got.shape)
        assert got.dtype == flat.dtype and got.flags.c_contiguous
        np.testing.assert_array_equal(got, expected)
        assert np.shares_memory(got, flat)
    assert [g.shape for g in _views(flat, start)] == [(5,), (2, 3), (2, 3, 2), (1, 2, 3, 2)]


def test_writes_reach_the_buffer():
    flat = np.zeros(20)
    _write(flat, 5, 100.0)
    expected = np.zeros(20)
    expected[5:17] = (100.0 + 10 * np.arange(3)[:, None] + np.arange(4)).ravel()
    np.testing.assert_array_equal(flat, expected)


def test_view_keeps_its_buffer_alive():
    a = _detached(50)
    gc.collect()
    junk = [np.full(50, -1.0) for _ in range(100)]     # would reuse freed memory
    np.testing.assert_array_equal(a, [[2.0, 3.0], [4.0, 5.0]])
    del junk


@pytest.mark.parametrize("start", [-1, 30])
def test_a_field_outside_the_buffer_is_an_index_error(start):
    with pytest.raises(IndexError, match="does not fit"):
        _views(np.zeros(40), start)


def test_packed_fields_are_the_attributes():
    packed = Packed([("a", (1, 1, 2, 2)), ("b", (2, 3)), ("c", (2, 1, 2))])
    packed.flat[:] = np.arange(packed.flat.size)
    b, c, a = _fields(packed.flat, packed.offsets)
    np.testing.assert_array_equal(a, packed.a)
    np.testing.assert_array_equal(b, packed.b)
    np.testing.assert_array_equal(c, packed.c)
