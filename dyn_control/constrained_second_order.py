"""Second-order partial derivatives of the constrained (KKT) and impulse dynamics (seed "Details of
Partial Derivatives of Rigid-Body Inverse Dynamics", secs. XI.2 and XII.2).

The KKT system as residuals in z = (a, lam), x = (q, v, tau) (contact.py's signs):
    R1(x, z) = ID(q, v, a) - J(q)^T lam - tau = 0,        R2(x, z) = J(q) a + gamma(q, v) = 0.
R is linear in z, K = dR/dz = [[M, -J^T], [J, 0]] (eq. 307); the first order is z_x = -K^-1 R_x
(eqs. 314-319, contact.constrained_dynamics_derivatives), and differentiating once more (XI.2):
    d2z / dx_j dx_k = -K^-1 [ R_xx[:, j, k] + (dK/dx_j) z_{x_k} + (dK/dx_k) z_{x_j} ]
with dK/dv = dK/dtau = 0, (dK/dq_j) w = [dM/dq_j w_a - (dJ/dq_j)^T w_lam; (dJ/dq_j) w_a]
(the IDSOZA/IDFOZA-like products: one per column of z_x, no 4-D tensor of K). R_xx is
    R1: the IDSVA-SO tensors of ID at (q, v, a) (second_order.rnea_second_derivatives) less the
        q-q second derivatives of J(q)^T lam at the fixed forces (the contact forces as external
        forces, IDSVA-SOc);
    R2: the second derivatives of the constraint acceleration J a + gamma in (q, q), (q, v), (v, v).
Impact (XII.2, eq. 423): M (v+ - v-) - J^T Lambda = 0, J (v+ + e v-) = 0: same K; R linear in v-,
so only the (q, q) and (q, v-) blocks exist: R1_qq = d2(M w)/dq2 at w = v+ - v- (ID at v = 0 with
a = w, less its gravity part), R1_{q_j v-_k} = -dM/dq_j[:, k], R2_qq = d2(J w')/dq2 at
w' = v+ + e v-, R2_{q_j v-_k} = e dJ/dq_j[:, k].

The rows' derivatives (new here) are taken in world axes by the spatial-algebra rules of the seed
(sec. III): a world joint screw moves with every joint on its support, dS_i/dq_j = S_j x S_i for j on
the path from the root to i (j = i included); hence d2S_i/dq_k dq_j = (dS_j/dq_k) x S_i + S_j x
(dS_i/dq_k); the frame origin p moves as dp/dq_j = v_j + w_j x p, its rotation as dR/dq_j = [w_j] R.
Every quantity of the rows (S_i, p, R, body twists V = sum S_k v_k, accelerations A = sum S_k a_k +
(V_k x S_k) v_k) is carried with its first and second derivatives in (q, v) (_Jet: value, gradient,
Hessian; the product rule on bilinear operations), exactly (no finite differences).

A free flyer (tangent-space convention of integrate, T exp(dq)): the root's six columns are the world
screws Ad_T e_c of one body, each on the support of every other (their q-derivatives do not commute:
d2/dq_k dq_j differs from d2/dq_j dq_k in the root's block, as in second_order).

NumPy on top of the compiled first order and IDSVA-SO (slower than central differences of
Pinocchio's first order: bench/bench_constrained_second_order.py); contacts against the world
(other=None) with independent rows only; zero Baumgarte gains (a ValueError names each refusal).
"""
import numpy as np

from .contact import (Contact, _check_contacts, _on_twin, constrained_dynamics, constrained_dynamics_derivatives,
                      impulse_dynamics_derivatives)
from .dynamics import checked_inputs, crba
from .kernels import contact as _ct
from .second_order import rnea_second_derivatives

_OPTIMIZE = False  # einsum path search costs more than it saves at these sizes
_EPS = np.zeros((3, 3, 3))
for _i, _j, _k in ((0, 1, 2), (1, 2, 0), (2, 0, 1)):
    _EPS[_i, _j, _k], _EPS[_i, _k, _j] = 1.0, -1.0
