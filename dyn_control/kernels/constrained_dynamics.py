"""Constrained (KKT) dynamics and impulse dynamics under rigid contacts, compiled (seed "Details of
Partial Derivatives of Rigid-Body Inverse Dynamics", secs. XI-XII; the readable reference is the
NumPy code of dyn_control/contact.py, whose rows these kernels reproduce).

A contact set is described by `spec` (nc, 4) int64 rows [frame1, frame2 (-1: the world), dim
(3 "point" | 6 "frame"), local (1 "local" | 0 "local_world_aligned")]. A side fixed to the world
(frame2 = -1, or a frame of the root body) has no motion, so its anchor enters no row without
Baumgarte gains (those stay on the NumPy path).

M and b(q, v) come from the world motion computed for the rows (world_dynamics: crba's and the
inverse dynamics' sums in the root frame), so the kinematics run once a call; the joint terms
(kernels/joint_terms.py) join them as in crba and nonlinear_effects: M + diag(I_a), b + friction(v). The solve goes
through the tree-sparse factor of M = L^T L (Featherstone's LTL) and the Cholesky factor of the
Delassus matrix G = J M^-1 J^T = Z^T Z, Z = L^-T J^T (delassus_solve):
    lam = G^-1 (-gamma - J M^-1 (tau - b)),   a = M^-1 (tau - b) + M^-1 J^T lam.
A kernel returns SINGULAR, leaving the answer to the NumPy path (least squares on the whole KKT
matrix, or the pseudo-inverse of G for redundant rows), when a pivot of M falls below the relative
threshold SINGULAR_M or one of G below SINGULAR_G; FAILED when an input or a result is not finite.
The derivatives (kernels/constrained_dynamics_derivatives.py) call solve_constrained / solve_impulse
(the entry kernels' bodies) and reuse the factors and rows they leave in the workspace.
"""
import numpy as np

from ..jit import njit
from ..spatial import cross_force, dot6, inertia_times, phi_to_parent_add
from . import entry as _e
from .cholesky import back_substitute, cholesky_factor, forward_substitute, largest_diagonal
from .contact import world_motion, world_screws
from .crba import inertia_matrix, subtree_sums
from .inputs import all_finite
from .joint_terms import add_armature, add_friction_torque
from .packed import view

OK = 0
SINGULAR = 1        # M or G (numerically) singular: the NumPy path decides
FAILED = 2          # non-finite input or result, or model/data mismatch: the checked path names it
SINGULAR_M = 1e-12  # pivot^2 of M relative to its largest diagonal entry (contact.py's _SINGULAR)
SINGULAR_G = 1e-8   # pivot^2 of G relative to its largest diagonal entry: above the eigenvalue cut
                    # (1e-12) of the pseudo-inverse with margin, so the two paths agree where both run


@njit(cache=True, forceinline=True)
def side_pose(frame_body, frame_R, frame_p, oR, op, f, R, p):
    """World pose (R, p) of frame f (f = -1: the world's origin) and its body (-1: none moving)."""
    if f < 0:
        for r in range(3):
            for c in range(3):
                R[r, c] = 1.0 if r == c else 0.0
            p[r] = 0.0
        return -1
    b = frame_body[f]
    if b < 0:
        for r in range(3):
            for c in range(3):
                R[r, c] = frame_R[f, r, c]
            p[r] = frame_p[f, r]
        return -1
    for r in range(3):
        for c in range(3):
            s = 0.0
            for k in range(3):
                s += oR[b, r, k] * frame_R[f, k, c]
            R[r, c] = s
        s = op[b, r]
        for k in range(3):
            s += oR[b, r, k] * frame_p[f, k]
        p[r] = s
    return b


@njit(cache=True, inline="always")
def cross3(a, b, out):
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]


