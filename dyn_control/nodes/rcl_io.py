"""Serialized messages taken and published through rcl itself, from compiled code.

rclpy's raw take and publish each cost a Python call into its C extension, a lock, and a new bytes
object (a take also builds a dict for the message info): in the controller's loop this was 30-40 us
of a tick for the joint states alone, more than the tick's numerics. Here the loop threads call
rcl_take_serialized_message and rcl_publish_serialized_message themselves, from Numba, on buffers
allocated once:
- rclpy gives the rcl handles (`Subscription.handle.pointer`, `Publisher.handle.pointer`) and librcl
  is the library rclpy has already loaded (found in /proc/self/maps);
- a message lives in an rcutils_uint8_array_t (`rcl_serialized_message_t`) whose buffer is one of
  ours. Its allocator refuses to grow it, so a message larger than the buffer fails its take (and
  is counted) instead of rcl reallocating memory NumPy owns;
- the C functions are called by address (an intrinsic: the address is an argument, so the compiled
  code holds no process-specific pointer and stays in Numba's on-disk cache).

Where this is not available (no librcl in the process, an rclpy without `.pointer`, Numba's JIT
disabled), `available()` is False and the callers keep rclpy's raw take and publish.
"""
import ctypes
import threading

import numpy as np
from llvmlite import ir
from numba import config, types
from numba.extending import intrinsic

from ..jit import cfunc, njit

RCL_RET_OK = 0
RCL_RET_SUBSCRIPTION_TAKE_FAILED = 401      # nothing queued
# rcutils_uint8_array_t as eight 64-bit words: buffer, buffer_length, buffer_capacity, then the
# rcutils_allocator_t: allocate, deallocate, reallocate, zero_allocate, state
BUFFER, LENGTH, CAPACITY, ALLOCATE, DEALLOCATE, REALLOCATE, ZERO_ALLOCATE, STATE = range(8)
# rmw_message_info_t (rmw/types.h) as eight 64-bit words: source and received timestamps, the
# publication and reception sequence numbers, the publisher's GID (implementation identifier, then
# RMW_GID_STORAGE_SIZE = 16 bytes of data), from_intra_process
INFO_WORDS = 8
PUBLICATION_SEQUENCE = 2
GID_DATA = 5                                # two words
SEQUENCE_UNSUPPORTED = 2 ** 64 - 1          # RMW_MESSAGE_INFO_SEQUENCE_NUMBER_UNSUPPORTED


# the allocator of our buffers (compiled into C functions by _Rcl.load)
def _refuse_allocate(size, state):
    return 0        # NULL: rcl reports RCL_RET_BAD_ALLOC


def _refuse_reallocate(pointer, size, state):
    return 0


def _keep(pointer, state):
    pass            # the buffer is NumPy's: never freed by rcl


def _codegen(arity, returns):
    """Lowering of a call to the C function at the address given first, with `arity` 64-bit integer
    arguments (pointers and sizes), returning an int32 (rcl_ret_t) or nothing."""
    def codegen(context, builder, signature, values):
        result = ir.IntType(32) if returns else ir.VoidType()
        function_type = ir.FunctionType(result, [ir.IntType(64)] * arity)
        function = builder.inttoptr(values[0], function_type.as_pointer())
        value = builder.call(function, values[1:])
        return value if returns else context.get_dummy_value()
    return codegen


@intrinsic
def _call0(typingctx, address):
    return types.void(types.uintp), _codegen(0, False)


@intrinsic
def _call3(typingctx, address, a, b, c):
    return types.int32(types.uintp, types.uintp, types.uintp, types.uintp), _codegen(3, True)


@intrinsic
def _call4(typingctx, address, a, b, c, d):
    return types.int32(types.uintp, types.uintp, types.uintp, types.uintp, types.uintp), _codegen(4, True)


@njit(cache=True, nogil=True)
def take_all(take, reset_error, subscription, headers, lengths, infos, newest):
    """Take every queued message into the ring of buffers described by `headers` (k, 8): message i
    goes to slot i % k, its length to lengths[slot] (-1: larger than the buffer, dropped), its
    message info to infos[slot] (infos (k + 1, INFO_WORDS): each take lands in the last row, which
    the take that finds the queue empty overwrites too). Returns the number taken; the newest is in
    slot (count - 1) % k. newest (2, INFO_WORDS): row 1 the info of the newest message taken by the
    last call that took any, row 0 that of the call before it."""
    count = 0
    slots = headers.shape[0]
    landing = infos[slots]
    while True:
        slot = count % slots
        header = headers[slot]
        buffer, capacity = header[BUFFER], header[CAPACITY]
        ret = _call4(take, subscription, header.ctypes.data, landing.ctypes.data, 0)
        if ret == RCL_RET_SUBSCRIPTION_TAKE_FAILED:
            if count > 0:
                newest[0, :] = newest[1, :]
                newest[1, :] = infos[(count - 1) % slots, :]
            return count
        infos[slot, :] = landing
        if ret == RCL_RET_OK:
            lengths[slot] = header[LENGTH]
        else:                       # too large for the buffer (or a failed take): dropped, counted
            _call0(reset_error)
            lengths[slot] = -1
            # the refused resize leaves the header without its buffer: give it back for the next take
            header[BUFFER], header[CAPACITY], header[LENGTH] = buffer, capacity, 0
        count += 1


