"""Multi-DoF joints inside the tree: spherical (ball), planar and floating joints (Pinocchio's
JointModelSpherical, JointModelPlanar and JointModelFreeFlyer below the root).

Coordinates (DESIGN.md), of the child link's frame in the joint's frame (the joint's <origin>):
- spherical: q = a unit quaternion (x, y, z, w); v = w, the angular velocity in the child frame;
- planar: q = (x, y, cos th, sin th) as Pinocchio's, the position and heading in the joint frame's
  x-y plane; v = [w_z; v_x; v_y] in the child frame (angular first: Pinocchio orders it v_x, v_y, w_z);
- floating: q = [p; quaternion (x, y, z, w)], v = [w; v] in the child frame, as the free flyer.
Each joint's tau is the wrench on its child link in the same coordinates. Derivatives with respect to
q are taken in the tangent space of configuration.integrate: the joint's pose moves as T exp(dq)
(on SO(3), SE(2) or SE(3)).

How they are computed. The model holds each joint as a chain of 1-DoF bodies, one per coordinate of
its v, with the unit screws e_k of its kind at the joint's frame (model.py, urdf.py). A function runs
on the model's tree twin (the same Model without multi-DoF joints, one per Data, `anchor`), whose
chains sit at their zero position with the joint's pose T(q_j) written into the placement of the
chain's first body: every transform of the chain is then the identity, so the child link's pose is
the joint's, its twist the parent's plus sum_k e_k v_k and its Jacobian columns the unit screws, as
the joint's own. The chain's forward pass adds the velocity products of its joints,

    b(nu) = sum_{k < i} (e_k nu_k) x (e_i nu_i),                  nu = v_j,

which the joint does not have (its motion subspace is constant in the child frame): the twin is
given a_j - b(nu) (`twin_acceleration`) and its forward dynamics a_j + b(nu) (`add_bias`), as the
free flyer's chain (kernels/free_flyer.py). The anchoring, b and the first-order corrections below are
compiled (kernels/multi_dof.py), the others NumPy.

First derivatives (`correct_derivatives`). Away from zero the chain's coordinates theta are not the
joint's: the chain g(theta) = exp(theta_0 e_0) ... exp(theta_{m-1} e_{m-1}) has the body velocity
E(theta) theta', E's column j = exp(-theta_{m-1} ad_{m-1}) ... exp(-theta_{j+1} ad_{j+1}) e_j, and
the twin's generalized forces of the chain are E^T tau_j. At theta = 0 (E = I, dg = e_k d theta_k)
the twin's derivatives therefore hold, besides the joint's own,

    d tau_twin / d theta_k = d tau / d dq_k + E_k^T tau_j + (d tau / d v_j) E_k nu
                             + (d tau / d a_j) (E_k theta'' + H_k),
    E_k = dE / d theta_k:  column j = -e_k x e_j for j < k (else 0),
    H_k = d (E' theta') / d theta_k = sum_{j < k, j < i} nu_i nu_j ad_{max(i,k)} ad_{min(i,k)} e_j,

with theta'' = a_j - b(nu) and d tau / d a_j = M[:, j]; and d tau_twin / d theta' = d tau / d v_j +
M[:, j] db/dnu. Each chain's screws span a Lie subalgebra (so(3), se(2), se(3)), so every cross
product above stays in the joint's coordinates.
"""
import numpy as np

from .floating_base import CROSSES, motion_cross
from .kernels import multi_dof as _kernel
from .kernels.free_flyer import UNIT_TOLERANCE
from .model import FLOATING_JOINT, FREE_FLYER_DOFS, MULTI_DOF_SCREWS, PLANAR, SPHERICAL


def _algebra(kind):
    """For a kind's screws e_s: C[k, i] = the coordinates of e_k x e_i; U[k, i] = 1 for k < i; and
    P[k, i, j] = the coordinates of ad_{max(i,k)} ad_{min(i,k)} e_j where j < k and j < i (else 0)."""
    s = list(MULTI_DOF_SCREWS[kind])
    m = len(s)
    C = CROSSES[np.ix_(s, s, s)]
    U = np.triu(np.ones((m, m)), 1)
    P = np.zeros((m, m, m, m))
    for k in range(m):
        for i in range(m):
            for j in range(min(i, k)):
                P[k, i, j] = C[max(i, k)].T @ C[min(i, k), j]     # e_a x (e_b x e_j)
    return C, U, P


