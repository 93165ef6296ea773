"""Messages on the wire: the loop threads read and write serialized messages (CDR bytes) instead of
rclpy message objects.

Why: converting a message between its C and Python forms costs far more than the loop's numerics
(measured on the 2-core development VM: taking a JointState as an object ~65 us, as bytes ~13 us;
publishing a Float64MultiArray as an object ~15 us, as bytes ~4 us). So
- inputs are taken raw and parsed by a compiled parser that writes the joint values straight
  into the loop's arrays (parse_joint_state, parse_float64_array); a trajectory's points are read
  from its bytes without the GIL (parse_joint_trajectory, gather_doubles), as rclpy's conversion of
  a large one into Python objects would stall the loop thread (10,000 points: ~85 ms);
- outputs are a serialized template of the message (`serialize`, once, at configure) whose numbers
  are overwritten in place through NumPy views (RawMessage), then published as they are
  (rcl_io.RawPublisher: through rcl directly, without a copy).

Encoding: CDR, little endian (the encapsulation rmw_fastrtps uses on x86 and ARM); offsets inside
the payload are aligned relative to its start, 4 bytes after the encapsulation header. A sequence
of doubles is its uint32 length (4-aligned) then, when not empty, the values 8-aligned.
"""
import struct

import numpy as np
from rosidl_parser.definition import AbstractNestedType, AbstractSequence, AbstractString, BasicType

from ..jit import njit

ENCAPSULATION = 4       # bytes of the CDR encapsulation header before the payload

# parse_joint_state results
JS_OK = 0               # parsed and copied (finite position and velocity)
JS_NAMES_CHANGED = 1    # the name list differs from the one the index was built for
JS_MALFORMED = 2        # truncated, or not little-endian CDR
JS_WRONG_LENGTHS = 3    # position/velocity/effort lengths do not match the names
JS_NON_FINITE = 4       # a NaN or inf position or velocity of a model joint
JS_FOREIGN = 5          # none of the model's joints (another publisher's): ignore

# meta output of parse_joint_state
META_SEC, META_NANOSEC, META_HAS_EFFORT, META_NAMES_START, META_NAMES_END, META_COUNT = range(6)


def message_view(raw):
    """The serialized message `raw` (bytes, as rclpy takes it, or a uint8 view of a receive buffer,
    as rcl_io takes it) as a read-only uint8 array: the parsers always get this one argument type,
    so the overload compiled at configure is the one the loop calls (a writable view is another
    Numba type, which compiled in the loop's first tick)."""
    view = np.frombuffer(raw, dtype=np.uint8)
    view.flags.writeable = False
    return view


def header_stamp_ns(raw):
    """The header stamp [ns] of a serialized stamped message (its first field: the CDR
    encapsulation's 4 bytes, then sec int32 and nanosec uint32, little-endian), None when `raw` is
    too short to hold one."""
    if len(raw) < 12:
        return None
    sec, nanosec = np.frombuffer(raw, dtype="<i4", count=2, offset=4)
    return int(sec) * 1_000_000_000 + (int(nanosec) & 0xFFFFFFFF)


@njit(cache=True, inline="always")
def _align(offset, n):
    return (offset + n - 1) // n * n


@njit(cache=True, inline="always")
def _u32(buf, at):
    return (np.int64(buf[at]) | (np.int64(buf[at + 1]) << 8) | (np.int64(buf[at + 2]) << 16)
            | (np.int64(buf[at + 3]) << 24))


@njit(cache=True, inline="always")
def _f64(buf, at):
    return buf[at:at + 8].view(np.float64)[0]


@njit(cache=True)
def _sequence_length(buf, at):
    """(length, payload offset after it) of the string or sequence at `at` (payload-relative), whose
    uint32 length is 4-aligned; offset -1 when the buffer ends first."""
    at = _align(at, 4)
    if ENCAPSULATION + at + 4 > buf.shape[0]:
        return 0, -1
    return _u32(buf, ENCAPSULATION + at), at + 4


@njit(cache=True)
def _skip_string(buf, at):
    """Offset (payload-relative) after the string at `at` (4-aligned length, then its bytes); -1 when
    the buffer ends first."""
    length, at = _sequence_length(buf, at)
    if at < 0:
        return -1
    at += length
    return at if ENCAPSULATION + at <= buf.shape[0] else -1