# motion cross product as a bilinear map: (X x Y)_o = _CRM[o, a, b] X_a Y_b, X = [w; v]
_CRM = np.zeros((6, 6, 6))
_CRM[:3, :3, :3] = _EPS
_CRM[3:, :3, 3:] = _EPS
_CRM[3:, 3:, :3] = _EPS


class _Jet:
    """A quantity with its gradient and Hessian in n directions: v (s), d (s + (n,)), h (s + (n, n)),
    h[..., j, k] = d/dx_k (d/dx_j value) (the order matters for a free flyer's root)."""
    __slots__ = ("v", "d", "h")

    def __init__(self, v, d, h):
        self.v, self.d, self.h = v, d, h

    def __add__(self, o):
        return _Jet(self.v + o.v, self.d + o.d, self.h + o.h)

    def __sub__(self, o):
        return _Jet(self.v - o.v, self.d - o.d, self.h - o.h)

    def __neg__(self):
        return _Jet(-self.v, -self.d, -self.h)


def _bilinear(spec, X, Y, C=None):
    """Z = B(X, Y) with the product rule, B given by an einsum spec 'x,y->z' (optionally with a
    constant tensor C first: 'c,x,y->z'), lower-case letters (J, K index the derivatives)."""
    lhs, out = spec.split("->")
    parts = lhs.split(",")
    cs, xs, ys = (parts if C is not None else [None] + parts)
    pre = (cs + ",") if C is not None else ""
    args = (C,) if C is not None else ()

    def e(xi, yi, oi, a, b):
        return np.einsum(f"{pre}{xs}{xi},{ys}{yi}->{out}{oi}", *args, a, b, optimize=_OPTIMIZE)

    v = e("", "", "", X.v, Y.v)
    d = e("J", "", "J", X.d, Y.v) + e("", "J", "J", X.v, Y.d)
    h = (e("JK", "", "JK", X.h, Y.v) + e("J", "K", "JK", X.d, Y.d) + e("K", "J", "JK", X.d, Y.d)
         + e("", "JK", "JK", X.v, Y.h))
    return _Jet(v, d, h)


def _cr(x, y):
    """Cross products along axis 0 (3 components), the other axes broadcast."""
    return np.stack([x[1] * y[2] - x[2] * y[1], x[2] * y[0] - x[0] * y[2], x[0] * y[1] - x[1] * y[0]])


def _cross3(X, Y):
    """X x Y of jets of 3-vectors (axis 0), Y with X's batch axes or none."""
    extra = X.v.ndim - Y.v.ndim
    pad = (slice(None),) + (None,) * extra
    Yv, Yd, Yh = Y.v[pad], Y.d[pad], Y.h[pad]
    v = _cr(X.v, Yv)
    d = _cr(X.d, Yv[..., None]) + _cr(X.v[..., None], Yd)
    h = (_cr(X.h, Yv[..., None, None]) + _cr(X.d[..., :, None], Yd[..., None, :])
         + _cr(X.d[..., None, :], Yd[..., :, None]) + _cr(X.v[..., None, None], Yh))
    return _Jet(v, d, h)


def _cross6(X, Y):
    """Motion cross product X x Y = [w x w'; w x v' + v x w'] of jets with the 6 components on axis 1
    (axis 0 a batch shared by both)."""
    def half(Z, part):
        idx = (slice(None), part)
        return _Jet(np.moveaxis(Z.v[idx], 1, 0), np.moveaxis(Z.d[idx], 1, 0), np.moveaxis(Z.h[idx], 1, 0))
    Xw, Xl, Yw, Yl = half(X, slice(0, 3)), half(X, slice(3, 6)), half(Y, slice(0, 3)), half(Y, slice(3, 6))
    ang = _cross3(Xw, Yw)
    lin = _cross3(Xw, Yl) + _cross3(Xl, Yw)
    pairs = ((ang.v, lin.v), (ang.d, lin.d), (ang.h, lin.h))
    return _Jet(*(np.moveaxis(np.concatenate([a, b]), 0, 1) for a, b in pairs))


