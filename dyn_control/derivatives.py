"""Public API of the first-order derivatives of the dynamics, M^-1 and the joint torque regressor.

Same pattern as dynamics.py: inputs brought to one form and shapes checked here, the kernels screen
finiteness of inputs and results, results are read-only views of Data buffers (copy to keep).
Models with coupled mimic joints go through the tree kernels and the coupling matrix G
(q_tree = G q + offset, tau = G^T tau_tree).

Joint terms (model.py, kernels/joint_terms.py) are included as in dynamics.py: d tau / d v gains
diag(F_v + F_c sgn_s'(v)), d tau / d a = M + diag(I_a), M^-1 and the forward-dynamics derivatives
follow; with joint_terms=True the regressor gains their columns [a_i, v_i, sgn_s(v_i)] per joint.

Batches (the end of this module): rnea, aba, rnea_derivatives and the regressor over many samples in
parallel, each row bit for bit the single call's, and the reductions identification needs computed in
the batch kernel (regressor_normal_equations, residual_gradient_batch); all take `workers`.
"""
import contextlib
import functools
import numbers

import numba
import numpy as np

from . import floating_base as _floating
from . import multi_dof as _multi
from .dynamics import (aba, as_real_array, checked_inertia_input, checked_inputs, coupled_result, coupled_tree_state,
                       crba, entry_call, fast, floating_tree_state, has_multi_dof, multi_dof_error, multi_dof_inputs,
                       non_finite_error, rnea, strict)
from .kernels import batch as _batch
from .kernels import entry as _entry
from .kernels import free_flyer as _ff
from .kernels import joint_terms as _joint
from .kernels import minverse as _minverse
from .kernels import regressor as _regressor
from .kernels import rnea_derivatives as _rnea_derivatives
from .model import FREE_FLYER_DOFS, Model

# fast paths: one strict compiled call (see dynamics.py)
_fast_regressor = strict(_entry.regressor)
_fast_regressor_full = strict(_entry.regressor_full)
_fast_rnea_derivatives = strict(_entry.rnea_derivatives)
_fast_minverse = strict(_entry.minverse)
_fast_aba_derivatives = strict(_entry.aba_derivatives)


def _regressor_tree(model, data, q, v, a, Y, Y_full=None):
    """Y of the tree, and Y_full = [Y | joint block] (kernels/joint_terms.py) when given."""
    if not _regressor.regressor(model._parents, model._screw_axes, model._home_R, model._home_p, q, v,
                                a, model._base_accel, data._R, data._p, data._oR, data._op, data._oS,
                                data._V, data._Vdot, data._tmp6, Y):
        raise non_finite_error(q=q, v=v, a=a)
    if Y_full is None:
        return Y
    nb = model.nbodies
    Y_full[:, :10 * nb] = Y
    _joint.joint_regressor(v, a, Y_full, 10 * nb)
    return Y_full


def regressor(model, data, q, v, a, joint_terms=False):
    """Joint torque regressor, linear in the model's parameters:
    joint_terms=False: Y (nv, 10 * nbodies) with rnea(q, v, a) = Y @ model.inertial_parameters()
    (per body [m, hx, hy, hz, Ixx, Iyy, Izz, Ixy, Ixz, Iyz], inertia about the body origin), the
    rigid body alone -> data.Y;
    joint_terms=True: Y (nv, 13 * nbodies) with rnea(q, v, a) = Y @ model.parameters(): the columns
    above, then per joint [a_i, v_i, sgn_s(v_i)] in row i for [armature, viscous, coulomb] -> data.Y_full."""
    if joint_terms:
        if fast(_fast_regressor_full, model, data, q, v, a):
            return data.Y_full
    elif fast(_fast_regressor, model, data, q, v, a):
        return data.Y
    if has_multi_dof(model):  # the tree twin's regressor at its accelerations (multi_dof.py)
        twin, twin_data, q_t, v, a = multi_dof_inputs(model, data, q, v=v, a=a)
        out = data._Y_full if joint_terms else data._Y
        out[:] = regressor(twin, twin_data, q_t, v, _multi.twin_acceleration(model, v, a, data._a_tree), joint_terms)
        out[:, _chain_columns(model, joint_terms)] = 0.0
        return data.Y_full if joint_terms else data.Y
    q, v, a = checked_inputs(model, data, True, q=q, v=v, a=a)
    if model.root_joint is not None:  # the tree twin's regressor at (q_tree, v, a - [b; 0]) (floating_base.py)
        q_t, a_t = floating_tree_state(model, data, q, v, a)
        out = data._Y_full if joint_terms else data._Y
        out[:] = regressor(*_floating.tree_twin(model, data), q_t.copy(), v, a_t.copy(), joint_terms)
        out[:, _chain_columns(model, joint_terms)] = 0.0
        return data.Y_full if joint_terms else data.Y
    if not entry_call(_entry.regressor_full if joint_terms else _entry.regressor, model, data, q, v, a):
        G = model.coupling
        if G is None:  # the tree kernel names the error (or serves a LargeData)
            _regressor_tree(model, data, q, v, a, data._Y, data._Y_full if joint_terms else None)
        else:
            Y_tree = _regressor_tree(model, data, *coupled_tree_state(model, data, q, v, a), data._Y_tree,
                                     data._Y_full_tree if joint_terms else None)
            coupled_result(data._Y_full if joint_terms else data._Y, G.T @ Y_tree, q=q, v=v, a=a)
    return data.Y_full if joint_terms else data.Y


