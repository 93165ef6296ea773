"""Public functional API (model + data, like Pinocchio): checks inputs once, calls the kernels.

Every function writes into a buffer of `data` and returns it as a read-only view (as Pinocchio
returns data.tau): copy a result to keep it past the next call with the same data. Inputs are
brought to one form here (C-contiguous, aligned, writable float64: anything else is copied), so each
kernel has one compiled signature and no input aliases a buffer the call writes (results are
read-only, so passing one back copies it). Shapes are checked here; the kernels screen finiteness on
their way in and their results on the way out (cheaper than NumPy from Python), and this module
turns a refusal into a ValueError naming the arguments: the non-finite ones, or all of them when
finite inputs overflow. Models with coupled mimic joints go through the tree kernels and the
coupling matrix G (q_tree = G q + offset, tau = G^T tau_tree).

The model's joint terms (armature I_a, viscous F_v and Coulomb F_c friction per joint, model.py and
kernels/joint_terms.py) enter everywhere the dynamics do:
    tau = (M(q) + diag(I_a)) a + C(q, v) v + g(q) + F_v v + F_c sgn_s(v),  sgn_s(v) = tanh(v / v_s):
rnea, aba, crba (M + diag(I_a)) and nonlinear_effects (= rnea(q, v, 0): C v + g + friction, the bias
of forward dynamics); gravity and coriolis_matrix stay the rigid body's g(q) and C(q, v).
Without joint terms every result is the rigid body's, bit for bit.
"""
import threading

import numba
import numpy as np

from . import floating_base as _floating
from . import multi_dof as _multi
from .kernels import aba as _aba
from .kernels import coriolis as _coriolis
from .kernels import crba as _crba
from .kernels import entry as _entry
from .kernels import floating_entry as _floating_entry
from .kernels import free_flyer as _ff
from .kernels import joint_terms as _joint
from .kernels import kinematics as _kin
from .kernels import rnea as _rnea
from .kernels.inputs import all_finite
from .model import FREE_FLYER_DOFS, Data, Model, as_real_array

_F64 = np.dtype(np.float64)
_OK = _entry.OK    # the fast paths' status test, without a module attribute lookup (~20 ns)
_REFERENCES = {"world": _kin.WORLD, "local": _kin.LOCAL, "local_world_aligned": _kin.LOCAL_WORLD_ALIGNED}


# ----------------------------------------------------------------------------------------------
# Fast path: one compiled call on packed buffers (kernels/entry.py).
#
# A public function first calls its entry kernel with the caller's arguments as they are (fast()). The entry
# kernel's dispatcher is strict: it runs only the one signature compiled for canonical arguments
# (C-contiguous, aligned, writable float64 arrays, checked by the dispatcher's typing in C, much
# cheaper than NumPy checks from Python) and raises TypeError for any other argument types (lists,
# float32, strided or read-only arrays, None, ...) instead of compiling them. The kernel checks sizes
# and finiteness; anything but OK (or a TypeError, or an AttributeError from a model or data of the
# wrong kind) sends the call down the checked path, which brings the inputs to canonical form, names
# what is wrong, and compiles the entry kernel's one signature on the first call. A byte-swapped
# float64 array is refused too (Numba cannot type it), as test_fast_path's "big-endian" inputs check.
# fast() opens every public function; forward_kinematics and jacobian, whose calls are as short as
# Pinocchio's, keep the same lines inline (the helper's call costs ~0.1 us).

_JIT = not numba.config.DISABLE_JIT
_COMPILING = threading.Lock()


def strict(kernel):
    """The entry kernel, made to refuse (TypeError) argument types it was not compiled for. Without
    the JIT (NUMBA_DISABLE_JIT=1) nothing would type-check the fast call, so it always refuses and
    every call takes the checked path (which runs the same kernel)."""
    if not _JIT:
        def refuse(*args):
            raise TypeError("fast path off without the JIT")
        return refuse
    kernel._can_compile = False  # Dispatcher.disable_compile() before its first signature
    return kernel