@njit(cache=True)
def _double_sequence(buf, at):
    """(count, payload offset of the values, offset after them) of the double sequence at `at`;
    count -1 when the buffer ends first."""
    count, at = _sequence_length(buf, at)
    if at < 0:
        return -1, 0, 0
    if count > 0:
        at = _align(at, 8)
    end = at + 8 * count
    if ENCAPSULATION + end > buf.shape[0]:
        return -1, 0, 0
    return count, at, end


@njit(cache=True)
def parse_joint_state(buf, names_block, index, q, v, effort, meta):
    """Parse a serialized sensor_msgs/JointState (uint8 array) for the model joints listed by
    `index` (position of each model joint in the message's name list, built for the name block
    `names_block`, the raw bytes of that list). On JS_OK: q, v (and effort when meta[HAS_EFFORT])
    hold the model joints' values; meta holds the stamp and, unless the message has another number
    of names than `names_block` (JS_NAMES_CHANGED at once), where its name block is. Nothing is
    copied unless the result is JS_OK."""
    if buf.shape[0] < ENCAPSULATION + 12 or buf[1] != 1:
        return JS_MALFORMED
    meta[META_SEC] = np.int64(buf[4:8].view(np.int32)[0])
    meta[META_NANOSEC] = _u32(buf, 8)
    at = _skip_string(buf, 8)              # header.frame_id
    if at < 0:
        return JS_MALFORMED
    names_start = _align(at, 4)
    if ENCAPSULATION + names_start + 4 > buf.shape[0]:
        return JS_MALFORMED
    n = _u32(buf, ENCAPSULATION + names_start)
    if names_block.shape[0] >= 4 and n != _u32(names_block, 0):
        return JS_NAMES_CHANGED        # another number of names: no need to look further
    at = names_start + 4
    for _ in range(n):
        at = _skip_string(buf, at)
        if at < 0:
            return JS_MALFORMED
    meta[META_NAMES_START] = ENCAPSULATION + names_start
    meta[META_NAMES_END] = ENCAPSULATION + at
    meta[META_COUNT] = n
    same = at - names_start == names_block.shape[0]
    if same:
        for k in range(names_block.shape[0]):
            if buf[ENCAPSULATION + names_start + k] != names_block[k]:
                same = False
                break
    if not same:
        return JS_NAMES_CHANGED
    if index.shape[0] == 0:
        return JS_FOREIGN
    n_pos, pos_at, at = _double_sequence(buf, at)
    if n_pos < 0:
        return JS_MALFORMED
    n_vel, vel_at, at = _double_sequence(buf, at)
    if n_vel < 0:
        return JS_MALFORMED
    n_eff, eff_at, at = _double_sequence(buf, at)
    if n_eff < 0:
        return JS_MALFORMED
    if n_pos != n or n_vel != n or (n_eff != 0 and n_eff != n):
        meta[META_HAS_EFFORT] = n_eff
        return JS_WRONG_LENGTHS
    for j in range(index.shape[0]):
        k = index[j]
        if not (np.isfinite(_f64(buf, ENCAPSULATION + pos_at + 8 * k))
                and np.isfinite(_f64(buf, ENCAPSULATION + vel_at + 8 * k))):
            return JS_NON_FINITE
    has_effort = n_eff == n
    for j in range(index.shape[0]):
        k = index[j]
        q[j] = _f64(buf, ENCAPSULATION + pos_at + 8 * k)
        v[j] = _f64(buf, ENCAPSULATION + vel_at + 8 * k)
        if has_effort:
            e = _f64(buf, ENCAPSULATION + eff_at + 8 * k)
            if not np.isfinite(e):
                has_effort = False
            effort[j] = e
    meta[META_HAS_EFFORT] = 1 if has_effort else 0
    return JS_OK