def _rnea_derivatives_tree(model, data, q, v, a, f_ext, base_accel=None):
    if not _rnea_derivatives.rnea_derivatives(
            model._parents, model._screw_axes, model._home_R, model._home_p, model._phi, q, v, a,
            model._base_accel if base_accel is None else base_accel, f_ext, data._R, data._p, data._oR, data._op,
            data._ophi_c,
            data._deriv_vectors, data._tmp6, data._derivatives_tree):
        raise non_finite_error(q=q, v=v, a=a, f_ext=f_ext)
    _joint.add_joint_derivatives(model._joint_terms, v, data._derivatives_tree[1], data._derivatives_tree[2])


def rnea_derivatives(model, data, q, v, a, f_ext=None):
    """First-order derivatives of tau = rnea(q, v, a, f_ext): (dtau_dq, dtau_dv, M) -> data.dtau_dq,
    data.dtau_dv, data.dtau_da, each (nv, nv); M = d tau / d a (M(q) + diag(I_a)). f_ext: None or (nbodies, 6), each
    body's spatial force [n; f] in its own frame (constant in that frame)."""
    if f_ext is None and fast(_fast_rnea_derivatives, model, data, q, v, a):
        return data.dtau_dq, data.dtau_dv, data.dtau_da
    if has_multi_dof(model):
        twin, twin_data, q_t, v, a, forces = multi_dof_inputs(model, data, q, v=v, a=a, f_ext=f_ext)
        a_t = _multi.twin_acceleration(model, v, a, data._a_tree)
        _multi_dof_derivatives(model, data, twin, twin_data, q_t, v, a_t, None if f_ext is None else forces)
        return data.dtau_dq, data.dtau_dv, data.dtau_da
    q, v, a, forces = checked_inputs(model, data, True, q=q, v=v, a=a, f_ext=f_ext)
    if f_ext is None and entry_call(_entry.rnea_derivatives, model, data, q, v, a):
        return data.dtau_dq, data.dtau_dv, data.dtau_da
    if model.root_joint is not None:
        q_t, a_t = floating_tree_state(model, data, q, v, a, f_ext=forces)
        _rnea_derivatives_tree(model, data, q_t, v, a_t, forces, data._base_accel)
        _ff.correct_derivatives(data._dtau_da, data._base_accel, v, data._dtau_dq, data._dtau_dv, data._tmp6)
        return data.dtau_dq, data.dtau_dv, data.dtau_da
    G = model.coupling
    if G is None:
        _rnea_derivatives_tree(model, data, q, v, a, forces)
        return data.dtau_dq, data.dtau_dv, data.dtau_da
    _rnea_derivatives_tree(model, data, *coupled_tree_state(model, data, q, v, a), forces)
    for out, tree in zip((data._dtau_dq, data._dtau_dv, data._dtau_da), data._derivatives_tree):
        coupled_result(out, G.T @ tree @ G, q=q, v=v, a=a, f_ext=forces)
    return data.dtau_dq, data.dtau_dv, data.dtau_da


def _multi_dof_derivatives(model, data, twin, twin_data, q_t, v, a_t, f_ext):
    """data.dtau_dq, dtau_dv, dtau_da of a model with multi-DoF joints from its tree twin's at the twin's
    acceleration a_t (multi_dof.correct_derivatives)."""
    tau = rnea(twin, twin_data, q_t, v, a_t, f_ext).copy()
    for out, twin_out in zip((data._dtau_dq, data._dtau_dv, data._dtau_da),
                             rnea_derivatives(twin, twin_data, q_t, v, a_t, f_ext)):
        out[:] = twin_out
    _multi.correct_derivatives(model, v, a_t, tau, data._dtau_da, data._dtau_dq, data._dtau_dv)