def compiled_call(kernel, *args):
    """kernel(*args) for canonical arguments, compiling the kernel's signature for them if needed."""
    if not _JIT:
        return kernel(*args)
    signature = tuple(numba.typeof(x) for x in args)
    if signature not in kernel.overloads:
        with _COMPILING:
            kernel._can_compile = True
            try:
                kernel.compile(signature)
            finally:
                kernel._can_compile = False
    return kernel(*args)


_fast_rnea = strict(_entry.rnea)
_fast_rnea_ext = strict(_entry.rnea_ext)
_fast_nonlinear_effects = strict(_entry.nonlinear_effects)
_fast_gravity = strict(_entry.gravity)
_fast_crba = strict(_entry.crba)
_fast_aba = strict(_entry.aba)
_fast_aba_ext = strict(_entry.aba_ext)
_fast_coriolis_matrix = strict(_entry.coriolis_matrix)
_fast_forward_kinematics = strict(_entry.forward_kinematics)
_fast_jacobian = strict(_entry.jacobian)
# free-flyer models: each entry kernel's counterpart (kernels/floating_entry.py), compiled on first use
FLOATING_ENTRY = {getattr(_entry, name): getattr(_floating_entry, name) for name in (
    "rnea", "rnea_ext", "nonlinear_effects", "gravity", "crba", "aba", "aba_ext", "forward_kinematics", "jacobian",
    "minverse", "rnea_derivatives", "aba_derivatives", "centroidal", "center_of_mass", "coriolis_matrix")}
for _kernel in FLOATING_ENTRY.values():
    strict(_kernel)
# a fast call that gives way: argument types not compiled (TypeError; ValueError where Numba cannot
# type an argument, such as an empty list), not a Model or Data (AttributeError), M(q) singular in ABA,
# and another thread compiling the kernel's signature at that moment (compiled_call turns the
# dispatcher's compile flag on for it: this thread's dispatcher then tries to compile too, and finds
# the flag off again: RuntimeError "compilation disabled"); the checked path waits for that compile
_FAST_REFUSED = (AttributeError, TypeError, ValueError, ZeroDivisionError, RuntimeError)
# a fast call passes on arrays in the machine's byte order only: Numba's dispatcher types an array by
# its type number, layout and flags, so a byte-swapped float64 array (np.frombuffer of '>f8' data)
# would reach the kernel as a native one, its bytes read in the wrong order


def fast(kernel, model, data, *arrays):
    """The fast path that opens a public function: True when the strict entry kernel (or, for a
    free-flyer model, its FLOATING_ENTRY counterpart) computed the result into data from the arrays
    as given; False, for a refusal of any kind (_FAST_REFUSED, or the kernel's status), sends the
    call down the checked path, which names what is wrong."""
    try:
        for x in arrays:
            if not x.dtype.isnative:
                return False
        if model.root_joint is not None:
            kernel = FLOATING_ENTRY[kernel]
        if model.multi_dof_joints:  # never the entry kernels' (a strict dispatcher's refusal costs ~50 us)
            return False
        return kernel(model._buf, data._buf, *arrays) == _OK
    except (*_FAST_REFUSED, KeyError):
        return False


def entry_call(kernel, model, data, *arrays):
    """The checked path's compiled call, on checked arrays: True when the entry kernel (a free flyer's:
    FLOATING_ENTRY) computed the result (no mimic coupling, finite inputs and result, a unit
    quaternion); the kernel compiles its one signature on first use."""
    if model.root_joint is not None:
        kernel = FLOATING_ENTRY.get(kernel)
        return kernel is not None and compiled_call(kernel, model._buf, data._buf, *arrays) == _OK
    return model.coupling is None and compiled_call(kernel, model._buf, data._buf, *arrays) == _OK


def as_vector(name, x, n):
    """x as a C-contiguous, aligned, writable float64 (n,) array (finiteness is left to the kernel),
    or a ValueError. Other arrays (read-only, as np.frombuffer and data's results give; strided;
    float32; ...) and sequences are copied by as_real_array."""
    if type(x) is not np.ndarray or x.dtype is not _F64 or not x.flags.carray:
        x = as_real_array(name, x, f"an array of {n} real numbers")
    if x.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {x.shape}")
    return x