ALGEBRA = {kind: _algebra(kind) for kind in MULTI_DOF_SCREWS}
_KIND_CODE = {SPHERICAL: _kernel.SPHERICAL, PLANAR: _kernel.PLANAR, FLOATING_JOINT: _kernel.FLOATING}


def bias_jacobian(kind, nu):
    """d b / d nu (m, m): column j = sum_{i > j} (e_j x e_i) nu_i + sum_{k < j} (e_k x e_j) nu_k."""
    C, U, _ = ALGEBRA[kind]
    return np.einsum("jir,ji,i->rj", C, U, nu) + np.einsum("kjr,kj,k->rj", C, U, nu)


def correct_coriolis(model, C, oS, oV, oIc):
    """The twin's Coriolis matrix C (nv, nv) made the joints' in place, from the twin's world screws oS,
    twists oV and composite inertias oIc (kernels/coriolis.py): a joint's columns of Jdot all turn with
    its child link's twist, psi_k = oV_last x oS_k, where the chain's turn with their own body's; C is
    linear in psi: C[a, k] += oS_a . Ic_k dpsi_k (a on k's support), C[d, k] += (Ic_d oS_d) . dpsi_k
    (d below k)."""
    parents = model.parents
    for joint in model.multi_dof_joints:
        last = joint.body + joint.nv - 1
        below = [d for d in range(last + 1, model.nbodies) if _descends(parents, d, last)]
        for k in range(joint.body, last):
            dpsi = motion_cross(oV[last] - oV[k], oS[k])
            force = oIc[k] @ dpsi
            a = k
            while a >= 0:
                C[a, k] += oS[a] @ force
                a = parents[a]
            for d in range(k + 1, last + 1):
                C[d, k] += (oIc[d] @ oS[d]) @ dpsi
            for d in below:
                C[d, k] += (oIc[d] @ oS[d]) @ dpsi


def correct_time_variation(model, v, J_world, to_reference, dJ):
    """The twin's frame Jacobian time variation dJ (6, nv) made the joints' in place: column k of a joint
    gains to_reference @ dpsi_k, dpsi_k = (sum_{j > k in its chain} oS_j v_j) x oS_k with oS the world
    Jacobian's columns (zero for a frame not below the joint); to_reference maps world spatial vectors
    to the Jacobian's reference (its variation's other terms do not involve psi)."""
    for joint in model.multi_dof_joints:
        last = joint.body + joint.nv - 1
        for k in range(joint.body, last):
            dw = J_world[:, k + 1:last + 1] @ v[k + 1:last + 1]
            dJ[:, k] += to_reference @ motion_cross(dw, J_world[:, k])


def _descends(parents, d, ancestor):
    while d > ancestor:
        d = parents[d]
    return d == ancestor


# ----------------------------------------------------------------------------------------------
# Configurations


def layout(model):
    """(q indices, v indices) of the model's 1-DoF joints and the joints' table of kernels/multi_dof.py,
    made once per model."""
    layout = model.__dict__.get("_multi_dof_layout")
    if layout is None:
        q_index, v_index = [], []
        k = FREE_FLYER_DOFS if model.root_joint is not None else 0
        shift = model.nq - model.nv - sum(j.nq - j.nv for j in model.multi_dof_joints)
        for joint in (*model.multi_dof_joints, None):
            end = model.nv if joint is None else joint.body
            q_index += range(k + shift, end + shift)
            v_index += range(k, end)
            if joint is not None:
                k, shift = joint.body + joint.nv, shift + joint.nq - joint.nv
        table = [(_KIND_CODE[j.kind], j.body, j.q_index, MULTI_DOF_SCREWS[j.kind][0]) for j in model.multi_dof_joints]
        layout = model.__dict__["_multi_dof_layout"] = (np.array(q_index, dtype=np.int64),
                                                        np.array(v_index, dtype=np.int64),
                                                        np.array(table, dtype=np.int64).reshape(-1, 4))
    return layout


def rotation_part(joint):
    """The slice of q holding a joint's quaternion (spherical, floating) or (cos, sin) (planar)."""
    start = joint.q_index + (2 if joint.kind == PLANAR else 3 if joint.kind != SPHERICAL else 0)
    return slice(start, joint.q_index + joint.nq)