def _singular_error(model, joint_index):
    return ValueError(f"M(q) is singular: joint {model.joint_names[joint_index]!r} moves bodies "
                      "without inertia about its axis")


def _inverse_of(model, M):
    try:
        return np.linalg.inv(M)
    except np.linalg.LinAlgError:
        raise ValueError(f"M(q) of robot {model.name!r} is singular") from None


def minverse(model, data, q):
    """(M(q) + diag(I_a))^-1 (nv, nv), full symmetric, by the articulated-body algorithm in O(n^2)
    -> data.Minv."""
    if fast(_fast_minverse, model, data, q):
        return data.Minv
    q = checked_inertia_input(_entry.minverse, model, data, q, minverse, "_Minv")
    if q is None:
        return data.Minv
    if model.coupling is not None:
        coupled_result(data._Minv, _inverse_of(model, crba(model, data, q)), q=q)
        return data.Minv
    status = _minverse.minverse(model._parents, model._screw_axes, model._home_R, model._home_p,
                                model._phi, model._joint_terms, q, data._R, data._p, data._oR, data._op, data._ophi_c,
                                data._deriv_vectors, data._Minv_IA, data._Minv_F, data._subtree_end,
                                data._Minv_Dinv, data._Minv)
    if status != _minverse.OK:
        if status == _minverse.NON_FINITE:
            raise non_finite_error(q=q)
        raise _singular_error(model, status)
    return data.Minv


def aba_derivatives(model, data, q, v, tau, f_ext=None):
    """First-order derivatives of a = aba(q, v, tau, f_ext): (da_dq, da_dv, Minv) -> data.ddq_dq,
    data.ddq_dv, data.Minv, each (nv, nv); Minv = d a / d tau. data.ddq receives a itself, and
    data.dtau_dq, data.dtau_dv the inverse-dynamics derivatives at that a."""
    if f_ext is None and fast(_fast_aba_derivatives, model, data, q, v, tau):
        return data.ddq_dq, data.ddq_dv, data.Minv
    if has_multi_dof(model):    # -M^-1 of the inverse dynamics' derivatives at the forward dynamics' a
        twin, twin_data, q_t, v, tau, forces = multi_dof_inputs(model, data, q, v=v, tau=tau, f_ext=f_ext)
        forces = None if f_ext is None else forces
        data._ddq[:] = aba(twin, twin_data, q_t, v, tau, forces)
        _multi_dof_derivatives(model, data, twin, twin_data, q_t, v, data._ddq, forces)
        _multi.add_bias(model, v, data._ddq)
        data._Minv[:] = minverse(twin, twin_data, q_t)
        data._ddq_dq[:] = -data._Minv @ data._dtau_dq
        data._ddq_dv[:] = -data._Minv @ data._dtau_dv
        return data.ddq_dq, data.ddq_dv, data.Minv
    q, v, tau, forces = checked_inputs(model, data, True, q=q, v=v, tau=tau, f_ext=f_ext)
    if f_ext is None and entry_call(_entry.aba_derivatives, model, data, q, v, tau):
        return data.ddq_dq, data.ddq_dv, data.Minv
    base_accel, q_tree = model._base_accel, q
    if model.root_joint is not None:
        q_tree = floating_tree_state(model, data, q, v, tau=tau, f_ext=forces)[0]
        base_accel = data._base_accel
    elif model.coupling is not None:
        ddq = aba(model, data, q, v, tau, forces)
        dtau_dq, dtau_dv, M = rnea_derivatives(model, data, q, v, ddq, forces)
        Minv = _inverse_of(model, M)
        inputs = dict(q=q, v=v, tau=tau, f_ext=forces)
        coupled_result(data._Minv, Minv, **inputs)
        coupled_result(data._ddq_dq, -Minv @ dtau_dq, **inputs)
        coupled_result(data._ddq_dv, -Minv @ dtau_dv, **inputs)
        return data.ddq_dq, data.ddq_dv, data.Minv
    status = _minverse.aba_derivatives(
        model._parents, model._screw_axes, model._home_R, model._home_p, model._phi, model._joint_terms,
        q_tree, v, tau, base_accel, forces, data._R, data._p, data._oR, data._op, data._ophi_c,
        data._deriv_vectors, data._tmp6, data._Minv_IA, data._Minv_F, data._subtree_end, data._deriv_joint,
        data._ddq, data._derivatives_tree)
    if status != _minverse.OK:
        if status == _minverse.NON_FINITE:
            raise non_finite_error(q=q, v=v, tau=tau, f_ext=forces)
        raise _singular_error(model, status)
    if model.root_joint is not None:
        _ff.correct_forward_derivatives(data._base_accel, v, data._ddq, data._ddq_dq, data._ddq_dv, data._tmp6[0])
    return data.ddq_dq, data.ddq_dv, data.Minv