def _world_kinematics(model, data, q, twin_route):
    """(oR, op, oS (nv, 6), support (nv, nv) bool [j, i] = j on the path from the root to i, parents
    of bodies' frames), all in world axes; a free flyer through its tree twin and root pose."""
    if twin_route is None:
        m, d, q_t = model, data, q
    else:
        m, d, q_t = twin_route
    _ct.world_screws(m._parents, m._screw_axes, m._home_R, m._home_p, q_t, d._R, d._p, d._oR, d._op, d._ct_oS)
    oR, op, oS = d._oR.copy(), d._op.copy(), d._ct_oS.copy()
    nv = oS.shape[0]
    parents = m._parents
    support = np.zeros((nv, nv), dtype=bool)
    for i in range(nv):
        j = i
        while j >= 0:
            support[j, i] = True
            j = parents[j]
    if twin_route is not None:  # the root's columns: one body, each on the other's support
        Rb, pb = data.base_R.copy(), data.base_p.copy()
        oR = np.einsum("ab,nbc->nac", Rb, oR)
        op = op @ Rb.T + pb
        w = oS[:, :3] @ Rb.T
        vv = oS[:, 3:] @ Rb.T + np.cross(pb, w)
        oS = np.concatenate([w, vv], axis=1)
        support[:6, :6] = True
    return oR, op, oS, support


def _screw_jets(oS, support, n):
    """_Jet of every world screw S_i (nv, 6) in (q, v) directions (n = 2 nv)."""
    nv = oS.shape[0]
    C = np.einsum("oab,ja,ib->jio", _CRM, oS, oS)  # C[j, i] = S_j x S_i
    sup = support.astype(float)
    d = np.zeros((nv, 6, n))
    d[:, :, :nv] = np.einsum("ji,jio->ioj", sup, C)
    h = np.zeros((nv, 6, n, n))
    # d/dq_k (S_j x S_i) = [k on j's support] (S_k x S_j) x S_i + [k on i's support] S_j x (S_k x S_i)
    first = np.einsum("oab,kja,ib->ijko", _CRM, C, oS) * (sup.T[None, :, :, None])   # [k, j] support
    second = np.einsum("oab,ja,kib->ijko", _CRM, oS, C) * (sup.T[:, None, :, None])  # [k, i] support
    h[:, :, :nv, :nv] = np.transpose((first + second) * sup.T[:, :, None, None], (0, 3, 1, 2))
    return _Jet(oS.copy(), d, h)


def _index(J, idx):
    return _Jet(J.v[idx], J.d[idx], J.h[idx])


def _scale(J, s):
    """J scaled along its first axis by the constants s (len(s),)."""
    return _Jet(J.v * s.reshape(s.shape + (1,) * (J.v.ndim - 1)), J.d * s.reshape(s.shape + (1,) * (J.d.ndim - 1)),
                J.h * s.reshape(s.shape + (1,) * (J.h.ndim - 1)))


