"""First-order derivatives of constrained (KKT) dynamics and impulse dynamics, compiled (seed "Details
of Partial Derivatives of Rigid-Body Inverse Dynamics", secs. XI.1 and XII.1; the readable reference
is the NumPy code of dyn_control/contact.py, whose terms these kernels reproduce one for one).

Each entry kernel first runs its forward kernel (kernels/constrained_dynamics.py), which leaves in
the workspace the rows J, the tree-sparse factor L of M (M = L^T L), Z = L^-T J^T (completed here
to Y = M^-1 J^T = L^-1 Z) and the Cholesky factor LG of the Delassus matrix G = J M^-1 J^T.
Differentiating the KKT system at the solution gives, for every column at once, the same system
with other right-hand sides (eq. 314 / 426),
    [M  -J^T] [dx  ]   [rhs_d]
    [J    0 ] [dlam] = [rhs_c],     dlam = G^-1 (rhs_c - J M^-1 rhs_d),   dx = M^-1 rhs_d + Y dlam,
solved with those factors (nothing is factored again).

Constrained dynamics, columns [q | v | tau] (eqs. 316, 317, 319):
    rhs_d = [-(dID/dq - d(J^T lam)/dq), -dID/dv, I],    rhs_c = [-d alpha/dq, -d alpha/dv, 0],
ID's derivatives at the solution a (kernels/rnea_derivatives.py), alpha = J a + gamma the constraint
acceleration at a with the joint accelerations held, lam held in its reference axes.
Impulse dynamics, columns [q | v_minus] (eqs. 424-430):
    rhs_d = [-d(M dv)/dq + d(J^T Lambda)/dq, M],        rhs_c = [-d(J w)/dq, -e J],
dv = v+ - v- and w = v+ + e v- held; d(M dv)/dq is ID's derivative at (v = 0, a = dv) without
gravity; the v_minus block is closed-form (eq. 430): dLambda/dv- = -(1 + e) G^-1 J,
dv+/dv- = I + Y dLambda/dv-.

The contacts' terms come from kernels/contact.py: the sides' world Jacobians and motion derivatives
(motion_derivatives), and d(J^T lam)/dq of the wrenches the forces put on the two bodies
(add_force_torque_derivatives). An entry kernel returns the forward kernel's verdict when it is not
OK (SINGULAR: the NumPy path decides), FAILED when a result is not finite.
"""
from ..jit import njit
from ..spatial import cross_force, cross_motion
from . import entry as _e
from .constrained_dynamics import (FAILED, OK, _views, cross3, point_acceleration,
                                   row_of_motion, side_pose, solve_constrained, solve_impulse,
                                   solve_l_columns, tree_solve_columns)
from .contact import add_force_torque_derivatives, motion_derivatives
from .inputs import all_finite
from .joint_terms import add_joint_derivatives
from .kinematics import support_path
from .packed import int_view, view
from .rnea_derivatives import derivative_matrices, world_forces


# ----------------------------------------------------------------------------------------------
# Workspace (one float64 buffer per contact set, beside the forward kernels' one)


@njit(cache=True, forceinline=True)
def derivative_workspace_size(nv, m):
    """Size of the derivative workspace (the contact rows' m-sized buffers are the outputs')."""
    return 3 * nv * nv + nv * nv + 2 * 4 * 6 * nv + 6 * nv + 3 * nv + 48 + 24 * 6


@njit(cache=True, inline="always")
def _derivative_views(dws, nv):
    """Named views of a derivative workspace buffer (layout of derivative_workspace_size)."""
    o = 0
    tri = view(dws, o, (3, nv, nv))   # ID's dtau/dq, dtau/dv, M
    o += 3 * nv * nv
    W = view(dws, o, (nv, nv))        # d(J^T lam)/dq at fixed lam
    o += nv * nv
    sd = view(dws, o, (2, 4, 6, nv))  # per side: J, dV/dq, dA/dq, dA/dv (world)
    o += 48 * nv
    dF = view(dws, o, (6, nv))        # d(wrench on a side)/dq
    o += 6 * nv
    vecs = view(dws, o, (2, nv))      # dv, w (impulse)
    o += 2 * nv
    cols = int_view(dws, o, nv)       # the columns a contact's rows depend on
    o += nv
    poses = view(dws, o, (2, 4, 6))   # R rows 0-2 in [:, 0:3, 0:3], p in row 3
    o += 48
    t = view(dws, o, (24, 6))         # scratch 6-vectors: contact_derivatives
    return tri, W, sd, dF, vecs, cols, poses, t