def check_configuration(model, name, q):
    """A ValueError unless each multi-DoF joint's quaternion (or planar (cos, sin)) in q has unit norm."""
    for joint in model.multi_dof_joints:
        part = rotation_part(joint)
        norm = float(np.linalg.norm(q[part]))
        if not abs(norm - 1.0) <= UNIT_TOLERANCE:
            what = "(cos, sin) of its angle" if joint.kind == PLANAR else "orientation (x, y, z, w), a quaternion,"
            raise ValueError(f"{name}[{part.start}:{part.stop}], joint {joint.name!r}'s {what} must have unit norm, "
                             f"got norm {norm!r}: normalize it first (dyn_control.normalize)")


# ----------------------------------------------------------------------------------------------
# The tree twin


def anchor(model, data, q):
    """(twin, twin_data, q_twin): the model's tree twin for a finite configuration q (nq,) (module
    docstring), each joint's pose written into its chain's first placement, the chains at zero; a
    ValueError names a joint whose quaternion or (cos, sin) is not of unit norm."""
    twin = data.__dict__.get("_multi_dof_twin")
    if twin is None:
        tree = model._replace(multi_dof_joints=())
        twin = data.__dict__["_multi_dof_twin"] = (tree, tree.create_data(), np.zeros(tree.nq), np.empty((3, 3)))
    tree, tree_data, q_twin, scratch = twin
    q_index, v_index, table = layout(model)
    if not _kernel.anchor(q, table, q_index, v_index, tree.nq - tree.nv, model._home_R, model._home_p,
                          tree._home_R, tree._home_p, q_twin, scratch):
        check_configuration(model, "q", q)   # the kernel's refusal: a rotation part not of unit norm
    return tree, tree_data, q_twin


def twin_acceleration(model, v, a, out):
    """out = a - [b(v_j) at each joint's coordinates], the twin's joint accelerations."""
    out[:] = a
    _kernel.add_bias(layout(model)[2], v, -1.0, out, np.empty(6))
    return out


def add_bias(model, v, ddq):
    """ddq += [b(v_j)]: the twin's forward dynamics as the joints' accelerations."""
    _kernel.add_bias(layout(model)[2], v, 1.0, ddq, np.empty(6))


def _E(joint, x):
    """[E_k x for each k] (m, m), rows k: the chain's dE/dtheta_k applied to x (m,), -sum_{j<k} (e_k x e_j) x_j."""
    C, U, _ = ALGEBRA[joint.kind]
    return -np.einsum("kjr,jk,j->kr", C, U, x)


def _E_transpose(joint, f):
    """[(E_k^T f)_j] (m, m), rows j, columns k: -(e_k x e_j) . f for j < k."""
    C, U, _ = ALGEBRA[joint.kind]
    return -np.einsum("kjr,jk,r->jk", C, U, f)


def _H(joint, nu):
    """[H_k] (m, m), rows k: d (E' theta') / d theta_k at theta' = nu (module docstring)."""
    return np.einsum("kijr,i,j->kr", ALGEBRA[joint.kind][2], nu, nu)


def correct_derivatives(model, v, a_twin, tau, M, dtau_dq, dtau_dv):
    """The twin's d tau / d q and d tau / d v (nv, nv) at (v, a_twin), with tau the torques and M the
    mass matrix there, made the joints' in place (module docstring; kernels/multi_dof.py)."""
    _kernel.correct_derivatives(layout(model)[2], v, a_twin, tau, M, dtau_dq, dtau_dv, np.empty(6), np.empty(6),
                                np.empty((3, 6, 6)))


def _dE(kind, indices):
    """d^n E / d theta_{indices} at theta = 0 (m, m): column c is prod (-ad_i) e_c over the indices in
    decreasing order (the factors exp(-theta_i ad_i) of E's column c, larger i outside), zero unless
    every index exceeds c."""
    C = ALGEBRA[kind][0]
    m = C.shape[0]
    out = np.zeros((m, m))
    for c in range(m):
        if all(i > c for i in indices):
            x = np.eye(m)[c]
            for i in sorted(indices):       # innermost factor first
                x = -C[i].T @ x             # -ad_i x: coordinates of -(e_i x x)
            out[:, c] = x
    return out