@njit(cache=True)
def parse_float64_array(buf, out):
    """Copy the data of a serialized std_msgs/Float64MultiArray into out when it has exactly
    out.shape[0] finite values. Returns the number of values (-1: malformed), or -2 when it had the
    right number but a NaN or inf among them; out changes only on success."""
    if buf.shape[0] < ENCAPSULATION + 4 or buf[1] != 1:
        return -1
    ndim = _u32(buf, ENCAPSULATION)
    at = 4
    for _ in range(ndim):
        at = _skip_string(buf, at)         # label
        if at < 0:
            return -1
        at = _align(at, 4) + 8             # size, stride
    at = _align(at, 4) + 4                 # data_offset
    count, data_at, _ = _double_sequence(buf, at)
    if count != out.shape[0]:
        return count
    for k in range(count):
        if not np.isfinite(_f64(buf, ENCAPSULATION + data_at + 8 * k)):
            return -2
    for k in range(count):
        out[k] = _f64(buf, ENCAPSULATION + data_at + 8 * k)
    return count


# parse_joint_trajectory results
JT_OK = 0
JT_MALFORMED = 1        # truncated, or not little-endian CDR
JT_TOO_MANY_NAMES = 2   # more joint names than the caller reads
JT_TOO_MANY_POINTS = 3  # more points than the caller reads

# meta output of parse_joint_trajectory
JT_SEC, JT_NANOSEC, JT_NAMES_AT, JT_NAMES, JT_POINTS = range(5)


@njit(cache=True, nogil=True)
def parse_joint_trajectory(buf, max_names, max_points, meta, times, counts, offsets):
    """Parse a serialized trajectory_msgs/JointTrajectory (uint8 array) down to where its values
    are: meta gets the stamp, the numbers of names and points and where the first name starts (for
    decode_names); point k its time_from_start times[k] [s] and, for each field f of positions,
    velocities, accelerations, effort, the number of values counts[k, f] and where they start,
    offsets[k, f] (gather_doubles reads them). times, counts (, 4) and offsets (, 4) have max_points
    rows: past max_names names or max_points points nothing more is read (JT_TOO_MANY_*)."""
    size = buf.shape[0]
    if size < ENCAPSULATION + 12 or buf[1] != 1:
        return JT_MALFORMED
    meta[JT_SEC] = np.int64(buf[4:8].view(np.int32)[0])
    meta[JT_NANOSEC] = _u32(buf, 8)
    at = _skip_string(buf, 8)                 # header.frame_id; then the joint names
    if at < 0:
        return JT_MALFORMED
    meta[JT_NAMES], at = _sequence_length(buf, at)
    if at < 0:
        return JT_MALFORMED
    meta[JT_NAMES_AT] = ENCAPSULATION + at
    if meta[JT_NAMES] > max_names:
        return JT_TOO_MANY_NAMES
    for _ in range(meta[JT_NAMES]):
        at = _skip_string(buf, at)
        if at < 0:
            return JT_MALFORMED
    meta[JT_POINTS], at = _sequence_length(buf, at)
    if at < 0:
        return JT_MALFORMED
    if meta[JT_POINTS] > max_points:
        return JT_TOO_MANY_POINTS
    for k in range(meta[JT_POINTS]):
        for f in range(4):
            count, values_at, at = _double_sequence(buf, at)
            if count < 0:
                return JT_MALFORMED
            counts[k, f] = count
            offsets[k, f] = ENCAPSULATION + values_at
        at = _align(at, 4)                     # time_from_start: int32 sec, uint32 nanosec
        if ENCAPSULATION + at + 8 > size:
            return JT_MALFORMED
        sec = buf[ENCAPSULATION + at:ENCAPSULATION + at + 4].view(np.int32)[0]
        times[k] = sec + 1e-9 * _u32(buf, ENCAPSULATION + at + 4)
        at += 8
    return JT_OK


@njit(cache=True, nogil=True)
def gather_doubles(buf, offsets, out):
    """out[k, j] = the j-th float64 from byte offsets[k] of buf (out (K, n), offsets (K,))."""
    for k in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[k, j] = _f64(buf, offsets[k] + 8 * j)


def decode_names(raw, start, count):
    """The strings of a serialized string sequence whose items start at byte `start` (after the
    count), as a list."""
    names, at = [], start - ENCAPSULATION
    for _ in range(count):
        at = (at + 3) // 4 * 4
        length = int.from_bytes(raw[ENCAPSULATION + at:ENCAPSULATION + at + 4], "little")
        names.append(bytes(raw[ENCAPSULATION + at + 4:ENCAPSULATION + at + 3 + length]).decode("utf-8", "replace"))
        at += 4 + length
    return names