def _contact_jets(model, c, frame, oR, op, S, support, n, v=None, a=None, Vb=None, local_of=None):
    """The contact's Jacobian J (dim, s) as a _Jet, and (given v, a) its acceleration J a + gamma,
    over the s columns of S (local_of: a body's index among them)."""
    nv = S.v.shape[0]
    body = int(model._frame_body[frame])
    on = support[:, local_of[body]]
    R0 = oR[body] @ model._frame_R[frame]
    p0 = oR[body] @ model._frame_p[frame] + op[body]
    w, lin = _index(S, (slice(None), slice(0, 3))), _index(S, (slice(None), slice(3, 6)))
    # p: dp/dq_j = v_j + w_j x p on the support; second: d/dq_k of that
    pd = np.zeros((3, n))
    pd[:, :nv] = ((S.v[:, 3:] + np.cross(S.v[:, :3], p0)) * on[:, None]).T
    ph = np.zeros((3, n, n))
    # d/dx_k (v_j + w_j x p) = dv_j/dx_k + dw_j/dx_k x p + w_j x dp/dx_k
    t = (np.transpose(lin.d, (1, 0, 2)) + np.einsum("oab,ajk,b->ojk", _EPS, np.transpose(w.d, (1, 0, 2)), p0)
         + np.einsum("oab,ja,bk->ojk", _EPS, S.v[:, :3], pd))
    ph[:, :nv, :] = t * on[None, :, None]
    p = _Jet(p0, pd, ph)
    # R: dR/dq_j = [w_j] R; second: [dw_j/dx_k] R + [w_j] dR/dx_k
    Rd = np.zeros((3, 3, n))
    Rd[:, :, :nv] = np.einsum("oab,ja,bc->ocj", _EPS, S.v[:, :3], R0) * on[None, None, :]
    Rh = np.zeros((3, 3, n, n))
    Rh[:, :, :nv, :] = (np.einsum("oab,ajk,bc->ocjk", _EPS, np.transpose(w.d, (1, 0, 2)), R0)
                        + np.einsum("oab,ja,bck->ocjk", _EPS, S.v[:, :3], Rd)) * on[None, None, :, None]
    R = _Jet(R0, Rd, Rh)
    local = c.reference == "local"

    # Jacobian columns, zero off the support
    mask = on.astype(float)
    Sw = _Jet(S.v[:, :3].T * mask, np.transpose(S.d[:, :3], (1, 0, 2)) * mask[None, :, None],
              np.transpose(S.h[:, :3], (1, 0, 2, 3)) * mask[None, :, None, None])
    Sl = _Jet(S.v[:, 3:].T * mask, np.transpose(S.d[:, 3:], (1, 0, 2)) * mask[None, :, None],
              np.transpose(S.h[:, 3:], (1, 0, 2, 3)) * mask[None, :, None, None])
    Jlin = Sl + _cross3(Sw, p)
    if local:
        Jlin = _bilinear("ao,an->on", R, Jlin)
        Jang = _bilinear("ao,an->on", R, Sw)
    else:
        Jang = Sw
    J = Jlin if c.kind == "point" else _Jet(*(np.concatenate([x, y]) for x, y in zip(
        (Jang.v, Jang.d, Jang.h), (Jlin.v, Jlin.d, Jlin.h))))
    if v is None:
        return J, None
    # body twist and acceleration (gravity left out): V = sum S_k v_k, A = sum S_k a_k + (V_k x S_k) v_k
    V, A = _twist_acceleration(S, support, local_of[body], v, a, Vb, n)
    Vw, Vl = _index(V, slice(0, 3)), _index(V, slice(3, 6))
    Aw, Al = _index(A, slice(0, 3)), _index(A, slice(3, 6))
    acc_lin = Al + _cross3(Aw, p)
    if c.kind == "point":
        acc_lin = acc_lin + _cross3(Vw, Vl + _cross3(Vw, p))
        return J, (_bilinear("ao,a->o", R, acc_lin) if local else acc_lin)
    acc_ang = Aw
    if local:
        acc_ang, acc_lin = _bilinear("ao,a->o", R, acc_ang), _bilinear("ao,a->o", R, acc_lin)
    return J, _Jet(*(np.concatenate([x, y]) for x, y in zip((acc_ang.v, acc_ang.d, acc_ang.h),
                                                            (acc_lin.v, acc_lin.d, acc_lin.h))))


def _velocity_jets(S, support, v, n):
    """Jets of every body's twist V_i = sum over i's support of S_k v_k, (nv, 6)."""
    nv = S.v.shape[0]
    sup = support.astype(float)
    vd = np.zeros((nv, n))
    vd[np.arange(nv), nv + np.arange(nv)] = 1.0
    Sv = _Jet(S.v * v[:, None], S.d * v[:, None, None], S.h * v[:, None, None, None])
    # product rule with v_k (gradient e_{nv+k}, no Hessian)
    Sv.d = Sv.d + S.v[:, :, None] * vd[:, None, :]
    Sv.h = Sv.h + S.d[:, :, :, None] * vd[:, None, None, :] + vd[:, None, :, None] * S.d[:, :, None, :]
    return _Jet(np.einsum("ki,k...->i...", sup, Sv.v), np.einsum("ki,k...->i...", sup, Sv.d),
                np.einsum("ki,k...->i...", sup, Sv.h)), Sv