@njit(cache=True, forceinline=True)
def row_of_motion(X, dim, local, R1, p1, p_side, out, t):
    """The rows of a motion vector X (world axes, at the origin) for one contact: "point":
    X_v + X_w x p_side (in frame 1's axes if local); "frame": [w; v + w x p1], rotated to frame 1's
    axes if local. t: (>= 2, 6) scratch."""
    w = t[0, 0:3]
    u = t[1, 0:3]
    if dim == 3:
        cross3(X[0:3], p_side, w)
        for r in range(3):
            u[r] = X[3 + r] + w[r]
        for r in range(3):
            out[r] = (R1[0, r] * u[0] + R1[1, r] * u[1] + R1[2, r] * u[2]) if local else u[r]
        return
    cross3(X[0:3], p1, w)
    for r in range(3):
        u[r] = X[3 + r] + w[r]
    for r in range(3):
        if local:
            out[r] = R1[0, r] * X[0] + R1[1, r] * X[1] + R1[2, r] * X[2]
            out[3 + r] = R1[0, r] * u[0] + R1[1, r] * u[1] + R1[2, r] * u[2]
        else:
            out[r] = X[r]
            out[3 + r] = u[r]


@njit(cache=True, forceinline=True)
def point_acceleration(V, A, p, out, t):
    """Classical acceleration of the point p of a body with twist V and acceleration A (world):
    A_v + A_w x p + w x (V_v + w x p)."""
    wp = t[0, 0:3]
    pd = t[1, 0:3]
    cross3(V[0:3], p, wp)
    for r in range(3):
        pd[r] = V[3 + r] + wp[r]
    cross3(V[0:3], pd, wp)
    for r in range(3):
        out[r] = A[3 + r] + wp[r]
    cross3(A[0:3], p, pd)
    for r in range(3):
        out[r] += pd[r]


@njit(cache=True, forceinline=True)
def contact_rows(parents, frame_body, frame_R, frame_p, oR, op, oS, oV, oA, spec, J, gamma, sides, t, with_gamma):
    """J (m, nv) and, when with_gamma, gamma (m,) = the constraint acceleration at a = 0 (oA built
    with a = 0; oV and oA unused without it). sides: (2, 4, 6) scratch (R rows 0-2 in [:, 0:3, 0:3],
    p in row 3); t: (>= 8, 6) scratch."""
    J[:, :] = 0.0
    row = 0
    zero6 = t[7]
    zero6[:] = 0.0
    for c in range(spec.shape[0]):
        dim = spec[c, 2]
        local = spec[c, 3] == 1
        R1 = sides[0, 0:3, 0:3]
        p1 = sides[0, 3, 0:3]
        R2 = sides[1, 0:3, 0:3]
        p2 = sides[1, 3, 0:3]
        b1 = side_pose(frame_body, frame_R, frame_p, oR, op, spec[c, 0], R1, p1)
        b2 = side_pose(frame_body, frame_R, frame_p, oR, op, spec[c, 1], R2, p2)
        out = t[2]
        # columns: each side's supports k add +-(row of oS_k)
        for s in range(2):
            b = b1 if s == 0 else b2
            sign = 1.0 if s == 0 else -1.0
            ps = p1 if s == 0 else p2
            k = b
            while k >= 0:
                row_of_motion(oS[k], dim, local, R1, p1, ps, out, t)
                for r in range(dim):
                    J[row + r, k] += sign * out[r]
                k = parents[k]
        if not with_gamma:
            row += dim
            continue
        V1 = zero6 if b1 < 0 else oV[b1]
        A1 = zero6 if b1 < 0 else oA[b1]
        V2 = zero6 if b2 < 0 else oV[b2]
        A2 = zero6 if b2 < 0 else oA[b2]
        g = gamma[row:row + dim]
        if dim == 3:
            acc1 = t[3, 0:3]
            acc2 = t[4, 0:3]
            point_acceleration(V1, A1, p1, acc1, t)
            point_acceleration(V2, A2, p2, acc2, t)
            for r in range(3):
                acc1[r] -= acc2[r]
            for r in range(3):
                g[r] = (R1[0, r] * acc1[0] + R1[1, r] * acc1[1] + R1[2, r] * acc1[2]) if local else acc1[r]
        else:
            dA = t[3]
            for r in range(6):
                dA[r] = A1[r] - A2[r]
            row_of_motion(dA, 6, local, R1, p1, p1, g, t)
            if local:
                # + u x w2, u = Ad^-1 (V1 - V2), w2 = Ad^-1 V2 (both in frame 1)
                dV = t[4]
                for r in range(6):
                    dV[r] = V1[r] - V2[r]
                u = t[5]
                w2 = t[6]
                row_of_motion(dV, 6, True, R1, p1, p1, u, t)
                row_of_motion(V2, 6, True, R1, p1, p1, w2, t)
                # motion cross product u x w2: [uw x ww; uw x wv + uv x ww]
                x = t[3, 0:3]
                cross3(u[0:3], w2[0:3], x)
                for r in range(3):
                    g[r] += x[r]
                cross3(u[0:3], w2[3:6], x)
                for r in range(3):
                    g[3 + r] += x[r]
                cross3(u[3:6], w2[0:3], x)
                for r in range(3):
                    g[3 + r] += x[r]
        row += dim