def correct_second_derivatives(model, v, a_twin, tau, F, V, M, d2q, d2v, d2qv, dM):
    """The twin's second derivatives (d2tau_dq2, d2tau_dv2, d2tau_dqdv, dM_dq) made the joints' in place,
    with tau, F = dtau/dq, V = dtau/dv and M the joints' (first order corrected) at the same point.
    Differentiating T_{,j} = S_{,j} tau + S (F E e_j + V E_{,j} theta' + M (E_{,j} theta'' + W_{,j}))
    (S = E^T on the joint's rows, W = E' theta') once more at theta = 0, with D_k the total derivative
    along theta_k (q by e_k, v by E_k theta', a by E_k theta'' + W_k):
        dM:    dM_c/dq_k = dM/dq_k + E_k^T M + M E_k;
        v, v:  T_vv = X_vv + M d2b/dnu2;
        q, v:  T_qv[:, j, l] = X_qv[:, j, l] + E_j^T (V e_l + M b_l) + dM/dq_j b_l + X_vv[:, :, l] E_j theta'
                               + V E_j e_l + M dW_j/dtheta'_l;
        q, q:  T_qq[:, j, k] = X_qq[:, j, k] + E_jk^T tau + E_j^T P_k + E_k^T P_j + X_qv[:, j, :] E_k theta'
                               + dM/dq_j (E_k theta'' + W_k) + F E_k e_j + X_qv[:, k, :] E_j theta'
                               + X_vv (E_j theta', E_k theta') + V E_jk theta' + dM/dq_k (E_j theta'' + W_j)
                               + M (E_jk theta'' + W_jk),      P_k = D_k tau = F e_k + V E_k theta' + M (E_k theta'' + W_k),
    X the joints' derivatives (X_qq iterated along integrate as the free flyer's), b_l = db/dnu_l,
    W_j = sum_i E_ij theta' theta'_i, W_jk = sum_i E_ijk theta' theta'_i."""
    nv = v.shape[0]
    E1, Eth, Edd, W1, B = (np.zeros((nv, nv, nv)), np.zeros((nv, nv)), np.zeros((nv, nv)), np.zeros((nv, nv)),
                           np.zeros((nv, nv)))
    for joint in model.multi_dof_joints:
        part = slice(joint.body, joint.body + joint.nv)
        nu, dd = v[part], a_twin[part]
        for k in range(joint.nv):
            E1[part, part, joint.body + k] = _dE(joint.kind, (k,))
        Eth[part, part], Edd[part, part] = _E(joint, nu).T, _E(joint, dd).T
        W1[part, part] = _H(joint, nu).T
        B[part, part] = bias_jacobian(joint.kind, nu)
        C, U, _ = ALGEBRA[joint.kind]
        hessian = np.einsum("jlr,jl->rjl", C, U) + np.einsum("ljr,lj->rjl", C, U)    # d2b/dnu_j dnu_l
        d2v[:, part, part] -= np.einsum("ir,rjl->ijl", M[:, part], hessian)
    for k in range(nv):
        dM[:, :, k] -= E1[:, :, k].T @ M + M @ E1[:, :, k]
    d2qv -= (np.einsum("rij,rl->ijl", E1, V + M @ B) + np.einsum("imj,ml->ijl", dM, B)
             + np.einsum("ipl,pj->ijl", d2v, Eth) + np.einsum("ir,rlj->ijl", V, E1))
    for joint in model.multi_dof_joints:    # M dW_j/dtheta'_l, dW_j/dtheta'_l = sum_i E_ij[:, l] theta'_i + E_lj theta'
        m, first = joint.nv, joint.body
        nu = v[first:first + m]
        for j in range(m):
            for l in range(m):
                dW = sum(_dE(joint.kind, (i, j))[:, l] * nu[i] for i in range(m)) + _dE(joint.kind, (l, j)) @ nu
                d2qv[:, first + j, first + l] -= M[:, first:first + m] @ dW
    P = F + V @ Eth + M @ (Edd + W1)
    Ew = Edd + W1
    d2q -= (np.einsum("rij,rk->ijk", E1, P) + np.einsum("rik,rj->ijk", E1, P) + np.einsum("ijl,lk->ijk", d2qv, Eth)
            + np.einsum("ilj,lk->ijk", dM, Ew) + np.einsum("ir,rjk->ijk", F, E1) + np.einsum("ikl,lj->ijk", d2qv, Eth)
            + np.einsum("ilm,lj,mk->ijk", d2v, Eth, Eth) + np.einsum("ilk,lj->ijk", dM, Ew))
    for joint in model.multi_dof_joints:    # the terms within one joint: E_jk, W_jk
        m, first = joint.nv, joint.body
        part = slice(first, first + m)
        nu, dd = v[part], a_twin[part]
        for j in range(m):
            for k in range(m):
                E2 = _dE(joint.kind, (j, k))
                W2 = sum(_dE(joint.kind, (i, j, k)) @ nu * nu[i] for i in range(m))
                d2q[:, first + j, first + k] -= V[:, part] @ (E2 @ nu) + M[:, part] @ (E2 @ dd + W2)
                d2q[part, first + j, first + k] -= E2.T @ tau[part]


