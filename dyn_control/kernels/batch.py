"""Batch evaluation over many samples (rows of q, v, a): samples in parallel, and the reductions that
identification needs without the per-sample tensors.

Threads: numba.prange runs over chunks of samples (the public wrappers set the number of threads,
`workers`, and a dynamic schedule of one chunk at a time, so a core that another process slows takes
fewer chunks). Each chunk allocates its workspace once; nothing is allocated per sample. Outside the
prange loops these kernels use explicit loops only: Numba turns an array expression (x[:] = 0,
np.zeros) of a parallel function into a parallel loop of its own, which the one-iteration schedule
would run element by element.

Lanes (rnea_batch, aba_batch, regressor_batch): a chunk computes LANES samples side by side, so that
each step of the recursion is one vectorized loop over samples (the tree's structure is the same for
all of them). Each lane performs exactly the floating-point operations of the single-sample kernel
(kernels/rnea.py, aba.py, regressor.py, kinematics.py, joint_terms.py, spatial.py), in the same order
and without fast-math, and sin/cos are the same libm calls, so every sample's result is bit for bit
the single call's (test/test_batch.py and test_derivatives.py check it). A change of those kernels'
arithmetic must be mirrored here; each lane helper names the function it follows. Two details keep
LLVM vectorizing: lane arrays are flat rows with constant offsets (entry k of lane l at k * LANES + l),
and loops index from 0 or with unsigned indices (Numba's negative-index wraparound otherwise blocks it).
The lane kernels (rnea_lanes, aba_lanes, regressor_lanes) are compiled without Numba's runtime
(`_nrt=False`, as the entry kernels: kernels/__init__.py): the row slices they hand to the lane
helpers then count no references (18 % of a talos_reduced aba batch in perf), so what they reach
allocates nothing; the chunk's workspace, allocated by the prange loop, outlives their calls.

rnea_derivatives_batch calls the single-sample kernel sample after sample inside each chunk.

Verdicts: ok[t] is False when sample t had non-finite input or a non-finite result (its outputs are
then undefined); aba_batch's status[t] says which (OK, NON_FINITE or SINGULAR, where D_i = 0 makes
the single call raise).

Reductions (normal_equations_batch, residual_gradient_batch): the regressor's non-zero blocks of LANES
samples at a time (regressor_lanes), combined block by block with sums over the lanes (see the section
below), so the (P, P) accumulator is touched once per LANES samples. Samples go in fixed blocks of
BLOCK, each summed in sample order into a partial of its own, a wave of W blocks in parallel, the
partials added to the total in block order: the result depends on neither the number of threads nor
their scheduling (bit for bit), differs from a serial sum only by the order of the additions, and the
memory is W partials whatever the number of samples.
"""
import numpy as np
from numba import prange, uint64

from ..jit import njit
from .inputs import all_finite
from .joint_terms import (ARMATURE, COULOMB, VISCOUS, add_joint_derivatives, has_terms, joint_regressor,
                          smooth_sign)
from .kinematics import joint_transform, revolute_axis
from .rnea_derivatives import rnea_derivatives

CHUNK = 32    # samples per workspace in the sample-after-sample batches
LANES = 64    # samples side by side in the lane batches (LLVM left loops of 8 scalar; 64 was fastest)
LANE_CHUNK = 256  # samples per workspace in the lane batches (a multiple of LANES)
BLOCK = 256   # samples per block of the reductions (each summed apart, in sample order; a multiple of LANES)

OK, NON_FINITE, SINGULAR = 0, 1, 2  # aba_batch status per sample


# ----------------------------------------------------------------------------------------------
# Lane helpers: one step of the single-sample kernel for LANES samples. A lane array holds, per body,
# a flat row of K quantities times LANES samples: entry k of sample l at k * LANES + l (a 3x3 rotation:
# k = 3 r + c), so that every access of a loop over lanes is a constant offset from one pointer (LLVM
# vectorizes such loops; with run-time row strides it gave up on most of them).


@njit(cache=True, error_model="numpy")
def _load_lanes(x, t0, n, out):
    """out[i, l] = x[t0 + l, i] for l < n, 0 for the lanes beyond (a short last group)."""
    for i in range(out.shape[0]):
        for l in range(LANES):
            out[i, l] = x[t0 + l, i] if l < n else 0.0


@njit(cache=True, error_model="numpy")
def _finite_rows(x, t0, n, finite):
    """finite[l] &= every entry of row t0 + l of x is finite (inputs.all_finite per sample)."""
    for l in range(n):
        finite[l] &= all_finite(x[t0 + l])


@njit(cache=True, error_model="numpy")
def _joint_transforms_lanes(screw_axes, home_R, home_p, q, R, p, R1, p1, cs):
    """(R[i], p[i]) lane l = kinematics.joint_transform of body i at q[i, l]. A rotation about a
    coordinate axis as joint_transform computes it: cos and sin lane by lane (libm, as there), then
    the same products, vectorized; any other screw through joint_transform itself, lane by lane, with
    scratch R1 (3, 3), p1 (3,). cs (2, L): scratch."""
    for i in range(q.shape[0]):
        Ri = R[i]
        pi = p[i]
        qi = q[i]
        axis = revolute_axis(screw_axes[i])
        if axis == 0:
            for l in range(LANES):
                joint_transform(screw_axes[i], home_R[i], home_p[i], qi[l], R1, p1)
                for r in range(3):
                    Ri[(3 * r) * LANES + l] = R1[r, 0]
                    Ri[(3 * r + 1) * LANES + l] = R1[r, 1]
                    Ri[(3 * r + 2) * LANES + l] = R1[r, 2]
                    pi[r * LANES + l] = p1[r]
            continue
        k = abs(axis) - 1
        a = (k + 1) % 3
        b = (k + 2) % 3
        cos_q = cs[0]
        sin_q = cs[1]
        for l in range(LANES):
            cos_q[l] = np.cos(qi[l])
            sin_q[l] = np.sin(qi[l]) if axis > 0 else -np.sin(qi[l])
        hR = home_R[i]
        for r in range(3):
            h_k, h_a, h_b = hR[r, k], hR[r, a], hR[r, b]
            for l in range(LANES):
                c = cos_q[l]
                s = sin_q[l]
                Ri[(3 * r + k) * LANES + l] = h_k
                Ri[(3 * r + a) * LANES + l] = c * h_a + s * h_b
                Ri[(3 * r + b) * LANES + l] = c * h_b - s * h_a
                pi[r * LANES + l] = home_p[i, r]


@njit(cache=True, error_model="numpy")
def _motion_to_child_lanes(R, p, m, out):
    """out = spatial.motion_to_child(R, p, m) per lane: R (9 L), p (3 L), m and out (6 L)."""
    for l in range(LANES):
        w0, w1, w2 = m[l], m[LANES + l], m[2 * LANES + l]
        p0, p1, p2 = p[l], p[LANES + l], p[2 * LANES + l]
        u0 = m[3 * LANES + l] + w1 * p2 - w2 * p1
        u1 = m[4 * LANES + l] + w2 * p0 - w0 * p2
        u2 = m[5 * LANES + l] + w0 * p1 - w1 * p0
        for r in range(3):
            R0r, R1r, R2r = R[r * LANES + l], R[(3 + r) * LANES + l], R[(6 + r) * LANES + l]
            out[r * LANES + l] = R0r * w0 + R1r * w1 + R2r * w2
            out[(3 + r) * LANES + l] = R0r * u0 + R1r * u1 + R2r * u2


@njit(cache=True, error_model="numpy")
def _base_to_child_lanes(R, p, m, out):
    """out = spatial.motion_to_child(R, p, m) per lane for one 6-vector m shared by all lanes (the
    base acceleration)."""
    w0, w1, w2 = m[0], m[1], m[2]
    for l in range(LANES):
        p0, p1, p2 = p[l], p[LANES + l], p[2 * LANES + l]
        u0 = m[3] + w1 * p2 - w2 * p1
        u1 = m[4] + w2 * p0 - w0 * p2
        u2 = m[5] + w0 * p1 - w1 * p0
        for r in range(3):
            R0r, R1r, R2r = R[r * LANES + l], R[(3 + r) * LANES + l], R[(6 + r) * LANES + l]
            out[r * LANES + l] = R0r * w0 + R1r * w1 + R2r * w2
            out[(3 + r) * LANES + l] = R0r * u0 + R1r * u1 + R2r * u2


@njit(cache=True, error_model="numpy")
def _inertia_times_lanes(phi, m, out):
    """out = spatial.inertia_times(phi, m) per lane, phi (10,) shared by all lanes."""
    mass, hx, hy, hz = phi[0], phi[1], phi[2], phi[3]
    ixx, iyy, izz, ixy, ixz, iyz = phi[4], phi[5], phi[6], phi[7], phi[8], phi[9]
    for l in range(LANES):
        w0, w1, w2 = m[l], m[LANES + l], m[2 * LANES + l]
        v0, v1, v2 = m[3 * LANES + l], m[4 * LANES + l], m[5 * LANES + l]
        out[l] = ixx * w0 + ixy * w1 + ixz * w2 + hy * v2 - hz * v1
        out[LANES + l] = ixy * w0 + iyy * w1 + iyz * w2 + hz * v0 - hx * v2
        out[2 * LANES + l] = ixz * w0 + iyz * w1 + izz * w2 + hx * v1 - hy * v0
        out[3 * LANES + l] = mass * v0 - (hy * w2 - hz * w1)
        out[4 * LANES + l] = mass * v1 - (hz * w0 - hx * w2)
        out[5 * LANES + l] = mass * v2 - (hx * w1 - hy * w0)