# ----------------------------------------------------------------------------------------------
# Batches: rows of (T, nv) arrays, evaluated in parallel (kernels/batch.py); new output arrays.
#
# workers: the number of threads (None: the calling thread's numba.get_num_threads(), all cores unless
# the caller chose fewer, as `dyn-control excite` does for its small batches), set for the call only
# (numba.set_num_threads and a dynamic schedule, numba.set_parallel_chunksize(1), both restored
# afterwards; both are per calling thread). Every result is independent of it, bit for bit.

_WAVE = 8                         # blocks of samples summed apart at once in the reductions (their parallelism)
_REDUCTION_MEMORY = 64 * 2 ** 20  # bytes of partial sums (P, P) a normal-equations call may hold (fewer blocks
                                  # per wave for a large P)


def _workers(workers):
    """workers as an int from 1 to numba.config.NUMBA_NUM_THREADS (None: numba.get_num_threads(), the
    calling thread's setting), or a ValueError."""
    most = numba.config.NUMBA_NUM_THREADS
    if workers is None:
        return numba.get_num_threads()
    if isinstance(workers, (bool, np.bool_)) or not isinstance(workers, numbers.Integral):
        raise ValueError(f"workers must be None or an integer from 1 to {most} "
                         f"(numba.config.NUMBA_NUM_THREADS), got {workers!r}")
    if not 1 <= workers <= most:
        raise ValueError(f"workers must be from 1 to {most} (numba.config.NUMBA_NUM_THREADS, the threads "
                         f"Numba launched), got {workers}")
    return int(workers)


@contextlib.contextmanager
def _threads(workers):
    """Run the enclosed parallel kernels on `workers` threads (checked by _workers), one chunk of
    samples at a time per thread, and restore the calling thread's settings afterwards."""
    previous = numba.get_num_threads()
    numba.set_num_threads(workers)
    chunksize = numba.set_parallel_chunksize(1)
    try:
        yield
    finally:
        numba.set_parallel_chunksize(chunksize)
        numba.set_num_threads(previous)


def _batch_inputs(model, **arrays):
    """The arrays as contiguous float64 (T, nv) (q: (T, nq)) with one T, plus their tree coordinates
    (q_tree = q G^T + offset, v_tree = v G^T, ... for mimic coupling; a free flyer's: _floating_batch)."""
    if not isinstance(model, Model):
        raise ValueError(f"model must be a dyn_control.Model, got {type(model).__name__}")
    out = []
    for name, x in arrays.items():
        n = model.nq if name == "q" else model.nv
        x = as_real_array(name, x, f"a (T, {n}) array of real numbers")
        T = out[0].shape[0] if out else (x.shape[0] if x.ndim == 2 else "T")
        if x.shape != (T, n):
            like = f" like {next(iter(arrays))}" if out else ""
            raise ValueError(f"{name} must have shape ({T}, {n}){like}, got {x.shape}")
        out.append(x)
    if model.multi_dof_joints:  # no batch kernel: _sample_by_sample
        return out, None
    if model.root_joint is not None:
        return out, _floating_batch(model, arrays, out)
    if model.coupling is None:
        return out, out
    G = model.coupling
    tree = [out[0] @ G.T + model.coupling_offset] + [x @ G.T for x in out[1:]]
    return out, tree


def _floating_batch(model, arrays, out):
    """A free flyer's samples as the gravity-free twin's (floating_base.batch_tree_state): q_tree, v, the
    accelerations with gravity and -b moved in, tau; the finite ones, else a ValueError naming them."""
    checked = dict(zip(arrays, out))
    if not all(np.all(np.isfinite(x)) for x in checked.values()):
        _checked_batch(None, np.all([np.all(np.isfinite(x), axis=1) for x in out], axis=0), **checked)
    q_t, _, a_t = _floating.batch_tree_state(model, checked["q"], checked["v"], checked.get("a"))
    return [q_t if name == "q" else a_t if name == "a" else x for name, x in checked.items()]