def as_finite_array(name, x, shape):
    """x as a contiguous float64 array of `shape` with finite entries, or a ValueError."""
    x = as_real_array(name, x, f"a {shape} array of real numbers")
    if x.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} has non-finite entries (NaN or inf)")
    return x


def non_finite_error(**arrays):
    """The ValueError for a kernel that refused its inputs or whose result is not finite: it names
    every non-finite input, or, when all are finite, says they overflow and names them (those not
    all zero, such as the zeros standing in for a default)."""
    parts = []
    for name, x in arrays.items():
        bad = np.flatnonzero(~np.isfinite(np.asarray(x)))
        if bad.size:
            parts.append(f"{name} at indices {bad.tolist()}")
    if parts:
        return ValueError("non-finite input (NaN or inf): " + "; ".join(parts))
    named = {name: x for name, x in arrays.items() if np.any(x)} or arrays
    largest = ", ".join(f"|{name}| = {np.max(np.abs(x), initial=0.0):.3g}" for name, x in named.items())
    return ValueError(f"inputs overflow: the result is not finite (too large for float64) for the finite "
                      f"inputs {', '.join(named)} (largest {largest})")


def check_model_data(model, data, floating_base=False, multi_dof=False):
    """A ValueError unless model is a Model and data its Data; a floating-base model only where the
    caller takes one (floating_base=True), multi-DoF joints likewise (multi_dof=True)."""
    try:
        matches = isinstance(data, Data) and data.nbodies == model.nbodies and data.nv == model.nv
    except AttributeError:  # model is not a Model
        matches = False
    if not matches:
        if not isinstance(model, Model):
            raise ValueError(f"model must be a dyn_control.Model, got {type(model).__name__}")
        raise ValueError("data must come from model.create_data() of this model")
    if model.root_joint is not None and not floating_base:
        raise floating_base_error(model)
    if model.multi_dof_joints and not multi_dof:
        raise multi_dof_error(model)


def multi_dof_error(model):
    joints = ", ".join(f"{j.name!r} ({j.kind})" for j in model.multi_dof_joints)
    return ValueError(f"this function takes models of 1-DoF joints only, not robot {model.name!r} with the multi-DoF "
                      f"joints {joints} (doc/library.md lists the library's functions that take them)")


def has_multi_dof(model):
    """True for a Model with multi-DoF joints (multi_dof.py), which the functions run on its tree twin."""
    return bool(getattr(model, "multi_dof_joints", None))


def multi_dof_inputs(model, data, q, **inputs):
    """(twin, twin_data, q_twin, inputs...) of a model with multi-DoF joints (multi_dof.anchor): model,
    data, q and the inputs (joint vectors (nv,), f_ext) checked and finite, else a ValueError."""
    check_model_data(model, data, True, True)
    q = as_vector("q", q, model.nq)
    checked = [external_forces(model, data, x) if name == "f_ext" else as_vector(name, x, model.nv)
               for name, x in inputs.items()]
    vectors = {"q": q, **{name: x for name, x in zip(inputs, checked) if name != "f_ext"}}  # f_ext: checked
    for x in vectors.values():
        if not all_finite(x):   # compiled: ~0.1 us a vector against ~1.5 for np.isfinite's
            raise non_finite_error(**vectors)
    return (*_multi.anchor(model, data, q), *checked)


def floating_base_error(model):
    return ValueError(f"this function takes fixed-base models only, not robot {model.name!r} with root_joint "
                      f"{model.root_joint!r} (the library's functions take both; dyn_control.control's laws and "
                      "estimators and the closed-chain mappings are for fixed bases)")


def external_forces(model, data, f_ext):
    if f_ext is None:
        return data._f_ext_zero
    forces = as_finite_array("f_ext", f_ext, (model.nbodies, 6))
    chains = [("the free flyer", 0, FREE_FLYER_DOFS)] if model.root_joint is not None else []
    chains += [(f"joint {j.name!r}", j.body, j.nv) for j in model.multi_dof_joints]
    for owner, first, nv in chains:
        last = first + nv - 1
        if np.any(forces[first:last]):
            raise ValueError(f"f_ext rows {first}-{last - 1} are {owner}'s massless bodies "
                             f"({', '.join(model.body_names[first:last])}) and must be zero: a force on its link "
                             f"{model.body_names[last]!r} goes in row {last}")
    return forces