@njit(cache=True, inline="always")
def _solved(model, ws, nv, m):
    """(parents, J, L, Y, LG) of a forward solve's workspace, with Y = M^-1 J^T made from the forward
    solve's L^-T J^T."""
    J, gamma, L, Y, G, LG, sides, _ = _views(ws, nv, m)
    parents = _e.ints(model, _e.PARENTS, nv)
    solve_l_columns(L, parents, Y)
    return parents, J, L, Y, LG


# ----------------------------------------------------------------------------------------------
# Derivatives of the rows of one contact (NumPy: _Rows.acceleration_derivatives,
# _Rows.velocity_derivatives, _Rows.applied_forces); sd[s] holds side s's J, dV/dq, dA/dq, dA/dv.
# They fill the columns cols[:ncols], the supports of the two bodies (the others stay zero).


@njit(cache=True, inline="always")
def cross3_add(a, b, scale, out):
    """out += scale (a x b) for 3-vectors."""
    out[0] += scale * (a[1] * b[2] - a[2] * b[1])
    out[1] += scale * (a[2] * b[0] - a[0] * b[2])
    out[2] += scale * (a[0] * b[1] - a[1] * b[0])


@njit(cache=True, inline="always")
def _column(D, k, out):
    """out = D[:, k] for D (6, nv)."""
    for r in range(6):
        out[r] = D[r, k]


@njit(cache=True, forceinline=True)
def point_derivatives(local, impulse, b1, b2, R1, p1, p2, V1, A1, V2, A2, sd, cols, ncols, out_q, out_v, t):
    """Rows of a "point" contact: out_q = -d alpha/dq, out_v = -d alpha/dv with alpha the relative
    classical acceleration of the two points (or, impulse: out_q = -d u/dq, u their relative
    velocity, out_v untouched), in frame 1's axes when local. t: (16, 6) scratch."""
    pd = t[0:2, 0:3]    # point velocities V_v + w x p of the sides
    rel = t[2, 0:3]     # acc1 - acc2 (or pd1 - pd2 for impulses), world
    S = t[3]            # the side's Jacobian column k
    dV = t[4]
    dA = t[5]
    dAv = t[6]
    jp = t[7, 0:3]      # the point's Jacobian column: S_v + S_w x p
    dpd = t[8, 0:3]     # d pd / dq_k = dV_v + dV_w x p + w x jp
    dq = t[9, 0:3]
    dv = t[9, 3:6]
    S1w = t[10, 0:3]
    acc = t[11:13, 0:3]
    for s in range(2):
        p = p1 if s == 0 else p2
        V = V1 if s == 0 else V2
        A = A1 if s == 0 else A2
        for r in range(3):
            pd[s, r] = V[3 + r]
        cross3_add(V[0:3], p, 1.0, pd[s])
        point_acceleration(V, A, p, acc[s], t[13:15])
    for r in range(3):
        rel[r] = (pd[0, r] - pd[1, r]) if impulse else (acc[0, r] - acc[1, r])
    for kk in range(ncols):
        k = cols[kk]
        for r in range(3):
            dq[r] = 0.0
            dv[r] = 0.0
            S1w[r] = 0.0
        for s in range(2):
            if (b1 if s == 0 else b2) < 0:
                continue  # a side fixed to the world: no motion, no derivative
            sign = 1.0 if s == 0 else -1.0
            p = p1 if s == 0 else p2
            V = V1 if s == 0 else V2
            A = A1 if s == 0 else A2
            _column(sd[s, 0], k, S)
            _column(sd[s, 1], k, dV)
            if s == 0:
                for r in range(3):
                    S1w[r] = S[r]
            # the point moves with every support joint: jp = S_v + S_w x p
            for r in range(3):
                jp[r] = S[3 + r]
                dpd[r] = dV[3 + r]
            cross3_add(S[0:3], p, 1.0, jp)
            cross3_add(dV[0:3], p, 1.0, dpd)
            cross3_add(V[0:3], jp, 1.0, dpd)
            if impulse:
                for r in range(3):
                    dq[r] += sign * dpd[r]
                continue
            _column(sd[s, 2], k, dA)
            _column(sd[s, 3], k, dAv)
            # d acc / dq_k = dA_v + dA_w x p + A_w x jp + dV_w x pd + w x dpd
            for r in range(3):
                dq[r] += sign * dA[3 + r]
            cross3_add(dA[0:3], p, sign, dq)
            cross3_add(A[0:3], jp, sign, dq)
            cross3_add(dV[0:3], pd[s], sign, dq)
            cross3_add(V[0:3], dpd, sign, dq)
            # d acc / dv_k = dAv_v + dAv_w x p + S_w x pd + w x jp
            for r in range(3):
                dv[r] += sign * dAv[3 + r]
            cross3_add(dAv[0:3], p, sign, dv)
            cross3_add(S[0:3], pd[s], sign, dv)
            cross3_add(V[0:3], jp, sign, dv)
        if local:
            # d R1^T / dq_k = -R1^T [S1_w]: R1^T (d - S1_w x rel)
            cross3_add(S1w, rel, -1.0, dq)
            for r in range(3):
                out_q[r, k] = -(R1[0, r] * dq[0] + R1[1, r] * dq[1] + R1[2, r] * dq[2])
                if not impulse:
                    out_v[r, k] = -(R1[0, r] * dv[0] + R1[1, r] * dv[1] + R1[2, r] * dv[2])
        else:
            for r in range(3):
                out_q[r, k] = -dq[r]
                if not impulse:
                    out_v[r, k] = -dv[r]