def _chain_columns(model, joint_terms):
    """The regressor's columns of the massless bodies of a free flyer's and of multi-DoF joints' chains
    and, with joint terms, of their coordinates' joint terms: zero, as they are no parameters of the
    robot (Model.with_joint_dynamics refuses joint terms there); none without such joints."""
    chains = [(0, FREE_FLYER_DOFS)] if model.root_joint is not None else []
    chains += [(j.body, j.nv) for j in model.multi_dof_joints]
    massless = [np.arange(10 * first, 10 * (first + nv - 1)) for first, nv in chains]
    terms = [10 * model.nbodies + np.arange(3 * first, 3 * (first + nv)) for first, nv in chains] if joint_terms else []
    return np.concatenate([np.zeros(0, dtype=np.int64), *massless, *terms])


def _kernel_model(model):
    """The model whose arrays the batch kernels take: a free flyer's gravity-free twin."""
    return model if model.root_joint is None else _floating.batch_twin(model)


def _sample_by_sample(function, model, shapes, out=None, **arrays):
    """function's single calls on the rows of the (checked) arrays one after the other, for a model with
    multi-DoF joints (multi_dof.py): its results stacked into arrays of `shapes` (one per result; out,
    when given, for the first); a ValueError names the sample at fault."""
    data = model.create_data()
    results = [out if k == 0 and out is not None else np.empty(shape) for k, shape in enumerate(shapes)]
    for t in range(shapes[0][0]):
        try:
            result = function(model, data, *(x[t] for x in arrays.values()))
        except ValueError as error:
            raise ValueError(f"sample {t}: {error}") from None
        for stacked, part in zip(results, result if isinstance(result, tuple) else (result,)):
            stacked[t] = part
    return tuple(results) if len(results) > 1 else results[0]


def _checked_batch(result, ok, **arrays):
    """result, or a ValueError naming the samples (rows) whose inputs are not finite or overflow;
    ok[t] is the kernel's verdict on sample t, None for a coupled model's contraction of result."""
    if ok is None:
        ok = np.all(np.isfinite(result.reshape(result.shape[0], -1)), axis=1)
    if not ok.all():
        bad = np.flatnonzero(~ok)
        names = [n for n, x in arrays.items() if not np.all(np.isfinite(x[bad]))]
        if names:
            raise ValueError(f"non-finite input (NaN or inf) in {', '.join(names)} at samples {bad.tolist()}")
        named = [n for n, x in arrays.items() if np.any(x[bad])] or list(arrays)
        raise ValueError(f"inputs overflow: the result is not finite (too large for float64) for the "
                         f"finite inputs {', '.join(named)} at samples {bad.tolist()}")
    return result


def rnea_batch(model, q, v, a, workers=None):
    """tau (T, nv): rnea of every row of q, v, a (each (T, nv)), samples in parallel on `workers`
    threads (None: all); each row bit for bit the single call's."""
    workers = _workers(workers)
    (q, v, a), tree = _batch_inputs(model, q=q, v=v, a=a)
    if tree is None:
        return _sample_by_sample(rnea, model, [v.shape], q=q, v=v, a=a)
    q_t, v_t, a_t = tree
    T = q.shape[0]
    tau = np.empty((T, model.nbodies))
    ok = np.empty(T, dtype=np.bool_)
    m = _kernel_model(model)
    with _threads(workers):
        _batch.rnea_batch(m._parents, m._screw_axes, m._home_R, m._home_p, m._phi, m._joint_terms, m._base_accel,
                          q_t, v_t, a_t, tau, ok)
    _checked_batch(tau, ok, q=q, v=v, a=a)
    if model.coupling is None:
        return tau
    return _checked_batch(tau @ model.coupling, None, q=q, v=v, a=a)