def checked_inputs(model, data, floating_base=False, **inputs):
    """The checked path's opening of a public function: model and data of one robot (floating_base:
    the function takes a floating-base model), then each input in the order given, a joint vector
    (nv,) named by its argument (as_vector), but `q` (nq,) and `f_ext`: the external forces
    (external_forces: data's zeros for None). A ValueError names what is wrong."""
    check_model_data(model, data, floating_base)
    sizes = {"q": model.nq}
    return tuple(external_forces(model, data, x) if name == "f_ext" else as_vector(name, x, sizes.get(name, model.nv))
                 for name, x in inputs.items())


def checked_inertia_input(kernel, model, data, q, function, out):
    """The checked path's opening of a function of the inertia alone (crba, minverse): None when the
    entry kernel computed the result (or, with multi-DoF joints, `function` on the tree twin into
    data's buffer named `out`), else q as the tree takes it (a free flyer's: the root's pose left out,
    which the inertia does not depend on)."""
    if has_multi_dof(model):
        result = function(*multi_dof_inputs(model, data, q))
        getattr(data, out)[...] = result
        return None
    q, = checked_inputs(model, data, True, q=q)
    if entry_call(kernel, model, data, q):
        return None
    if model.root_joint is not None:
        return floating_tree_state(model, data, q)[0]
    return q


def floating_tree_state(model, data, q, v=None, a=None, **others):
    """The tree's inputs of a free-flyer model (floating_base.tree_state): (q_tree, a_tree or None);
    a ValueError naming the inputs (others too) unless all are finite, or a non-unit quaternion."""
    inputs = {name: x for name, x in (("q", q), ("v", v), ("a", a)) if x is not None}
    inputs.update(others)
    if not all(np.all(np.isfinite(x)) for x in inputs.values()):
        raise non_finite_error(**inputs)
    return _floating.tree_state(model, data, q, v, a)


# ----------------------------------------------------------------------------------------------
# Tree-level calls: arguments already checked, tree coordinates, outputs in data.


def rnea_tree(model, data, q, v, a, f_ext, tau, base_accel=None):
    base_accel = model._base_accel if base_accel is None else base_accel
    if not _rnea.rnea(model._parents, model._screw_axes, model._home_R, model._home_p, model._phi, q,
                      v, a, base_accel, f_ext, data._R, data._p, data._V, data._Vdot, data._F,
                      data._tmp6, tau) or not _joint.add_joint_torque(model._joint_terms, v, a, tau):
        raise non_finite_error(q=q, v=v, a=a, f_ext=f_ext)
    return tau


def crba_tree(model, data, q, M):
    if not _crba.crba(model._parents, model._screw_axes, model._home_R, model._home_p, model._phi, q,
                      data._R, data._p, data._oR, data._op, data._oS, data._phi_composite, data._F, M):
        raise non_finite_error(q=q)
    _joint.add_armature(model._joint_terms, M)
    return M


def coupled_tree_state(model, data, q, v=None, a=None):
    """Tree coordinates of a mimic-coupled model: q_tree = G q + offset, v_tree = G v, a_tree = G a;
    a ValueError naming the inputs unless all are finite."""
    G = model.coupling
    data._q_tree[:] = G @ q + model.coupling_offset
    if v is not None:
        data._v_tree[:] = G @ v
    if a is not None:
        data._a_tree[:] = G @ a
    inputs = {name: x for name, x in (("q", q), ("v", v), ("a", a)) if x is not None}
    tree = (data._q_tree, data._v_tree, data._a_tree)[:len(inputs)]  # v and a come only after q
    if not all(np.all(np.isfinite(x)) for x in tree):
        raise non_finite_error(**inputs)
    return data._q_tree, data._v_tree, data._a_tree


def coupled_result(out, value, **inputs):
    """out[...] = value, a coupled model's result in its own coordinates, or the overflow error."""
    if not np.all(np.isfinite(value)):
        raise non_finite_error(**inputs)
    out[...] = value