@njit(cache=True, error_model="numpy")
def _inertia_times_world_lanes(phi, m, out):
    """out = spatial.inertia_times(phi, m) per lane, phi (10 L) per lane."""
    for l in range(LANES):
        mass, hx, hy, hz = phi[l], phi[LANES + l], phi[2 * LANES + l], phi[3 * LANES + l]
        ixx, iyy, izz = phi[4 * LANES + l], phi[5 * LANES + l], phi[6 * LANES + l]
        ixy, ixz, iyz = phi[7 * LANES + l], phi[8 * LANES + l], phi[9 * LANES + l]
        w0, w1, w2 = m[l], m[LANES + l], m[2 * LANES + l]
        v0, v1, v2 = m[3 * LANES + l], m[4 * LANES + l], m[5 * LANES + l]
        out[l] = ixx * w0 + ixy * w1 + ixz * w2 + hy * v2 - hz * v1
        out[LANES + l] = ixy * w0 + iyy * w1 + iyz * w2 + hz * v0 - hx * v2
        out[2 * LANES + l] = ixz * w0 + iyz * w1 + izz * w2 + hx * v1 - hy * v0
        out[3 * LANES + l] = mass * v0 - (hy * w2 - hz * w1)
        out[4 * LANES + l] = mass * v1 - (hz * w0 - hx * w2)
        out[5 * LANES + l] = mass * v2 - (hx * w1 - hy * w0)


@njit(cache=True, error_model="numpy")
def _cross_force_lanes(V, f, out):
    """out = spatial.cross_force(V, f) per lane."""
    for l in range(LANES):
        w0, w1, w2 = V[l], V[LANES + l], V[2 * LANES + l]
        v0, v1, v2 = V[3 * LANES + l], V[4 * LANES + l], V[5 * LANES + l]
        n0, n1, n2 = f[l], f[LANES + l], f[2 * LANES + l]
        f0, f1, f2 = f[3 * LANES + l], f[4 * LANES + l], f[5 * LANES + l]
        out[l] = w1 * n2 - w2 * n1 + v1 * f2 - v2 * f1
        out[LANES + l] = w2 * n0 - w0 * n2 + v2 * f0 - v0 * f2
        out[2 * LANES + l] = w0 * n1 - w1 * n0 + v0 * f1 - v1 * f0
        out[3 * LANES + l] = w1 * f2 - w2 * f1
        out[4 * LANES + l] = w2 * f0 - w0 * f2
        out[5 * LANES + l] = w0 * f1 - w1 * f0


@njit(cache=True, error_model="numpy")
def _force_to_parent_add_lanes(R, p, f, out):
    """out += spatial.force_to_parent_add(R, p, f) per lane."""
    for l in range(LANES):
        fc0, fc1, fc2 = f[l], f[LANES + l], f[2 * LANES + l]
        fc3, fc4, fc5 = f[3 * LANES + l], f[4 * LANES + l], f[5 * LANES + l]
        R00, R01, R02 = R[l], R[LANES + l], R[2 * LANES + l]
        R10, R11, R12 = R[3 * LANES + l], R[4 * LANES + l], R[5 * LANES + l]
        R20, R21, R22 = R[6 * LANES + l], R[7 * LANES + l], R[8 * LANES + l]
        p0, p1, p2 = p[l], p[LANES + l], p[2 * LANES + l]
        f0 = R00 * fc3 + R01 * fc4 + R02 * fc5
        f1 = R10 * fc3 + R11 * fc4 + R12 * fc5
        f2 = R20 * fc3 + R21 * fc4 + R22 * fc5
        n0 = out[l] + (R00 * fc0 + R01 * fc1 + R02 * fc2)
        n1 = out[LANES + l] + (R10 * fc0 + R11 * fc1 + R12 * fc2)
        n2 = out[2 * LANES + l] + (R20 * fc0 + R21 * fc1 + R22 * fc2)
        out[l] = n0 + (p1 * f2 - p2 * f1)
        out[LANES + l] = n1 + (p2 * f0 - p0 * f2)
        out[2 * LANES + l] = n2 + (p0 * f1 - p1 * f0)
        out[3 * LANES + l] += f0
        out[4 * LANES + l] += f1
        out[5 * LANES + l] += f2


@njit(cache=True, error_model="numpy")
def _motion_to_parent_lanes(R, p, m, out):
    """out = spatial.motion_to_parent(R, p, m) per lane for a 6-vector m shared by all lanes (a
    joint screw)."""
    m0, m1, m2, m3, m4, m5 = m[0], m[1], m[2], m[3], m[4], m[5]
    for l in range(LANES):
        R00, R01, R02 = R[l], R[LANES + l], R[2 * LANES + l]
        R10, R11, R12 = R[3 * LANES + l], R[4 * LANES + l], R[5 * LANES + l]
        R20, R21, R22 = R[6 * LANES + l], R[7 * LANES + l], R[8 * LANES + l]
        p0, p1, p2 = p[l], p[LANES + l], p[2 * LANES + l]
        w0 = R00 * m0 + R01 * m1 + R02 * m2
        w1 = R10 * m0 + R11 * m1 + R12 * m2
        w2 = R20 * m0 + R21 * m1 + R22 * m2
        out[l] = w0
        out[LANES + l] = w1
        out[2 * LANES + l] = w2
        out[3 * LANES + l] = (R00 * m3 + R01 * m4 + R02 * m5) + (p1 * w2 - p2 * w1)
        out[4 * LANES + l] = (R10 * m3 + R11 * m4 + R12 * m5) + (p2 * w0 - p0 * w2)
        out[5 * LANES + l] = (R20 * m3 + R21 * m4 + R22 * m5) + (p0 * w1 - p1 * w0)


@njit(cache=True, error_model="numpy")
def _world_poses_lanes(parents, R, p, oR, op):
    """kinematics.world_poses per lane (spatial.compose_into for a child)."""
    for i in range(parents.shape[0]):
        j = parents[i]
        if j < 0:
            for k in range(oR.shape[1]):
                oR[i, k] = R[i, k]
            for k in range(op.shape[1]):
                op[i, k] = p[i, k]
        else:
            _compose_lanes(oR[j], op[j], R[i], p[i], oR[i], op[i])


@njit(cache=True, error_model="numpy")
def _compose_lanes(R1, p1, R2, p2, R, p):
    """(R, p) = spatial.compose_into((R1, p1), (R2, p2)) per lane."""
    for r in range(3):
        for c in range(3):
            for l in range(LANES):
                R[(3 * r + c) * LANES + l] = (R1[3 * r * LANES + l] * R2[c * LANES + l]
                                              + R1[(3 * r + 1) * LANES + l] * R2[(3 + c) * LANES + l]
                                              + R1[(3 * r + 2) * LANES + l] * R2[(6 + c) * LANES + l])
        for l in range(LANES):
            p[r * LANES + l] = (R1[3 * r * LANES + l] * p2[l] + R1[(3 * r + 1) * LANES + l] * p2[LANES + l]
                                + R1[(3 * r + 2) * LANES + l] * p2[2 * LANES + l] + p1[r * LANES + l])