def aba_batch(model, q, v, tau, workers=None):
    """ddq (T, nv): forward dynamics `aba` of every row of q, v, tau (each (T, nv)), samples in
    parallel on `workers` threads (None: all); each row bit for bit the single call's. A ValueError
    names the samples whose inputs are not finite or overflow, or whose M(q) is singular. Models with
    mimic coupling (no articulated-body recursion: `aba` solves with the reduced M) run the single
    calls one after the other."""
    workers = _workers(workers)
    (q, v, tau), tree = _batch_inputs(model, q=q, v=v, tau=tau)
    T, nv = v.shape
    if model.coupling is not None or tree is None:
        return _sample_by_sample(aba, model, [v.shape], q=q, v=v, tau=tau)
    q_t = tree[0]
    ddq = np.empty((T, nv))
    status = np.empty(T, dtype=np.int8)
    m = _kernel_model(model)
    with _threads(workers), np.errstate(divide="ignore", invalid="ignore"):  # D_i = 0 without the JIT
        _batch.aba_batch(m._parents, m._screw_axes, m._home_R, m._home_p, m._phi, m._joint_terms, m._base_accel,
                         q_t, v, tau, ddq, status)
    singular = np.flatnonzero(status == _batch.SINGULAR)
    if singular.size and not np.any(status == _batch.NON_FINITE):
        raise ValueError(f"forward dynamics undefined: M(q) is singular (a subtree without inertia about its "
                         f"joint axis) at samples {singular.tolist()}")
    ddq = _checked_batch(ddq, status == _batch.OK, q=q, v=v, tau=tau)
    if model.root_joint is not None:   # the twin's acceleration less gravity, plus the chain's b
        a_g = _floating.batch_tree_state(model, q, v)[1]
        ddq[:, :FREE_FLYER_DOFS] += _floating.batch_bias(v) - a_g
    return ddq


def rnea_derivatives_batch(model, q, v, a, workers=None):
    """(dtau_dq, dtau_dv, M), each (T, nv, nv): rnea_derivatives of every row of q, v, a (each
    (T, nv)), samples in parallel on `workers` threads (None: all). The three are views of one
    (T, 3, nv, nv) array."""
    workers = _workers(workers)
    (q, v, a), tree = _batch_inputs(model, q=q, v=v, a=a)
    T, nb = q.shape[0], model.nbodies
    out = np.empty((T, 3, nb, nb))
    if tree is None:
        out[:, 0], out[:, 1], out[:, 2] = _sample_by_sample(rnea_derivatives, model, [(T, nb, nb)] * 3, q=q, v=v, a=a)
        return out[:, 0], out[:, 1], out[:, 2]
    q_t, v_t, a_t = tree
    ok = np.empty(T, dtype=np.bool_)
    m = _kernel_model(model)
    with _threads(workers):
        _batch.rnea_derivatives_batch(m._parents, m._screw_axes, m._home_R, m._home_p, m._phi, m._joint_terms,
                                      m._base_accel, q_t, v_t, a_t, out, ok)
    _checked_batch(out, ok, q=q, v=v, a=a)
    if model.root_joint is not None:
        a_g = _floating.batch_tree_state(model, q, v)[1]
        _floating.batch_correct_derivatives(out[:, 0], out[:, 1], out[:, 2], a_g, v)
    if model.coupling is not None:
        G = model.coupling
        out = _checked_batch(G.T @ out @ G, None, q=q, v=v, a=a)
    return out[:, 0], out[:, 1], out[:, 2]


def regressor_batch(model, q, v, a, joint_terms=False, workers=None, out=None):
    """Y (T, nv, 10 * nbodies), or (T, nv, 13 * nbodies) with joint_terms=True: the joint torque
    regressor (as `regressor`) of every row of q, v, a (each (T, nv)), samples in parallel on
    `workers` threads (None: all). T nv P float64 of memory: regressor_normal_equations and
    residual_gradient_batch give the sums identification needs without it.

    out: None (a new array), or a C-contiguous writable float64 array of that shape to write Y into
    and return. Reused over the chunks of a long recording, it spares the first touch of fresh
    memory, which can cost more than the regressor (panda on this machine: 4.8 us a sample to fault in
    65 MB, 0.4 us a sample to compute)."""
    workers = _workers(workers)
    (q, v, a), tree = _batch_inputs(model, q=q, v=v, a=a)
    T, nb = q.shape[0], model.nbodies
    shape = (T, model.nv, (13 if joint_terms else 10) * nb)
    if out is not None:
        _check_out(out, shape, q=q, v=v, a=a)
    if tree is None:
        return _sample_by_sample(functools.partial(regressor, joint_terms=joint_terms), model, [shape], out,
                                 q=q, v=v, a=a)
    q_t, v_t, a_t = tree
    Y = out if out is not None and model.coupling is None else np.empty((T, nb, shape[2]))
    ok = np.empty(T, dtype=np.bool_)
    m = _kernel_model(model)
    with _threads(workers):
        _batch.regressor_batch(m._parents, m._screw_axes, m._home_R, m._home_p, m._base_accel,
                               *_batch.pair_table(m._parents)[:2], q_t, v_t, a_t, Y, ok)
    _checked_batch(Y, ok, q=q, v=v, a=a)
    Y[:, :, _chain_columns(model, joint_terms)] = 0.0
    if model.coupling is None:
        return Y
    return _checked_batch(np.matmul(model.coupling.T, Y, out=out), None, q=q, v=v, a=a)