# ----------------------------------------------------------------------------------------------
# Public API


def rnea(model, data, q, v, a, f_ext=None):
    """Inverse dynamics tau = (M(q) + diag(I_a)) a + C(q, v) v + g(q) + F_v v + F_c sgn_s(v)
    - sum_i J_i^T f_ext_i  -> data.tau (nv,).

    f_ext: None or (nbodies, 6), the spatial force [n; f] on each body, in the body's frame."""
    if fast(_fast_rnea, model, data, q, v, a) if f_ext is None else fast(_fast_rnea_ext, model, data, q, v, a, f_ext):
        return data.tau
    if has_multi_dof(model):
        twin, twin_data, q_t, v, a, forces = multi_dof_inputs(model, data, q, v=v, a=a, f_ext=f_ext)
        a_t = _multi.twin_acceleration(model, v, a, data._a_tree)
        data._tau[:] = rnea(twin, twin_data, q_t, v, a_t, None if f_ext is None else forces)
        return data.tau
    q, v, a, forces = checked_inputs(model, data, True, q=q, v=v, a=a, f_ext=f_ext)
    if (entry_call(_entry.rnea, model, data, q, v, a) if f_ext is None
            else entry_call(_entry.rnea_ext, model, data, q, v, a, forces)):
        return data.tau
    if model.root_joint is not None:
        q_t, a_t = floating_tree_state(model, data, q, v, a, f_ext=forces)
        rnea_tree(model, data, q_t, v, a_t, forces, data._tau, data._base_accel)
        return data.tau
    if model.coupling is None:
        rnea_tree(model, data, q, v, a, forces, data._tau)  # names the error, or a LargeData
        return data.tau
    q_t, v_t, a_t = coupled_tree_state(model, data, q, v, a)
    tau_tree = rnea_tree(model, data, q_t, v_t, a_t, forces, data._tau_tree)
    coupled_result(data._tau, model.coupling.T @ tau_tree, q=q, v=v, a=a, f_ext=forces)
    return data.tau


def nonlinear_effects(model, data, q, v):
    """rnea(q, v, 0) = C(q, v) v + g(q) + F_v v + F_c sgn_s(v)  -> data.nle (nv,)."""
    if fast(_fast_nonlinear_effects, model, data, q, v):
        return data.nle
    if has_multi_dof(model):
        data._nle[:] = rnea(model, data, q, v, data._zero)
        return data.nle
    q, v = checked_inputs(model, data, True, q=q, v=v)
    if not entry_call(_entry.nonlinear_effects, model, data, q, v):
        data._nle[:] = rnea(model, data, q, v, data._zero)
    return data.nle


def gravity(model, data, q):
    """Generalized gravity g(q)  -> data.g (nv,)."""
    if fast(_fast_gravity, model, data, q):
        return data.g
    if has_multi_dof(model):
        twin, twin_data, q_t = multi_dof_inputs(model, data, q)
        data._g[:] = gravity(twin, twin_data, q_t)
        return data.g
    q, = checked_inputs(model, data, True, q=q)
    if not entry_call(_entry.gravity, model, data, q):
        data._g[:] = rnea(model, data, q, data._zero, data._zero)
    return data.g


def crba(model, data, q):
    """Joint-space inertia matrix M(q) + diag(I_a) (rotors included), full symmetric  -> data.M (nv, nv)."""
    if fast(_fast_crba, model, data, q):
        return data.M
    q = checked_inertia_input(_entry.crba, model, data, q, crba, "_M")
    if q is None:
        return data.M
    G = model.coupling
    if G is None:
        crba_tree(model, data, q, data._M)  # names the error, or a LargeData
        return data.M
    M_tree = crba_tree(model, data, coupled_tree_state(model, data, q)[0], data._M_tree)
    coupled_result(data._M, G.T @ M_tree @ G, q=q)
    return data.M


