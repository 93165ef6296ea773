"""Multi-DoF joints' tree twin (multi_dof.py): each joint's pose written into its chain's first
placement, the twin's joint positions, the chains' velocity products b(nu) and the first-order
derivatives' correction; and integrate / difference of their configurations (configuration.py).

A joint is a row of the int64 table (njoints, 4): [kind, first body, q index, first unit screw] with
kind SPHERICAL, PLANAR or FLOATING (model.MULTI_DOF_SCREWS: its screws are the unit screws first ..
first + nv - 1, [w; v], in the order of its v).
"""
import math

from ..jit import njit
from .free_flyer import UNIT_TOLERANCE, _unit_cross
from .free_flyer import difference as free_flyer_difference
from .free_flyer import integrate as free_flyer_integrate

SPHERICAL, PLANAR, FLOATING = 0, 1, 2
NV = (3, 3, 6)


@njit(cache=True)
def anchor(q, table, scalar_q, scalar_v, shift, home_R, home_p, twin_home_R, twin_home_p, q_twin, R):
    """The twin's q_twin (its 1-DoF joints from q, the chains at zero; a free flyer's q[:7] where shift
    is 1) and its chains' first placements home (R, p) T(q_j). False, with the twin's placements
    unchanged after the first joint at fault, when a joint's quaternion or (cos, sin) is not of unit
    norm (multi_dof.check_configuration names it). R: (3, 3) scratch."""
    for n in range(scalar_q.shape[0]):
        q_twin[shift + scalar_v[n]] = q[scalar_q[n]]
    for n in range(7 * shift):
        q_twin[n] = q[n]
    for j in range(table.shape[0]):
        kind, body, start = table[j, 0], table[j, 1], table[j, 2]
        for n in range(NV[kind]):
            q_twin[shift + body + n] = 0.0
        p0, p1, p2 = 0.0, 0.0, 0.0
        if kind == PLANAR:
            c, s = q[start + 2], q[start + 3]
            if not abs(math.sqrt(c * c + s * s) - 1.0) <= UNIT_TOLERANCE:
                return False
            R[0, 0], R[0, 1], R[0, 2] = c, -s, 0.0
            R[1, 0], R[1, 1], R[1, 2] = s, c, 0.0
            R[2, 0], R[2, 1], R[2, 2] = 0.0, 0.0, 1.0
            p0, p1 = q[start], q[start + 1]
        else:
            k = start if kind == SPHERICAL else start + 3
            if kind == FLOATING:
                p0, p1, p2 = q[start], q[start + 1], q[start + 2]
            x, y, z, w = q[k], q[k + 1], q[k + 2], q[k + 3]
            if not abs(math.sqrt(x * x + y * y + z * z + w * w) - 1.0) <= UNIT_TOLERANCE:
                return False
            R[0, 0], R[0, 1], R[0, 2] = 1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)
            R[1, 0], R[1, 1], R[1, 2] = 2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)
            R[2, 0], R[2, 1], R[2, 2] = 2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)
        for r in range(3):
            H0, H1, H2 = home_R[body, r, 0], home_R[body, r, 1], home_R[body, r, 2]
            for c in range(3):
                twin_home_R[body, r, c] = H0 * R[0, c] + H1 * R[1, c] + H2 * R[2, c]
            twin_home_p[body, r] = home_p[body, r] + H0 * p0 + H1 * p1 + H2 * p2
    return True


@njit(cache=True)
def add_bias(table, v, sign, out, tmp6):
    """out[joint's coordinates] += sign * b(nu) for each joint, nu its v: b(nu) = sum_{k < i} (e_k nu_k)
    x (e_i nu_i) over its unit screws, in its own coordinates (the screws span a subalgebra)."""
    for j in range(table.shape[0]):
        kind, body, first = table[j, 0], table[j, 1], table[j, 3]
        m = NV[kind]
        for r in range(6):
            tmp6[r] = 0.0
        for i in range(m):
            for k in range(i):
                _unit_cross(first + k, first + i, v[body + k] * v[body + i], tmp6)
        for n in range(m):
            out[body + n] += sign * tmp6[first + n]


@njit(cache=True, inline="always")
def _cross_coordinates(a, x, first, m, scale, out):
    """out[first:first + m] += scale (e_a x x) for x (6,) in the joint's subalgebra."""
    for r in range(first, first + m):
        if x[r] != 0.0:
            _unit_cross(a, r, scale * x[r], out)


