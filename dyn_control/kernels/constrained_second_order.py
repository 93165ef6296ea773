"""Second-order derivatives of the constrained (KKT) and impulse dynamics, compiled (seed "Details of
Partial Derivatives of Rigid-Body Inverse Dynamics", secs. XI.2 and XII.2; the public wrapper and the
derivation are in dyn_control/constrained_second_order.py).

One entry kernel, `second_derivatives`, called once per call of the public functions:
- `contact_rows`: the contact rows J (m, nv) and their exact first and second q-derivatives, and, for
  the constrained dynamics, the (q, v) Hessians of the constraint acceleration J a + gamma. Only the
  columns of a contact's support chain are touched. The rows' second derivatives are contracted as
  they are made (the 4-D tensor d2J/dq dq is never stored): sum_r w_r d2J_r/dq dq (the contact forces
  as external forces, IDSVA-SOc) and, for an impact, sum_i d2J_ri/dq dq u_i; all straight into the
  right-hand sides.
- the right-hand sides R_xx + (dK/dq_j) z_{x_k} + (dK/dq_k) z_{x_j} (the IDSOZA/IDFOZA-like products
  of eqs. 436-438 as loops over the entries of dM/dq and dJ/dq that can be non-zero, or dM's part by
  one matrix product when it has few zeros), then the product with -K^-1 per connected component of
  K (the top-level subtrees of a fixed base with their contacts; one block for a free flyer), -K_c^-1
  formed from the Cholesky factors of M_c and of the Delassus matrix G = J_c M_c^-1 J_c^T and applied
  by one matrix product (BLAS) to all the block's columns (j, k) of a tensor at once, j <= k only for
  the symmetric ones.
Work O(s^3) per contact of chain length s for the rows, O(nnz(dM) nv) for the products and
O(sum_c n_c^2 nv_c^2) for the solves.

Rows in world axes and at the contact point p (point-referenced): column x is J_x = [w_x; u_x],
u_x = v_x + w_x x p, for the world screw S_x = [w_x; v_x] of each joint x of the chain. With
sup[k, x] (k moves x's body: k on the path from the root to x, a free flyer's six root columns each
on the other's support), a world screw moves as dS_x/dq_k = sup[k, x] S_k x S_x and the point as
dp/dq_k = u_k, so (motion cross product x, the point-referenced coordinates being a Lie algebra
automorphism of the world's)
    D(x, k) = dJ_x/dq_k = sup[k, x] J_k x J_x + [0; w_x x u_k]
    H(x, k, l) = d D(x, k) / dq_l
               = sup[k, x] (D(k, l) x J_x + J_k x D(x, l)) + [0; D(x, l)_w x u_k + w_x x D(k, l)_u].
The twist at p is nu = sum_x J_x v_x; with V_x = sum_{k: sup[k, x]} v_k J_k (the twist of x's body)
and W_x = sum_{y: sup[x, y]} v_y J_y, the spatial acceleration at p (a held fixed)
    e(q, v) = J a + sum_x v_x V_x x J_x
has  e_qj = sum_x a_x D(x, j) + v_x (dV_x/dq_j x J_x + V_x x D(x, j)),   e_vl = J_l x (W_l - V_l),
     e_qjql = sum_x a_x H(x, j, l) + v_x H(x, j, l) x (W_x - V_x)
              + v_x (dV_x/dq_j x D(x, l) + dV_x/dq_l x D(x, j)),
     e_qjvl = D(l, j) x (W_l - V_l) + J_l x (dW_l/dq_j - dV_l/dq_j),
     e_vjvl = sup[l, j] J_l x J_j + sup[j, l] J_j x J_l.
A "frame" row is e; a "point" row is the classical acceleration, e_u + nu_w x nu_u. "local" rows are
R^T y for the frame's rotation R (dR/dq_k = [w_k] R):
    d(R^T y)/dq_k = R^T (y_k - w_k x y),
    d2(R^T y)/dq_k dq_l = R^T (y_kl - D(k, l)_w x y - w_k x y_l - w_l x (y_k - w_k x y)).
Hessians h[j, l] are d/dq_l (d/dq_j y), as the free flyer's root block needs.
"""
import numpy as np

from ..jit import njit
from .cholesky import back_substitute, cholesky_factor, forward_substitute
from .constrained_dynamics import SINGULAR_G, SINGULAR_M, side_pose
from .contact import world_screws