# struct codes of the basic types (rosidl_parser's names)
_CODES = {"boolean": "?", "octet": "B", "char": "B", "uint8": "B", "int8": "b", "uint16": "H", "int16": "h",
          "uint32": "I", "int32": "i", "uint64": "Q", "int64": "q", "float": "f", "double": "d"}


def serialize(message):
    """The CDR of an rclpy message, byte-exact as rosbags and ros2 bag write it: little-endian plain
    CDR, zero padding, nothing after the last field. (rclpy's serialize_message is not: rmw_fastrtps
    sizes its buffer by the type support's estimate, which pads an empty sequence of 8-byte values
    as if it had any, so a JointState with efforts only came out 8 bytes longer than its CDR, and
    rosbags refuses it, "CDR message size mismatch"; and it leaves the padding bytes as the heap had
    them.)"""
    out = bytearray(b"\x00\x01\x00\x00")
    _write_message(out, message)
    return bytes(out)


def _write_message(out, message):
    for name, kind in zip(message.get_fields_and_field_types(), message.SLOT_TYPES):
        _write(out, kind, getattr(message, name))


def _write(out, kind, value):
    if isinstance(kind, AbstractNestedType):        # an array's items; a sequence's count first
        if isinstance(kind, AbstractSequence):
            _write_basic(out, "I", len(value))
        for item in value:
            _write(out, kind.value_type, item)
    elif isinstance(kind, AbstractString):
        data = value.encode() + b"\x00"
        _write_basic(out, "I", len(data))
        out += data
    elif isinstance(kind, BasicType):
        _write_basic(out, _CODES[kind.typename], value)
    else:
        _write_message(out, value)


def _write_basic(out, code, value):
    """`value` aligned to its size from the payload's start (zero padding)."""
    size = struct.calcsize(code)
    out += bytes(-(len(out) - ENCAPSULATION) % size)
    out += struct.pack("<" + code, ord(value) if isinstance(value, (bytes, str)) else value)


class RawMessage:
    """A serialized message template whose float64 fields are rewritten in place.

    `prototype` is the message with its final strings and sequence lengths; `fields` names its
    float64 values to expose: {"key": values}, where `values` are the prototype's values for that
    field (distinct markers, so their bytes are found in the serialization). After construction
    `self.views[key]` is a float64 view into the bytes, `array` all of them (uint8), and `bytes()`
    a copy to publish."""

    def __init__(self, prototype, fields):
        self.buffer = bytearray(serialize(prototype))
        self.array = np.frombuffer(self.buffer, dtype=np.uint8)    # the same bytes (fixed in place)
        self.views = {}
        for key, values in fields.items():
            pattern = np.asarray(values, dtype=np.float64).tobytes()
            at = self.buffer.find(pattern)
            if at < 0 or (at - ENCAPSULATION) % 8 or self.buffer.find(pattern, at + 1) >= 0:
                raise RuntimeError(f"RawMessage: field {key!r} not found once, 8-aligned, in the serialization")
            self.views[key] = np.frombuffer(self.buffer, dtype=np.float64, count=len(values), offset=at)
        stamp = np.frombuffer(self.buffer, dtype=np.uint32, count=2, offset=ENCAPSULATION)
        self._stamp = stamp

    def set_stamp(self, ns):
        """header.stamp (the first field of a stamped message) to `ns` nanoseconds."""
        sec, nanosec = divmod(int(ns), 1_000_000_000)
        self._stamp[0] = sec & 0xFFFFFFFF
        self._stamp[1] = nanosec

    def bytes(self):
        return bytes(self.buffer)


def markers(n, first=1.0):
    """n distinct, unmistakable float64 values for RawMessage prototypes."""
    return [np.pi * 1e-300 * (first + k) for k in range(n)]


def vector_pair_template(message, frame_id, halves):
    """The RawMessage of a stamped message with two geometry_msgs/Vector3 (a WrenchStamped's force
    and torque, a TwistStamped's linear and angular parts) in frame_id: halves {key: that Vector3 of
    `message`}, each exposed as views[key] (x, y, z)."""
    message.header.frame_id = frame_id
    values = markers(3 * len(halves))
    for k, vector in enumerate(halves.values()):
        vector.x, vector.y, vector.z = values[3 * k:3 * k + 3]
    return RawMessage(message, {key: values[3 * k:3 * k + 3] for k, key in enumerate(halves)})
