"""Many named arrays in one flat buffer, for kernels called once per control tick.

Numba unboxes every array argument of a call (~70-90 ns each): a fused tick kernel with its model,
workspace and inputs as separate arrays would spend more time being called than computing. A
`Packed` holds them all in one float64 (or int64) buffer; the kernel receives the buffer and the
offsets, and takes named views (`field1`..`field4`, no copy, nothing allocated on the heap);
Python code reads and writes the same fields as attributes.
"""
import numpy as np
from numba import njit


class Packed:
    """Fields [(name, shape)] as views of one flat buffer `flat`; field k starts at offsets[k]."""

    def __init__(self, fields, dtype=np.float64):
        self.names = tuple(name for name, _ in fields)
        sizes = [int(np.prod(shape, dtype=np.int64)) for _, shape in fields]
        self.offsets = np.zeros(len(fields) + 1, dtype=np.int64)
        np.cumsum(sizes, out=self.offsets[1:])
        self.flat = np.zeros(int(self.offsets[-1]), dtype=dtype)
        for k, (name, shape) in enumerate(fields):
            setattr(self, name, self.flat[self.offsets[k]:self.offsets[k + 1]].reshape(shape))


def copy_model(model, packed):
    """The model's arrays (screw axes, home poses, inertial parameters, base acceleration) into the
    fields of the same names of `packed`."""
    packed.screw_axes[:] = model.screw_axes
    packed.home_R[:] = model.home_R
    packed.home_p[:] = model.home_p
    packed.phi[:] = model.phi
    packed.base_accel[:] = model.base_accel


def field_indices(fields):
    """{name: k} for a field list, the constants the kernels index offsets with."""
    return {name: k for k, (name, _) in enumerate(fields)}


@njit(cache=True, inline="always")
def field1(flat, offsets, k, n0):
    o = offsets[k]
    return flat[o:o + n0]


@njit(cache=True, inline="always")
def field2(flat, offsets, k, n0, n1):
    o = offsets[k]
    return flat[o:o + n0 * n1].reshape((n0, n1))


@njit(cache=True, inline="always")
def field3(flat, offsets, k, n0, n1, n2):
    o = offsets[k]
    return flat[o:o + n0 * n1 * n2].reshape((n0, n1, n2))


@njit(cache=True, inline="always")
def field4(flat, offsets, k, n0, n1, n2, n3):
    o = offsets[k]
    return flat[o:o + n0 * n1 * n2 * n3].reshape((n0, n1, n2, n3))