def aba(model, data, q, v, tau, f_ext=None):
    """Forward dynamics a = (M(q) + diag(I_a))^-1 (tau - C(q, v) v - g(q) - F_v v - F_c sgn_s(v)
    + sum_i J_i^T f_ext_i)  -> data.ddq."""
    if fast(_fast_aba, model, data, q, v, tau) if f_ext is None else fast(_fast_aba_ext, model, data, q, v, tau, f_ext):
        return data.ddq
    if has_multi_dof(model):
        twin, twin_data, q_t, v, tau, forces = multi_dof_inputs(model, data, q, v=v, tau=tau, f_ext=f_ext)
        data._ddq[:] = aba(twin, twin_data, q_t, v, tau, None if f_ext is None else forces)
        _multi.add_bias(model, v, data._ddq)
        return data.ddq
    q, v, tau, forces = checked_inputs(model, data, True, q=q, v=v, tau=tau, f_ext=f_ext)
    try:
        if (entry_call(_entry.aba, model, data, q, v, tau) if f_ext is None
                else entry_call(_entry.aba_ext, model, data, q, v, tau, forces)):
            return data.ddq
    except ZeroDivisionError:
        raise singular_inertia_error(model, data) from None
    base_accel = model._base_accel
    q_t = q
    if model.root_joint is not None:
        q_t = floating_tree_state(model, data, q, v, tau=tau, f_ext=forces)[0]
        base_accel = data._base_accel
    if model.coupling is not None:
        # coupled joints: no articulated-body recursion; solve with the reduced M instead
        bias = rnea(model, data, q, v, np.zeros(model.nv), forces).copy()
        coupled_result(data._ddq, np.linalg.solve(crba(model, data, q), tau - bias), q=q, v=v, tau=tau,
                       f_ext=forces)
        return data.ddq
    try:
        finite = _aba.aba(model._parents, model._screw_axes, model._home_R, model._home_p, model._phi,
                          model._joint_terms, q_t, v, tau, base_accel, forces, data._R, data._p, data._oR,
                          data._op, data._oS, data._oV, data._phi_world, data._c, data._IA, data._pA, data._U,
                          data._D, data._u, data._oA, data._tmp6, data._ddq)
    except ZeroDivisionError:
        raise singular_inertia_error(model, data) from None
    if not finite:
        raise non_finite_error(q=q, v=v, tau=tau, f_ext=forces)
    if model.root_joint is not None:
        _floating.add_bias(v, data._ddq, data._tmp6[0])
    return data.ddq


def singular_inertia_error(model, data):
    """The ValueError for ABA meeting a zero articulated inertia D_i = S_i^T IA_i S_i: M(q) is
    singular (a subtree without inertia about its joint axis) and forward dynamics undefined.
    Pass 2 writes D from the leaves down and stops at the first zero, so it is the last one."""
    joint = model.joint_names[int(np.flatnonzero(data.D == 0.0)[-1])]
    return ValueError(f"forward dynamics undefined: M(q) is singular, joint {joint!r} moves bodies "
                      "without inertia about its axis")


def coriolis_matrix(model, data, q, v):
    """C(q, v) of the rigid body, with C v = nonlinear_effects - gravity - friction and Mdot - 2C
    skew-symmetric  -> data.C."""
    if fast(_fast_coriolis_matrix, model, data, q, v):
        return data.C
    if has_multi_dof(model):
        twin, twin_data, q_t, v = multi_dof_inputs(model, data, q, v=v)
        data._C[:] = coriolis_matrix(twin, twin_data, q_t, v)
        _multi.correct_coriolis(model, data._C, twin_data.oS, twin_data.oV, twin_data.oIc)
        return data.C
    q, v = checked_inputs(model, data, True, q=q, v=v)
    if entry_call(_entry.coriolis_matrix, model, data, q, v):
        return data.C
    G = model.coupling
    if G is not None:
        q_t, v_t, _ = coupled_tree_state(model, data, q, v)
    elif model.root_joint is not None:   # the free flyer's six columns are one joint's
        q_t, v_t = floating_tree_state(model, data, q, v)[0], v
    else:
        q_t, v_t = q, v
    C = data._C_tree
    kernel = _coriolis.coriolis_matrix if model.root_joint is None else _coriolis.free_flyer_coriolis_matrix
    if not kernel(model._parents, model._screw_axes, model._home_R, model._home_p, model._phi, q_t, v_t, data._R,
                  data._p, data._oR, data._op, data._oS, data._oV, data._oPsi, data._oIc, data._oBc,
                  data._phi_world, data._tmp6, C):
        raise non_finite_error(q=q, v=v)
    if G is not None:
        coupled_result(data._C, G.T @ C @ G, q=q, v=v)
    return data.C