@njit(cache=True)
def correct_derivatives(table, v, a_twin, tau, M, dtau_dq, dtau_dv, w6, x6, E):
    """multi_dof.correct_derivatives in place: the twin's d tau / d q and d tau / d v made the joints'.
    w6, x6: (6,) scratch; E: (3, 6, 6) scratch (rows k: E_k nu, E_k theta'' + H_k, column k of db/dnu)."""
    nv = v.shape[0]
    for j in range(table.shape[0]):
        kind, body, first = table[j, 0], table[j, 1], table[j, 3]
        m = NV[kind]
        E_nu, E_acc, B = E[0], E[1], E[2]
        for k in range(m):
            for r in range(6):
                E_nu[k, r] = 0.0
                E_acc[k, r] = 0.0
                B[k, r] = 0.0
            # db/dnu column k = sum_{i > k} (e_k x e_i) nu_i + sum_{i < k} (e_i x e_k) nu_i
            for i in range(m):
                if i > k:
                    _unit_cross(first + k, first + i, v[body + i], B[k])
                elif i < k:
                    _unit_cross(first + i, first + k, v[body + i], B[k])
                    # E_k x = -sum_{i < k} (e_k x e_i) x_i for x = nu, theta''
                    _unit_cross(first + k, first + i, -v[body + i], E_nu[k])
                    _unit_cross(first + k, first + i, -a_twin[body + i], E_acc[k])
            # H_k = sum_{i < k, i < l} nu_l nu_i ad_max(l,k) ad_min(l,k) e_i
            for l in range(m):
                hi, lo = (l, k) if l > k else (k, l)
                for i in range(min(l, k)):
                    for r in range(6):
                        w6[r] = 0.0
                    _unit_cross(first + lo, first + i, 1.0, w6)
                    _cross_coordinates(first + hi, w6, first, m, v[body + l] * v[body + i], E_acc[k])
        # dtau_dv[:, part] -= M[:, part] db/dnu
        for row in range(nv):
            for k in range(m):
                s = 0.0
                for r in range(m):
                    s += M[row, body + r] * B[k, first + r]
                x6[k] = s
            for k in range(m):
                dtau_dv[row, body + k] -= x6[k]
        # dtau_dq[:, k] -= dtau_dv[:, part] E_k nu + M[:, part] (E_k theta'' + H_k)
        for row in range(nv):
            for k in range(m):
                s = 0.0
                for r in range(m):
                    s += dtau_dv[row, body + r] * E_nu[k, first + r] + M[row, body + r] * E_acc[k, first + r]
                x6[k] = s
            for k in range(m):
                dtau_dq[row, body + k] -= x6[k]
        # dtau_dq[j, k] -= (E_k^T tau)_j = -(e_k x e_j) . tau_j for j < k
        for k in range(m):
            for i in range(k):
                for r in range(6):
                    w6[r] = 0.0
                _unit_cross(first + k, first + i, 1.0, w6)
                s = 0.0
                for r in range(m):
                    s += w6[first + r] * tau[body + r]
                dtau_dq[body + i, body + k] += s


# ----------------------------------------------------------------------------------------------
# integrate and difference (configuration.py): each joint as a free flyer's pose on its subgroup


@njit(cache=True, inline="always")
def _pose7(kind, q, start, pose):
    """pose = [p; quaternion (x, y, z, w)] (7,) of the joint whose q starts at `start`; False unless its
    quaternion or (cos, sin) has unit norm."""
    for r in range(7):
        pose[r] = 0.0
    if kind == PLANAR:
        c, s = q[start + 2], q[start + 3]
        if not abs(math.sqrt(c * c + s * s) - 1.0) <= UNIT_TOLERANCE:
            return False
        half = 0.5 * math.atan2(s, c)
        pose[0], pose[1], pose[5], pose[6] = q[start], q[start + 1], math.sin(half), math.cos(half)
        return True
    k = start if kind == SPHERICAL else start + 3
    if kind == FLOATING:
        pose[0], pose[1], pose[2] = q[start], q[start + 1], q[start + 2]
    for r in range(4):
        pose[3 + r] = q[k + r]
    x, y, z, w = pose[3], pose[4], pose[5], pose[6]
    return abs(math.sqrt(x * x + y * y + z * z + w * w) - 1.0) <= UNIT_TOLERANCE


@njit(cache=True)
def integrate(q, v, table, scalar_q, scalar_v, free_flyer, out, pose, xi, result):
    """out = integrate(q, v) (nq,): the 1-DoF joints as vectors, a free flyer (free_flyer 1) and each
    joint on its subgroup of SE(3), T exp(v_j); False when a rotation part of q is not of unit norm."""
    for n in range(scalar_q.shape[0]):
        out[scalar_q[n]] = q[scalar_q[n]] + v[scalar_v[n]]
    if free_flyer:
        free_flyer_integrate(q[:7], v[:6], out[:7])
    for j in range(table.shape[0]):
        kind, body, start, first = table[j, 0], table[j, 1], table[j, 2], table[j, 3]
        if not _pose7(kind, q, start, pose):
            return False
        for r in range(6):
            xi[r] = 0.0
        for n in range(NV[kind]):
            xi[first + n] = v[body + n]
        free_flyer_integrate(pose, xi, result)
        if kind == PLANAR:
            z, w = result[5], result[6]
            out[start], out[start + 1], out[start + 2], out[start + 3] = result[0], result[1], w * w - z * z, 2.0 * z * w
        else:
            k = start if kind == SPHERICAL else start + 3
            for r in range(4):
                out[k + r] = result[3 + r]
            if kind == FLOATING:
                out[start], out[start + 1], out[start + 2] = result[0], result[1], result[2]
    return True


@njit(cache=True)
def difference(q0, q1, table, scalar_q, scalar_v, free_flyer, out, pose0, pose1, xi):
    """out = difference(q0, q1) (nv,): log(T(q0)^-1 T(q1)) of each joint and of a free flyer, the 1-DoF
    joints' q1 - q0; False when a rotation part is not of unit norm."""
    for n in range(scalar_q.shape[0]):
        out[scalar_v[n]] = q1[scalar_q[n]] - q0[scalar_q[n]]
    if free_flyer:
        free_flyer_difference(q0[:7], q1[:7], out[:6])
    for j in range(table.shape[0]):
        kind, body, start, first = table[j, 0], table[j, 1], table[j, 2], table[j, 3]
        if not (_pose7(kind, q0, start, pose0) and _pose7(kind, q1, start, pose1)):
            return False
        free_flyer_difference(pose0, pose1, xi)
        for n in range(NV[kind]):
            out[body + n] = xi[first + n]
    return True