@njit(cache=True, forceinline=True)
def frame_world_derivatives(impulse, p1, V1, A1, V2, A2, sd, cols, ncols, out_q, out_v, t):
    """Rows of a "frame" contact in "local_world_aligned": alpha = the relative acceleration taken
    at p1, [dA_w; dA_v + dA_w x p1]; its q-derivative adds (A1 - A2)_w x jp1 (p1 moves). Impulse:
    the same for the relative twist. out_q = -d/dq, out_v = -d/dv (not for impulses)."""
    S1 = t[0]
    X = t[1]      # dA/dq (or dV/dq) of side 1 less side 2's
    Xv = t[2]     # dA/dv of side 1 less side 2's
    jp = t[3, 0:3]
    rel = t[3, 3:6]
    x = t[4, 0:3]
    for r in range(3):
        rel[r] = (V1[r] - V2[r]) if impulse else (A1[r] - A2[r])
    which = 1 if impulse else 2
    for kk in range(ncols):
        k = cols[kk]
        _column(sd[0, 0], k, S1)
        for r in range(6):
            X[r] = sd[0, which, r, k] - sd[1, which, r, k]
            Xv[r] = sd[0, 3, r, k] - sd[1, 3, r, k]
        for r in range(3):
            jp[r] = S1[3 + r]
            x[r] = X[3 + r]
        cross3_add(S1[0:3], p1, 1.0, jp)
        cross3_add(X[0:3], p1, 1.0, x)
        cross3_add(rel, jp, 1.0, x)
        for r in range(3):
            out_q[r, k] = -X[r]
            out_q[3 + r, k] = -x[r]
        if not impulse:
            for r in range(3):
                x[r] = Xv[3 + r]
            cross3_add(Xv[0:3], p1, 1.0, x)
            for r in range(3):
                out_v[r, k] = -Xv[r]
                out_v[3 + r, k] = -x[r]


