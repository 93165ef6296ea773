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
Every quantity of the rows (the rows at the contact point J_x = [w_x; v_x + w_x x p], the twists
V = sum S_k v_k, the accelerations) is differentiated twice by the product rule on these rules, in
closed form (kernels/constrained_second_order.py's doc), exactly (no finite differences).

A free flyer (tangent-space convention of integrate, T exp(dq)): the root's six columns are the world
screws Ad_T e_c of one body, each on the support of every other (their q-derivatives do not commute:
d2/dq_k dq_j differs from d2/dq_j dq_k in the root's block, as in second_order).

Compiled (kernels/constrained_second_order.py, one call): the rows' derivatives on each contact's
support chain only, their q-q Hessian contracted with the forces as it is made; the right-hand sides'
(dK/dq_j) z products as loops over the entries of dM/dq and dJ/dq that can be non-zero (or BLAS when
dM has few zeros); the product with -K^-1 per connected component of K (a fixed base's top-level
subtrees with their contacts), formed from the Cholesky factors of M and of the Delassus matrix and
applied to all columns of a tensor by one matrix product, the symmetric tensors' columns j <= k only.
IDSVA-SO's kernel and the first order (compiled) come before it. The buffers are allocated once per
(data, contact rows) (_Workspace, cached on the Data). Contacts against the world (other=None) with
independent rows only; zero Baumgarte gains (a ValueError names each refusal). Multi-DoF joints: the
tree twin's tensors, turned into the joints' coordinates (multi_dof.correct_kkt_second_derivatives).
"""
import numpy as np

from . import multi_dof as _multi
from .contact import (Contact, _check_contacts, _on_twin, constrained_dynamics, constrained_dynamics_derivatives,
                      impulse_dynamics, impulse_dynamics_derivatives)
from .dynamics import checked_inputs, crba, has_multi_dof, multi_dof_inputs, non_finite_error
from .kernels import constrained_second_order as _cso
from .kernels import rnea_second_derivatives as _so
from .second_order import _second_tree, rnea_second_derivatives

_CONSTRAINED, _IMPULSE = 0, 1  # the kernels' modes
_BLOCKS = {4: 3, 2: 2}  # first-order blocks (q, v, tau | q, v-) of the constrained | impulse tensors
_DENSE = 0.5  # dM's products by one matrix product when at least this fraction of it may be non-zero


class _Workspace:
    """Buffers of the second-order kernels for one contact set on one (tree or twin) model, cached on
    the Data (dict data._cso_workspaces, key: the tree flag and the contacts' [frame, dim, local])."""

    def __init__(self, frame_model, spec, support, twin):
        nv = frame_model.nv
        self.spec = np.array(spec, dtype=np.int64).reshape(len(spec), 3)
        self.m = m = int(self.spec[:, 1].sum())
        self.nv, n = nv, nv + m
        self.support = support                  # [j, i]: joint j moves body i
        bodies = frame_model._frame_body[self.spec[:, 0]]
        s = max([int(support[:, b].sum()) if b >= 0 else 0 for b in bodies] + [1])  # longest chain
        self.chain = np.zeros(nv, dtype=np.int64)  # a contact's chain of joints
        self.Jp = np.zeros((s, 6))                 # its rows at the point, world axes
        self.D = np.zeros((s, s, 6))               # their q-derivatives
        self.H = np.zeros((s, s, s, 6))            # and second q-derivatives
        self.vecs = np.zeros((6, s, 6))            # acceleration's per-joint 6-vectors
        self.pairs = np.zeros((6, s, s, 6))        # and per-pair 6-vectors
        self.tmp = np.zeros((8, 6))
        self.pose = np.zeros((4, 3))               # a frame's world rotation and origin
        self.J = np.zeros((m, nv))                 # rows
        self.dJ = np.zeros((m, nv, nv))            # dJ[r, l, j] = dJ_rl/dq_j
        self.M = np.zeros((nv, nv))
        self.work = np.zeros(3 * nv * nv + 2 * nv * m + 2 * m * m)  # a block's factors and inverses
        self.block = np.zeros(n * n)                                # a block of -K^-1
        self.gather, self.product = np.zeros(n * nv * nv), np.zeros(n * nv * nv)  # its columns
        self.rhs = {4: np.zeros((4, n, nv, nv)), 2: np.zeros((2, n, nv, nv))}  # by the number of tensors
        # K's connected components: joints coupled through M (one on the other's support) and the
        # rows of the contacts on them; per component its joints, then its rows
        label = np.arange(nv)
        for i in range(nv):
            for j in range(nv):
                if support[j, i]:
                    a, b = label[i], label[j]
                    if a != b:
                        label[label == max(a, b)] = min(a, b)
        rows, r = [], nv
        for f, dim, _ in self.spec:
            b = frame_model._frame_body[f]
            rows.extend([(label[b] if b >= 0 else -1, r + k) for k in range(dim)])
            r += dim
        comp, start, joints = [], [0], []
        for c in sorted(set(label.tolist()) | {x for x, _ in rows}):
            members = [i for i in range(nv) if label[i] == c]
            comp.extend(members + [k for x, k in rows if x == c])
            start.append(len(comp))
            joints.append(len(members))
        self.comp = np.array(comp, dtype=np.int64)
        self.comp_start = np.array(start, dtype=np.int64)
        self.comp_joints = np.array(joints, dtype=np.int64)
        # where dM[i, l, j] and dJ[r, l, j] may be non-zero: i, l on one path from the root and j on a
        # path through one of them (a descendant moves a composite inertia); l, j on the row's chain
        related = support | support.T
        i, l, j = np.nonzero(related[:, :, None] & (related[:, None, :] | related.T[None, :, :]))
        self.dM_nz = np.ascontiguousarray(np.stack([i, l, j], axis=1), dtype=np.int64)
        nz, r = [], 0
        for f, dim, _ in self.spec:
            b = frame_model._frame_body[f]
            chain = np.flatnonzero(support[:, b]) if b >= 0 else np.zeros(0, dtype=np.int64)
            for k in range(dim):
                nz.extend((r + k, x, y) for x in chain for y in chain)
            r += dim
        self.dJ_nz = np.array(nz, dtype=np.int64).reshape(-1, 3)
        # a dM with few zeros (a single chain, a free flyer): its products by BLAS (scratch; empty: loops)
        dense = len(self.dM_nz) >= _DENSE * nv ** 3
        self.dMt = np.zeros((nv * nv, nv) if dense else (0, nv))
        self.Zcat = {count: np.zeros((nv, _BLOCKS[count] * nv) if dense else (0, 0)) for count in (4, 2)}
        self.Pcat = {count: np.zeros((nv * nv, _BLOCKS[count] * nv) if dense else (0, 0)) for count in (4, 2)}
        # tensors symmetric in j, k: q-q (but a free flyer's) and v-v
        self.symmetric = {4: np.array([not twin, True, False, False]), 2: np.array([not twin, False])}
        # the q-q right-hand side kept as a half (kernel doc: fold) where it is symmetric
        self.fold = {4: np.array([not twin, False, False, False]), 2: np.array([not twin, False])}


def _support(model):
    """[j, i] = joint j on the path from the root to body i (a tree's own bodies, one joint each)."""
    nv = model.nv
    parents = model._parents
    support = np.zeros((nv, nv), dtype=np.bool_)
    for i in range(nv):
        j = i
        while j >= 0:
            support[j, i] = True
            j = parents[j]
    return support


def _workspace(data, frame_model, resolved, twin):
    """The cached _Workspace of these contacts on data (frame_model: the tree they are resolved on)."""
    key = (twin,) + tuple((f1, c.dim, 1 if c.reference == "local" else 0) for c, f1, _ in resolved)
    cache = data.__dict__.setdefault("_cso_workspaces", {})
    ws = cache.get(key)
    if ws is None:
        support = _support(frame_model)
        if twin:  # the root's columns: one body, each on the other's support
            support[:6, :6] = True
        ws = cache[key] = _Workspace(frame_model, [k for k in key[1:]], support, twin)
    return ws


def _prepare(model, data, q, contacts, name_v, v):
    """Checked inputs, resolved contacts and the (twin) tree the rows are computed on: (v, resolved,
    (tree, tree data, q of the tree, root pose R, p), workspace)."""
    if getattr(model, "root_joint", None) is not None:
        twin, twin_data, q_t, v, _ = _on_twin(model, data, q, v, name_v, contacts)
        route = (twin, twin_data, q_t, data._base_R, data._base_p)
    else:
        q, v = checked_inputs(model, data, False, **{"q": q, name_v: v})
        route = (model, data, q, data._base_R, data._base_p)
    resolved = _check_contacts(route[0], contacts)
    for k, (c, f1, f2) in enumerate(resolved):
        if c.baumgarte:
            raise ValueError(f"contacts[{k}]: second-order derivatives need zero Baumgarte gains "
                             f"(kp, kd), got kp={c.kp}, kd={c.kd}")
        if f2 is not None:
            raise ValueError(f"contacts[{k}]: second-order derivatives of loop closures (other="
                             f"{c.other!r}) are not implemented: contacts against the world only")
    dims = [c.dim for c, _, _ in resolved]
    if sum(dims) > model.nv:
        raise ValueError(f"contacts: {sum(dims)} constraint rows on {model.nv} degrees of freedom are redundant: "
                         f"second-order derivatives need independent rows")
    ws = _workspace(data, route[0], resolved, route[0] is not model)
    return np.asarray(v, dtype=float), route, ws


def _contiguous(*xs):
    return [np.ascontiguousarray(x, dtype=float) for x in xs]


def _second(route, ws, mode, v, a, weights, u, dM, d2q, d2v, d2qv, Z, e):
    """The kernel (kernels/constrained_second_order.second_derivatives) into new arrays (tensors,
    nv + m, nv, nv); redundant rows (a rank-deficient J) are refused, a K the factors find singular
    with J of full rank goes through a dense solve."""
    count = 4 if mode == _CONSTRAINED else 2
    rhs = ws.rhs[count]
    out = np.empty(rhs.shape)
    m, d, q_t, Rb, pb = route
    status = _cso.second_derivatives(
        mode, m._parents, m._screw_axes, m._home_R, m._home_p, q_t, d._R, d._p, d._oR, d._op, d._ct_oS, Rb, pb,
        ws.support, m._frame_body, m._frame_R, m._frame_p, ws.spec, v, a, weights, u, ws.M, dM, d2q, d2v, d2qv,
        *Z, e, ws.dM_nz, ws.dJ_nz, ws.comp, ws.comp_start, ws.comp_joints, ws.symmetric[count], ws.fold[count],
        ws.chain, ws.Jp, ws.D, ws.H, ws.vecs, ws.pairs, ws.tmp, ws.pose, ws.J, ws.dJ, ws.work, ws.block, ws.gather,
        ws.product, ws.dMt, ws.Zcat[count], ws.Pcat[count], rhs, out)
    if status != _cso.OK:
        if np.linalg.matrix_rank(ws.J) < ws.m:
            raise ValueError("contacts: the constraint rows are redundant (rank-deficient Jacobian): second-order "
                             "derivatives need independent rows")
        nv, m = ws.nv, ws.m
        K = np.zeros((nv + m, nv + m))
        K[:nv, :nv], K[:nv, nv:], K[nv:, :nv] = ws.M, -ws.J.T, ws.J
        for t in range(count):
            x = rhs[t] + rhs[t].transpose(0, 2, 1) if ws.fold[count][t] else rhs[t]
            out[t] = -np.linalg.solve(K, x.reshape(nv + m, -1)).reshape(nv + m, nv, nv)
    return out


_NO_GRAVITY = np.zeros(6)


def _plain_tree(model):
    """A fixed base without mimic coupling: IDSVA-SO's kernel writes the tensors of the model itself."""
    return getattr(model, "root_joint", None) is None and model.coupling is None


def _refuse_baumgarte(contacts):
    for k, c in enumerate(contacts if not isinstance(contacts, Contact) else [contacts]):
        if isinstance(c, Contact) and c.baumgarte:
            raise ValueError(f"contacts[{k}]: second-order derivatives need zero Baumgarte gains "
                             f"(kp, kd), got kp={c.kp}, kd={c.kd}")


def constrained_dynamics_second_derivatives(model, data, q, v, tau, contacts):
    """Second-order partial derivatives of `constrained_dynamics` (seed sec. XI.2):
    (d2a_dq2, d2a_dv2, d2a_dqdv, d2a_dtaudq, d2lam_dq2, d2lam_dv2, d2lam_dqdv, d2lam_dtaudq), indexed
    d2y_dxdz[i, j, k] = d2 y_i / dx_j dz_k (q-derivatives in integrate's tangent space). Contacts
    against the world, point or frame, with zero Baumgarte gains. New arrays."""
    _refuse_baumgarte(contacts)
    if has_multi_dof(model):
        twin, twin_data, q_t, v, tau = multi_dof_inputs(model, data, q, v=v, tau=tau)
        a_twin = np.array(constrained_dynamics(twin, twin_data, q_t, v, tau, contacts)[0])
        out = list(constrained_dynamics_second_derivatives(twin, twin_data, q_t, v, tau, contacts))
        first = _contiguous(*constrained_dynamics_derivatives(model, data, q, v, tau, contacts))
        _multi.correct_kkt_second_derivatives(model, v, first[:3], out[:4], a_twin, tau, accelerations=True)
        _multi.correct_kkt_second_derivatives(model, v, first[3:], out[4:], tau=tau)
        return tuple(out)
    first = _contiguous(*constrained_dynamics_derivatives(model, data, q, v, tau, contacts))
    a, lam = _contiguous(*constrained_dynamics(model, data, q, v, tau, contacts))
    q_in = q
    v, route, ws = _prepare(model, data, q, contacts, "v", v)
    nv = ws.nv
    # IDSVA-SO at the solution (eqs. 395 ff.), M; then the rows (their kinematics last: the calls
    # above share the tree's pose buffers)
    if _plain_tree(model):  # the kernel on the checked inputs (rnea_second_derivatives' own path)
        _second_tree(model, data, route[2], v, a, data._f_ext_zero)
    else:
        rnea_second_derivatives(model, data, q_in, v, a)
    ws.M[:] = crba(model, data, q_in)
    da_dq, da_dv, da_dtau, dl_dq, dl_dv, dl_dtau = first
    out = _second(route, ws, _CONSTRAINED, v, a, lam, v, data._dM_dq, data._d2tau_dq2, data._d2tau_dv2,
                  data._d2tau_dqdv, (da_dq, dl_dq, da_dv, dl_dv, da_dtau, dl_dtau), 0.0)
    Zqq, Zvv, Zqv, Zqt = out
    Ztq = Zqt.transpose(0, 2, 1)  # d2/dtau_j dq_k
    return (Zqq[:nv], Zvv[:nv], Zqv[:nv], Ztq[:nv], Zqq[nv:], Zvv[nv:], Zqv[nv:], Ztq[nv:])


def impulse_dynamics_second_derivatives(model, data, q, v_minus, contacts, restitution=0.0):
    """Second-order partial derivatives of `impulse_dynamics` (seed sec. XII.2):
    (d2vplus_dq2, d2vplus_dqdvminus, d2impulse_dq2, d2impulse_dqdvminus); v+ and the impulses are
    linear in v-, so their v- v- blocks vanish. Contacts against the world, zero Baumgarte gains."""
    _refuse_baumgarte(contacts)
    if has_multi_dof(model):
        twin, twin_data, q_t, v_minus = multi_dof_inputs(model, data, q, v_minus=v_minus)
        v_plus = np.array(impulse_dynamics(twin, twin_data, q_t, v_minus, contacts, restitution)[0])
        out = list(impulse_dynamics_second_derivatives(twin, twin_data, q_t, v_minus, contacts, restitution))
        first = _contiguous(*impulse_dynamics_derivatives(model, data, q, v_minus, contacts, restitution))
        _multi.correct_kkt_second_derivatives(model, v_minus, (first[0], first[1], None), (out[0], None, out[1], None),
                                              v_plus)
        _multi.correct_kkt_second_derivatives(model, v_minus, (first[2], first[3], None), (out[2], None, out[3], None))
        return tuple(out)
    first = _contiguous(*impulse_dynamics_derivatives(model, data, q, v_minus, contacts, restitution))
    v_plus, Lam = _contiguous(*impulse_dynamics(model, data, q, v_minus, contacts, restitution))
    e = float(restitution)
    q_in = q
    vm, route, ws = _prepare(model, data, q, contacts, "v_minus", v_minus)
    nv = ws.nv
    zero = np.zeros(nv)
    # d2(M w)/dq2: ID at v = 0, a = w without gravity (less ID at v = a = 0, its gravity part)
    w = v_plus - vm
    if _plain_tree(model):
        if not _so.rnea_second_derivatives(
                model._parents, model._screw_axes, model._home_R, model._home_p, model._phi, route[2], zero, w,
                _NO_GRAVITY, data._f_ext_zero, data._R, data._p, data._oR, data._op, data._phi_world,
                data._so_vectors, data._so_matrices, data._so_mats, data._so_pair, data._so_tau, data._so_first,
                data._so_second):
            raise non_finite_error(q=q, v_minus=v_minus)
        d2_w = data._so_second[0]
    else:
        d2_w = rnea_second_derivatives(model, data, q_in, zero, w)[0].copy()
        d2_w -= rnea_second_derivatives(model, data, q_in, zero, zero)[0]
    ws.M[:] = crba(model, data, q_in)
    dvp_dq, dvp_dvm, dL_dq, dL_dvm = first
    out = _second(route, ws, _IMPULSE, zero, zero, Lam, v_plus + e * vm, data._dM_dq, d2_w, d2_w, d2_w,
                  (dvp_dq, dL_dq, dvp_dvm, dL_dvm, dvp_dvm, dL_dvm), e)
    Zqq, Zqv = out
    return Zqq[:nv], Zqv[:nv], Zqq[nv:], Zqv[nv:]