OK = 0
SINGULAR = 1  # M or G (numerically) singular: the wrapper decides (redundant rows, or a dense solve)


@njit(cache=True)
def _cross3_add(x, xo, y, yo, s, out, oo):
    """out[oo:oo+3] += s (x[xo:xo+3] x y[yo:yo+3])."""
    out[oo] += s * (x[xo + 1] * y[yo + 2] - x[xo + 2] * y[yo + 1])
    out[oo + 1] += s * (x[xo + 2] * y[yo] - x[xo] * y[yo + 2])
    out[oo + 2] += s * (x[xo] * y[yo + 1] - x[xo + 1] * y[yo])


@njit(cache=True)
def _mcross_add(X, Y, s, out):
    """out += s X x Y, motion cross product of [w; v] 6-vectors."""
    _cross3_add(X, 0, Y, 0, s, out, 0)
    _cross3_add(X, 0, Y, 3, s, out, 3)
    _cross3_add(X, 3, Y, 0, s, out, 3)


@njit(cache=True)
def _rt3(R, x, out, oo):
    """out[oo:oo+3] = R^T x (x a 3-vector)."""
    for c in range(3):
        out[oo + c] = R[0, c] * x[0] + R[1, c] * x[1] + R[2, c] * x[2]


@njit(cache=True)
def _local_first(R, o, y, yk, wk, t, out, oo):
    """out[oo:oo+3] = R^T (yk - w_k x y) for the 3-block o of the 6-vectors y, yk; wk a 6-vector
    (angular part used)."""
    for c in range(3):
        t[c] = yk[o + c]
    _cross3_add(wk, 0, y, o, -1.0, t, 0)
    _rt3(R, t, out, oo)


@njit(cache=True)
def _local_second(R, o, y, yk, yl, ykl, wk, wl, dwk_l, t, out, oo):
    """out[oo:oo+3] = R^T (ykl - dwk_l x y - w_k x yl - w_l x (yk - w_k x y)) for the 3-block o."""
    for c in range(3):
        t[3 + c] = yk[o + c]
    _cross3_add(wk, 0, y, o, -1.0, t, 3)  # t[3:6] = yk - w_k x y
    for c in range(3):
        t[c] = ykl[o + c]
    _cross3_add(dwk_l, 0, y, o, -1.0, t, 0)
    _cross3_add(wk, 0, yl, o, -1.0, t, 0)
    _cross3_add(wl, 0, t, 3, -1.0, t, 0)
    _rt3(R, t, out, oo)