def _twist_acceleration(S, support, body, v, a, Vb, n):
    Vall, Sv = Vb
    on = support[:, body].astype(float)
    V = _Jet(np.einsum("k,k...->...", on, Sv.v), np.einsum("k,k...->...", on, Sv.d),
             np.einsum("k,k...->...", on, Sv.h))
    # (V_k x S_k) v_k = V_k x (S_k v_k)
    prod = _cross6(Vall, Sv)
    Sa = _scale(S, a)
    total = Sa + prod
    A = _Jet(np.einsum("k,k...->...", on, total.v), np.einsum("k,k...->...", on, total.d),
             np.einsum("k,k...->...", on, total.h))
    return V, A


def _prepare(model, data, q, contacts, name_v, v):
    """Checked inputs, resolved contacts and world kinematics (free flyer through its twin)."""
    if getattr(model, "root_joint", None) is not None:
        twin, twin_data, q_t, v, _ = _on_twin(model, data, q, v, name_v, contacts)
        route = (twin, twin_data, q_t)
    else:
        q, v = checked_inputs(model, data, False, **{"q": q, name_v: v})
        route = None
    resolved = _check_contacts(model if route is None else route[0], contacts)
    for k, (c, f1, f2) in enumerate(resolved):
        if c.baumgarte:
            raise ValueError(f"contacts[{k}]: second-order derivatives need zero Baumgarte gains "
                             f"(kp, kd), got kp={c.kp}, kd={c.kd}")
        if f2 is not None:
            raise ValueError(f"contacts[{k}]: second-order derivatives of loop closures (other="
                             f"{c.other!r}) are not implemented: contacts against the world only")
    frame_model = model if route is None else route[0]
    dims = [c.dim for c, _, _ in resolved]
    if sum(dims) > model.nv:
        raise ValueError(f"contacts: {sum(dims)} constraint rows on {model.nv} degrees of freedom are redundant: "
                         f"second-order derivatives need independent rows")
    oR, op, oS, support = _world_kinematics(model, data, q, route)
    return q, v, resolved, frame_model, oR, op, oS, support


def _rows_jets(frame_model, resolved, oR, op, oS, support, v=None, a=None):
    """The contacts' rows with their derivatives, full size: (J (m, nv), dJ_dq (m, nv, nv),
    J_qq (m, nv, nv, nv), and given v, a: acc_xx (m, 2 nv, 2 nv) the Hessian of J a + gamma in
    (q, v)). The jets run on the supports' columns only (the rows see no other joint)."""
    nv = oS.shape[0]
    bodies = [int(frame_model._frame_body[f1]) for _, f1, _ in resolved]
    cols = np.flatnonzero(support[:, bodies].any(axis=1))
    s = cols.size
    local_support = support[np.ix_(cols, cols)]
    n = 2 * s
    S = _screw_jets(oS[cols], local_support, n)
    Vb = None if v is None else _velocity_jets(S, local_support, v[cols], n)
    local_of = np.full(nv, -1)
    local_of[cols] = np.arange(s)
    Js, accs = [], []
    for c, f1, _ in resolved:
        J, acc = _contact_jets(frame_model, c, f1, oR, op, S, local_support, n, None if v is None else v[cols],
                               None if a is None else a[cols], Vb, local_of)
        Js.append(J)
        accs.append(acc)
    Jv, Jd, Jh = (np.concatenate(x) for x in zip(*((j.v, j.d, j.h) for j in Js)))
    m = Jv.shape[0]
    J = np.zeros((m, nv))
    J[:, cols] = Jv
    dJ = np.zeros((m, nv, nv))
    dJ[:, cols[:, None], cols[None, :]] = Jd[:, :, :s]
    Jqq = np.zeros((m, nv, nv, nv))
    Jqq[:, cols[:, None, None], cols[None, :, None], cols[None, None, :]] = Jh[:, :, :s, :s]
    if v is None:
        return J, dJ, Jqq, None
    h = np.concatenate([r.h for r in accs])
    both = np.concatenate([cols, nv + cols])
    acc_xx = np.zeros((m, 2 * nv, 2 * nv))
    acc_xx[:, both[:, None], both[None, :]] = h
    return J, dJ, Jqq, acc_xx