@njit(cache=True, error_model="numpy")
def _phi_to_world_lanes(R, p, phi, out):
    """out = 0 + spatial.phi_to_parent_add(R, p, phi) per lane (phi (10,) shared, out (10 L))."""
    m = phi[0]
    ixx, iyy, izz, ixy, ixz, iyz = phi[4], phi[5], phi[6], phi[7], phi[8], phi[9]
    for l in range(LANES):
        R00, R01, R02 = R[l], R[LANES + l], R[2 * LANES + l]
        R10, R11, R12 = R[3 * LANES + l], R[4 * LANES + l], R[5 * LANES + l]
        R20, R21, R22 = R[6 * LANES + l], R[7 * LANES + l], R[8 * LANES + l]
        h0 = R00 * phi[1] + R01 * phi[2] + R02 * phi[3]
        h1 = R10 * phi[1] + R11 * phi[2] + R12 * phi[3]
        h2 = R20 * phi[1] + R21 * phi[2] + R22 * phi[3]
        ri00 = R00 * ixx + R01 * ixy + R02 * ixz
        ri01 = R00 * ixy + R01 * iyy + R02 * iyz
        ri02 = R00 * ixz + R01 * iyz + R02 * izz
        ri10 = R10 * ixx + R11 * ixy + R12 * ixz
        ri11 = R10 * ixy + R11 * iyy + R12 * iyz
        ri12 = R10 * ixz + R11 * iyz + R12 * izz
        ri20 = R20 * ixx + R21 * ixy + R22 * ixz
        ri21 = R20 * ixy + R21 * iyy + R22 * iyz
        ri22 = R20 * ixz + R21 * iyz + R22 * izz
        rxx = ri00 * R00 + ri01 * R01 + ri02 * R02
        ryy = ri10 * R10 + ri11 * R11 + ri12 * R12
        rzz = ri20 * R20 + ri21 * R21 + ri22 * R22
        rxy = ri00 * R10 + ri01 * R11 + ri02 * R12
        rxz = ri00 * R20 + ri01 * R21 + ri02 * R22
        ryz = ri10 * R20 + ri11 * R21 + ri12 * R22
        p0, p1, p2 = p[l], p[LANES + l], p[2 * LANES + l]
        hp = h0 * p0 + h1 * p1 + h2 * p2
        pp = p0 * p0 + p1 * p1 + p2 * p2
        out[l] = 0.0 + m
        out[LANES + l] = 0.0 + (h0 + m * p0)
        out[2 * LANES + l] = 0.0 + (h1 + m * p1)
        out[3 * LANES + l] = 0.0 + (h2 + m * p2)
        out[4 * LANES + l] = 0.0 + (rxx + 2.0 * hp - 2.0 * h0 * p0 + m * (pp - p0 * p0))
        out[5 * LANES + l] = 0.0 + (ryy + 2.0 * hp - 2.0 * h1 * p1 + m * (pp - p1 * p1))
        out[6 * LANES + l] = 0.0 + (rzz + 2.0 * hp - 2.0 * h2 * p2 + m * (pp - p2 * p2))
        out[7 * LANES + l] = 0.0 + (rxy - h0 * p1 - h1 * p0 - m * p0 * p1)
        out[8 * LANES + l] = 0.0 + (rxz - h0 * p2 - h2 * p0 - m * p0 * p2)
        out[9 * LANES + l] = 0.0 + (ryz - h1 * p2 - h2 * p1 - m * p1 * p2)


@njit(cache=True, error_model="numpy")
def _spatial_inertia_lanes(phi, G):
    """G (36 L, entry (r, c) at 6 r + c) = spatial.spatial_inertia_into(phi) per lane, phi (10 L)."""
    for l in range(LANES):
        mass, hx, hy, hz = phi[l], phi[LANES + l], phi[2 * LANES + l], phi[3 * LANES + l]
        ixx, iyy, izz = phi[4 * LANES + l], phi[5 * LANES + l], phi[6 * LANES + l]
        ixy, ixz, iyz = phi[7 * LANES + l], phi[8 * LANES + l], phi[9 * LANES + l]
        # [[I, [h]], [[h]^T, mass 1]]
        G[0 * LANES + l] = ixx
        G[1 * LANES + l] = ixy
        G[2 * LANES + l] = ixz
        G[3 * LANES + l] = 0.0
        G[4 * LANES + l] = -hz
        G[5 * LANES + l] = hy
        G[6 * LANES + l] = ixy
        G[7 * LANES + l] = iyy
        G[8 * LANES + l] = iyz
        G[9 * LANES + l] = hz
        G[10 * LANES + l] = 0.0
        G[11 * LANES + l] = -hx
        G[12 * LANES + l] = ixz
        G[13 * LANES + l] = iyz
        G[14 * LANES + l] = izz
        G[15 * LANES + l] = -hy
        G[16 * LANES + l] = hx
        G[17 * LANES + l] = 0.0
        # lower-left = the upper-right's transpose
        G[18 * LANES + l] = 0.0
        G[19 * LANES + l] = hz
        G[20 * LANES + l] = -hy
        G[24 * LANES + l] = -hz
        G[25 * LANES + l] = 0.0
        G[26 * LANES + l] = hx
        G[30 * LANES + l] = hy
        G[31 * LANES + l] = -hx
        G[32 * LANES + l] = 0.0
        for r in range(3):
            for c in range(3):
                G[(6 * (3 + r) + 3 + c) * LANES + l] = mass if r == c else 0.0


@njit(cache=True, error_model="numpy")
def _add_joint_torque_lanes(joint_terms, v, a, tau):
    """joint_terms.add_joint_torque per lane: tau[i] += I_a a_i + F_v v_i + F_c sgn_s(v_i)."""
    for i in range(tau.shape[0]):
        if has_terms(joint_terms, i):
            for l in range(LANES):
                tau[i, l] += joint_terms[i, ARMATURE] * a[i, l] + (
                    joint_terms[i, VISCOUS] * v[i, l] + joint_terms[i, COULOMB] * smooth_sign(v[i, l]))


@njit(cache=True, error_model="numpy")
def _store_lanes(x, t0, n, finite, out, ok):
    """out[t0 + l, i] = x[i, l]; ok[t0 + l] = finite[l] and every x[:, l] is finite."""
    for l in range(n):
        good = finite[l]
        for i in range(x.shape[0]):
            out[t0 + l, i] = x[i, l]
            good &= np.isfinite(x[i, l])
        ok[t0 + l] = good


# ----------------------------------------------------------------------------------------------
# Inverse dynamics (kernels/rnea.py plus the joint terms), LANES samples at a time


@njit(cache=True, error_model="numpy")
def _body_motion_lanes(i, parents, S, R, p, base_accel, vi, ai, V, Vdot):
    """rnea.body_motion per lane: V[i], Vdot[i] from the parent's (eqs. 2-3), vi, ai (L,)."""
    j = parents[i]
    s0, s1, s2, s3, s4, s5 = S[0], S[1], S[2], S[3], S[4], S[5]
    Vi, Vdi = V[i], Vdot[i]
    if j < 0:
        Vi[:] = 0.0
        _base_to_child_lanes(R[i], p[i], base_accel, Vdi)
    else:
        _motion_to_child_lanes(R[i], p[i], V[j], Vi)
        _motion_to_child_lanes(R[i], p[i], Vdot[j], Vdi)
    for l in range(LANES):
        qd = vi[l]
        qdd = ai[l]
        w0 = Vi[l] + s0 * qd
        w1 = Vi[LANES + l] + s1 * qd
        w2 = Vi[2 * LANES + l] + s2 * qd
        u0 = Vi[3 * LANES + l] + s3 * qd
        u1 = Vi[4 * LANES + l] + s4 * qd
        u2 = Vi[5 * LANES + l] + s5 * qd
        Vi[l] = w0
        Vi[LANES + l] = w1
        Vi[2 * LANES + l] = w2
        Vi[3 * LANES + l] = u0
        Vi[4 * LANES + l] = u1
        Vi[5 * LANES + l] = u2
        # spatial.cross_motion(V_i, S_i)
        c0 = w1 * s2 - w2 * s1
        c1 = w2 * s0 - w0 * s2
        c2 = w0 * s1 - w1 * s0
        c3 = w1 * s5 - w2 * s4 + u1 * s2 - u2 * s1
        c4 = w2 * s3 - w0 * s5 + u2 * s0 - u0 * s2
        c5 = w0 * s4 - w1 * s3 + u0 * s1 - u1 * s0
        Vdi[l] += s0 * qdd + c0 * qd
        Vdi[LANES + l] += s1 * qdd + c1 * qd
        Vdi[2 * LANES + l] += s2 * qdd + c2 * qd
        Vdi[3 * LANES + l] += s3 * qdd + c3 * qd
        Vdi[4 * LANES + l] += s4 * qdd + c4 * qd
        Vdi[5 * LANES + l] += s5 * qdd + c5 * qd


@njit(cache=True, error_model="numpy", _nrt=False)
def rnea_lanes(parents, screw_axes, home_R, home_p, phi, joint_terms, base_accel, q, v, a, R, p, V, Vdot,
               F, tmp, R1, p1, tau):
    """tau (nb, L) = rnea.rnea + joint_terms.add_joint_torque for the LANES samples q, v, a (nb, L).
    Workspace: R (nb, 9 L), p (nb, 3 L), V, Vdot, F (nb, 6 L), tmp (2, 6 L), R1 (3, 3), p1 (3,)."""
    nb = q.shape[0]
    _joint_transforms_lanes(screw_axes, home_R, home_p, q, R, p, R1, p1, tmp[0].reshape((6, LANES)))
    GV = tmp[0]
    VxGV = tmp[1]
    for i in range(nb):
        _body_motion_lanes(i, parents, screw_axes[i], R, p, base_accel, v[i], a[i], V, Vdot)
        Vi, Vdi = V[i], Vdot[i]
        # eq. 4 (own part): F_i = G_i Vdot_i - ad*_{V_i} G_i V_i (no external forces in a batch:
        # rnea's "- f_ext" of zero changes no bit)
        Fi = F[i]
        _inertia_times_lanes(phi[i], Vdi, Fi)
        _inertia_times_lanes(phi[i], Vi, GV)
        _cross_force_lanes(Vi, GV, VxGV)
        for k in range(6 * LANES):
            Fi[k] += VxGV[k]
    for i in range(nb - 1, -1, -1):
        S = screw_axes[i]
        s0, s1, s2, s3, s4, s5 = S[0], S[1], S[2], S[3], S[4], S[5]
        Fi, taui = F[i], tau[i]
        for l in range(LANES):
            taui[l] = (s0 * Fi[l] + s1 * Fi[LANES + l] + s2 * Fi[2 * LANES + l]
                       + s3 * Fi[3 * LANES + l] + s4 * Fi[4 * LANES + l] + s5 * Fi[5 * LANES + l])
        j = parents[i]
        if j >= 0:
            _force_to_parent_add_lanes(R[i], p[i], Fi, F[j])
    _add_joint_torque_lanes(joint_terms, v, a, tau)