def _embedded(model, v):
    """E1 (nv, nv, nv), E1[:, :, k] = E_k on its joint's block; Eth (nv, nv), column k = E_k v; and the
    joints' (part, m, first body) for their blocks."""
    nv = v.shape[0]
    E1, Eth = np.zeros((nv, nv, nv)), np.zeros((nv, nv))
    for joint in model.multi_dof_joints:
        part = slice(joint.body, joint.body + joint.nv)
        for k in range(joint.nv):
            E1[part, part, joint.body + k] = _dE(joint.kind, (k,))
        Eth[part, part] = _E(joint, v[part]).T
    return E1, Eth


def correct_kkt_second_derivatives(model, v, first, second, turned=None, tau=None, accelerations=False):
    """The twin's second derivatives of one output y of the constrained (or impulse) dynamics made the
    joints' in place: second = (Y_qq, Y_vv, Y_qv, Y_tauq) ((Y_qq, None, Y_qv, None) for an impulse),
    first = the joints' (y_q, y_v, y_tau) (y_tau None for an impulse), v the velocity (v- for an
    impulse), tau the torques (None for an impulse).

    The twin computes Y = L(theta) (y(q(theta), E theta', E^-T tau) - w(theta, theta')) with L = E^-1 and
    w = E' theta' for the accelerations (accelerations=True; turned: the twin's a_twin = a - b), L = E^-1,
    w = 0 for the post-impact velocity (turned: v+), L = I, w = 0 for forces and impulses (turned None).
    y is affine in tau (the KKT matrix depends on q alone), so at theta = 0, with t_k = -E_k^T tau,
    P_k = D_k y = y_q e_k + y_v E_k v + y_tau t_k, L_k = -E_k, L_jk = E_j E_k + E_k E_j - E_jk, W as in
    correct_second_derivatives:
        v, v:      Y_vv = X_vv - d2b/dnu2 (accelerations' joint rows);
        tau, q:    Y_tauq[:, :, k] = X_tauq[:, :, k] + L_k y_tau - y_tau E_k^T;
        q, v:      Y_qv[:, j, l] = X_qv[:, j, l] + L_j (y_v e_l - b_l) + X_vv(E_j v, e_l) + y_v E_j e_l - dW_j/dv_l;
        q, q:      Y_qq[:, j, k] = X_qq[:, j, k] + L_jk (y - w) + L_j (P_k - W_k) + L_k (P_j - W_j)
                   + X_qv[:, j, :] E_k v + X_qtau[:, j, :] t_k + y_q E_k e_j + X_qv[:, k, :] E_j v
                   + X_vv(E_j v, E_k v) + y_v E_jk v + X_tauq(t_j, k) + y_tau t_jk - W_jk."""
    Yqq, Yvv, Yqv, Ytq = second
    y_q, y_v, y_tau = first
    E1, Eth = _embedded(model, v)
    nv = v.shape[0]
    rows_turn = turned is not None
    Et = np.zeros((nv, nv)) if tau is None else -np.einsum("rik,r->ik", E1, tau)   # column k: t_k
    W1, B = np.zeros((nv, nv)), np.zeros((nv, nv))
    for joint in model.multi_dof_joints:
        part = slice(joint.body, joint.body + joint.nv)
        nu = v[part]
        if accelerations:
            W1[part, part] = _H(joint, nu).T
            B[part, part] = bias_jacobian(joint.kind, nu)
            C, U, _ = ALGEBRA[joint.kind]
            Yvv[part, part, part] += np.einsum("jlr,jl->rjl", C, U) + np.einsum("ljr,lj->rjl", C, U)
    if Ytq is not None:
        Ytq += np.einsum("ir,jrk->ijk", y_tau, E1)
        if rows_turn:
            Ytq += np.einsum("irk,rj->ijk", E1, y_tau)
    n_out = y_q.shape[0]
    Xvv = Yvv if Yvv is not None else np.zeros((n_out, nv, nv))
    Yqv -= np.einsum("ipl,pj->ijl", Xvv, Eth) + np.einsum("ir,rlj->ijl", y_v, E1)
    if rows_turn:
        Yqv += np.einsum("irj,rl->ijl", E1, y_v - B)
    for joint in model.multi_dof_joints if accelerations else ():
        m, first_body = joint.nv, joint.body
        nu = v[first_body:first_body + m]
        for j in range(m):
            for l in range(m):
                dW = sum(_dE(joint.kind, (i, j))[:, l] * nu[i] for i in range(m)) + _dE(joint.kind, (l, j)) @ nu
                Yqv[first_body:first_body + m, first_body + j, first_body + l] += dW
    P = y_q + y_v @ Eth + (0.0 if y_tau is None else y_tau @ Et)
    Xtq = Ytq if Ytq is not None else np.zeros((n_out, nv, nv))
    Yqq -= (np.einsum("ijl,lk->ijk", Yqv, Eth) + np.einsum("imj,mk->ijk", Xtq, Et)
            + np.einsum("ir,rjk->ijk", y_q, E1) + np.einsum("ikl,lj->ijk", Yqv, Eth)
            + np.einsum("ilm,lj,mk->ijk", Xvv, Eth, Eth) + np.einsum("imk,mj->ijk", Xtq, Et))
    if rows_turn:
        PW = P - W1
        Yqq += np.einsum("irj,rk->ijk", E1, PW) + np.einsum("irk,rj->ijk", E1, PW)
    for joint in model.multi_dof_joints:
        m, first_body = joint.nv, joint.body
        part = slice(first_body, first_body + m)
        nu = v[part]
        E = [_dE(joint.kind, (k,)) for k in range(m)]
        for j in range(m):
            for k in range(m):
                E2 = _dE(joint.kind, (j, k))
                Ljk = E[j] @ E[k] + E[k] @ E[j] - E2
                Yqq[:, first_body + j, first_body + k] -= y_v[:, part] @ (E2 @ nu)
                if tau is not None:
                    Yqq[:, first_body + j, first_body + k] -= y_tau[:, part] @ (Ljk.T @ tau[part])
                if rows_turn:
                    Yqq[part, first_body + j, first_body + k] -= Ljk @ turned[part]
                if accelerations:
                    Yqq[part, first_body + j, first_body + k] += sum(_dE(joint.kind, (i, j, k)) @ nu * nu[i]
                                                                    for i in range(m))