def _kkt_second(M, J, dM_dq, dJ_dq, Z_q, T_qq, extra):
    """Solves -K^-1 [T_qq + dK_j Z_q[:, k] + dK_k Z_q[:, j]] and -K^-1 [T + dK_j Z[:, k]] for the
    (T, Z) pairs of `extra`; dM_dq[i, l, j] = dM_il/dq_j, dJ_dq[r, l, j] = dJ_rl/dq_j."""
    nv, m = M.shape[0], J.shape[0]
    K = np.zeros((nv + m, nv + m))
    K[:nv, :nv], K[:nv, nv:], K[nv:, :nv] = M, -J.T, J

    def dK_times(Z):  # P[:, j, k] = (dK/dq_j) Z[:, k]
        za, zl = Z[:nv], Z[nv:]
        top = np.einsum("ilj,lk->ijk", dM_dq, za) - np.einsum("rij,rk->ijk", dJ_dq, zl)
        bottom = np.einsum("rlj,lk->rjk", dJ_dq, za)
        return np.concatenate([top, bottom])

    P = dK_times(Z_q)
    rhs = [T_qq + P + P.transpose(0, 2, 1)]
    for T, Z in extra:
        rhs.append(T + dK_times(Z))
    if np.linalg.matrix_rank(J) < m:
        raise ValueError("contacts: the constraint rows are redundant (rank-deficient Jacobian): second-order "
                         "derivatives need independent rows")
    out = []
    for r in rhs:
        N, a, b = r.shape
        out.append(-np.linalg.solve(K, r.reshape(N, a * b)).reshape(N, a, b))
    return out


def constrained_dynamics_second_derivatives(model, data, q, v, tau, contacts):
    """Second-order partial derivatives of `constrained_dynamics` (seed sec. XI.2):
    (d2a_dq2, d2a_dv2, d2a_dqdv, d2a_dtaudq, d2lam_dq2, d2lam_dv2, d2lam_dqdv, d2lam_dtaudq), indexed
    d2y_dxdz[i, j, k] = d2 y_i / dx_j dz_k (q-derivatives in integrate's tangent space). Contacts
    against the world, point or frame, with zero Baumgarte gains. New arrays."""
    for k, c in enumerate(contacts if not isinstance(contacts, Contact) else [contacts]):
        if isinstance(c, Contact) and c.baumgarte:
            raise ValueError(f"contacts[{k}]: second-order derivatives need zero Baumgarte gains "
                             f"(kp, kd), got kp={c.kp}, kd={c.kd}")
    da_dq, da_dv, da_dtau, dl_dq, dl_dv, dl_dtau = (np.array(x) for x in constrained_dynamics_derivatives(
        model, data, q, v, tau, contacts))
    a, lam = (np.array(x) for x in constrained_dynamics(model, data, q, v, tau, contacts))
    q_in = q
    q, v, resolved, fm, oR, op, oS, support = _prepare(model, data, q, contacts, "v", v)
    nv = oS.shape[0]
    J, dJ_dq, Jqq, acc_xx = _rows_jets(fm, resolved, oR, op, oS, support, np.asarray(v, float), a)
    # IDSVA-SO at the solution (eqs. 395 ff.), the contact forces' q-q term (J^T lam)_qq
    d2t_q, d2t_v, d2t_qv, dM_dq = (np.array(x) for x in rnea_second_derivatives(model, data, q_in, v, a))
    M = np.array(crba(model, data, q_in))
    JTl_qq = np.einsum("r,rijk->ijk", lam, Jqq)
    T_qq = np.concatenate([d2t_q - JTl_qq, acc_xx[:, :nv, :nv]])
    T_qv = np.concatenate([d2t_qv, acc_xx[:, :nv, nv:]])
    T_vv = np.concatenate([d2t_v, acc_xx[:, nv:, nv:]])
    Z_q = np.concatenate([da_dq, dl_dq])
    Z_v = np.concatenate([da_dv, dl_dv])
    Z_t = np.concatenate([da_dtau, dl_dtau])
    m = J.shape[0]
    Zqq, Zqv, Zqt = _kkt_second(M, J, dM_dq, dJ_dq, Z_q, T_qq,
                                [(T_qv, Z_v), (np.zeros((nv + m, nv, nv)), Z_t)])
    Zvv = -np.linalg.solve(_kkt(M, J), T_vv.reshape(nv + m, -1)).reshape(nv + m, nv, nv)
    Ztq = Zqt.transpose(0, 2, 1)  # d2/dtau_j dq_k
    return (Zqq[:nv], Zvv[:nv], Zqv[:nv], Ztq[:nv], Zqq[nv:], Zvv[nv:], Zqv[nv:], Ztq[nv:])