@njit(cache=True)
def contact_rows(parents, screw_axes, home_R, home_p, q, R, p, oR, op, oS, base_R, base_p, sup, frame_body,
                 frame_R, frame_p, spec, v, a, weights, u, mode, chain, Jp, D, H, vecs, pairs, tmp, pose, J, dJ,
                 rhs):
    """The contacts' rows and their derivatives (module doc), full size, zero off the chains.
    World kinematics of the (twin) tree at q, turned by the root pose (base_R, base_p) (identity and
    zero for a fixed base). spec (nc, 3) int64 rows [frame, dim (3 | 6), local (1 | 0)].
    Outputs: J (m, nv); dJ[r, x, k] = dJ_rx/dq_k; sum_r weights_r d2J_rx/dq_j dq_l subtracted from
    rhs[0, x, j, l]; mode 0 (constrained; v, a the state): the (q, q), (q, v), (v, v) Hessians of row
    r of J a + gamma into rhs[0 | 2 | 1, nv + r] (on the chain's columns: zero the rows before);
    mode 1 (impulse): sum_x d2J_rx/dq_j dq_l u_x added to rhs[0, nv + r, j, l].
    Scratch: chain (nv,) int64; Jp (s, 6), D (s, s, 6), H (s, s, s, 6) for s the longest chain;
    vecs (6, s, 6), pairs (6, s, s, 6), tmp (8, 6), pose (4, 3) (a frame's rotation, origin)."""
    nv = oS.shape[0]
    world_screws(parents, screw_axes, home_R, home_p, q, R, p, oR, op, oS)
    J[:, :] = 0.0
    dJ[:, :, :] = 0.0
    Rc = pose[:3]
    pc = pose[3]
    t = tmp[6]
    h3 = tmp[7]
    r0 = 0
    for c in range(spec.shape[0]):
        f, dim, local = spec[c, 0], spec[c, 1], spec[c, 2]
        body = frame_body[f]
        # the frame's world pose (root pose applied) and its chain
        if side_pose(frame_body, frame_R, frame_p, oR, op, f, tmp[2:5], tmp[1]) < 0:
            for i in range(3):
                for k in range(3):
                    Rc[i, k] = tmp[2 + i, k]
                pc[i] = tmp[1, i]
            s = 0
        else:
            for i in range(3):
                for k in range(3):
                    Rc[i, k] = (base_R[i, 0] * tmp[2, k] + base_R[i, 1] * tmp[3, k] + base_R[i, 2] * tmp[4, k])
                pc[i] = base_R[i, 0] * tmp[1, 0] + base_R[i, 1] * tmp[1, 1] + base_R[i, 2] * tmp[1, 2] + base_p[i]
            s = 0
            for x in range(nv):
                if sup[x, body]:
                    chain[s] = x
                    s += 1
        # J_x = [w_x; v_x + w_x x p] in world axes (the root pose applied to the tree's screws)
        for x in range(s):
            cx = chain[x]
            for i in range(3):
                Jp[x, i] = base_R[i, 0] * oS[cx, 0] + base_R[i, 1] * oS[cx, 1] + base_R[i, 2] * oS[cx, 2]
            for i in range(3):
                Jp[x, 3 + i] = base_R[i, 0] * oS[cx, 3] + base_R[i, 1] * oS[cx, 4] + base_R[i, 2] * oS[cx, 5]
            _cross3_add(base_p, 0, Jp[x], 0, 1.0, Jp[x], 3)
            _cross3_add(Jp[x], 0, pc, 0, 1.0, Jp[x], 3)
        # D(x, k) = dJ_x/dq_k
        for x in range(s):
            for k in range(s):
                Dxk = D[x, k]
                Dxk[:] = 0.0
                if sup[chain[k], chain[x]]:
                    _mcross_add(Jp[k], Jp[x], 1.0, Dxk)
                _cross3_add(Jp[x], 0, Jp[k], 3, 1.0, Dxk, 3)
        # H(x, k, l) = d D(x, k) / dq_l, symmetric in k, l but for two of the nr leading (root) columns
        # that each move the other (a free flyer's, whose rotations do not commute): l >= k, mirrored
        nr = 0
        for x in range(1, s):
            if sup[chain[x], chain[0]]:
                nr = x + 1
        for x in range(s):
            for k in range(s):
                on = sup[chain[k], chain[x]]
                for l in range(s):
                    if l < k and (k >= nr or l >= nr):
                        continue
                    Hxkl = H[x, k, l]
                    Hxkl[:] = 0.0
                    if on:
                        _mcross_add(D[k, l], Jp[x], 1.0, Hxkl)
                        _mcross_add(Jp[k], D[x, l], 1.0, Hxkl)
                    _cross3_add(D[x, l], 0, Jp[k], 3, 1.0, Hxkl, 3)
                    _cross3_add(Jp[x], 0, D[k, l], 3, 1.0, Hxkl, 3)
            for k in range(s):
                for l in range(k):
                    if k >= nr or l >= nr:
                        H[x, k, l, :] = H[x, l, k, :]
        # the rows: 3-blocks o of J_x (point: linear only; frame: angular then linear)
        for b in range(dim // 3):
            o = 3 if dim == 3 else 3 * b
            rb = r0 + 3 * b
            for x in range(s):
                cx = chain[x]
                y = Jp[x]
                if local:
                    _rt3(Rc, y[o:o + 3], h3, 0)
                else:
                    for i in range(3):
                        h3[i] = y[o + i]
                for i in range(3):
                    J[rb + i, cx] = h3[i]
                for k in range(s):
                    ck = chain[k]
                    if local:
                        _local_first(Rc, o, y, D[x, k], Jp[k], t, h3, 0)
                    else:
                        for i in range(3):
                            h3[i] = D[x, k, o + i]
                    for i in range(3):
                        dJ[rb + i, cx, ck] = h3[i]
                    for l in range(s):
                        if l < k and (k >= nr or l >= nr):
                            continue
                        mirror = l != k and (k >= nr or l >= nr)
                        cl = chain[l]
                        if local:
                            _local_second(Rc, o, y, D[x, k], D[x, l], H[x, k, l], Jp[k], Jp[l], D[k, l], t, h3, 0)
                        else:
                            for i in range(3):
                                h3[i] = H[x, k, l, o + i]
                        w = weights[rb] * h3[0] + weights[rb + 1] * h3[1] + weights[rb + 2] * h3[2]
                        rhs[0, cx, ck, cl] -= w
                        if mirror:
                            rhs[0, cx, cl, ck] -= w
                        if mode == 1:
                            ux = u[cx]
                            for i in range(3):
                                rhs[0, nv + rb + i, ck, cl] += h3[i] * ux
                                if mirror:
                                    rhs[0, nv + rb + i, cl, ck] += h3[i] * ux
        if mode == 0:
            _acceleration_rows(chain, s, nr, sup, Jp, D, H, v, a, dim, local, Rc, nv + r0, vecs, pairs, tmp, rhs)
        r0 += dim


@njit(cache=True)
def _acceleration_rows(chain, s, nr, sup, Jp, D, H, v, a, dim, local, Rc, r0, vecs, pairs, tmp, rhs):
    """rhs[0 | 2 | 1, r0:r0+dim] the (q, q), (q, v), (v, v) Hessians of the contact's rows of
    J a + gamma (module doc: e, and for a point the classical acceleration), on the chain's columns;
    the (q, q) one symmetric but in the nr leading (root) columns (contact_rows), the (v, v) one
    symmetric."""
    V, W, yq, yv, dnu = vecs[0], vecs[1], vecs[2], vecs[3], vecs[4]
    dV, dW, yqq, yqv, yvv, ddnu = pairs[0], pairs[1], pairs[2], pairs[3], pairs[4], pairs[5]
    y, nu, WV, t = tmp[0], tmp[1], tmp[2], tmp[6]
    h3 = tmp[7]
    y[:] = 0.0
    nu[:] = 0.0
    for x in range(s):
        V[x, :] = 0.0
        W[x, :] = 0.0
        yq[x, :] = 0.0
        dnu[x, :] = 0.0
        for j in range(s):
            dV[x, j, :] = 0.0
            dW[x, j, :] = 0.0
            yqq[x, j, :] = 0.0
            yqv[x, j, :] = 0.0
            yvv[x, j, :] = 0.0
            ddnu[x, j, :] = 0.0
    # twists and their q-derivatives
    for x in range(s):
        cx = chain[x]
        for k in range(s):
            ck = chain[k]
            vk = v[ck]
            if sup[ck, cx]:
                for i in range(6):
                    V[x, i] += vk * Jp[k, i]
                for j in range(s):
                    for i in range(6):
                        dV[x, j, i] += vk * D[k, j, i]
            if sup[cx, ck]:
                for i in range(6):
                    W[x, i] += vk * Jp[k, i]
                for j in range(s):
                    for i in range(6):
                        dW[x, j, i] += vk * D[k, j, i]
        vx = v[cx]
        for i in range(6):
            nu[i] += vx * Jp[x, i]
        for j in range(s):
            for i in range(6):
                dnu[j, i] += vx * D[x, j, i]
            for l in range(s):
                for i in range(6):
                    ddnu[j, l, i] += vx * H[x, j, l, i]
    # e and its derivatives
    for x in range(s):
        cx = chain[x]
        ax, vx = a[cx], v[cx]
        for i in range(6):
            y[i] += ax * Jp[x, i]
            WV[i] = W[x, i] - V[x, i]
        _mcross_add(V[x], Jp[x], vx, y)
        for j in range(s):
            for i in range(6):
                yq[j, i] += ax * D[x, j, i]
            _mcross_add(dV[x, j], Jp[x], vx, yq[j])
            _mcross_add(V[x], D[x, j], vx, yq[j])
            for l in range(s):
                if l < j and (j >= nr or l >= nr):
                    continue
                Hxjl = H[x, j, l]
                e = yqq[j, l]
                for i in range(6):
                    e[i] += ax * Hxjl[i]
                _mcross_add(Hxjl, WV, vx, e)
                _mcross_add(dV[x, j], D[x, l], vx, e)
                _mcross_add(dV[x, l], D[x, j], vx, e)
    for l in range(s):
        cl = chain[l]
        for i in range(6):
            WV[i] = W[l, i] - V[l, i]
        yv[l, :] = 0.0
        _mcross_add(Jp[l], WV, 1.0, yv[l])
        for j in range(s):
            _mcross_add(D[l, j], WV, 1.0, yqv[j, l])
            _mcross_add(Jp[l], dW[l, j], 1.0, yqv[j, l])
            _mcross_add(Jp[l], dV[l, j], -1.0, yqv[j, l])
            cj = chain[j]
            if sup[cl, cj]:
                _mcross_add(Jp[l], Jp[j], 1.0, yvv[j, l])
            if sup[cj, cl]:
                _mcross_add(Jp[j], Jp[l], 1.0, yvv[j, l])
    if dim == 3:  # the classical acceleration of the point: + nu_w x nu_u
        _cross3_add(nu, 0, nu, 3, 1.0, y, 3)
        for j in range(s):
            _cross3_add(dnu[j], 0, nu, 3, 1.0, yq[j], 3)
            _cross3_add(nu, 0, dnu[j], 3, 1.0, yq[j], 3)
            _cross3_add(Jp[j], 0, nu, 3, 1.0, yv[j], 3)
            _cross3_add(nu, 0, Jp[j], 3, 1.0, yv[j], 3)
            for l in range(s):
                e = yqq[j, l]  # (l < j of the symmetric pairs unused)
                _cross3_add(ddnu[j, l], 0, nu, 3, 1.0, e, 3)
                _cross3_add(dnu[j], 0, dnu[l], 3, 1.0, e, 3)
                _cross3_add(dnu[l], 0, dnu[j], 3, 1.0, e, 3)
                _cross3_add(nu, 0, ddnu[j, l], 3, 1.0, e, 3)
                e = yqv[j, l]
                _cross3_add(D[l, j], 0, nu, 3, 1.0, e, 3)
                _cross3_add(Jp[l], 0, dnu[j], 3, 1.0, e, 3)
                _cross3_add(dnu[j], 0, Jp[l], 3, 1.0, e, 3)
                _cross3_add(nu, 0, D[l, j], 3, 1.0, e, 3)
                e = yvv[j, l]
                _cross3_add(Jp[j], 0, Jp[l], 3, 1.0, e, 3)
                _cross3_add(Jp[l], 0, Jp[j], 3, 1.0, e, 3)
    for b in range(dim // 3):
        o = 3 if dim == 3 else 3 * b
        rb = r0 + 3 * b
        for j in range(s):
            cj = chain[j]
            for l in range(s):
                cl = chain[l]
                if local:
                    _local_first(Rc, o, yv[l], yqv[j, l], Jp[j], t, h3, 0)
                    for i in range(3):
                        rhs[2, rb + i, cj, cl] = h3[i]
                else:
                    for i in range(3):
                        rhs[2, rb + i, cj, cl] = yqv[j, l, o + i]
                if l < j:
                    continue
                if local:
                    _rt3(Rc, yvv[j, l][o:o + 3], h3, 0)
                else:
                    for i in range(3):
                        h3[i] = yvv[j, l, o + i]
                for i in range(3):
                    rhs[1, rb + i, cj, cl] = h3[i]
                    rhs[1, rb + i, cl, cj] = h3[i]
            for l in range(s):
                if l < j and (j >= nr or l >= nr):
                    continue
                cl = chain[l]
                if local:
                    _local_second(Rc, o, y, yq[j], yq[l], yqq[j, l], Jp[j], Jp[l], D[j, l], t, h3, 0)
                else:
                    for i in range(3):
                        h3[i] = yqq[j, l, o + i]
                for i in range(3):
                    rhs[0, rb + i, cj, cl] = h3[i]
                if l != j and (j >= nr or l >= nr):
                    for i in range(3):
                        rhs[0, rb + i, cl, cj] = h3[i]


@njit(cache=True)
def _add_dK_times(dM, dJ, dM_nz, dJ_nz, Za, Zl, out, both):
    """out[:, j, k] += (dK/dq_j) z_k for z_k = [Za[:, k]; Zl[:, k]] (dM[i, l, j] = dM_il/dq_j,
    dJ[r, l, j] = dJ_rl/dq_j): [dM/dq_j za - (dJ/dq_j)^T zl; (dJ/dq_j) za]; with `both`, the
    transposed product (dK/dq_k) z_j is added too. dM_nz, dJ_nz (count, 3): the (i | r, l, j) where
    dM, dJ may be non-zero (joints on one path from the root: _Workspace). (Full rows k: loops of
    fixed length vectorize, which bounds by K's blocks would lose.)"""
    nv = dM.shape[0]
    for t in range(dM_nz.shape[0]):
        i, l, j = dM_nz[t, 0], dM_nz[t, 1], dM_nz[t, 2]
        c = dM[i, l, j]
        if c != 0.0:
            for k in range(nv):
                out[i, j, k] += c * Za[l, k]
            if both:
                for k in range(nv):
                    out[i, k, j] += c * Za[l, k]
    for t in range(dJ_nz.shape[0]):
        r, l, j = dJ_nz[t, 0], dJ_nz[t, 1], dJ_nz[t, 2]
        c = dJ[r, l, j]
        if c != 0.0:
            for k in range(nv):
                out[l, j, k] -= c * Zl[r, k]
                out[nv + r, j, k] += c * Za[l, k]
            if both:
                for k in range(nv):
                    out[l, k, j] -= c * Zl[r, k]
                    out[nv + r, k, j] += c * Za[l, k]


@njit(cache=True)
def _add_dM_times_dense(dM, Zs, out, both, nt, dMt, Zcat, Pcat):
    """The dM part of _add_dK_times by one matrix product (BLAS), for a dM with few zeros: for each
    of the first nt z of Zs (the first order's blocks za), out[t][i, j, k] += sum_l dM[i, l, j] z[l, k]
    (and with both[t], + the same at [i, k, j]). dMt (nv^2, nv), Zcat (nv, nt nv), Pcat (nv^2, nt nv)
    scratch. (Triples always, nt of them used: one compiled signature.)"""
    nv = dM.shape[0]
    for i in range(nv):
        for l in range(nv):
            for j in range(nv):
                dMt[i * nv + j, l] = dM[i, l, j]
    for t in range(nt):
        Z = Zs[t]
        for l in range(nv):
            for k in range(nv):
                Zcat[l, t * nv + k] = Z[l, k]
    np.dot(dMt, Zcat, Pcat)
    for t in range(nt):
        o = out[t]
        c0 = t * nv
        for i in range(nv):
            for j in range(nv):
                for k in range(nv):
                    o[i, j, k] += Pcat[i * nv + j, c0 + k]
            if both[t]:
                for j in range(nv):
                    for k in range(nv):
                        o[i, j, k] += Pcat[i * nv + k, c0 + j]


@njit(cache=True)
def _matrix(work, o, rows, columns):
    """(the (rows, columns) matrix at work[o:], the offset after it)."""
    return work[o:o + rows * columns].reshape((rows, columns)), o + rows * columns


@njit(cache=True)
def _block_inverse(M, J, comp, start, nj, nc, work, Kc):
    """Kc (nc, nc) = -K_c^-1 for the component's block K_c = [[M_c, -J_c^T], [J_c, 0]] (its nj joints
    comp[start:start + nj], then its rows), from the Cholesky factors of M_c and of the Delassus
    matrix G = J_c M_c^-1 J_c^T (P = M_c^-1 J_c^T):
        K_c^-1 = [[M_c^-1 - P G^-1 P^T, P G^-1], [-G^-1 P^T, G^-1]].
    False when a pivot of M_c or G falls below its relative threshold (kernels/constrained_dynamics.py)."""
    nv = M.shape[0]
    m = nc - nj
    Mc, o = _matrix(work, 0, nj, nj)
    LM, o = _matrix(work, o, nj, nj)
    Minv, o = _matrix(work, o, nj, nj)
    P, o = _matrix(work, o, nj, m)
    Jc, o = _matrix(work, o, m, nj)
    G, o = _matrix(work, o, m, m)
    LG, o = _matrix(work, o, m, m)
    for a in range(nj):
        for b in range(nj):
            Mc[a, b] = M[comp[start + a], comp[start + b]]
    for r in range(m):
        for b in range(nj):
            Jc[r, b] = J[comp[start + nj + r] - nv, comp[start + b]]
    if not cholesky_factor(Mc, LM, SINGULAR_M):
        return False
    for c in range(nj):  # Minv row by row (symmetric)
        for i in range(nj):
            Minv[c, i] = 1.0 if i == c else 0.0
        forward_substitute(LM, Minv[c])
        back_substitute(LM, Minv[c])
    for i in range(nj):
        for r in range(m):
            x = 0.0
            for l in range(nj):
                x += Minv[i, l] * Jc[r, l]
            P[i, r] = x
    for r in range(m):
        for c in range(m):
            x = 0.0
            for l in range(nj):
                x += Jc[r, l] * P[l, c]
            G[r, c] = x
    if m > 0:
        if not cholesky_factor(G, LG, SINGULAR_G):
            return False
    Ginv = G  # G is not needed any more: its inverse, row by row
    for c in range(m):
        for i in range(m):
            Ginv[c, i] = 1.0 if i == c else 0.0
        forward_substitute(LG, Ginv[c])
        back_substitute(LG, Ginv[c])
    for i in range(nj):  # -P G^-1 into the top right block, G^-1 P^T into the bottom left one
        for c in range(m):
            x = 0.0
            for r in range(m):
                x += P[i, r] * Ginv[r, c]
            Kc[i, nj + c] = -x
            Kc[nj + c, i] = x
    for i in range(nj):
        for k in range(nj):
            x = 0.0
            for c in range(m):
                x -= Kc[i, nj + c] * P[k, c]  # (P G^-1) P^T
            Kc[i, k] = x - Minv[i, k]
    for r in range(m):
        for c in range(m):
            Kc[nj + r, nj + c] = -Ginv[r, c]
    return True


@njit(cache=True)
def _apply_block(Kc, rhs, out, comp, start, nj, nc, symmetric, fold, gather, product):
    """out = Kc rhs on the component's entries (rhs, out (n, nv, nv) as (n, nv^2) matrices): rows and
    columns j, k of the component (with `symmetric`: j <= k only, mirrored; with `fold`, rhs + its
    transpose in j, k). One matrix product (BLAS) on the gathered columns; gather and product
    (n nv^2) are scratch."""
    cols = 0
    for a in range(nj):
        for b in range(a if symmetric else 0, nj):
            cols += 1
    if cols == 0:
        return
    X = gather[:nc * cols].reshape((nc, cols))
    Y = product[:nc * cols].reshape((nc, cols))
    for r in range(nc):
        i = comp[start + r]
        col = 0
        for a in range(nj):
            j = comp[start + a]
            for b in range(a if symmetric else 0, nj):
                k = comp[start + b]
                X[r, col] = rhs[i, j, k] + rhs[i, k, j] if fold else rhs[i, j, k]
                col += 1
    np.dot(Kc, X, Y)
    for r in range(nc):
        i = comp[start + r]
        col = 0
        for a in range(nj):
            j = comp[start + a]
            for b in range(a if symmetric else 0, nj):
                k = comp[start + b]
                out[i, j, k] = Y[r, col]
                if symmetric:
                    out[i, k, j] = Y[r, col]
                col += 1


@njit(cache=True)
def second_derivatives(mode, parents, screw_axes, home_R, home_p, q, R, p, oR, op, oS, base_R, base_p, sup,
                       frame_body, frame_R, frame_p, spec, v, a, weights, u, M, dM, d2q, d2v, d2qv,
                       Zqa, Zql, Zva, Zvl, Zta, Ztl, e, dM_nz, dJ_nz, comp, comp_start, comp_joints, symmetric, fold,
                       chain, Jp, D, H, vecs, pairs, tmp, pose, J, dJ, work, block, gather, product, dMt, Zcat,
                       Pcat, rhs, out):
    """The second-order tensors -K^-1 [R_xx + (dK/dq_j) z_{x_k} (+ (dK/dq_k) z_{x_j} for x = x')]
    into out (4 | 2, nv + m, nv, nv) (module doc of dyn_control/constrained_second_order.py).
    mode 0 (constrained): d2q, d2v, d2qv the IDSVA-SO tensors of ID at the solution a, weights the
    forces; out [0] q-q, [1] v-v, [2] q-v, [3] q-tau ([:, j, k] = d2/dq_j dtau_k).
    mode 1 (impulse): d2q = d2(M w)/dq2 (w = v+ - v-), weights the impulses, u = v+ + e v-, e the
    restitution (v, a, d2v, d2qv, Zt unused); out [0] q-q, [1] q-v-.
    (Z*a, Z*l): the first order's (a | v+, lam) blocks in q, v, tau; M, dM[i, l, j] = dM_il/dq_j;
    dM_nz, dJ_nz: where dM and dJ may be non-zero (_add_dK_times); dM's part of the products by one
    matrix product instead (_add_dM_times_dense) when its scratch dMt, Zcat, Pcat is not empty.
    The rows: contact_rows (its arguments); the product with -K^-1 by K's connected components
    comp[comp_start[c]:comp_start[c + 1]] (their comp_joints[c] joints first, then their rows: the
    top-level subtrees of a fixed base with their contacts, one for a free flyer), entries (i, j, k)
    with i, j, k not in one component vanishing (no state of one moves another); symmetric[t]: out[t]
    is symmetric in j, k (computed for j <= k); fold[0]: R_qq is (rhs[0] then holds R_qq / 2 + P, the
    q-q tensor being rhs[0] + its transpose in j, k: the products' transpose is added as a tensor
    is gathered, not by strided writes). Scratch: work (3 nv^2 + 2 nv m + 2 m^2),
    block ((nv + m)^2), gather and product ((nv + m) nv^2), rhs (out's shape).
    Returns SINGULAR (out unfinished, rhs complete) when M or G is (numerically) singular."""
    nv, m = M.shape[0], J.shape[0]
    n_out = rhs.shape[0]
    # R_xx of the dynamics rows (ID's tensors); the constraint rows are written on their chains only
    for i in range(nv):
        for j in range(nv):
            for k in range(nv):
                rhs[0, i, j, k] = d2q[i, j, k]
    rhs[0, nv:, :, :] = 0.0
    if mode == 0:
        for i in range(nv):
            for j in range(nv):
                for k in range(nv):
                    rhs[1, i, j, k] = d2v[i, j, k]
                    rhs[2, i, j, k] = d2qv[i, j, k]
        rhs[1, nv:, :, :] = 0.0
        rhs[2, nv:, :, :] = 0.0
        rhs[3, :, :, :] = 0.0
    contact_rows(parents, screw_axes, home_R, home_p, q, R, p, oR, op, oS, base_R, base_p, sup, frame_body,
                 frame_R, frame_p, spec, v, a, weights, u, mode, chain, Jp, D, H, vecs, pairs, tmp, pose, J, dJ,
                 rhs)
    if mode == 1:
        # q-v-: [-dM/dq_j[:, k]; e dJ/dq_j[:, k]]
        rhs[1, :, :, :] = 0.0
        for t in range(dM_nz.shape[0]):
            i, k, j = dM_nz[t, 0], dM_nz[t, 1], dM_nz[t, 2]
            rhs[1, i, j, k] = -dM[i, k, j]
        for t in range(dJ_nz.shape[0]):
            r, k, j = dJ_nz[t, 0], dJ_nz[t, 1], dJ_nz[t, 2]
            rhs[1, nv + r, j, k] = e * dJ[r, k, j]
    # q-q: R_qq + P + P^T for P[:, j, k] = (dK/dq_j) z_{q_k}; with fold[0] (R_qq symmetric) as
    # R_qq / 2 + P, whose transpose _apply_block adds as it gathers
    both = not fold[0]
    if fold[0]:
        for i in range(nv + m):
            for j in range(nv):
                for k in range(nv):
                    rhs[0, i, j, k] *= 0.5
    dense = dMt.shape[0] > 0  # dM's part of the products by BLAS, dJ's by the loops
    if dense:
        if mode == 0:
            _add_dM_times_dense(dM, (Zqa, Zva, Zta), (rhs[0], rhs[2], rhs[3]), (both, False, False), 3, dMt, Zcat,
                                Pcat)
        else:
            _add_dM_times_dense(dM, (Zqa, Zva, Zva), (rhs[0], rhs[1], rhs[1]), (both, False, False), 2, dMt, Zcat,
                                Pcat)
    dM_loop = dM_nz[:0] if dense else dM_nz
    if mode == 0:
        _add_dK_times(dM, dJ, dM_loop, dJ_nz, Zqa, Zql, rhs[0], both)
        _add_dK_times(dM, dJ, dM_loop, dJ_nz, Zva, Zvl, rhs[2], False)
        _add_dK_times(dM, dJ, dM_loop, dJ_nz, Zta, Ztl, rhs[3], False)
    else:
        _add_dK_times(dM, dJ, dM_loop, dJ_nz, Zqa, Zql, rhs[0], both)
        _add_dK_times(dM, dJ, dM_loop, dJ_nz, Zva, Zvl, rhs[1], False)
    for t in range(n_out):
        out[t, :, :, :] = 0.0
    for c in range(comp_start.shape[0] - 1):
        start = comp_start[c]
        nc = comp_start[c + 1] - start
        nj = comp_joints[c]
        Kc = block[:nc * nc].reshape((nc, nc))
        if not _block_inverse(M, J, comp, start, nj, nc, work, Kc):
            return SINGULAR
        for t in range(n_out):
            _apply_block(Kc, rhs[t], out[t], comp, start, nj, nc, symmetric[t], fold[t], gather, product)
    return OK