@njit(cache=True, forceinline=True)
def frame_local_derivatives(impulse, R1, p1, V1, A1, V2, A2, sd, cols, ncols, out_q, out_v, t):
    """Rows of a "frame" contact in "local": with L = Ad_{c1}^-1 (world motion into frame 1, which
    moves with body 1: d L X / dq_k = L (dX/dq_k + X x S1_k)),
        alpha = L(A1 - A2) + u x w2,   u = L(V1 - V2),   w2 = L(V2),
        d alpha/dq = L(dA1 - dA2 + (A1 - A2) x S1) - w2 x du/dq + u x dw2/dq,
        d alpha/dv = L(dA1/dv - dA2/dv) - w2 x L(S1 - S2) + u x L(S2);
    impulse: du/dq = L(dV1 - dV2 + (V1 - V2) x S1). out_q = -d/dq, out_v = -d/dv (not for impulses)."""
    tl = t[14:16]  # row_of_motion's scratch
    dV12 = t[0]
    u = t[1]
    w2 = t[2]
    dA12 = t[3]
    S1 = t[4]
    S2 = t[5]
    x = t[6]
    du = t[7]
    dw2 = t[8]
    d = t[9]
    c = t[10]
    for r in range(6):
        dV12[r] = V1[r] - V2[r]
        dA12[r] = A1[r] - A2[r]
    row_of_motion(dV12, 6, True, R1, p1, p1, u, tl)
    row_of_motion(V2, 6, True, R1, p1, p1, w2, tl)
    for kk in range(ncols):
        k = cols[kk]
        _column(sd[0, 0], k, S1)
        _column(sd[1, 0], k, S2)
        # du/dq_k = L(dV1 - dV2 + (V1 - V2) x S1)
        cross_motion(dV12, S1, c)
        for r in range(6):
            x[r] = sd[0, 1, r, k] - sd[1, 1, r, k] + c[r]
        row_of_motion(x, 6, True, R1, p1, p1, du, tl)
        if impulse:
            for r in range(6):
                out_q[r, k] = -du[r]
            continue
        # dw2/dq_k = L(dV2 + V2 x S1)
        cross_motion(V2, S1, c)
        for r in range(6):
            x[r] = sd[1, 1, r, k] + c[r]
        row_of_motion(x, 6, True, R1, p1, p1, dw2, tl)
        # d alpha/dq_k = L(dA1 - dA2 + (A1 - A2) x S1) - w2 x du + u x dw2
        cross_motion(dA12, S1, c)
        for r in range(6):
            x[r] = sd[0, 2, r, k] - sd[1, 2, r, k] + c[r]
        row_of_motion(x, 6, True, R1, p1, p1, d, tl)
        _minus_alpha_column(d, w2, du, u, dw2, c, out_q, k)
        # d alpha/dv_k = L(dA1/dv - dA2/dv) - w2 x L(S1 - S2) + u x L(S2)
        for r in range(6):
            x[r] = S1[r] - S2[r]
        row_of_motion(x, 6, True, R1, p1, p1, du, tl)
        row_of_motion(S2, 6, True, R1, p1, p1, dw2, tl)
        for r in range(6):
            x[r] = sd[0, 3, r, k] - sd[1, 3, r, k]
        row_of_motion(x, 6, True, R1, p1, p1, d, tl)
        _minus_alpha_column(d, w2, du, u, dw2, c, out_v, k)


@njit(cache=True, inline="always")
def _minus_alpha_column(d, w2, du, u, dw2, c, out, k):
    """Column k of out = -(d - w2 x du + u x dw2), a derivative of the rows' alpha by the product
    rule (c: scratch)."""
    cross_motion(w2, du, c)
    for r in range(6):
        d[r] -= c[r]
    cross_motion(u, dw2, c)
    for r in range(6):
        out[r, k] = -(d[r] + c[r])


@njit(cache=True, forceinline=True)
def add_force_derivatives(parents, oS, dim, local, b1, b2, R1, p1, p2, sd, cols, ncols, lam, dF, t, W):
    """W += d(J^T lam)/dq at fixed lam (in the contact's reference axes) for one contact: the world
    wrenches F (at the root origin) lam puts on body 1 and, opposite, on body 2, and their
    derivatives dF/dq (they move with p1, p2 and, when local, with frame 1's axes). t: (16, 6)."""
    F = t[0]
    S = t[1]
    x = t[2]
    tmp = t[12:16]  # add_force_torque_derivatives' scratch
    if dim == 3:
        # a force f (world axes) at the point: F = [p x f; f], dF/dq_k = [jp x f + p x df; df],
        # df = S1_w x f when f = R1 lam turns with frame 1, jp = S_v + S_w x p
        f = t[3, 0:3]
        for r in range(3):
            f[r] = (R1[r, 0] * lam[0] + R1[r, 1] * lam[1] + R1[r, 2] * lam[2]) if local else lam[r]
        for s in range(2):
            b = b1 if s == 0 else b2
            if b < 0:
                continue
            p = p1 if s == 0 else p2
            cross3(p, f, F[0:3])
            for r in range(3):
                F[3 + r] = f[r]
            for kk in range(ncols):
                k = cols[kk]
                df = x[3:6]
                for r in range(3):
                    df[r] = 0.0
                if local:
                    for r in range(3):
                        S[r] = sd[0, 0, r, k]
                    cross3_add(S[0:3], f, 1.0, df)
                _column(sd[s, 0], k, S)
                jp = x[0:3]
                for r in range(3):
                    jp[r] = S[3 + r]
                cross3_add(S[0:3], p, 1.0, jp)
                for r in range(3):
                    dF[3 + r, k] = df[r]
                cross3(jp, f, S[0:3])
                cross3(p, df, S[3:6])
                for r in range(3):
                    dF[r, k] = S[r] + S[3 + r]
            add_force_torque_derivatives(parents, oS, b, F, dF, 1.0 if s == 0 else -1.0, tmp, W)
        return
    if local:
        # lam = [n; f] in frame 1: F = [R1 n + p1 x R1 f; R1 f] moves with body 1: dF/dq_k = S1_k x* F
        for r in range(3):
            F[r] = R1[r, 0] * lam[0] + R1[r, 1] * lam[1] + R1[r, 2] * lam[2]
            F[3 + r] = R1[r, 0] * lam[3] + R1[r, 1] * lam[4] + R1[r, 2] * lam[5]
        cross3_add(p1, F[3:6], 1.0, F[0:3])
        for kk in range(ncols):
            k = cols[kk]
            _column(sd[0, 0], k, S)
            cross_force(S, F, x)
            for r in range(6):
                dF[r, k] = x[r]
    else:
        # lam = [n; f] at p1 in world axes: F = [n + p1 x f; f], dF/dq_k = [jp1 x f; 0]
        for r in range(6):
            F[r] = lam[r]
        cross3_add(p1, lam[3:6], 1.0, F[0:3])
        for kk in range(ncols):
            k = cols[kk]
            _column(sd[0, 0], k, S)
            jp = x[0:3]
            for r in range(3):
                jp[r] = S[3 + r]
            cross3_add(S[0:3], p1, 1.0, jp)
            cross3(jp, lam[3:6], x[3:6])
            for r in range(3):
                dF[r, k] = x[3 + r]
                dF[3 + r, k] = 0.0
    if b1 >= 0:
        add_force_torque_derivatives(parents, oS, b1, F, dF, 1.0, tmp, W)
    if b2 >= 0:
        add_force_torque_derivatives(parents, oS, b2, F, dF, -1.0, tmp, W)