def _check_out(out, shape, **inputs):
    """A ValueError unless `out` is a C-contiguous, aligned, writable float64 array of `shape` that
    shares no memory with the inputs."""
    if not isinstance(out, np.ndarray):
        raise ValueError(f"out must be None or a numpy array of shape {shape}, got {type(out).__name__}")
    if out.dtype != np.float64 or not out.flags.carray:
        raise ValueError(f"out must be a C-contiguous, aligned, writable float64 array, got {out.dtype} "
                         f"with flags C-contiguous={out.flags.c_contiguous}, writeable={out.flags.writeable}")
    if out.shape != shape:
        raise ValueError(f"out must have shape {shape}, got {out.shape}")
    for name, x in inputs.items():
        if np.shares_memory(out, x):
            raise ValueError(f"out shares memory with {name}")


def _reduction_inputs(model, q, v, a, tau, joint_terms):
    """Checked samples and what the reduction kernels take: (q, v, a, tau), tree coordinates, P,
    the coupling matrix G ((0, 0) for none) and the regressor's block pairs (kernels/batch.pair_table)."""
    (q, v, a, tau), tree = _batch_inputs(model, q=q, v=v, a=a, tau=tau)
    if not np.all(np.isfinite(tau)):
        bad = np.flatnonzero(~np.all(np.isfinite(tau), axis=1))
        raise ValueError(f"non-finite input (NaN or inf) in tau at samples {bad.tolist()}")
    if tree is None:    # multi-DoF joints: _multi_dof_sums
        return (q, v, a, tau), None, (13 if joint_terms else 10) * model.nbodies, None, None
    P = (13 if joint_terms else 10) * model.nbodies
    # a writable copy: the kernels' one compiled signature (the model's arrays are read-only)
    coupling = np.zeros((0, 0)) if model.coupling is None else np.array(model.coupling, dtype=float)
    return (q, v, a, tau), tree[:3], P, coupling, _batch.pair_table(model._parents)


def _multi_dof_sums(model, q, v, a, tau, joint_terms, phi=None):
    """The sums of regressor_normal_equations (phi None) or residual_gradient_batch for a model with
    multi-DoF joints (multi_dof.py): the regressor's single calls sample by sample."""
    data = model.create_data()
    P = (13 if joint_terms else 10) * model.nbodies
    A, b, value = np.zeros((P, P)), np.zeros(P), 0.0
    for t in range(q.shape[0]):
        try:
            Y = regressor(model, data, q[t], v[t], a[t], joint_terms)
        except ValueError as error:
            raise ValueError(f"sample {t}: {error}") from None
        if phi is None:
            A += Y.T @ Y
            b += Y.T @ tau[t]
        else:
            residual = Y @ phi - tau[t]
            value += 0.5 * residual @ residual
            b += Y.T @ residual
    return (A, b) if phi is None else (value, b)