@njit(cache=True, nogil=True)
def publish(publish_function, reset_error, publisher, header):
    """Publish the serialized message `header` describes; returns the rcl_ret_t."""
    ret = _call3(publish_function, publisher, header.ctypes.data, 0)
    if ret != RCL_RET_OK:
        _call0(reset_error)
    return ret


def _compile():
    """Compile (or load from the cache) take_all and publish for the argument types of the calls
    below, so that the first take or publish in a loop costs no compilation."""
    address, header = types.int64, types.Array(types.uint64, 1, "C")
    publish.compile((address, address, address, header))
    words = types.Array(types.uint64, 2, "C")
    take_all.compile((address, address, address, words, types.Array(types.int64, 1, "C"), words, words))


def _librcl():
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if path.endswith("/librcl.so") or "/librcl.so." in path:
                return ctypes.CDLL(path)
    return None


class _Rcl:
    """The addresses of the rcl functions and of our allocator's, once per process (None where
    unavailable)."""
    take = publish = reset_error = None
    allocate = reallocate = deallocate = None
    _lock = threading.Lock()     # a preload thread and configure may both come here first

    @classmethod
    def load(cls):
        with cls._lock:
            return cls._load()

    @classmethod
    def _load(cls):
        if cls.take is None and not config.DISABLE_JIT:
            library = _librcl()
            if library is not None:
                address = lambda f: ctypes.cast(f, ctypes.c_void_p).value  # noqa: E731
                cls.take = address(library.rcl_take_serialized_message)
                cls.publish = address(library.rcl_publish_serialized_message)
                cls.reset_error = address(library.rcutils_reset_error)
                pointers = types.uintp
                cls.allocate = cfunc(pointers(pointers, pointers), cache=True)(_refuse_allocate).address
                cls.reallocate = cfunc(pointers(pointers, pointers, pointers), cache=True)(_refuse_reallocate).address
                cls.deallocate = cfunc(types.void(pointers, pointers), cache=True)(_keep).address
                _compile()
        return cls.take is not None


def preload():
    """Find librcl and compile (or load) the calls now, once per process."""
    _Rcl.load()


def available(entity):
    """True when `entity` (an rclpy Subscription or Publisher) can be used through rcl directly."""
    return _Rcl.load() and hasattr(entity.handle, "pointer")


def serialized_message(buffer, length):
    """The rcutils_uint8_array_t (as uint64[8]) over `buffer` (a uint8 array that outlives it), of
    `length` bytes."""
    header = np.zeros(8, dtype=np.uint64)
    header[BUFFER] = buffer.ctypes.data
    header[LENGTH] = length
    header[CAPACITY] = buffer.shape[0]
    header[ALLOCATE] = _Rcl.allocate
    header[DEALLOCATE] = _Rcl.deallocate
    header[REALLOCATE] = _Rcl.reallocate
    header[ZERO_ALLOCATE] = _Rcl.reallocate
    return header


class RingTake:
    """Takes every queued message of a subscription into `slots` buffers of `capacity` bytes, in
    one compiled call. take_all() returns them oldest first as uint8 views, valid until the next
    call; a message that did not fit is an empty view. publications() and publication_before()
    say who sent them (see qos.PolledSubscription)."""

    def __init__(self, subscription, slots, capacity):
        self.subscription = subscription.handle.pointer
        self.buffers = np.zeros((slots, capacity), dtype=np.uint8)
        self.headers = np.stack([serialized_message(b, 0) for b in self.buffers])
        self.lengths = np.zeros(slots, dtype=np.int64)
        self.infos = np.zeros((slots + 1, INFO_WORDS), dtype=np.uint64)
        self.newest = np.zeros((2, INFO_WORDS), dtype=np.uint64)
        self.count = 0

    def take_all(self):
        count = self.count = take_all(_Rcl.take, _Rcl.reset_error, self.subscription, self.headers, self.lengths,
                                      self.infos, self.newest)
        slots = self.buffers.shape[0]
        first = max(count - slots, 0)
        return [self.buffers[k % slots, :max(self.lengths[k % slots], 0)] for k in range(first, count)]

    def publications(self):
        slots = self.buffers.shape[0]
        return [publication(self.infos[k % slots]) for k in range(max(self.count - slots, 0), self.count)]

    def publication_before(self):
        return publication(self.newest[0]) if self.newest[0, GID_DATA:GID_DATA + 2].any() else None


def publication(info):
    """(publisher GID as two integers, publication sequence number or None where the RMW has none)
    of a message info (INFO_WORDS uint64)."""
    sequence = int(info[PUBLICATION_SEQUENCE])
    return ((int(info[GID_DATA]), int(info[GID_DATA + 1])), None if sequence == SEQUENCE_UNSUPPORTED else sequence)


class RawPublisher:
    """Publishes one wire.RawMessage template (filled in place between publishes) through rcl
    directly where available, else through rclpy's publish of bytes. A lifecycle publisher's
    gate holds for both: nothing goes out while it is not activated."""

    def __init__(self, publisher, message):
        self.publisher, self.message = publisher, message
        self.direct = available(publisher)
        if self.direct:
            self._pointer = publisher.handle.pointer
            self._header = serialized_message(message.array, message.array.shape[0])

    def publish(self):
        if not getattr(self.publisher, "is_activated", True):
            return
        if not self.direct:
            self.publisher.publish(self.message.bytes())
        elif publish(_Rcl.publish, _Rcl.reset_error, self._pointer, self._header) != RCL_RET_OK:
            raise RuntimeError(f"publishing on {self.publisher.topic_name} failed in rcl")