@njit(cache=True, forceinline=True)
def support_columns(parents, b1, b2, cols):
    """cols[:n] = the joints supporting body b1 or b2 (-1: none), each once; returns n. A contact's
    rows and their derivatives are zero in every other column."""
    n1 = support_path(parents, b1, cols, 0)
    n = n1
    k = b2
    while k >= 0:
        for i in range(n1):
            if cols[i] == k:
                return n  # a common support: the rest of b2's path is b1's
        cols[n] = k
        n += 1
        k = parents[k]
    return n


@njit(cache=True, forceinline=True)
def contact_derivatives(parents, frame_body, frame_R, frame_p, oR, op, oS, oV, oA, spec, lam, impulse,
                        out_q, out_v, W, sd, dF, cols, poses, t):
    """For every contact of spec (kernels/constrained_dynamics.py's module doc), with the world
    motion oS, oV, oA of the state to differentiate at: its rows of out_q = -d alpha/dq and out_v =
    -d alpha/dv (impulse: out_q = -d u/dq, u = J v with oV the twists of v; out_v untouched), and
    W += d(J^T lam)/dq at fixed lam. sd, dF, cols, poses: scratch; t: (24, 6) scratch (rows 0-15
    for the helpers above, 16 a zero 6-vector, 17-20 motion_derivatives')."""
    zero6 = t[16]
    zero6[:] = 0.0
    tmp6 = t[17:21]  # motion_derivatives' scratch
    ts = t[0:16]
    out_q[:, :] = 0.0
    if not impulse:
        out_v[:, :] = 0.0
    row = 0
    for c in range(spec.shape[0]):
        dim = spec[c, 2]
        local = spec[c, 3] == 1
        R1 = poses[0, 0:3, 0:3]
        p1 = poses[0, 3, 0:3]
        p2 = poses[1, 3, 0:3]
        b1 = side_pose(frame_body, frame_R, frame_p, oR, op, spec[c, 0], R1, p1)
        b2 = side_pose(frame_body, frame_R, frame_p, oR, op, spec[c, 1], poses[1, 0:3, 0:3], p2)
        for s in range(2):
            b = b1 if s == 0 else b2
            if b >= 0:
                motion_derivatives(parents, oS, oV, oA, b, sd[s, 0], sd[s, 1], sd[s, 2], sd[s, 3], tmp6)
            else:
                sd[s, :, :, :] = 0.0
        ncols = support_columns(parents, b1, b2, cols)
        V1 = zero6 if b1 < 0 else oV[b1]
        A1 = zero6 if b1 < 0 else oA[b1]
        V2 = zero6 if b2 < 0 else oV[b2]
        A2 = zero6 if b2 < 0 else oA[b2]
        rq = out_q[row:row + dim]
        rv = out_v[row:row + dim]
        if dim == 3:
            point_derivatives(local, impulse, b1, b2, R1, p1, p2, V1, A1, V2, A2, sd, cols, ncols, rq, rv, ts)
        elif local:
            frame_local_derivatives(impulse, R1, p1, V1, A1, V2, A2, sd, cols, ncols, rq, rv, ts)
        else:
            frame_world_derivatives(impulse, p1, V1, A1, V2, A2, sd, cols, ncols, rq, rv, ts)
        dF[:, :] = 0.0
        add_force_derivatives(parents, oS, dim, local, b1, b2, R1, p1, p2, sd, cols, ncols, lam[row:row + dim],
                              dF, ts, W)
        row += dim