def correct_constrained_derivatives(model, v, tau, a_twin, da_dq, da_dv, da_dtau, dlam_dq, dlam_dv, dlam_dtau):
    """The twin's constrained-dynamics derivatives made the joints' in place. The twin computes
    A(theta) = E^-1 (a(g(theta), E theta', E^-T tau) - E' theta') and lam(g(theta), E theta', E^-T tau), so
    at theta = 0: da/dv = dA/dtheta' + db/dnu (the joint's rows), and
        da/ddq_k = dA/dtheta_k + E_k theta'' + H_k (the joint's rows) - (da/dv) E_k nu + (da/dtau) E_k^T tau_j,
    dlam/ddq_k likewise without the joint's rows' terms."""
    for joint in model.multi_dof_joints:
        part = slice(joint.body, joint.body + joint.nv)
        nu = v[part]
        da_dv[part, part] += bias_jacobian(joint.kind, nu)
        E_nu, E_tau = _E(joint, nu).T, _E_transpose(joint, tau[part])
        for dq, dv, dtau in ((da_dq, da_dv, da_dtau), (dlam_dq, dlam_dv, dlam_dtau)):
            dq[:, part] += dtau[:, part] @ E_tau - dv[:, part] @ E_nu
        da_dq[part, part] += (_E(joint, a_twin[part]) + _H(joint, nu)).T


def correct_impulse_derivatives(model, v_minus, v_plus, dv_dq, dv_dv_minus, dimpulse_dq, dimpulse_dv_minus):
    """The twin's impulse-dynamics derivatives made the joints' in place: the twin computes
    V(theta) = E^-1 v+(g(theta), E theta'-) and Lambda(g(theta), E theta'-), so at theta = 0
        dv+/ddq_k = dV/dtheta_k + E_k v+_j (the joint's rows) - (dv+/dv-) E_k v-_j, dLambda likewise."""
    for joint in model.multi_dof_joints:
        part = slice(joint.body, joint.body + joint.nv)
        E_v = _E(joint, v_minus[part]).T
        for dq, dv in ((dv_dq, dv_dv_minus), (dimpulse_dq, dimpulse_dv_minus)):
            dq[:, part] -= dv[:, part] @ E_v
        dv_dq[part, part] += _E(joint, v_plus[part]).T
