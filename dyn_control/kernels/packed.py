"""Many named arrays in one flat buffer, for kernels called once per control tick.

Numba unboxes every array argument of a call (~70-90 ns each): a fused tick kernel with its model,
workspace and inputs as separate arrays would spend more time being called than computing. A
`Packed` holds them all in one float64 (or int64) buffer; the kernel receives the buffer and the
offsets, and takes named views (`field1`..`field4`, no copy, nothing allocated on the heap);
Python code reads and writes the same fields as attributes.

`view` (and `int_view`, for integer fields kept in float64 slots) is the one way the kernels take a
shaped field of a flat buffer. Numba's `reshape` calls a C helper to work out the strides (some 17 ns
a view: 0.2-0.6 us of an entry kernel's call); `view` knows them (C order) and builds the array in a
few instructions. A view is borrowed: it holds no reference to the buffer's memory, so neither it nor
the rows taken of it (`R[i]`) increment and decrement a reference count, a locked instruction that
serializes the pipeline (some 60 of them in one RNEA call of a 9-body arm, 0.3 us: a quarter of its
time). The buffer must therefore outlive its views: take them only of a kernel's arguments, never of
an array the kernel allocates, and never return one to Python.
"""
import numpy as np
from numba import types
from numba.core import cgutils
from numba.core.errors import TypingError
from numba.extending import intrinsic, overload
from numba.np.arrayobj import make_array, populate_array

from ..jit import njit


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


def view(flat, start, shape):
    """flat[start:start + prod(shape)] as a C-ordered array of `shape` (a tuple of ints): a view of
    the 1-D C-contiguous `flat`, no copy. An IndexError when it does not fit in flat."""
    size = 1
    for n in shape:
        size *= n
    if start < 0 or start + size > flat.shape[0]:
        raise IndexError("view: the field does not fit in its buffer")
    return flat[start:start + size].reshape(shape)


def int_view(flat, start, n):
    """flat[start:start + n] of a float64 buffer read as int64 (the same 8 bytes a slot): a view."""
    if start < 0 or start + n > flat.shape[0]:
        raise IndexError("view: the field does not fit in its buffer")
    return flat[start:start + n].view(np.int64)


def _check_flat(flat):
    if not (isinstance(flat, types.Array) and flat.ndim == 1 and flat.layout == "C"):
        raise TypingError(f"view: flat must be a 1-D C-contiguous array, got {flat}")


@overload(view, jit_options={"nogil": True, "_nrt": True})
def _compiled_view(flat, start, shape):
    _check_flat(flat)

    def impl(flat, start, shape):
        size = 1
        for n in shape:
            size *= n
        if start < 0 or start + size > flat.shape[0]:
            raise IndexError("view: the field does not fit in its buffer")
        return _borrowed_view(flat, start, shape, flat.dtype)
    return impl


@overload(int_view, jit_options={"nogil": True, "_nrt": True})
def _compiled_int_view(flat, start, n):
    _check_flat(flat)
    if flat.dtype.bitwidth != 64:
        raise TypingError(f"int_view: flat must hold 8-byte slots, got {flat}")

    def impl(flat, start, n):
        if start < 0 or start + n > flat.shape[0]:
            raise IndexError("view: the field does not fit in its buffer")
        return _borrowed_view(flat, start, (n,), np.int64)
    return impl


@intrinsic
def _borrowed_view(typingctx, flat, start, shape, dtype):
    """The array of `shape` (C order) and element type `dtype` (of flat's item size) whose data
    starts at flat[start]: flat's memory, borrowed (no meminfo, so no reference counting)."""
    element = dtype.dtype if isinstance(dtype, (types.NumberClass, types.DType)) else dtype
    result = types.Array(element, len(shape), "C")

    def codegen(context, builder, signature, args):
        flat_type, start_type, shape_type, _ = signature.args
        source = make_array(flat_type)(context, builder, args[0])
        out = make_array(result)(context, builder)
        itemsize = context.get_constant(types.intp, context.get_abi_sizeof(context.get_data_type(element)))
        dims = [context.cast(builder, n, t, types.intp)
                for n, t in zip(cgutils.unpack_tuple(builder, args[2]), shape_type)]
        strides = [itemsize]
        for n in reversed(dims[1:]):
            strides.insert(0, builder.mul(strides[0], n))
        first = context.cast(builder, args[1], start_type, types.intp)
        data = builder.bitcast(builder.gep(source.data, [first]), context.get_data_type(element).as_pointer())
        populate_array(out, data=data, shape=dims, strides=strides, itemsize=itemsize, meminfo=None,
                       parent=None)
        return out._getvalue()
    return result(flat, start, shape, dtype), codegen


@njit(cache=True, inline="always")
def field1(flat, offsets, k, n0):
    return view(flat, offsets[k], (n0,))


@njit(cache=True, inline="always")
def field2(flat, offsets, k, n0, n1):
    return view(flat, offsets[k], (n0, n1))


@njit(cache=True, inline="always")
def field3(flat, offsets, k, n0, n1, n2):
    return view(flat, offsets[k], (n0, n1, n2))


@njit(cache=True, inline="always")
def field4(flat, offsets, k, n0, n1, n2, n3):
    return view(flat, offsets[k], (n0, n1, n2, n3))