@njit(cache=True, forceinline=True)
def tree_factor(M, parents, L, threshold):
    """M = L^T L with L lower triangular and nonzero only at (k, ancestors of k) (Featherstone's LTL,
    RBDA sec. 6.5: a tree's M factors without fill-in). False when a pivot falls below threshold *
    max(diag M) (a massless subtree: M singular) or M has a non-positive diagonal entry."""
    n = M.shape[0]
    top = largest_diagonal(M)
    if top < 0.0:
        return False
    L[:, :] = 0.0
    for k in range(n):
        i = k
        while i >= 0:
            L[k, i] = M[k, i]
            i = parents[i]
    for k in range(n - 1, -1, -1):
        d = L[k, k]
        if not d > threshold * top:
            return False
        lkk = np.sqrt(d)
        L[k, k] = lkk
        i = parents[k]
        while i >= 0:
            L[k, i] /= lkk
            i = parents[i]
        i = parents[k]
        while i >= 0:
            j = i
            while j >= 0:
                L[i, j] -= L[k, i] * L[k, j]
                j = parents[j]
            i = parents[i]
    return True


@njit(cache=True, forceinline=True)
def solve_lt(L, parents, x):
    """x <- L^-T x, the first half of M^-1 x with M = L^T L from tree_factor (leaves to root)."""
    for i in range(L.shape[0] - 1, -1, -1):
        x[i] /= L[i, i]
        j = parents[i]
        while j >= 0:
            x[j] -= L[i, j] * x[i]
            j = parents[j]


@njit(cache=True, forceinline=True)
def solve_l(L, parents, x):
    """x <- L^-1 x, the second half of M^-1 x (root to leaves)."""
    for i in range(L.shape[0]):
        j = parents[i]
        while j >= 0:
            x[i] -= L[i, j] * x[j]
            j = parents[j]
        x[i] /= L[i, i]


@njit(cache=True, inline="always")
def _zero_row(x):
    for value in x:
        if value != 0.0:
            return False
    return True


@njit(cache=True, forceinline=True)
def solve_lt_columns(L, parents, X):
    """X <- L^-T X for X (n, m) (rows inner: contiguous). A row still zero when its turn comes
    changes nothing and is skipped: for contact rows, whose columns are zero outside the supports
    of the contact bodies, the work is over those supports only."""
    for i in range(L.shape[0] - 1, -1, -1):
        row = X[i]
        if _zero_row(row):
            continue
        d = L[i, i]
        for c in range(row.shape[0]):
            row[c] /= d
        j = parents[i]
        while j >= 0:
            lij = L[i, j]
            for c in range(row.shape[0]):
                X[j, c] -= lij * row[c]
            j = parents[j]