# ----------------------------------------------------------------------------------------------
# The KKT solve of many columns with the forward kernel's factors


@njit(cache=True, forceinline=True)
def cholesky_solve_columns(L, X):
    """X <- (L L^T)^-1 X in place, X (n, k) (rows inner: contiguous)."""
    n = L.shape[0]
    k = X.shape[1]
    for i in range(n):
        for j in range(i):
            lij = L[i, j]
            for c in range(k):
                X[i, c] -= lij * X[j, c]
        d = L[i, i]
        for c in range(k):
            X[i, c] /= d
    for i in range(n - 1, -1, -1):
        for j in range(i + 1, n):
            lji = L[j, i]
            for c in range(k):
                X[i, c] -= lji * X[j, c]
        d = L[i, i]
        for c in range(k):
            X[i, c] /= d


@njit(cache=True, forceinline=True)
def kkt_columns(parents, J, L, Y, LG, X, Lam):
    """Columns of M X - J^T Lam = rhs_d, J X = rhs_c (eq. 314) with X = rhs_d (nv, k) and Lam =
    rhs_c (m, k) on entry: Lam <- G^-1 (rhs_c - J M^-1 rhs_d), X <- M^-1 rhs_d + Y Lam (L, LG the
    factors of M and G, Y = M^-1 J^T)."""
    nv = X.shape[0]
    m = Lam.shape[0]
    k = X.shape[1]
    tree_solve_columns(L, parents, X)
    for i in range(m):
        for j in range(nv):
            jij = J[i, j]
            if jij != 0.0:
                for c in range(k):
                    Lam[i, c] -= jij * X[j, c]
    cholesky_solve_columns(LG, Lam)
    add_product(Y, Lam, X)


@njit(cache=True, forceinline=True)
def add_product(Y, Lam, X):
    """X += Y Lam."""
    for i in range(X.shape[0]):
        for j in range(Y.shape[1]):
            yij = Y[i, j]
            for c in range(X.shape[1]):
                X[i, c] += yij * Lam[j, c]


# ----------------------------------------------------------------------------------------------
# Entry kernels (packed model and data buffers, kernels/entry.py)


@njit(cache=True, inline="always")
def _square(x, n):
    return x.shape[0] == n and x.shape[1] == n


@njit(cache=True, inline="always")
def _rows(x, m, n):
    return x.shape[0] == m and x.shape[1] == n


@njit(cache=True, inline="always")
def _fits(model, data, nb, m, dws):
    return (dws.shape[0] == derivative_workspace_size(nb, m) and _e.has(data, _e.DERIV_VECTORS)
            and _e.has(data, _e.OPHI_C) and _e.has(data, _e.F_EXT_ZERO) and _e.has(data, _e.ZERO))


@njit(cache=True, inline="always")
def _inverse_dynamics_derivatives(model, data, nb, oV, v, a, base_accel, tri):
    """tri = ID's dtau/dq, dtau/dv and M at (q, v, a) with the base acceleration given, from the
    forward kernel's world poses and screws (same q; oV the twists of v): kernels/rnea_derivatives.py
    less its kinematics pass. The accelerations (gravity included) land in DERIV_VECTORS[2]."""
    parents = _e.ints(model, _e.PARENTS, nb)
    oS = _e.mat(data, _e.OS, nb, 6)
    vectors = _e.cube(data, _e.DERIV_VECTORS, 9, nb, 6)
    ophi_c = _e.mat(data, _e.OPHI_C, nb, 10)
    tmp6 = _e.mat(data, _e.TMP6, 4, 6)
    world_forces(parents, _e.mat(model, _e.PHI, nb, 10), _e.cube(data, _e.OR, nb, 3, 3), _e.mat(data, _e.OP, nb, 3),
                 oS, oV, v, a, base_accel, _e.mat(data, _e.F_EXT_ZERO, nb, 6), vectors[2], ophi_c, vectors[3],
                 vectors[4], vectors[5], tmp6)
    derivative_matrices(parents, base_accel, oS, oV, vectors[2], ophi_c, vectors[3], vectors[4], vectors[5],
                        vectors[6], vectors[7], tmp6, tri[0], tri[1], tri[2])
    return all_finite(tri)


