"""Batch evaluation over many samples (rows of q, v, a): the per-sample kernels in parallel.

numba.prange runs over chunks of CHUNK samples; each chunk allocates its own workspace once and
runs its samples one after the other, so threads never write to shared scratch and every sample's
result is exactly what the single call gives (joint terms included, kernels/joint_terms.py). ok[t]
is False when sample t had non-finite input (that sample's outputs are then left as they were).
"""
import numpy as np
from numba import njit, prange

from .joint_terms import add_joint_derivatives, add_joint_torque, joint_regressor
from .regressor import regressor
from .rnea import rnea
from .rnea_derivatives import rnea_derivatives

CHUNK = 32  # samples per workspace: allocation cost shared, enough chunks to balance threads


@njit(cache=True, parallel=True)
def rnea_batch(parents, screw_axes, home_R, home_p, phi, joint_terms, base_accel, q, v, a, tau, ok):
    """tau[t] = rnea(q[t], v[t], a[t]) for every row t."""
    T, nb = q.shape
    for c in prange((T + CHUNK - 1) // CHUNK):
        R = np.empty((nb, 3, 3))
        p = np.empty((nb, 3))
        V = np.empty((nb, 6))
        Vdot = np.empty((nb, 6))
        F = np.empty((nb, 6))
        tmp6 = np.empty((4, 6))
        f_ext = np.zeros((nb, 6))
        for t in range(c * CHUNK, min(T, (c + 1) * CHUNK)):
            ok[t] = rnea(parents, screw_axes, home_R, home_p, phi, q[t], v[t], a[t], base_accel, f_ext,
                         R, p, V, Vdot, F, tmp6, tau[t]) and add_joint_torque(joint_terms, v[t], a[t], tau[t])


@njit(cache=True, parallel=True)
def rnea_derivatives_batch(parents, screw_axes, home_R, home_p, phi, joint_terms, base_accel, q, v, a, out,
                           ok):
    """out[t] = (dtau_dq, dtau_dv, M) at (q[t], v[t], a[t]); out is (T, 3, nb, nb)."""
    T, nb = q.shape
    for c in prange((T + CHUNK - 1) // CHUNK):
        R = np.empty((nb, 3, 3))
        p = np.empty((nb, 3))
        oR = np.empty((nb, 3, 3))
        op = np.empty((nb, 3))
        ophi_c = np.empty((nb, 10))
        vectors = np.empty((8, nb, 6))
        tmp6 = np.empty((4, 6))
        f_ext = np.zeros((nb, 6))
        for t in range(c * CHUNK, min(T, (c + 1) * CHUNK)):
            ok[t] = rnea_derivatives(parents, screw_axes, home_R, home_p, phi, q[t], v[t], a[t],
                                     base_accel, f_ext, R, p, oR, op, ophi_c, vectors, tmp6, out[t])
            if ok[t]:
                add_joint_derivatives(joint_terms, v[t], out[t, 1], out[t, 2])


@njit(cache=True, parallel=True)
def regressor_batch(parents, screw_axes, home_R, home_p, base_accel, q, v, a, Y, ok):
    """Y[t] = regressor(q[t], v[t], a[t]); Y is (T, nb, 10 nb), or (T, nb, 13 nb) for the regressor
    with the joint block (its last 3 nb columns, kernels/joint_terms.py)."""
    T, nb = q.shape
    full = Y.shape[2] == 13 * nb
    for c in prange((T + CHUNK - 1) // CHUNK):
        R = np.empty((nb, 3, 3))
        p = np.empty((nb, 3))
        oR = np.empty((nb, 3, 3))
        op = np.empty((nb, 3))
        oS = np.empty((nb, 6))
        V = np.empty((nb, 6))
        Vdot = np.empty((nb, 6))
        tmp6 = np.empty((4, 6))
        Y_rigid = np.empty((nb, 10 * nb)) if full else np.empty((0, 0))
        for t in range(c * CHUNK, min(T, (c + 1) * CHUNK)):
            if not full:
                ok[t] = regressor(parents, screw_axes, home_R, home_p, q[t], v[t], a[t], base_accel, R, p,
                                  oR, op, oS, V, Vdot, tmp6, Y[t])
                continue
            ok[t] = regressor(parents, screw_axes, home_R, home_p, q[t], v[t], a[t], base_accel, R, p,
                              oR, op, oS, V, Vdot, tmp6, Y_rigid)
            if ok[t]:
                Y[t, :, :10 * nb] = Y_rigid
                joint_regressor(v[t], a[t], Y[t], 10 * nb)