@njit(cache=True, forceinline=True)
def solve_l_columns(L, parents, X):
    """X <- L^-1 X for X (n, m)."""
    m = X.shape[1]
    for i in range(L.shape[0]):
        j = parents[i]
        while j >= 0:
            lij = L[i, j]
            for c in range(m):
                X[i, c] -= lij * X[j, c]
            j = parents[j]
        d = L[i, i]
        for c in range(m):
            X[i, c] /= d


@njit(cache=True, forceinline=True)
def tree_solve_columns(L, parents, X):
    """X <- M^-1 X in place for X (n, m), M = L^T L from tree_factor."""
    solve_lt_columns(L, parents, X)
    solve_l_columns(L, parents, X)


@njit(cache=True, forceinline=True)
def delassus_solve(M, parents, J, L, Y, G, LG, x, rhs_c, lam):
    """With x = rhs_dynamics and rhs_c on entry: x <- the KKT solution, lam <- its multipliers of
    M x - J^T lam = rhs_dynamics, J x = rhs_c. With M = L^T L (tree_factor) and Z = L^-T J^T, whose
    rows are zero outside the supports of the contact bodies (solve_lt_columns works there only):
        G = J M^-1 J^T = Z^T Z,   lam = G^-1 (rhs_c - Z^T z),   x = L^-1 (z + Z lam),   z = L^-T x.
    On return Y (nv, m) holds Z (solve_l_columns(L, parents, Y) makes it M^-1 J^T, as the derivative
    kernels use it); G, LG (m, m) are scratch. False (x, lam undefined) when M or G is numerically
    singular."""
    nv = M.shape[0]
    m = J.shape[0]
    if not tree_factor(M, parents, L, SINGULAR_M):
        return False
    for i in range(nv):
        for j in range(m):
            Y[i, j] = J[j, i]
    solve_lt_columns(L, parents, Y)
    solve_lt(L, parents, x)
    G[:, :] = 0.0
    for i in range(m):
        lam[i] = rhs_c[i]
    for k in range(nv):
        z = Y[k]
        if _zero_row(z):
            continue
        for i in range(m):
            lam[i] -= z[i] * x[k]
            for j in range(i + 1):
                G[i, j] += z[i] * z[j]
    for i in range(m):
        for j in range(i):
            G[j, i] = G[i, j]
    if not cholesky_factor(G, LG, SINGULAR_G):
        return False
    forward_substitute(LG, lam)
    back_substitute(LG, lam)
    for k in range(nv):
        s = 0.0
        for j in range(m):
            s += Y[k, j] * lam[j]
        x[k] += s
    solve_l(L, parents, x)
    return True


@njit(cache=True, forceinline=True)
def workspace_size(nv, m):
    return m * nv + m + nv * nv + nv * m + 2 * m * m + 48 + 48


@njit(cache=True, inline="always")
def _views(ws, nv, m):
    """Named views of a workspace buffer (layout of workspace_size)."""
    o = 0
    J = view(ws, o, (m, nv))
    o += m * nv
    gamma = view(ws, o, (m,))
    o += m
    L = view(ws, o, (nv, nv))
    o += nv * nv
    Y = view(ws, o, (nv, m))
    o += nv * m
    G = view(ws, o, (m, m))
    o += m * m
    LG = view(ws, o, (m, m))
    o += m * m
    sides = view(ws, o, (2, 4, 6))
    o += 48
    t = view(ws, o, (8, 6))
    return J, gamma, L, Y, G, LG, sides, t