@njit(cache=True, inline="always")
def _contact_derivatives(model, data, nb, spec, lam, impulse, out_q, out_v, W, sd, dF, cols, poses, t):
    nf = int(model[2])
    W[:, :] = 0.0
    contact_derivatives(_e.ints(model, _e.PARENTS, nb), _e.ints(model, _e.FRAME_BODY, nf),
                        _e.cube(model, _e.FRAME_R, nf, 3, 3), _e.mat(model, _e.FRAME_P, nf, 3),
                        _e.cube(data, _e.OR, nb, 3, 3), _e.mat(data, _e.OP, nb, 3), _e.mat(data, _e.OS, nb, 6),
                        _e.mat(data, _e.OV, nb, 6), _e.mat(data, _e.OA, nb, 6), spec, lam, impulse, out_q, out_v,
                        W, sd, dF, cols, poses, t)


@njit(cache=True, _nrt=False)
def constrained_dynamics_derivatives(model, data, q, v, tau, spec, ws, dws, a, lam, da_dq, da_dv, da_dtau,
                                     dlam_dq, dlam_dv, dlam_dtau):
    """a, lam of constrained_dynamics (the forward kernel), then their derivatives da_dq, da_dv,
    da_dtau (nv, nv) and dlam_dq, dlam_dv, dlam_dtau (m, nv). ws, dws: the forward and the derivative
    workspace buffers (derivative_workspace_size(nv, m)). (The entry kernel: contact.py makes its
    dispatcher strict, so other kernels call solve_constrained_derivatives.)"""
    return solve_constrained_derivatives(model, data, q, v, tau, spec, ws, dws, a, lam, da_dq, da_dv, da_dtau,
                                         dlam_dq, dlam_dv, dlam_dtau)


@njit(cache=True, nogil=True)
def solve_constrained_derivatives(model, data, q, v, tau, spec, ws, dws, a, lam, da_dq, da_dv, da_dtau,
                                  dlam_dq, dlam_dv, dlam_dtau):
    """constrained_dynamics_derivatives, callable from other kernels."""
    nb = int(model[0])
    m = lam.shape[0]
    if not (_square(da_dq, nb) and _square(da_dv, nb) and _square(da_dtau, nb) and _rows(dlam_dq, m, nb)
            and _rows(dlam_dv, m, nb) and _rows(dlam_dtau, m, nb) and _fits(model, data, nb, m, dws)):
        return FAILED
    status = solve_constrained(model, data, q, v, tau, spec, ws, a, lam)
    if status != OK:
        return status
    parents, J, L, Y, LG = _solved(model, ws, nb, m)
    tri, W, sd, dF, vecs, cols, poses, t = _derivative_views(dws, nb)
    base_accel = _e.vec(model, _e.BASE_ACCEL, 6)
    # ID's derivatives at the solution (eqs. 316, 317), on the forward pass's kinematics
    if not _inverse_dynamics_derivatives(model, data, nb, _e.mat(data, _e.OV, nb, 6), v, a, base_accel, tri):
        return FAILED
    add_joint_derivatives(_e.mat(model, _e.JOINT_TERMS, nb, 3), v, tri[1], tri[2])
    # the bodies' accelerations at a (gravity left out) for the rows: ID's, less the base's
    oA = _e.mat(data, _e.OA, nb, 6)
    oA_g = _e.cube(data, _e.DERIV_VECTORS, 9, nb, 6)[2]
    for i in range(nb):
        for k in range(6):
            oA[i, k] = oA_g[i, k] - base_accel[k]
    # rhs_c: -d alpha/dq, -d alpha/dv; W = d(J^T lam)/dq
    _contact_derivatives(model, data, nb, spec, lam, False, dlam_dq, dlam_dv, W, sd, dF, cols, poses, t)
    # rhs_d: -(dID/dq - W), -dID/dv
    dtau_dq = tri[0]
    dtau_dv = tri[1]
    for i in range(nb):
        for k in range(nb):
            da_dq[i, k] = W[i, k] - dtau_dq[i, k]
            da_dv[i, k] = -dtau_dv[i, k]
    kkt_columns(parents, J, L, Y, LG, da_dq, dlam_dq)
    kkt_columns(parents, J, L, Y, LG, da_dv, dlam_dv)
    # tau (eq. 319): dlam/dtau = -G^-1 J M^-1 = -G^-1 Y^T, da/dtau = M^-1 + Y dlam/dtau
    for i in range(m):
        for k in range(nb):
            dlam_dtau[i, k] = -Y[k, i]
    cholesky_solve_columns(LG, dlam_dtau)
    for i in range(nb):
        for k in range(nb):
            da_dtau[i, k] = 1.0 if i == k else 0.0
    tree_solve_columns(L, parents, da_dtau)
    add_product(Y, dlam_dtau, da_dtau)
    return OK if (all_finite(da_dq) and all_finite(da_dv) and all_finite(da_dtau) and all_finite(dlam_dq)
                  and all_finite(dlam_dv) and all_finite(dlam_dtau)) else FAILED