def _tree_q(model, data, q):
    """(q checked, q in tree coordinates)."""
    q = as_vector("q", q, model.nq)
    if model.root_joint is not None:
        return q, floating_tree_state(model, data, q)[0]
    if model.coupling is None:
        return q, q
    return q, coupled_tree_state(model, data, q)[0]


def forward_kinematics(model, data, q):
    """World (root-frame) poses of all frames, (nframes, 4, 4) in model.frame_names order."""
    try:
        kernel = _fast_forward_kinematics if model.root_joint is None else _floating_entry.forward_kinematics
        if q.dtype.isnative and not model.multi_dof_joints and kernel(model._buf, data._buf, q) == _OK:
            return data.frame_poses
    except _FAST_REFUSED:
        pass
    if has_multi_dof(model):
        data._frame_poses[:] = forward_kinematics(*multi_dof_inputs(model, data, q))
        return data.frame_poses
    check_model_data(model, data, True)
    q, q_t = _tree_q(model, data, q)
    if len(data.frame_poses) == len(model.frame_names) and entry_call(_entry.forward_kinematics, model, data, q):
        return data.frame_poses
    if not _kin.forward_kinematics(model._parents, model._screw_axes, model._home_R, model._home_p,
                                   model._frame_body, model._frame_R, model._frame_p, q_t, data._R,
                                   data._p, data._oR, data._op, data._frame_poses):
        raise non_finite_error(q=q)
    if model.root_joint is not None:
        _ff.world_poses(data._base_R, data._base_p, data._frame_poses)
    return data.frame_poses


def frame_pose(model, data, q, frame):
    """World pose (4, 4) of one frame (link or joint name)."""
    poses = forward_kinematics(model, data, q)
    return poses[model.frame_id(frame)]


def jacobian(model, data, q, frame, reference="world"):
    """Frame Jacobian (6, nv), angular rows first, so that J v is the frame's velocity:
    "world": spatial velocity in the root frame at the root origin (Pinocchio WORLD);
    "local": twist in the frame's own axes; "local_world_aligned": angular velocity and the
    frame origin's linear velocity in the root frame's axes."""
    try:
        kernel = _fast_jacobian if model.root_joint is None else _floating_entry.jacobian
        if (q.dtype.isnative and not model.multi_dof_joints
                and kernel(model._buf, data._buf, q, model._frame_index[frame], _REFERENCES[reference]) == _OK):
            return data.J
    except (*_FAST_REFUSED, KeyError):
        pass
    if has_multi_dof(model):
        data._J[:] = jacobian(*multi_dof_inputs(model, data, q), frame, reference)
        return data.J
    check_model_data(model, data, True)
    f = model.frame_id(frame)
    try:
        code = _REFERENCES[reference]
    except (KeyError, TypeError):
        raise ValueError(f"reference must be one of {', '.join(_REFERENCES)}, got {reference!r}") from None
    q, q_t = _tree_q(model, data, q)
    G = model.coupling
    if len(data.frame_poses) == len(model.frame_names) and entry_call(_entry.jacobian, model, data, q, f, code):
        return data.J
    J = data._J if G is None else data._J_tree
    if not _kin.frame_jacobian(model._parents, model._screw_axes, model._home_R, model._home_p, q_t,
                               data._support, data._R, data._p, data._oR, data._op, model._frame_body[f],
                               model._frame_R[f], model._frame_p[f], code, J):
        raise non_finite_error(q=q)
    if G is not None:
        coupled_result(data._J, J @ G, q=q)
    if model.root_joint is not None:
        _ff.world_jacobian(data._base_R, data._base_p, code, data._J)
    return data.J