@njit(cache=True, forceinline=True)
def _rows_at(model, data, q, v, spec, ws, m, motion):
    """World motion at (q, v, a = 0) and the contact rows J, gamma (views of ws); without `motion`,
    the poses and screws at q and J only (v is checked finite, nothing else). False when the inputs
    or the motion are not finite, or the sizes do not fit."""
    nb = int(model[0])
    nf = int(model[2])
    if not (_e.fits(model, data, True) and q.shape[0] == nb and v.shape[0] == nb
            and ws.shape[0] == workspace_size(nb, m) and _e.has(data, _e.OV) and _e.has(data, _e.OA)):
        return False
    zero = _e.vec(data, _e.ZERO, nb)
    parents = _e.ints(model, _e.PARENTS, nb)
    oR, op, oS, oV, oA = _world_motion_views(data, nb)
    screw_axes = _e.mat(model, _e.SCREW_AXES, nb, 6)
    home_R = _e.cube(model, _e.HOME_R, nb, 3, 3)
    home_p = _e.mat(model, _e.HOME_P, nb, 3)
    R = _e.cube(data, _e.R, nb, 3, 3)
    p = _e.mat(data, _e.P, nb, 3)
    if motion:
        if not world_motion(parents, screw_axes, home_R, home_p, q, v, zero, R, p, oR, op, oS, oV, oA,
                            _e.mat(data, _e.TMP6, 4, 6)):
            return False
    else:
        if not (all_finite(q) and all_finite(v)):
            return False
        world_screws(parents, screw_axes, home_R, home_p, q, R, p, oR, op, oS)
        if not all_finite(op):
            return False
    J, gamma, L, Y, G, LG, sides, t = _views(ws, nb, m)
    contact_rows(parents, _e.ints(model, _e.FRAME_BODY, nf), _e.cube(model, _e.FRAME_R, nf, 3, 3),
                 _e.mat(model, _e.FRAME_P, nf, 3), oR, op, oS, oV, oA, spec, J, gamma, sides, t, motion)
    return True


@njit(cache=True, inline="always")
def _world_motion_views(data, nb):
    """data's root-frame poses, screws, twists and accelerations: (oR, op, oS, oV, oA)."""
    return (_e.cube(data, _e.OR, nb, 3, 3), _e.mat(data, _e.OP, nb, 3), _e.mat(data, _e.OS, nb, 6),
            _e.mat(data, _e.OV, nb, 6), _e.mat(data, _e.OA, nb, 6))


@njit(cache=True, forceinline=True)
def world_dynamics(model, data, nb, nle):
    """From the world motion of _rows_at (oR, op, oS, oV and oA at a = 0): data.M (crba's sums in
    the root frame, without recomputing the kinematics) and, when nle is True, data.nle = b(q, v)
    (inverse dynamics in the root frame, gravity as the base acceleration). False when M or b is not
    finite."""
    parents = _e.ints(model, _e.PARENTS, nb)
    phi = _e.mat(model, _e.PHI, nb, 10)
    base_accel = _e.vec(model, _e.BASE_ACCEL, 6)
    oR, op, oS, oV, oA = _world_motion_views(data, nb)
    phi_c = _e.mat(data, _e.PHI_COMPOSITE, nb, 10)
    F = _e.mat(data, _e.F, nb, 6)
    M = _e.mat(data, _e.M, nb, nb)
    b = _e.vec(data, _e.NLE, nb)
    tmp = _e.mat(data, _e.TMP6, 4, 6)
    for i in range(nb):
        # body inertia in the root frame
        phi_c[i, :] = 0.0
        phi_to_parent_add(oR[i], op[i], phi[i], phi_c[i])
    if nle:
        acc = tmp[0]
        IV = tmp[1]
        for i in range(nb):
            # F_i = I_i (A_i + a_base) + V_i x* I_i V_i, the body's own force
            for k in range(6):
                acc[k] = oA[i, k] + base_accel[k]
            inertia_times(phi_c[i], acc, F[i])
            inertia_times(phi_c[i], oV[i], IV)
            cross_force(oV[i], IV, acc)
            for k in range(6):
                F[i, k] += acc[k]
        for i in range(nb - 1, -1, -1):
            # b_i = S_i . (forces of the subtree of i)
            b[i] = dot6(oS[i], F[i])
            j = parents[i]
            if j >= 0:
                for k in range(6):
                    F[j, k] += F[i, k]
    subtree_sums(parents, phi_c)
    inertia_matrix(parents, oS, phi_c, F, M)
    return all_finite(M) and (not nle or all_finite(b))