@njit(cache=True, _nrt=False)
def impulse_dynamics_derivatives(model, data, q, v_minus, restitution, spec, ws, dws, v_plus, impulses,
                                 dv_dq, dv_dv, dimp_dq, dimp_dv):
    """v_plus, impulses of impulse_dynamics (the forward kernel), then dv_dq = dv+/dq, dv_dv =
    dv+/dv- (nv, nv) and dimp_dq, dimp_dv, the impulses' (m, nv). (The entry kernel; other kernels
    call solve_impulse_derivatives.)"""
    return solve_impulse_derivatives(model, data, q, v_minus, restitution, spec, ws, dws, v_plus, impulses,
                                     dv_dq, dv_dv, dimp_dq, dimp_dv)


@njit(cache=True, nogil=True)
def solve_impulse_derivatives(model, data, q, v_minus, restitution, spec, ws, dws, v_plus, impulses,
                              dv_dq, dv_dv, dimp_dq, dimp_dv):
    """impulse_dynamics_derivatives, callable from other kernels."""
    nb = int(model[0])
    m = impulses.shape[0]
    if not (_square(dv_dq, nb) and _square(dv_dv, nb) and _rows(dimp_dq, m, nb) and _rows(dimp_dv, m, nb)
            and _fits(model, data, nb, m, dws)):
        return FAILED
    status = solve_impulse(model, data, q, v_minus, restitution, spec, ws, v_plus, impulses)
    if status != OK:
        return status
    parents, J, L, Y, LG = _solved(model, ws, nb, m)
    tri, W, sd, dF, vecs, cols, poses, t = _derivative_views(dws, nb)
    jump = vecs[0]
    w = vecs[1]
    for i in range(nb):
        jump[i] = v_plus[i] - v_minus[i]
        w[i] = v_plus[i] + restitution * v_minus[i]
    # d(M dv)/dq at fixed dv: ID's derivative at (v = 0, a = dv) without gravity (the twists of
    # v = 0 in oV for now)
    zero6 = t[16]
    zero6[:] = 0.0
    oS = _e.mat(data, _e.OS, nb, 6)
    oV = _e.mat(data, _e.OV, nb, 6)
    oV[:, :] = 0.0
    if not _inverse_dynamics_derivatives(model, data, nb, oV, _e.vec(data, _e.ZERO, nb), jump, zero6, tri):
        return FAILED
    # the bodies' twists of w, from the forward pass's screws (same q): d(J w)/dq at fixed w
    for i in range(nb):
        j = parents[i]
        for k in range(6):
            oV[i, k] = oS[i, k] * w[i] + (0.0 if j < 0 else oV[j, k])
    # q (eqs. 424-426): rhs_c = -d(J w)/dq, rhs_d = -d(M dv)/dq + d(J^T impulses)/dq
    _contact_derivatives(model, data, nb, spec, impulses, True, dimp_dq, dimp_dq, W, sd, dF, cols, poses, t)
    dMdv_dq = tri[0]
    for i in range(nb):
        for k in range(nb):
            dv_dq[i, k] = W[i, k] - dMdv_dq[i, k]
    kkt_columns(parents, J, L, Y, LG, dv_dq, dimp_dq)
    # v_minus (eq. 430): dimpulses/dv- = -(1 + e) G^-1 J, dv+/dv- = I + Y dimpulses/dv-
    for i in range(m):
        for k in range(nb):
            dimp_dv[i, k] = -(1.0 + restitution) * J[i, k]
    cholesky_solve_columns(LG, dimp_dv)
    for i in range(nb):
        for k in range(nb):
            dv_dv[i, k] = 1.0 if i == k else 0.0
    add_product(Y, dimp_dv, dv_dv)
    return OK if (all_finite(dv_dq) and all_finite(dv_dv) and all_finite(dimp_dq)
                  and all_finite(dimp_dv)) else FAILED