def _kkt(M, J):
    nv, m = M.shape[0], J.shape[0]
    K = np.zeros((nv + m, nv + m))
    K[:nv, :nv], K[:nv, nv:], K[nv:, :nv] = M, -J.T, J
    return K


def impulse_dynamics_second_derivatives(model, data, q, v_minus, contacts, restitution=0.0):
    """Second-order partial derivatives of `impulse_dynamics` (seed sec. XII.2):
    (d2vplus_dq2, d2vplus_dqdvminus, d2impulse_dq2, d2impulse_dqdvminus); v+ and the impulses are
    linear in v-, so their v- v- blocks vanish. Contacts against the world, zero Baumgarte gains."""
    for k, c in enumerate(contacts if not isinstance(contacts, Contact) else [contacts]):
        if isinstance(c, Contact) and c.baumgarte:
            raise ValueError(f"contacts[{k}]: second-order derivatives need zero Baumgarte gains "
                             f"(kp, kd), got kp={c.kp}, kd={c.kd}")
    dvp_dq, dvp_dvm, dL_dq, dL_dvm = (np.array(x) for x in impulse_dynamics_derivatives(
        model, data, q, v_minus, contacts, restitution))
    from .contact import impulse_dynamics
    v_plus, Lam = (np.array(x) for x in impulse_dynamics(model, data, q, v_minus, contacts, restitution))
    e = float(restitution)
    q_in = q
    q, vm, resolved, fm, oR, op, oS, support = _prepare(model, data, q, contacts, "v_minus", v_minus)
    vm = np.asarray(vm, float)
    nv = oS.shape[0]
    J, dJ_dq, Jqq, _ = _rows_jets(fm, resolved, oR, op, oS, support)
    zero = np.zeros(nv)
    # d2(M w)/dq2: ID at v = 0, a = w, less ID at v = a = 0 (gravity)
    d2_w = np.array(rnea_second_derivatives(model, data, q_in, zero, v_plus - vm)[0])
    d2_g, _, _, dM_dq = (np.array(x) for x in rnea_second_derivatives(model, data, q_in, zero, zero))
    M = np.array(crba(model, data, q_in))
    T_qq = np.concatenate([d2_w - d2_g - np.einsum("r,rijk->ijk", Lam, Jqq),
                           np.einsum("rijk,i->rjk", Jqq, v_plus + e * vm)])
    T_qv = np.concatenate([-dM_dq.transpose(0, 2, 1), e * dJ_dq.transpose(0, 2, 1)])
    Z_q = np.concatenate([dvp_dq, dL_dq])
    Z_v = np.concatenate([dvp_dvm, dL_dvm])
    Zqq, Zqv = _kkt_second(M, J, dM_dq, dJ_dq, Z_q, T_qq, [(T_qv, Z_v)])
    return Zqq[:nv], Zqv[:nv], Zqq[nv:], Zqv[nv:]