@njit(cache=True, _nrt=False)
def constrained_dynamics(model, data, q, v, tau, spec, ws, a, lam):
    """a, lam of the KKT system M a - J^T lam = tau - b(q, v), J a = -gamma (no Baumgarte gains).
    model, data: the packed buffers (entry.py); spec the contact rows (module doc); ws the workspace
    buffer (workspace_size(nv, m)), a (nv,) and lam (m,) the outputs. (The entry kernel: contact.py
    makes its dispatcher strict, so other kernels call solve_constrained.)"""
    return solve_constrained(model, data, q, v, tau, spec, ws, a, lam)


@njit(cache=True, forceinline=True)
def solve_constrained(model, data, q, v, tau, spec, ws, a, lam):
    """constrained_dynamics, callable from other kernels."""
    nb = int(model[0])
    m = lam.shape[0]
    if not (tau.shape[0] == nb and a.shape[0] == nb and all_finite(tau)
            and _rows_at(model, data, q, v, spec, ws, m, True)):
        return FAILED
    J, gamma, L, Y, G, LG, sides, t = _views(ws, nb, m)
    if not world_dynamics(model, data, nb, True):
        return FAILED
    nle = _e.vec(data, _e.NLE, nb)
    M = _e.mat(data, _e.M, nb, nb)
    joint_terms = _e.mat(model, _e.JOINT_TERMS, nb, 3)
    add_armature(joint_terms, M)
    if not add_friction_torque(joint_terms, v, nle):
        return FAILED
    for i in range(nb):
        a[i] = tau[i] - nle[i]
    for i in range(m):
        gamma[i] = -gamma[i]
    if not (all_finite(J) and all_finite(gamma) and all_finite(a)):
        return FAILED
    if not delassus_solve(M, _e.ints(model, _e.PARENTS, nb), J, L, Y, G, LG, a, gamma, lam):
        return SINGULAR
    return OK if all_finite(a) and all_finite(lam) else FAILED


@njit(cache=True, _nrt=False)
def impulse_dynamics(model, data, q, v_minus, restitution, spec, ws, v_plus, impulses):
    """v_plus, impulses of M (v+ - v-) = J^T impulses, J v+ = -e J v- (the entry kernel; other
    kernels call solve_impulse)."""
    return solve_impulse(model, data, q, v_minus, restitution, spec, ws, v_plus, impulses)


@njit(cache=True, forceinline=True)
def solve_impulse(model, data, q, v_minus, restitution, spec, ws, v_plus, impulses):
    """impulse_dynamics, callable from other kernels."""
    nb = int(model[0])
    m = impulses.shape[0]
    if not (v_plus.shape[0] == nb and _rows_at(model, data, q, v_minus, spec, ws, m, False)):
        return FAILED
    J, gamma, L, Y, G, LG, sides, t = _views(ws, nb, m)
    if not world_dynamics(model, data, nb, False):
        return FAILED
    M = _e.mat(data, _e.M, nb, nb)
    add_armature(_e.mat(model, _e.JOINT_TERMS, nb, 3), M)
    for i in range(m):
        s = 0.0
        for k in range(nb):
            s += J[i, k] * v_minus[k]
        gamma[i] = -(1.0 + restitution) * s
    for i in range(nb):
        v_plus[i] = 0.0
    if not (all_finite(J) and all_finite(gamma)):
        return FAILED
    if not delassus_solve(M, _e.ints(model, _e.PARENTS, nb), J, L, Y, G, LG, v_plus, gamma, impulses):
        return SINGULAR
    for i in range(nb):
        v_plus[i] += v_minus[i]
    return OK if all_finite(v_plus) and all_finite(impulses) else FAILED