def _wave(P, memory=None):
    """Blocks summed apart at once: a function of P only (never of the threads), so that the sums are
    reproducible bit for bit whatever `workers` is."""
    if memory is None:
        return _WAVE
    return max(1, min(_WAVE, memory // (8 * P * P)))


def _finite_sums(sums, **arrays):
    if not all(np.all(np.isfinite(x)) for x in sums):
        raise ValueError(f"inputs overflow: the sums are not finite (too large for float64) for the finite "
                         f"inputs {', '.join(arrays)}")
    return sums


def regressor_normal_equations(model, q, v, a, tau, joint_terms=True, workers=None):
    """The normal equations of identification over T samples, without the (T, nv, P) regressors:
    (YtY, Ytau) = (sum_t Y_t^T Y_t  (P, P), symmetric;  sum_t Y_t^T tau_t  (P,)), Y_t = regressor(q[t],
    v[t], a[t], joint_terms) in the model's coordinates (P = 13 nbodies with the joint terms, columns as
    model.parameters(); 10 nbodies without, as model.inertial_parameters()), tau (T, nv) the measured
    torques. Computed in the batch kernel on `workers` threads (None: all): blocks of a fixed number of
    samples summed apart, 8 at a time, their partial sums added in block order, so the result does not
    depend on `workers` (bit for bit); it differs from a serial sum only by the order of the additions
    (test/test_batch.py: within 1e-12 of max |YtY|). Memory: the (P, P) result and at most 8 partial
    sums (64 MB at most; fewer at once for a large P), whatever T. A ValueError names the samples whose
    inputs are not finite or overflow."""
    workers = _workers(workers)
    (q, v, a, tau), tree, P, coupling, pairs = _reduction_inputs(model, q, v, a, tau, joint_terms)
    if tree is None:
        return _finite_sums(_multi_dof_sums(model, q, v, a, tau, joint_terms), q=q, v=v, a=a, tau=tau)
    (q_t, v_t, a_t), (pair_body, pair_row, _) = tree, pairs
    H = np.eye(model.nbodies) if model.coupling is None else coupling @ coupling.T
    terms, joint_block_terms, joint_pairs = _batch.reduction_terms(pair_body, pair_row, H)
    T = q.shape[0]
    W = _wave(P, _REDUCTION_MEMORY)
    A_parts = np.empty((W, P, P))
    b_parts = np.empty((W, P))
    A = np.empty((P, P))
    b = np.empty(P)
    ok = np.ones(T, dtype=np.bool_)
    m = _kernel_model(model)
    with _threads(workers):
        _batch.normal_equations_batch(m._parents, m._screw_axes, m._home_R, m._home_p, m._base_accel, coupling,
                                      pair_body, pair_row, terms, joint_block_terms, joint_pairs, q_t, v_t, a_t,
                                      tau, A_parts, b_parts, A, b, ok)
    _checked_batch(None, ok, q=q, v=v, a=a)
    columns = _chain_columns(model, joint_terms)   # zero columns of Y: zero rows and columns here
    A[columns] = A[:, columns] = b[columns] = 0.0
    return _finite_sums((A, b), q=q, v=v, a=a, tau=tau)


def residual_gradient_batch(model, q, v, a, tau, phi=None, joint_terms=True, workers=None):
    """(value, gradient) of the torque residual over T samples, f(phi) = 1/2 sum_t |Y_t phi - tau_t|^2,
    gradient sum_t Y_t^T (Y_t phi - tau_t) (P,), without the (T, nv, P) regressors; Y_t, P and tau as
    in regressor_normal_equations. phi: the parameter vector (P,), None for the model's own
    (model.parameters(), or model.inertial_parameters() with joint_terms=False). Computed in the batch
    kernel on `workers` threads (None: all), in blocks as regressor_normal_equations: independent of
    `workers` (bit for bit), a serial sum up to the order of the additions; memory O(P)."""
    workers = _workers(workers)
    (q, v, a, tau), tree, P, coupling, pairs = _reduction_inputs(model, q, v, a, tau, joint_terms)
    if phi is None:
        phi = model.parameters() if joint_terms else model.inertial_parameters()
    phi = as_real_array("phi", phi, f"an array of {P} real numbers")
    if phi.shape != (P,):
        what = "13 * nbodies (joint_terms=True)" if joint_terms else "10 * nbodies (joint_terms=False)"
        raise ValueError(f"phi must have shape ({P},), {what}, got {phi.shape}")
    if not np.all(np.isfinite(phi)):
        bad = np.flatnonzero(~np.isfinite(phi)).tolist()
        raise ValueError(f"phi has non-finite entries (NaN or inf) at indices {bad}")
    columns = _chain_columns(model, joint_terms)   # zero columns of Y: phi there counts for nothing
    if columns.size:
        phi = phi.copy()
        phi[columns] = 0.0
    if tree is None:
        value, grad = _finite_sums(_multi_dof_sums(model, q, v, a, tau, joint_terms, phi), q=q, v=v, a=a, tau=tau,
                                   phi=phi)
        return float(value), grad
    (q_t, v_t, a_t), (pair_body, pair_row, _) = tree, pairs
    T = q.shape[0]
    g_parts = np.empty((_wave(P), P))
    grad = np.empty(P)
    ok = np.ones(T, dtype=np.bool_)
    m = _kernel_model(model)
    with _threads(workers):
        value = _batch.residual_gradient_batch(m._parents, m._screw_axes, m._home_R, m._home_p, m._base_accel,
                                               coupling, pair_body, pair_row, q_t, v_t, a_t, tau,
                                               phi, g_parts, grad, ok)
    _checked_batch(None, ok, q=q, v=v, a=a)
    grad[columns] = 0.0
    value, grad = _finite_sums((np.float64(value), grad), q=q, v=v, a=a, tau=tau, phi=phi)
    return float(value), grad