@njit(cache=True, parallel=True, error_model="numpy")
def rnea_batch(parents, screw_axes, home_R, home_p, phi, joint_terms, base_accel, q, v, a, tau, ok):
    """tau[t] = rnea(q[t], v[t], a[t]) (joint terms included) for every row t, bit for bit."""
    T, nb = q.shape
    for c in prange((T + LANE_CHUNK - 1) // LANE_CHUNK):
        R = np.empty((nb, 9 * LANES))
        p = np.empty((nb, 3 * LANES))
        V = np.empty((nb, 6 * LANES))
        Vdot = np.empty((nb, 6 * LANES))
        F = np.empty((nb, 6 * LANES))
        tmp = np.empty((2, 6 * LANES))
        R1 = np.empty((3, 3))
        p1 = np.empty(3)
        qL = np.empty((nb, LANES))
        vL = np.empty((nb, LANES))
        aL = np.empty((nb, LANES))
        tauL = np.empty((nb, LANES))
        finite = np.empty(LANES, dtype=np.bool_)
        for t0 in range(c * LANE_CHUNK, min(T, (c + 1) * LANE_CHUNK), LANES):
            n = min(LANES, T - t0)
            finite[:] = True
            _finite_rows(q, t0, n, finite)
            _finite_rows(v, t0, n, finite)
            _finite_rows(a, t0, n, finite)
            _load_lanes(q, t0, n, qL)
            _load_lanes(v, t0, n, vL)
            _load_lanes(a, t0, n, aL)
            rnea_lanes(parents, screw_axes, home_R, home_p, phi, joint_terms, base_accel, qL, vL, aL, R, p, V,
                       Vdot, F, tmp, R1, p1, tauL)
            _store_lanes(tauL, t0, n, finite, tau, ok)


# ----------------------------------------------------------------------------------------------
# Forward dynamics (kernels/aba.py), LANES samples at a time


@njit(cache=True, error_model="numpy", _nrt=False)
def aba_lanes(parents, screw_axes, home_R, home_p, phi, joint_terms, base_accel, q, v, tau, R, p, oR, op, oS,
              oV, phi_world, c, IA, pA, U, D, u, A, tmp, R1, p1, ddq, singular):
    """ddq (nb, L) = aba.aba for the LANES samples q, v, tau (nb, L); singular[l] = True where some
    D_i = 0 in lane l (the single call raises ZeroDivisionError there). Workspace as aba.aba's, rows of
    lanes: R, oR (nb, 9 L), p, op (nb, 3 L), oS, oV, c, pA, U, A (nb, 6 L), phi_world (nb, 10 L),
    IA (nb, 36 L), D, u (nb, L), tmp (3, 6 L)."""
    nb = q.shape[0]
    _joint_transforms_lanes(screw_axes, home_R, home_p, q, R, p, R1, p1, tmp[0].reshape((6, LANES)))
    _world_poses_lanes(parents, R, p, oR, op)
    GV = tmp[0]
    pa = tmp[1]
    Dinv = tmp[2, :LANES]
    # pass 1, root to leaves: twists, velocity-product accelerations, inertias and bias forces
    for i in range(nb):
        j = parents[i]
        oSi, oVi, ci, vi = oS[i], oV[i], c[i], v[i]
        _motion_to_parent_lanes(oR[i], op[i], screw_axes[i], oSi)
        if j < 0:
            for k in range(6):
                for l in range(LANES):
                    oVi[k * LANES + l] = oSi[k * LANES + l] * vi[l] + 0.0
        else:
            oVj = oV[j]
            for k in range(6):
                for l in range(LANES):
                    oVi[k * LANES + l] = oSi[k * LANES + l] * vi[l] + oVj[k * LANES + l]
        for l in range(LANES):
            qd = vi[l]
            w0, w1, w2 = oVi[l], oVi[LANES + l], oVi[2 * LANES + l]
            u0, u1, u2 = oVi[3 * LANES + l], oVi[4 * LANES + l], oVi[5 * LANES + l]
            a0, a1, a2 = oSi[l], oSi[LANES + l], oSi[2 * LANES + l]
            b0, b1, b2 = oSi[3 * LANES + l], oSi[4 * LANES + l], oSi[5 * LANES + l]
            # spatial.cross_motion(oV_i, oS_i), times qd_i
            ci[l] = (w1 * a2 - w2 * a1) * qd
            ci[LANES + l] = (w2 * a0 - w0 * a2) * qd
            ci[2 * LANES + l] = (w0 * a1 - w1 * a0) * qd
            ci[3 * LANES + l] = (w1 * b2 - w2 * b1 + u1 * a2 - u2 * a1) * qd
            ci[4 * LANES + l] = (w2 * b0 - w0 * b2 + u2 * a0 - u0 * a2) * qd
            ci[5 * LANES + l] = (w0 * b1 - w1 * b0 + u0 * a1 - u1 * a0) * qd
        _phi_to_world_lanes(oR[i], op[i], phi[i], phi_world[i])
        _spatial_inertia_lanes(phi_world[i], IA[i])
        _inertia_times_world_lanes(phi_world[i], oVi, GV)
        # no external forces in a batch: aba's "pA_i -= 0" changes no bit
        _cross_force_lanes(oVi, GV, pA[i])
    # pass 2, leaves to root: articulated-body inertias and bias forces
    for i in range(nb - 1, -1, -1):
        j = parents[i]
        _joint_inertia_lanes(IA[i], oS[i], pA[i], tau[i], joint_terms[i, ARMATURE], U[i], D[i], u[i])
        if has_terms(joint_terms, i):
            _subtract_friction_lanes(joint_terms[i, VISCOUS], joint_terms[i, COULOMB], v[i], u[i])
        Di = D[i]
        for l in range(LANES):
            if Di[l] == 0.0:
                singular[l] = True
        if j >= 0:
            _articulated_lanes(IA[i], U[i], Di, u[i], c[i], pA[i], Dinv, pa)
            _add_lanes(pa, pA[j])
            _add_lanes(IA[i], IA[j])
    # pass 3, root to leaves: accelerations (the root's is the base acceleration -g)
    for i in range(nb):
        j = parents[i]
        Ai = A[i]
        if j < 0:
            _base_sum_lanes(c[i], base_accel, Ai)
        else:
            _sum_lanes(c[i], A[j], Ai)
        _acceleration_lanes(U[i], D[i], u[i], oS[i], Ai, ddq[i])


@njit(cache=True, error_model="numpy")
def _joint_inertia_lanes(IAi, oSi, pAi, taui, armature, Ui, Di, ui):
    """aba pass 2 for joint i: U = IA S, D = S . U + I_a, u = tau - S . pA, per lane."""
    S0, S1, S2 = oSi[:LANES], oSi[LANES:2 * LANES], oSi[2 * LANES:3 * LANES]
    S3, S4, S5 = oSi[3 * LANES:4 * LANES], oSi[4 * LANES:5 * LANES], oSi[5 * LANES:]
    for r in range(6):
        U_r = Ui[r * LANES:(r + 1) * LANES]
        I0 = IAi[(6 * r) * LANES:(6 * r + 1) * LANES]
        I1 = IAi[(6 * r + 1) * LANES:(6 * r + 2) * LANES]
        I2 = IAi[(6 * r + 2) * LANES:(6 * r + 3) * LANES]
        I3 = IAi[(6 * r + 3) * LANES:(6 * r + 4) * LANES]
        I4 = IAi[(6 * r + 4) * LANES:(6 * r + 5) * LANES]
        I5 = IAi[(6 * r + 5) * LANES:(6 * r + 6) * LANES]
        for l in range(LANES):
            U_r[l] = (I0[l] * S0[l] + I1[l] * S1[l] + I2[l] * S2[l] + I3[l] * S3[l] + I4[l] * S4[l]
                      + I5[l] * S5[l])
    U0, U1, U2 = Ui[:LANES], Ui[LANES:2 * LANES], Ui[2 * LANES:3 * LANES]
    U3, U4, U5 = Ui[3 * LANES:4 * LANES], Ui[4 * LANES:5 * LANES], Ui[5 * LANES:]
    P0, P1, P2 = pAi[:LANES], pAi[LANES:2 * LANES], pAi[2 * LANES:3 * LANES]
    P3, P4, P5 = pAi[3 * LANES:4 * LANES], pAi[4 * LANES:5 * LANES], pAi[5 * LANES:]
    for l in range(LANES):
        Di[l] = (S0[l] * U0[l] + S1[l] * U1[l] + S2[l] * U2[l] + S3[l] * U3[l] + S4[l] * U4[l]
                 + S5[l] * U5[l]) + armature
        ui[l] = taui[l] - (S0[l] * P0[l] + S1[l] * P1[l] + S2[l] * P2[l] + S3[l] * P3[l] + S4[l] * P4[l]
                           + S5[l] * P5[l])


@njit(cache=True, error_model="numpy")
def _subtract_friction_lanes(viscous, coulomb, vi, ui):
    """u -= joint_terms.friction per lane."""
    for l in range(LANES):
        ui[l] -= viscous * vi[l] + coulomb * smooth_sign(vi[l])


@njit(cache=True, error_model="numpy")
def _articulated_lanes(IAi, Ui, Di, ui, ci, pAi, Dinv, pa):
    """aba pass 2, a child's share: IA -= (U U^T) (1 / D) (in place), pa = pA + (U u) (1 / D) + IA c, per
    lane; Dinv (L): scratch.
    (Loops over row slices: LLVM vectorizes these, not the same loops over offsets of whole rows.)
    IA is symmetric bit for bit (spatial_inertia_into builds it so, sums and this update keep it, as
    U_r U_k = U_k U_r exactly): the upper triangle is computed as aba.aba computes it, the lower copied."""
    for l in range(LANES):
        Dinv[l] = 1.0 / Di[l]
    for r in range(6):
        U_r = Ui[r * LANES:(r + 1) * LANES]
        for k in range(r, 6):
            IA_rk = IAi[(6 * r + k) * LANES:(6 * r + k + 1) * LANES]
            U_k = Ui[k * LANES:(k + 1) * LANES]
            for l in range(LANES):
                IA_rk[l] -= (U_r[l] * U_k[l]) * Dinv[l]
    for r in range(1, 6):
        for k in range(r):
            lower = IAi[(6 * r + k) * LANES:(6 * r + k + 1) * LANES]
            upper = IAi[(6 * k + r) * LANES:(6 * k + r + 1) * LANES]
            for l in range(LANES):
                lower[l] = upper[l]
    c0, c1, c2 = ci[:LANES], ci[LANES:2 * LANES], ci[2 * LANES:3 * LANES]
    c3, c4, c5 = ci[3 * LANES:4 * LANES], ci[4 * LANES:5 * LANES], ci[5 * LANES:]
    for r in range(6):
        out = pa[r * LANES:(r + 1) * LANES]
        pA_r = pAi[r * LANES:(r + 1) * LANES]
        U_r = Ui[r * LANES:(r + 1) * LANES]
        I0 = IAi[(6 * r) * LANES:(6 * r + 1) * LANES]
        I1 = IAi[(6 * r + 1) * LANES:(6 * r + 2) * LANES]
        I2 = IAi[(6 * r + 2) * LANES:(6 * r + 3) * LANES]
        I3 = IAi[(6 * r + 3) * LANES:(6 * r + 4) * LANES]
        I4 = IAi[(6 * r + 4) * LANES:(6 * r + 5) * LANES]
        I5 = IAi[(6 * r + 5) * LANES:(6 * r + 6) * LANES]
        for l in range(LANES):
            out[l] = (pA_r[l] + (U_r[l] * ui[l]) * Dinv[l] + I0[l] * c0[l] + I1[l] * c1[l] + I2[l] * c2[l]
                      + I3[l] * c3[l] + I4[l] * c4[l] + I5[l] * c5[l])


@njit(cache=True, error_model="numpy")
def _add_lanes(x, out):
    """out += x."""
    for k in range(x.shape[0]):
        out[k] += x[k]


@njit(cache=True, error_model="numpy")
def _sum_lanes(x, y, out):
    """out = x + y."""
    for k in range(x.shape[0]):
        out[k] = x[k] + y[k]


@njit(cache=True, error_model="numpy")
def _base_sum_lanes(x, base, out):
    """out = x + base (a 6-vector shared by all lanes)."""
    for k in range(6):
        for l in range(LANES):
            out[k * LANES + l] = x[k * LANES + l] + base[k]


@njit(cache=True, error_model="numpy")
def _acceleration_lanes(Ui, Di, ui, oSi, Ai, ddqi):
    """aba pass 3 for joint i: ddq = (u - U . A) / D, then A += S ddq, per lane."""
    U0, U1, U2 = Ui[:LANES], Ui[LANES:2 * LANES], Ui[2 * LANES:3 * LANES]
    U3, U4, U5 = Ui[3 * LANES:4 * LANES], Ui[4 * LANES:5 * LANES], Ui[5 * LANES:]
    A0, A1, A2 = Ai[:LANES], Ai[LANES:2 * LANES], Ai[2 * LANES:3 * LANES]
    A3, A4, A5 = Ai[3 * LANES:4 * LANES], Ai[4 * LANES:5 * LANES], Ai[5 * LANES:]
    for l in range(LANES):
        ddqi[l] = (ui[l] - (U0[l] * A0[l] + U1[l] * A1[l] + U2[l] * A2[l] + U3[l] * A3[l] + U4[l] * A4[l]
                            + U5[l] * A5[l])) / Di[l]
    for k in range(6):
        A_k = Ai[k * LANES:(k + 1) * LANES]
        S_k = oSi[k * LANES:(k + 1) * LANES]
        for l in range(LANES):
            A_k[l] += S_k[l] * ddqi[l]


@njit(cache=True, parallel=True, error_model="numpy")
def aba_batch(parents, screw_axes, home_R, home_p, phi, joint_terms, base_accel, q, v, tau, ddq, status):
    """ddq[t] = aba(q[t], v[t], tau[t]) (joint terms included) for every row t, bit for bit;
    status[t] = OK, NON_FINITE (input or result) or SINGULAR (some D_i = 0: M(q) singular)."""
    T, nb = q.shape
    for ch in prange((T + LANE_CHUNK - 1) // LANE_CHUNK):
        R = np.empty((nb, 9 * LANES))
        p = np.empty((nb, 3 * LANES))
        oR = np.empty((nb, 9 * LANES))
        op = np.empty((nb, 3 * LANES))
        oS = np.empty((nb, 6 * LANES))
        oV = np.empty((nb, 6 * LANES))
        phi_world = np.empty((nb, 10 * LANES))
        c = np.empty((nb, 6 * LANES))
        IA = np.empty((nb, 36 * LANES))
        pA = np.empty((nb, 6 * LANES))
        U = np.empty((nb, 6 * LANES))
        D = np.empty((nb, LANES))
        u = np.empty((nb, LANES))
        A = np.empty((nb, 6 * LANES))
        tmp = np.empty((3, 6 * LANES))
        R1 = np.empty((3, 3))
        p1 = np.empty(3)
        qL = np.empty((nb, LANES))
        vL = np.empty((nb, LANES))
        tauL = np.empty((nb, LANES))
        ddqL = np.empty((nb, LANES))
        finite = np.empty(LANES, dtype=np.bool_)
        singular = np.empty(LANES, dtype=np.bool_)
        for t0 in range(ch * LANE_CHUNK, min(T, (ch + 1) * LANE_CHUNK), LANES):
            n = min(LANES, T - t0)
            finite[:] = True
            singular[:] = False
            _finite_rows(q, t0, n, finite)
            _finite_rows(v, t0, n, finite)
            _finite_rows(tau, t0, n, finite)
            _load_lanes(q, t0, n, qL)
            _load_lanes(v, t0, n, vL)
            _load_lanes(tau, t0, n, tauL)
            aba_lanes(parents, screw_axes, home_R, home_p, phi, joint_terms, base_accel, qL, vL, tauL, R, p, oR,
                      op, oS, oV, phi_world, c, IA, pA, U, D, u, A, tmp, R1, p1, ddqL, singular)
            for l in range(n):
                good = finite[l]
                for i in range(nb):
                    ddq[t0 + l, i] = ddqL[i, l]
                    good &= np.isfinite(ddqL[i, l])
                if not finite[l]:
                    status[t0 + l] = NON_FINITE
                elif singular[l]:
                    status[t0 + l] = SINGULAR
                else:
                    status[t0 + l] = OK if good else NON_FINITE


# ----------------------------------------------------------------------------------------------
# First-order derivatives (sample after sample) and the regressor (LANES samples at a time)


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


@njit(cache=True, error_model="numpy")
def _regressor_row_lanes(s, V, Vd, b, out):
    """out (10 L) = regressor.body_regressor_row per lane: s (6 L) a joint screw in the body's frame, the
    body's twist V and acceleration Vd (6 L; w = V[:3], alpha = Vd[:3]), b (3 L) its origin's
    acceleration."""
    for l in range(LANES):
        sw0, sw1, sw2 = s[l], s[LANES + l], s[2 * LANES + l]
        sv0, sv1, sv2 = s[3 * LANES + l], s[4 * LANES + l], s[5 * LANES + l]
        w0, w1, w2 = V[l], V[LANES + l], V[2 * LANES + l]
        al0, al1, al2 = Vd[l], Vd[LANES + l], Vd[2 * LANES + l]
        b0, b1, b2 = b[l], b[LANES + l], b[2 * LANES + l]
        out[l] = sv0 * b0 + sv1 * b1 + sv2 * b2
        c0 = sv1 * w2 - sv2 * w1
        c1 = sv2 * w0 - sv0 * w2
        c2 = sv0 * w1 - sv1 * w0
        out[LANES + l] = (b1 * sw2 - b2 * sw1) + (sv1 * al2 - sv2 * al1) + (c1 * w2 - c2 * w1)
        out[2 * LANES + l] = (b2 * sw0 - b0 * sw2) + (sv2 * al0 - sv0 * al2) + (c2 * w0 - c0 * w2)
        out[3 * LANES + l] = (b0 * sw1 - b1 * sw0) + (sv0 * al1 - sv1 * al0) + (c0 * w1 - c1 * w0)
        d0 = sw1 * w2 - sw2 * w1
        d1 = sw2 * w0 - sw0 * w2
        d2 = sw0 * w1 - sw1 * w0
        out[4 * LANES + l] = sw0 * al0 + d0 * w0
        out[5 * LANES + l] = sw1 * al1 + d1 * w1
        out[6 * LANES + l] = sw2 * al2 + d2 * w2
        out[7 * LANES + l] = sw0 * al1 + sw1 * al0 + d0 * w1 + d1 * w0
        out[8 * LANES + l] = sw0 * al2 + sw2 * al0 + d0 * w2 + d2 * w0
        out[9 * LANES + l] = sw1 * al2 + sw2 * al1 + d1 * w2 + d2 * w1


@njit(cache=True)
def pair_table(parents):
    """The regressor's non-zero 10-column blocks, in the order regressor_lanes computes them: pair p =
    (body i, row k) for every body i and each joint k supporting it (body by body, k from i up to the
    root). Returns pair_body, pair_row (npairs,) and pair_of (nb, nb): p of (i, k), -1 where k does not
    support i."""
    nb = parents.shape[0]
    npairs = 0
    for i in range(nb):
        k = i
        while k >= 0:
            npairs += 1
            k = parents[k]
    pair_body = np.empty(npairs, dtype=np.int64)
    pair_row = np.empty(npairs, dtype=np.int64)
    pair_of = np.full((nb, nb), -1, dtype=np.int64)
    n = 0
    for i in range(nb):
        k = i
        while k >= 0:
            pair_body[n] = i
            pair_row[n] = k
            pair_of[i, k] = n
            n += 1
            k = parents[k]
    return pair_body, pair_row, pair_of


@njit(cache=True, error_model="numpy", _nrt=False)
def regressor_lanes(parents, screw_axes, home_R, home_p, base_accel, q, v, a, R, p, oR, op, oS, V, Vdot, tmp,
                    R1, p1, rows, finite):
    """regressor.regressor for the LANES samples q, v, a (nb, L), as its non-zero blocks: rows[n] (10 L)
    = Y[k, 10 i: 10 i + 10] of pair n = (i, k) of pair_table; finite[l] &= lane l's are finite (with
    finite inputs, regressor's own verdict). Workspace: R, oR (nb, 9 L), p, op (nb, 3 L), oS, V, Vdot
    (nb, 6 L), tmp (3, 6 L)."""
    nb = q.shape[0]
    _joint_transforms_lanes(screw_axes, home_R, home_p, q, R, p, R1, p1, tmp[0].reshape((6, LANES)))
    _world_poses_lanes(parents, R, p, oR, op)
    b = tmp[0, :3 * LANES]
    s = tmp[1]
    S_lanes = tmp[2]
    n = 0
    for i in range(nb):
        S = screw_axes[i]
        _motion_to_parent_lanes(oR[i], op[i], S, oS[i])
        _body_motion_lanes(i, parents, S, R, p, base_accel, v[i], a[i], V, Vdot)
        Vi, Vdi = V[i], Vdot[i]
        for l in range(LANES):
            w0, w1, w2 = Vi[l], Vi[LANES + l], Vi[2 * LANES + l]
            # b = udot + w x u
            b[l] = Vdi[3 * LANES + l] + w1 * Vi[5 * LANES + l] - w2 * Vi[4 * LANES + l]
            b[LANES + l] = Vdi[4 * LANES + l] + w2 * Vi[3 * LANES + l] - w0 * Vi[5 * LANES + l]
            b[2 * LANES + l] = Vdi[5 * LANES + l] + w0 * Vi[4 * LANES + l] - w1 * Vi[3 * LANES + l]
        for k in range(6):
            for l in range(LANES):
                S_lanes[k * LANES + l] = S[k]
        _regressor_row_lanes(S_lanes, Vi, Vdi, b, rows[n])
        n += 1
        # body i's force reaches every supporting joint k: s = S_k in body i's frame
        k = parents[i]
        while k >= 0:
            _motion_to_child_lanes(oR[i], op[i], oS[k], s)
            _regressor_row_lanes(s, Vi, Vdi, b, rows[n])
            n += 1
            k = parents[k]
    for m in range(n):
        row = rows[m]
        for l in range(LANES):
            good = True
            for c in range(10):
                good &= np.isfinite(row[c * LANES + l])
            finite[l] &= good


@njit(cache=True, parallel=True, error_model="numpy")
def regressor_batch(parents, screw_axes, home_R, home_p, base_accel, pair_body, pair_row, q, v, a, Y, ok):
    """Y[t] = regressor(q[t], v[t], a[t]) for every row t, bit for bit; Y is (T, nb, 10 nb), or
    (T, nb, 13 nb) for the regressor with the joint block (its last 3 nb columns, kernels/joint_terms.py).
    pair_body, pair_row: pair_table(parents)."""
    T, nb = q.shape
    full = Y.shape[2] == 13 * nb
    npairs = pair_body.shape[0]
    for c in prange((T + LANE_CHUNK - 1) // LANE_CHUNK):
        R = np.empty((nb, 9 * LANES))
        p = np.empty((nb, 3 * LANES))
        oR = np.empty((nb, 9 * LANES))
        op = np.empty((nb, 3 * LANES))
        oS = np.empty((nb, 6 * LANES))
        V = np.empty((nb, 6 * LANES))
        Vdot = np.empty((nb, 6 * LANES))
        tmp = np.empty((3, 6 * LANES))
        R1 = np.empty((3, 3))
        p1 = np.empty(3)
        qL = np.empty((nb, LANES))
        vL = np.empty((nb, LANES))
        aL = np.empty((nb, LANES))
        rows = np.empty((npairs, 10 * LANES))
        finite = np.empty(LANES, dtype=np.bool_)
        for t0 in range(c * LANE_CHUNK, min(T, (c + 1) * LANE_CHUNK), LANES):
            n = min(LANES, T - t0)
            finite[:] = True
            _finite_rows(q, t0, n, finite)
            _finite_rows(v, t0, n, finite)
            _finite_rows(a, t0, n, finite)
            _load_lanes(q, t0, n, qL)
            _load_lanes(v, t0, n, vL)
            _load_lanes(a, t0, n, aL)
            regressor_lanes(parents, screw_axes, home_R, home_p, base_accel, qL, vL, aL, R, p, oR, op, oS, V,
                            Vdot, tmp, R1, p1, rows, finite)
            for l in range(n):
                ok[t0 + l] = finite[l]
                Y[t0 + l, :, :] = 0.0
            for m in range(npairs):
                row = rows[m]
                k = pair_row[m]
                col = 10 * pair_body[m]
                for l in range(n):
                    for e in range(10):
                        Y[t0 + l, k, col + e] = row[e * LANES + l]
            if full:
                for l in range(n):
                    joint_regressor(v[t0 + l], a[t0 + l], Y[t0 + l], 10 * nb)


# ----------------------------------------------------------------------------------------------
# Reductions over the regressor rows of many samples, LANES samples at a time
#
# The regressor's non-zero blocks of LANES samples (regressor_lanes: rows[n] of pair n = (body i, tree
# row k)) and the joint block (J[k] (3 L): [a_k, v_k, sgn_s(v_k)] of tree row k) are combined with
# lane sums: A[10 i + c, 10 j + d] += h sum_l rows[n_i, c, l] rows[n_j, d, l] for every "term"
# (n_i, n_j, h) of the block (i, j), i <= j: for a tree, h = 1 and n_i, n_j the pairs of i and j on
# each joint supporting both; with mimic coupling (model rows G^T Y_tree) h = (G G^T)[k, k'] for the
# rows k, k' of n_i, n_j. The lists of terms come from the public wrapper (derivatives.py). A sum over
# lanes is a reduction (fast-math reassociation lets LLVM vectorize it: its order is fixed by the
# compiled code, the same for every block and thread).


@njit(cache=True)
def reduction_terms(pair_body, pair_row, H):
    """The terms of the normal equations' lane sums (_add_normal) for H = G G^T (nb, nb) (the identity
    without coupling): terms (n, 3) = (pair n_i, pair n_j, h) for the body blocks, body(n_i) <=
    body(n_j), h = H[row(n_i), row(n_j)] != 0; joint_terms (n, 3) = (pair n_i, joint k', h = H[row(n_i),
    k']); joint_pairs (n, 3) = (joint k, joint k' >= k, H[k, k']). Indices are stored as floats."""
    npairs = pair_body.shape[0]
    nb = H.shape[0]
    counts = np.zeros(3, dtype=np.int64)
    for ni in range(npairs):
        for nj in range(npairs):
            if pair_body[ni] <= pair_body[nj] and H[pair_row[ni], pair_row[nj]] != 0.0:
                counts[0] += 1
        for k in range(nb):
            if H[pair_row[ni], k] != 0.0:
                counts[1] += 1
    for k in range(nb):
        for k2 in range(k, nb):
            if H[k, k2] != 0.0:
                counts[2] += 1
    terms = np.empty((counts[0], 3))
    joint_terms = np.empty((counts[1], 3))
    joint_pairs = np.empty((counts[2], 3))
    counts[:] = 0
    for ni in range(npairs):
        for nj in range(npairs):
            h = H[pair_row[ni], pair_row[nj]]
            if pair_body[ni] <= pair_body[nj] and h != 0.0:
                terms[counts[0], 0] = ni
                terms[counts[0], 1] = nj
                terms[counts[0], 2] = h
                counts[0] += 1
        for k in range(nb):
            h = H[pair_row[ni], k]
            if h != 0.0:
                joint_terms[counts[1], 0] = ni
                joint_terms[counts[1], 1] = k
                joint_terms[counts[1], 2] = h
                counts[1] += 1
    for k in range(nb):
        for k2 in range(k, nb):
            if H[k, k2] != 0.0:
                joint_pairs[counts[2], 0] = k
                joint_pairs[counts[2], 1] = k2
                joint_pairs[counts[2], 2] = H[k, k2]
                counts[2] += 1
    return terms, joint_terms, joint_pairs


@njit(cache=True, error_model="numpy", fastmath={"reassoc", "contract"})
def _lane_products(X, Y, h, out, r0, c0, nr, nc):
    """out[r0 + c, c0 + d] += h sum_l X[c L + l] Y[d L + l] for c < nr, d < nc. Rows of X five at a
    time against columns of Y two at a time (_lane_tile_5x2, _lane_tile_5x1): each lane loaded once
    feeds up to ten sums, not one (a 10 x 10 block 422 -> 167 ns on the development VM); the rows
    left over one at a time."""
    c = 0
    while c + 5 <= nr:
        d = 0
        while d + 2 <= nc:
            _lane_tile_5x2(X, Y, h, out, r0, c0, c, d)
            d += 2
        if d < nc:
            _lane_tile_5x1(X, Y, h, out, r0, c0, c, d)
        c += 5
    for c in range(c, nr):
        for d in range(nc):
            s = 0.0
            for l in range(LANES):
                s += X[uint64(c * LANES + l)] * Y[uint64(d * LANES + l)]
            out[r0 + c, c0 + d] += h * s


@njit(cache=True, error_model="numpy", fastmath={"reassoc", "contract"})
def _lane_tile_5x2(X, Y, h, out, r0, c0, c, d):
    """_lane_products for rows c .. c + 4 of X and columns d, d + 1 of Y."""
    s00 = s01 = s10 = s11 = s20 = s21 = s30 = s31 = s40 = s41 = 0.0
    for l in range(LANES):
        y0 = Y[uint64(d * LANES + l)]
        y1 = Y[uint64((d + 1) * LANES + l)]
        x = X[uint64(c * LANES + l)]
        s00 += x * y0
        s01 += x * y1
        x = X[uint64((c + 1) * LANES + l)]
        s10 += x * y0
        s11 += x * y1
        x = X[uint64((c + 2) * LANES + l)]
        s20 += x * y0
        s21 += x * y1
        x = X[uint64((c + 3) * LANES + l)]
        s30 += x * y0
        s31 += x * y1
        x = X[uint64((c + 4) * LANES + l)]
        s40 += x * y0
        s41 += x * y1
    r, k = r0 + c, c0 + d
    out[r, k] += h * s00
    out[r, k + 1] += h * s01
    out[r + 1, k] += h * s10
    out[r + 1, k + 1] += h * s11
    out[r + 2, k] += h * s20
    out[r + 2, k + 1] += h * s21
    out[r + 3, k] += h * s30
    out[r + 3, k + 1] += h * s31
    out[r + 4, k] += h * s40
    out[r + 4, k + 1] += h * s41


@njit(cache=True, error_model="numpy", fastmath={"reassoc", "contract"})
def _lane_tile_5x1(X, Y, h, out, r0, c0, c, d):
    """_lane_products for rows c .. c + 4 of X and column d of Y."""
    s0 = s1 = s2 = s3 = s4 = 0.0
    for l in range(LANES):
        y = Y[uint64(d * LANES + l)]
        s0 += X[uint64(c * LANES + l)] * y
        s1 += X[uint64((c + 1) * LANES + l)] * y
        s2 += X[uint64((c + 2) * LANES + l)] * y
        s3 += X[uint64((c + 3) * LANES + l)] * y
        s4 += X[uint64((c + 4) * LANES + l)] * y
    r, k = r0 + c, c0 + d
    out[r, k] += h * s0
    out[r + 1, k] += h * s1
    out[r + 2, k] += h * s2
    out[r + 3, k] += h * s3
    out[r + 4, k] += h * s4


@njit(cache=True, error_model="numpy")
def _reduction_lanes(parents, screw_axes, home_R, home_p, base_accel, coupling, q, v, a, tau, t0, n, full, R, p,
                     oR, op, oS, V, Vdot, tmp, R1, p1, qL, vL, aL, rows, J, weights, finite, ok):
    """The regressor blocks of samples t0 .. t0 + n (n <= LANES) into rows (npairs, 10 L) and, when
    full, J (nb, 3 L); weights (nb, L) = G tau per lane (tau itself without coupling). Lanes whose inputs
    or regressor are not finite (ok[t] = False), and lanes beyond n, are zero: they add nothing."""
    nb = q.shape[1]
    nv = tau.shape[1]
    for l in range(LANES):
        finite[l] = l < n
    _finite_rows(q, t0, n, finite)
    _finite_rows(v, t0, n, finite)
    _finite_rows(a, t0, n, finite)
    _load_lanes(q, t0, n, qL)
    _load_lanes(v, t0, n, vL)
    _load_lanes(a, t0, n, aL)
    regressor_lanes(parents, screw_axes, home_R, home_p, base_accel, qL, vL, aL, R, p, oR, op, oS, V, Vdot, tmp,
                    R1, p1, rows, finite)
    if full:
        for k in range(nb):
            Jk = J[k]
            for l in range(LANES):
                Jk[l] = aL[k, l]
                Jk[LANES + l] = vL[k, l]
                Jk[2 * LANES + l] = smooth_sign(vL[k, l])
    for l in range(n):
        ok[t0 + l] = finite[l]
    for k in range(nb):
        for l in range(LANES):
            weights[k, l] = 0.0
    for l in range(n):
        if not finite[l]:
            continue
        if coupling.shape[0] == 0:
            for k in range(nv):
                weights[k, l] = tau[t0 + l, k]
        else:
            for k in range(nb):
                s = 0.0
                for m in range(nv):
                    s += coupling[k, m] * tau[t0 + l, m]
                weights[k, l] = s
    for l in range(LANES):
        if not finite[l]:
            for m in range(rows.shape[0]):
                for c in range(10):
                    rows[m, c * LANES + l] = 0.0
            if full:
                for k in range(nb):
                    for e in range(3):
                        J[k, e * LANES + l] = 0.0


@njit(cache=True, error_model="numpy")
def _add_normal(rows, J, weights, pair_body, pair_row, terms, joint_terms_list, joint_pairs, A, b):
    """A (upper blocks) and b (P, 1) += the normal equations' sums of one group of lanes (see above).
    terms (n, 3): (pair of i, pair of j, h) for the body blocks (i <= j); joint_terms_list (n, 3): (pair of
    i, joint k', h) for A[10 i + c, 10 nb + 3 k' + e]; joint_pairs (n, 3): (joint k, joint k', h), k <= k'."""
    nb = weights.shape[0]
    for m in range(terms.shape[0]):
        ni = int(terms[m, 0])
        nj = int(terms[m, 1])
        _lane_products(rows[ni], rows[nj], terms[m, 2], A, 10 * pair_body[ni], 10 * pair_body[nj], 10, 10)
    for m in range(rows.shape[0]):
        _lane_products(rows[m], weights[pair_row[m]], 1.0, b, 10 * pair_body[m], 0, 10, 1)
    if J.shape[0] == 0:
        return
    for m in range(joint_terms_list.shape[0]):
        ni = int(joint_terms_list[m, 0])
        k = int(joint_terms_list[m, 1])
        _lane_products(rows[ni], J[k], joint_terms_list[m, 2], A, 10 * pair_body[ni], 10 * nb + 3 * k, 10, 3)
    for m in range(joint_pairs.shape[0]):
        k = int(joint_pairs[m, 0])
        k2 = int(joint_pairs[m, 1])
        _lane_products(J[k], J[k2], joint_pairs[m, 2], A, 10 * nb + 3 * k, 10 * nb + 3 * k2, 3, 3)
    for k in range(nb):
        _lane_products(J[k], weights[k], 1.0, b, 10 * nb + 3 * k, 0, 3, 1)


@njit(cache=True, error_model="numpy")
def _add_residual(rows, J, tau, t0, finite, coupling, pair_body, pair_row, phi, y, r, weights, grad, value):
    """grad (P, 1) += sum_l Y_l^T (Y_l phi - tau_l) and value[0] += sum_l |Y_l phi - tau_l|^2 over the lanes
    l with finite[l] (rows, J as _reduction_lanes leaves them; y, r (nb, L) and weights: scratch)."""
    nb = y.shape[0]
    nv = tau.shape[1]
    full = J.shape[0] > 0
    coupled = coupling.shape[0] > 0
    # y = Y_tree phi per tree row and lane
    for k in range(nb):
        for l in range(LANES):
            y[k, l] = 0.0
    for m in range(rows.shape[0]):
        row = rows[m]
        yk = y[pair_row[m]]
        col = 10 * pair_body[m]
        for c in range(10):
            ph = phi[col + c]
            for l in range(LANES):
                yk[l] += row[c * LANES + l] * ph
    if full:
        for k in range(nb):
            Jk = J[k]
            yk = y[k]
            for e in range(3):
                ph = phi[10 * nb + 3 * k + e]
                for l in range(LANES):
                    yk[l] += Jk[e * LANES + l] * ph
    # r = G^T y - tau in the model's rows (lanes without a sample: 0), then the tree rows' weights G r
    for m in range(nv):
        for l in range(LANES):
            r[m, l] = 0.0
    for l in range(LANES):
        if not finite[l]:
            continue
        for m in range(nv):
            if coupled:
                s = 0.0
                for k in range(nb):
                    s += coupling[k, m] * y[k, l]
            else:
                s = y[m, l]
            r[m, l] = s - tau[t0 + l, m]
    for m in range(nv):
        value[0] += _lane_dot(r[m], r[m])
    for k in range(nb):
        for l in range(LANES):
            if coupled:
                s = 0.0
                for m in range(nv):
                    s += coupling[k, m] * r[m, l]
                weights[k, l] = s
            else:
                weights[k, l] = r[k, l]
    for m in range(rows.shape[0]):
        _lane_products(rows[m], weights[pair_row[m]], 1.0, grad, 10 * pair_body[m], 0, 10, 1)
    if full:
        for k in range(nb):
            _lane_products(J[k], weights[k], 1.0, grad, 10 * nb + 3 * k, 0, 3, 1)


@njit(cache=True, error_model="numpy", fastmath={"reassoc", "contract"})
def _lane_dot(x, y):
    s = 0.0
    for l in range(LANES):
        s += x[l] * y[l]
    return s


@njit(cache=True, error_model="numpy")
def _block(parents, screw_axes, home_R, home_p, base_accel, coupling, pair_body, pair_row, terms, joint_terms_list,
           joint_pairs, q, v, a, tau, phi, t_start, t_end, full, A_blk, b_blk, value, ok):
    """One block of samples [t_start, t_end), LANES at a time in sample order: with phi empty, A_blk
    (upper blocks) and b_blk (P, 1) += the normal equations' sums (_add_normal), else b_blk += the
    residual's gradient and value[0] += its squared norm (_add_residual). ok[t] = False for a sample
    whose inputs or regressor are not finite (it adds nothing)."""
    nb = q.shape[1]
    nv = tau.shape[1]
    npairs = pair_body.shape[0]
    R = np.empty((nb, 9 * LANES))
    p = np.empty((nb, 3 * LANES))
    oR = np.empty((nb, 9 * LANES))
    op = np.empty((nb, 3 * LANES))
    oS = np.empty((nb, 6 * LANES))
    V = np.empty((nb, 6 * LANES))
    Vdot = np.empty((nb, 6 * LANES))
    tmp = np.empty((3, 6 * LANES))
    R1 = np.empty((3, 3))
    p1 = np.empty(3)
    qL = np.empty((nb, LANES))
    vL = np.empty((nb, LANES))
    aL = np.empty((nb, LANES))
    rows = np.empty((npairs, 10 * LANES))
    J = np.empty((nb if full else 0, 3 * LANES))
    weights = np.empty((nb, LANES))
    y = np.empty((nb, LANES))
    r = np.empty((nv, LANES))
    finite = np.empty(LANES, dtype=np.bool_)
    for t0 in range(t_start, t_end, LANES):
        n = min(LANES, t_end - t0)
        _reduction_lanes(parents, screw_axes, home_R, home_p, base_accel, coupling, q, v, a, tau, t0, n, full, R,
                         p, oR, op, oS, V, Vdot, tmp, R1, p1, qL, vL, aL, rows, J, weights, finite, ok)
        if phi.shape[0] == 0:
            _add_normal(rows, J, weights, pair_body, pair_row, terms, joint_terms_list, joint_pairs, A_blk, b_blk)
        else:
            _add_residual(rows, J, tau, t0, finite, coupling, pair_body, pair_row, phi, y, r, weights, b_blk,
                          value)


@njit(cache=True, parallel=True, error_model="numpy")
def normal_equations_batch(parents, screw_axes, home_R, home_p, base_accel, coupling, pair_body, pair_row, terms,
                           joint_terms_list, joint_pairs, q, v, a, tau, A_parts, b_parts, A, b, ok):
    """A = sum_t Y_t^T Y_t (P, P), b = sum_t Y_t^T tau_t (P,) with Y_t the regressor of (q[t], v[t], a[t])
    (tree coordinates (T, nb)) in the model's coordinates: (nv, 10 nb), or (nv, 13 nb) with the joint
    block (P = A's size); tau (T, nv); coupling: G (nb, nv), or (0, 0) without. Blocks of BLOCK samples
    are summed apart, a wave of W = A_parts.shape[0] of them in parallel (A_parts (W, P, P), b_parts
    (W, P): their partial sums), then added to A, b in block order. ok[t] = False: sample t's inputs or
    regressor are not finite (it adds nothing)."""
    T, nb = q.shape
    P = A.shape[0]
    full = P == 13 * nb
    W = A_parts.shape[0]
    nblocks = (T + BLOCK - 1) // BLOCK
    no_phi = np.empty(0)
    for row in range(P):
        b[row] = 0.0
        for col in range(P):
            A[row, col] = 0.0
    for first in range(0, nblocks, W):
        nw = min(W, nblocks - first)
        for k in prange(nw):
            for row in range(P):
                A_parts[k, row, row:] = 0.0
            b_parts[k, :] = 0.0
            blk = first + k
            _block(parents, screw_axes, home_R, home_p, base_accel, coupling, pair_body, pair_row, terms,
                   joint_terms_list, joint_pairs, q, v, a, tau, no_phi, blk * BLOCK, min(T, (blk + 1) * BLOCK), full,
                   A_parts[k], b_parts[k].reshape((P, 1)), np.zeros(1), ok)
        for k in range(nw):
            for row in range(P):
                for col in range(row, P):
                    A[row, col] += A_parts[k, row, col]
                b[row] += b_parts[k, row]
    for row in range(P):
        for col in range(row):
            A[row, col] = A[col, row]


@njit(cache=True, parallel=True, error_model="numpy")
def residual_gradient_batch(parents, screw_axes, home_R, home_p, base_accel, coupling, pair_body, pair_row, q, v,
                            a, tau, phi, g_parts, grad, ok):
    """grad = sum_t Y_t^T (Y_t phi - tau_t) (P,); returns 1/2 sum_t |Y_t phi - tau_t|^2. Y_t, coupling,
    ok, blocks and waves as in normal_equations_batch (g_parts (W, P): a wave's partial gradients)."""
    T, nb = q.shape
    P = phi.shape[0]
    full = P == 13 * nb
    W = g_parts.shape[0]
    nblocks = (T + BLOCK - 1) // BLOCK
    no_terms = np.empty((0, 3))
    no_A = np.empty((0, 0))
    for col in range(P):
        grad[col] = 0.0
    total = 0.0
    values = np.empty(W)
    for first in range(0, nblocks, W):
        nw = min(W, nblocks - first)
        for k in prange(nw):
            g_parts[k, :] = 0.0
            blk = first + k
            value = np.zeros(1)
            _block(parents, screw_axes, home_R, home_p, base_accel, coupling, pair_body, pair_row, no_terms,
                   no_terms, no_terms, q, v, a, tau, phi, blk * BLOCK, min(T, (blk + 1) * BLOCK), full, no_A,
                   g_parts[k].reshape((P, 1)), value, ok)
            values[k] = value[0]
        for k in range(nw):
            total += values[k]
            for col in range(P):
                grad[col] += g_parts[k, col]
    return 0.5 * total
