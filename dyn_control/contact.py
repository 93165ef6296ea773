"""Rigid contacts and loop closures: constrained (KKT) dynamics, impulse dynamics, and their
first-order derivatives (seed "Details of Partial Derivatives of Rigid-Body Inverse Dynamics",
secs. XI-XII).

A `Contact` holds a frame of the robot still, either against the world or against a second frame
(a loop closure, e.g. the cut joint of a five-bar). Its constraint rows are Pinocchio's
RigidConstraintModel ones, angular-first where Pinocchio is linear-first:
  "point" (3 rows): the classical acceleration of the frame origin p1 relative to the other frame's
      origin p2, p1'' - p2'' = 0, expressed in frame 1 ("local") or in the world axes
      ("local_world_aligned"); the force acts at p1 on body 1 and the opposite force at p2.
  "frame" (6 rows): "local": the relative twist Ad_{c1}^-1 (V1 - V2) in frame 1 is held at zero,
      whose rate is Ad_{c1}^-1 (A1 - A2) + u x Ad_{c1}^-1 V2 (u the relative twist);
      "local_world_aligned": the spatial acceleration of body 1 relative to body 2, taken at p1 in
      world axes. The wrench [n; f] is expressed accordingly and acts on body 1, its opposite on 2.
Here V, A are world-frame twists and accelerations (gravity excluded). With kinematic constraint
rows J a + gamma(q, v) = c (Baumgarte: c = -kp e_p - kd e_v, zero by default) the KKT system
(sec. XI, eq. 307) is
    M a - J^T lambda = tau - b(q, v),     J a = c - gamma,
solved through the Delassus matrix G = J M^-1 J^T (a pseudo-inverse for redundant rows: the
minimum-norm forces; the whole KKT matrix by least squares when M is singular, as with the
massless cut body of a loop closure). Impulse dynamics (sec. XII, eq. 423) with restitution e:
    M (v+ - v-) = J^T Lambda,             J v+ = -e J v-.
M and b are the model's with its joint terms (armature: M + diag(I_a); friction F_v v + F_c sgn_s(v)
in b, as in crba and nonlinear_effects); an impulse acts in no time, so friction does not enter it.
Models with coupled mimic joints are not supported here.

constrained_dynamics and impulse_dynamics run compiled (kernels/constrained_dynamics.py: rows, M and
b(q, v) from one kinematics pass, tree-sparse factor of M, Cholesky of G), and so do their
derivatives, each one compiled call that runs the forward kernel first and then differentiates at
its solution with the same factorisations (kernels/constrained_dynamics_derivatives.py: ID's
derivatives on the forward pass's kinematics, the rows' derivatives in their supports' columns, the
KKT solve of all columns); buffers are allocated once per contact set (_Workspace, cached on the
Data; the derivatives' part on their first call). The NumPy code below stays the reference and the
fallback: Baumgarte gains (refused by the derivatives), a singular M or G (the kernels decline:
least squares, minimum-norm forces), and the error messages.
"""
import itertools

import numpy as np
from scipy.linalg import cho_solve

from . import floating_base as _floating
from . import multi_dof as _multi
from .derivatives import rnea_derivatives
from .dynamics import (_FAST_REFUSED, as_real_array, as_vector, checked_inputs, compiled_call, crba,
                       floating_tree_state, has_multi_dof, multi_dof_inputs, non_finite_error, nonlinear_effects,
                       strict)
from .kernels import constrained_dynamics as _cd
from .kernels import constrained_dynamics_derivatives as _cdd
from .kernels import contact as _ct
from .kernels import floating_contact as _fc
from .spatial import ad, log_se3, skew

_KINDS = {"point": 3, "frame": 6}
# the compiled kernels called directly once compiled for their canonical arguments (compiled_call's
# typing of 22 arguments would cost more than the kernel); compiled_call compiles them first
_fast_constrained_dynamics = strict(_cd.constrained_dynamics)
_fast_impulse_dynamics = strict(_cd.impulse_dynamics)
_fast_constrained_dynamics_derivatives = strict(_cdd.constrained_dynamics_derivatives)
_fast_impulse_dynamics_derivatives = strict(_cdd.impulse_dynamics_derivatives)
# a free flyer's counterpart of each (kernels/floating_contact.py): the fast path's, and the checked
# path's, which compiles it on first use
_FLOATING_KERNELS = {_fast_constrained_dynamics: _fc.constrained_dynamics,
                     _fast_impulse_dynamics: _fc.impulse_dynamics,
                     _fast_constrained_dynamics_derivatives: _fc.constrained_dynamics_derivatives,
                     _fast_impulse_dynamics_derivatives: _fc.impulse_dynamics_derivatives}
_FAST_FLOATING = {fixed: strict(floating) for fixed, floating in _FLOATING_KERNELS.items()}
_REFERENCES = ("local", "local_world_aligned")
_SINGULAR = 1e-12  # relative size of a pivot or eigenvalue taken as zero
_STAMPS = itertools.count()  # Contact stamps: a new one at every assignment to a contact
_VALIDATED_LISTS = 32  # contact lists remembered as validated on a Data (_cached_workspace)
_OK = _cd.OK  # for the fast path (_fast): a module attribute lookup less


class Contact:
    """A frame held still against the world (other=None) or against another frame (a loop closure).

    frame, other: link or joint names (or frame indices) of the model.
    kind: "point" (3D, holds the frame origin) or "frame" (6D, holds the whole frame).
    reference: "local" (forces and rows in frame 1's axes) or "local_world_aligned" (world axes).
    anchor: (4, 4) world placement of the fixed side when other is None (Pinocchio's
        joint2_placement, identity by default); only the Baumgarte position term uses it.
    kp, kd: Baumgarte gains, scalars or one per row (angular rows first for "frame"); the
        constraint becomes J a + gamma = -kp e_p - kd e_v with e_p, e_v the position and velocity
        errors of frame 1 against the other side (in frame 1, rotated for "local_world_aligned").
    """

    def __init__(self, frame, kind="point", reference="local", other=None, anchor=None, kp=0.0, kd=0.0):
        for name, value in (("frame", frame), ("other", other)):
            if not (isinstance(value, (str, int, np.integer)) and not isinstance(value, bool)
                    or name == "other" and value is None):
                raise ValueError(f"{name} must be a link or joint name, or a frame index, got {value!r}")
        self.frame = frame
        self.other = other
        self._kp = self._kd = np.zeros(1)  # until kind and the gains are set
        self.kind = kind
        self.reference = reference
        if anchor is None:
            anchor = np.eye(4)
        anchor = as_real_array("anchor", anchor, "a finite (4, 4) placement").copy()
        if anchor.shape != (4, 4) or not np.all(np.isfinite(anchor)):
            raise ValueError(f"anchor must be a finite (4, 4) placement, got shape {anchor.shape}")
        self.anchor = anchor
        self.kp = kp
        self.kd = kd

    def __setattr__(self, name, value):
        """Every assignment (frame, other, kind, reference, anchor, kp, kd, and the private fields
        behind them) gives the contact a new stamp, unique across all contacts: the contact functions
        cache a validated contact list on the Data under its contacts' stamps (_cached_workspace), so
        a changed contact is never served from a stale entry."""
        object.__setattr__(self, name, value)
        object.__setattr__(self, "_stamp", next(_STAMPS))

    @property
    def kind(self):
        return self._kind

    @kind.setter
    def kind(self, value):
        if not isinstance(value, str) or value not in _KINDS:
            raise ValueError(f"kind must be 'point' or 'frame', got {value!r}")
        dim = _KINDS[value]
        # one gain per row: uniform gains follow the new row count, per-row ones must fit it
        kp, kd = (self._gain(name, g[0] if np.all(g == g[0]) else g, dim)
                  for name, g in (("kp", self._kp), ("kd", self._kd)))
        self._kind, self.dim, self._kp, self._kd = value, dim, kp, kd

    @property
    def reference(self):
        return self._reference

    @reference.setter
    def reference(self, value):
        if not isinstance(value, str) or value not in _REFERENCES:
            raise ValueError(f"reference must be 'local' or 'local_world_aligned', got {value!r}")
        self._reference = value

    def _gain(self, name, value, dim=None):
        dim = self.dim if dim is None else dim
        try:
            gain = np.broadcast_to(as_real_array(name, value, "numbers"), (dim,)).copy()
        except ValueError:  # not numbers, or not broadcastable to one per row
            raise ValueError(f"{name} must be a number or {dim} numbers, got {value!r}") from None
        if not np.all(np.isfinite(gain)):
            raise ValueError(f"{name} must be finite, got {value!r}")
        gain.setflags(write=False)  # set gains by assignment, which keeps `baumgarte` current
        return gain

    @property
    def kp(self):
        return self._kp

    @kp.setter
    def kp(self, value):
        self._kp = self._gain("kp", value)
        self._baumgarte = bool(np.any(self._kp) or np.any(self._kd))

    @property
    def kd(self):
        return self._kd

    @kd.setter
    def kd(self, value):
        self._kd = self._gain("kd", value)
        self._baumgarte = bool(np.any(self._kp) or np.any(self._kd))

    @property
    def baumgarte(self):
        return self._baumgarte

    def __repr__(self):
        other = "world" if self.other is None else repr(self.other)
        return f"Contact({self.frame!r} vs {other}, {self.kind}, {self.reference})"


def _cross(a, b):
    """3-vector cross products along axis 0, broadcasting (3,), (3, 1) and (3, n) operands
    (written out: np.cross costs more than the arithmetic at these sizes)."""
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


def _crm(m, X):
    """m x X for a motion vector m and motion vectors X (6,) or (6, n)."""
    out = np.empty(np.shape(X))
    out[:3] = _cross(m[:3], X[:3])
    out[3:] = _cross(m[:3], X[3:]) + _cross(m[3:], X[:3])
    return out


def _column(p, X):
    """p shaped to broadcast against X (6,) or (6, n)."""
    return p if np.ndim(X) == 1 else p[:, None]


def _to_local(R, p, X):
    """Ad_{(R, p)}^-1 X for world motion vectors X (6,) or (6, n) (a frame with pose (R, p)):
    [R^T w; R^T (v + w x p)]."""
    out = np.empty(np.shape(X))
    out[:3] = R.T @ X[:3]
    out[3:] = R.T @ (X[3:] + _cross(X[:3], _column(p, X)))
    return out


def _at_point(p, X):
    """Motion vectors X (world axes, at the origin) taken at the point p: [w; v + w x p]."""
    out = np.array(X, dtype=np.float64)
    out[3:] += _cross(X[:3], _column(p, X))
    return out


class _Side:
    """One frame of a contact at (q, v, a): pose, body twist and acceleration, and (when asked)
    the body's Jacobian and motion derivatives, all world-frame (6, nv)."""

    def __init__(self, model, data, frame_index, anchor):
        self.body = -1 if frame_index is None else int(model._frame_body[frame_index])
        if frame_index is None:
            self.R, self.p = anchor[:3, :3], anchor[:3, 3]
        elif self.body < 0:
            self.R, self.p = model._frame_R[frame_index], model._frame_p[frame_index]
        else:
            oR, op = data._oR[self.body], data._op[self.body]
            self.R = oR @ model._frame_R[frame_index]
            self.p = oR @ model._frame_p[frame_index] + op
        nv = model.nv
        if self.body < 0:
            self.V = np.zeros(6)
            self.A = np.zeros(6)
        else:
            self.V = data._ct_oV[self.body].copy()
            self.A = data._ct_oA[self.body].copy()
        self.J, self.dV_dq, self.dA_dq, self.dA_dv = np.zeros((4, 6, nv))

    def differentiate(self, model, data):
        if self.body >= 0:
            _ct.motion_derivatives(model._parents, data._ct_oS, data._ct_oV, data._ct_oA, self.body,
                                   self.J, self.dV_dq, self.dA_dq, self.dA_dv, data._tmp6)
        # the frame origin moves with every support joint: dp/dq_k = v_k + w_k x p
        self.Jp = self.J[3:] + _cross(self.J[:3], self.p[:, None])

    def point_velocity(self):
        return self.V[3:] + _cross(self.V[:3], self.p)

    def point_acceleration(self):
        """Classical acceleration of the frame origin: A_lin + A_ang x p + w x (v + w x p)."""
        return self.A[3:] + _cross(self.A[:3], self.p) + _cross(self.V[:3], self.point_velocity())

    def point_velocity_derivatives(self):
        """d pdot / dq at fixed joint velocities, (3, nv)."""
        return self.dV_dq[3:] + _cross(self.dV_dq[:3], self.p[:, None]) + _cross(self.V[:3][:, None], self.Jp)

    def point_acceleration_derivatives(self):
        """(d pddot / dq, d pddot / dv) at fixed joint accelerations, each (3, nv)."""
        w = self.V[:3][:, None]
        pdot = self.point_velocity()[:, None]
        dpdot_dq = self.point_velocity_derivatives()
        d_dq = (self.dA_dq[3:] + _cross(self.dA_dq[:3], self.p[:, None])
                + _cross(self.A[:3][:, None], self.Jp) + _cross(self.dV_dq[:3], pdot) + _cross(w, dpdot_dq))
        d_dv = (self.dA_dv[3:] + _cross(self.dA_dv[:3], self.p[:, None]) + _cross(self.J[:3], pdot)
                + _cross(w, self.Jp))
        return d_dq, d_dv


class _Rows:
    """The constraint rows of one contact at (q, v, a), from its two sides."""

    def __init__(self, contact, s1, s2):
        self.contact, self.s1, self.s2 = contact, s1, s2
        self.local = contact.reference == "local"

    def jacobian(self):
        s1, s2 = self.s1, self.s2
        if self.contact.kind == "point":
            J = s1.Jp - s2.Jp
            return s1.R.T @ J if self.local else J
        if self.local:
            return _to_local(s1.R, s1.p, s1.J - s2.J)
        return _at_point(s1.p, s1.J - s2.J)

    def acceleration(self):
        """alpha = J a + gamma, the constraint acceleration (Pinocchio's drift at a = 0)."""
        s1, s2 = self.s1, self.s2
        if self.contact.kind == "point":
            acc = s1.point_acceleration() - s2.point_acceleration()
            return s1.R.T @ acc if self.local else acc
        if self.local:
            u = _to_local(s1.R, s1.p, s1.V - s2.V)
            return _to_local(s1.R, s1.p, s1.A - s2.A) + _crm(u, _to_local(s1.R, s1.p, s2.V))
        return _at_point(s1.p, s1.A - s2.A)

    def baumgarte(self):
        """c = -kp e_p - kd e_v (zero without gains)."""
        c = self.contact
        if not c.baumgarte:
            return np.zeros(c.dim)
        s1, s2 = self.s1, self.s2
        if c.kind == "point":
            e_p = s1.R.T @ (s1.p - s2.p)
            e_v = s1.R.T @ (s1.point_velocity() - s2.point_velocity())
        else:
            T12 = np.eye(4)
            T12[:3, :3] = s1.R.T @ s2.R
            T12[:3, 3] = s1.R.T @ (s2.p - s1.p)
            e_p = -log_se3(T12)
            e_v = _to_local(s1.R, s1.p, s1.V - s2.V)
        out = -c.kp * e_p - c.kd * e_v
        if self.local:
            return out
        if c.kind == "point":
            return s1.R @ out
        return np.concatenate([s1.R @ out[:3], s1.R @ out[3:]])

    def velocity_derivatives(self):
        """d u / dq at fixed joint velocities (the sides' twists built with those velocities)."""
        s1, s2 = self.s1, self.s2
        if self.contact.kind == "point":
            d = s1.point_velocity_derivatives() - s2.point_velocity_derivatives()
            if not self.local:
                return d
            # d R1^T / dq_k = -R1^T [w_k]: R1^T (d - w_k x u_world)
            u = s1.point_velocity() - s2.point_velocity()
            return s1.R.T @ (d - _cross(s1.J[:3], u[:, None]))
        dV = s1.dV_dq - s2.dV_dq
        if self.local:
            # d Ad^-1 / dq_k = -Ad^-1 ad(S1_k): Ad^-1 (dV_k - S1_k x V)
            return _to_local(s1.R, s1.p, dV + _crm(s1.V - s2.V, s1.J))
        out = _at_point(s1.p, dV)
        out[3:] += _cross((s1.V - s2.V)[:3][:, None], s1.Jp)
        return out

    def acceleration_derivatives(self):
        """(d alpha / dq, d alpha / dv) at fixed joint accelerations."""
        s1, s2 = self.s1, self.s2
        if self.contact.kind == "point":
            d1q, d1v = s1.point_acceleration_derivatives()
            d2q, d2v = s2.point_acceleration_derivatives()
            dq, dv = d1q - d2q, d1v - d2v
            if not self.local:
                return dq, dv
            acc = s1.point_acceleration() - s2.point_acceleration()
            return s1.R.T @ (dq - _cross(s1.J[:3], acc[:, None])), s1.R.T @ dv
        dA_dq = s1.dA_dq - s2.dA_dq
        dA_dv = s1.dA_dv - s2.dA_dv
        if not self.local:
            dq = _at_point(s1.p, dA_dq)
            dq[3:] += _cross((s1.A - s2.A)[:3][:, None], s1.Jp)
            return dq, _at_point(s1.p, dA_dv)
        R, p = s1.R, s1.p
        # alpha = Ad^-1 (A1 - A2) + u x w2, u = Ad^-1 (V1 - V2), w2 = Ad^-1 V2
        u = _to_local(R, p, s1.V - s2.V)
        w2 = _to_local(R, p, s2.V)
        du_dq = _to_local(R, p, s1.dV_dq - s2.dV_dq + _crm(s1.V - s2.V, s1.J))
        dw2_dq = _to_local(R, p, s2.dV_dq + _crm(s2.V, s1.J))
        dq = (_to_local(R, p, dA_dq + _crm(s1.A - s2.A, s1.J)) - _crm(w2, du_dq) + _crm(u, dw2_dq))
        du_dv = _to_local(R, p, s1.J - s2.J)
        dv = _to_local(R, p, dA_dv) - _crm(w2, du_dv) + _crm(u, _to_local(R, p, s2.J))
        return dq, dv

    def applied_forces(self, lam):
        """[(body, F, dF/dq)]: the world wrenches (at the root origin) the contact force lam puts on
        the two bodies, and their derivatives at fixed lam, (6, nv)."""
        s1, s2 = self.s1, self.s2
        nv = s1.J.shape[1]
        if self.contact.kind == "point":
            f = s1.R @ lam if self.local else lam
            df = _cross(s1.J[:3], f[:, None]) if self.local else np.zeros((3, nv))
            out = []
            for side, sign in ((s1, 1.0), (s2, -1.0)):
                F = sign * np.concatenate([_cross(side.p, f), f])
                dF = sign * np.concatenate([_cross(side.Jp, f[:, None]) + _cross(side.p[:, None], df), df])
                out.append((side.body, F, dF))
            return out
        if self.local:
            # lam = [n; f] in frame 1: the world wrench Ad^-T lam moves with body 1
            R, p = s1.R, s1.p
            f = R @ lam[3:]
            F = np.concatenate([R @ lam[:3] + _cross(p, f), f])
            dF = _crf_columns(s1.J, F)
        else:
            # lam = [n; f] at p1 in world axes: F = [n + p1 x f; f]
            F = np.concatenate([lam[:3] + _cross(s1.p, lam[3:]), lam[3:]])
            dF = np.zeros((6, nv))
            dF[:3] = _cross(s1.Jp, lam[3:][:, None])
        return [(s1.body, F, dF), (s2.body, -F, -dF)]


def _crf_columns(S, F):
    """Columns S_k x* F for motion vectors S (6, n) and one force F (6,)."""
    out = np.empty(S.shape)
    out[:3] = _cross(S[:3], F[:3][:, None]) + _cross(S[3:], F[3:][:, None])
    out[3:] = _cross(S[:3], F[3:][:, None])
    return out


def _check_contacts(model, contacts):
    if isinstance(contacts, Contact):
        contacts = [contacts]
    try:
        contacts = list(contacts)
    except TypeError:
        raise ValueError(f"contacts must be a list of dyn_control.Contact, got "
                         f"{type(contacts).__name__}") from None
    if not contacts:
        raise ValueError("contacts is empty: give at least one Contact")
    for c in contacts:
        if not isinstance(c, Contact):
            raise ValueError(f"contacts must hold dyn_control.Contact objects, got {type(c).__name__}")
    if model.coupling is not None:
        raise ValueError("contacts on models with coupled mimic joints are not supported")
    resolved = []
    for k, c in enumerate(contacts):
        f1 = _frame_index(model, k, "frame", c.frame)
        f2 = None if c.other is None else _frame_index(model, k, "other", c.other)
        if f2 is not None and model._frame_body[f1] == model._frame_body[f2]:
            raise ValueError(f"contact {c}: both frames are on the same body, the constraint is empty")
        resolved.append((c, f1, f2))
    return resolved


def _frame_index(model, k, name, frame):
    """model.frame_id(frame) for contacts[k].<name>, or a ValueError naming that."""
    try:
        return model.frame_id(frame)
    except ValueError as exc:
        raise ValueError(f"contacts[{k}].{name}: {exc}") from None


def _rows(model, data, q, v, a, resolved, inputs):
    """The contacts' rows at (q, v, a) (world motion computed once); a ValueError naming the caller's
    `inputs` when the motion is not finite (non-finite inputs, or finite ones that overflow)."""
    if not _ct.world_motion(model._parents, model._screw_axes, model._home_R, model._home_p, q, v, a,
                            data._R, data._p, data._oR, data._op, data._ct_oS, data._ct_oV, data._ct_oA,
                            data._tmp6):
        raise non_finite_error(**inputs)
    rows = []
    for c, f1, f2 in resolved:
        s1 = _Side(model, data, f1, None)
        s2 = _Side(model, data, f2, c.anchor)
        s1.differentiate(model, data)
        s2.differentiate(model, data)
        rows.append(_Rows(c, s1, s2))
    return rows


def _stack(rows, method):
    return np.concatenate([getattr(r, method)() for r in rows])


def _force_torque_derivatives(model, data, rows, lam):
    """d (J^T lam) / dq at fixed lam, (nv, nv)."""
    out = np.zeros((model.nv, model.nv))
    start = 0
    for r in rows:
        m = r.contact.dim
        for body, F, dF in r.applied_forces(lam[start:start + m]):
            if body >= 0:
                _ct.add_force_torque_derivatives(model._parents, data._ct_oS, body, F, dF, 1.0, data._tmp6,
                                                 out)
        start += m
    return out


def _solve(M, J, rhs_dynamics, rhs_constraint):
    """(x, y) with M x - J^T y = rhs_dynamics, J x = rhs_constraint (columns allowed).

    With M positive definite: y from the Delassus system J M^-1 J^T y = rhs_constraint -
    J M^-1 rhs_dynamics (its pseudo-inverse when rows are redundant: the minimum-norm forces).
    A singular M (a massless body, such as the cut copy of a loop closure) leaves the joint space
    to the constraints: then the KKT matrix is solved whole, in the least-squares sense."""
    try:
        L = np.linalg.cholesky(M) if np.all(np.diag(M) > 0.0) else None
    except np.linalg.LinAlgError:  # not positive definite in floating point: singular for the solver
        L = None
    if L is not None and np.min(np.diag(L)) ** 2 > _SINGULAR * np.max(np.diag(M)):
        m = J.shape[0]
        solved = cho_solve((L, True), np.column_stack([J.T, rhs_dynamics]))
        Minv_JT, x_free = solved[:, :m], solved[:, m:]
        if rhs_dynamics.ndim == 1:
            x_free = x_free[:, 0]
        G = J @ Minv_JT
        w, U = np.linalg.eigh(G)
        keep = w > _SINGULAR * max(w[-1], 1e-300)
        y = (U[:, keep] / w[keep]) @ (U[:, keep].T @ (rhs_constraint - J @ x_free))
        return x_free + Minv_JT @ y, y
    nv, m = M.shape[0], J.shape[0]
    K = np.zeros((nv + m, nv + m))
    K[:nv, :nv] = M
    K[:nv, nv:] = -J.T
    K[nv:, :nv] = J
    solution = np.linalg.lstsq(K, np.concatenate([rhs_dynamics, rhs_constraint]), rcond=_SINGULAR)[0]
    return solution[:nv], solution[nv:]


def _solve_checked(M, J, rhs_dynamics, rhs_constraint, inputs):
    """_solve, or a ValueError naming the caller's `inputs` when the system or its solution is not
    finite (non-finite inputs, or finite ones that overflow)."""
    if not all(np.all(np.isfinite(x)) for x in (J, rhs_dynamics, rhs_constraint)):
        raise non_finite_error(**inputs)
    x, y = _solve(M, J, rhs_dynamics, rhs_constraint)
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise non_finite_error(**inputs)
    return x, y


class _Workspace:
    """Buffers of the compiled constrained and impulse dynamics (and their derivatives) for one
    contact set, allocated once per (data, contact rows) and cached on the Data object (dict
    data._contact_workspaces)."""

    def __init__(self, model, key):
        self.nv = nv = model.nv
        self.spec = np.array(key, dtype=np.int64).reshape(len(key), 4)  # kernel module doc
        self.m = m = int(self.spec[:, 2].sum())
        self.buf = np.zeros(_cd.workspace_size(nv, m))  # J, gamma, factors of M and G, scratch
        self.x = np.zeros(nv)               # a or v_plus
        self.lam = np.zeros(m)              # forces or impulses
        self.square, self.rect = (nv, nv), (m, nv)   # the shapes of the derivative kernels' blocks
        self._derivative_buf = None         # ID derivatives, the sides' motion derivatives, scratch
        self.twin = None                    # a free flyer's: the twin's buffers and world-aligned rows
        self.floating = None                # the _Workspace of the free flyer this one is the twin's of

    @property
    def derivative_buf(self):
        """The derivative kernels' buffer, allocated on the first derivative call (O(nv^2))."""
        if self._derivative_buf is None:
            self._derivative_buf = np.zeros(_cdd.derivative_workspace_size(self.nv, self.m))
        return self._derivative_buf


def _workspace(model, data, resolved):
    """The cached _Workspace of these contacts, or None when the compiled path does not apply
    (Baumgarte gains, mimic coupling)."""
    key = []
    for c, f1, f2 in resolved:
        if c._baumgarte:  # Baumgarte gains: the NumPy path
            return None
        key.append((f1, -1 if f2 is None else f2, c.dim, 1 if c.reference == "local" else 0))
    key = tuple(key)
    cache = data.__dict__.setdefault("_contact_workspaces", {})
    ws = cache.get(key)
    if ws is None:
        ws = cache[key] = _Workspace(model, key)
    _validated(data, [c for c, _, _ in resolved], model, ws)
    return ws


def _validated(data, contacts, model, ws):
    """Remembers the contacts, as they are now, as validated for model's workspace ws on data: the
    fast path of the next calls with them (_cached_workspace)."""
    validated = data.__dict__.setdefault("_contact_validated", {})
    if len(validated) >= _VALIDATED_LISTS:  # lists built anew each call: keep the cache bounded
        validated.clear()
    validated[tuple(c._stamp for c in contacts)] = (model, ws)


def _cached_workspace(model, data, contacts):
    """The _Workspace of `contacts` (a Contact, or a list or tuple of them) when a checked call on
    this model and data validated them in their present state, else None. The key is the contacts'
    stamps, renewed by every assignment to a contact (Contact.__setattr__) and unique across
    contacts: another list, another order, or a changed contact misses."""
    try:
        if type(contacts) is list or type(contacts) is tuple:
            key = tuple([c._stamp for c in contacts])
        else:
            key = (contacts._stamp,)
        entry = data._contact_validated.get(key)
    except AttributeError:  # not contacts, not a Data, or no contacts validated on it yet
        return None
    if entry is None or entry[0] is not model:
        return None
    return entry[1]


def _fast(kernel, model, data, contacts, q, v, third, blocks=0):
    """The fast path of the contact functions: the compiled `kernel` called directly on the inputs as
    they are, for contacts validated by an earlier call (_cached_workspace), or None for the checked
    path. The strict kernel dispatcher refuses arrays that are not C-contiguous, aligned, writable
    float64 in native byte order; the kernel refuses other sizes and non-finite values; the
    checked path then names the problem. q, v, third: the kernel's arguments after the packed
    buffers (third: tau, or the restitution as a float). Results, new arrays: the forward kernels'
    state (nv,) and forces (m,); with `blocks` = n, the derivative kernels' n (nv, nv) blocks then
    n (m, nv) blocks. (Written for the few microseconds of a small robot's call: each line here is a
    measurable part of it.)"""
    ws = _cached_workspace(model, data, contacts)
    if ws is None:
        return None
    try:
        if not (q.dtype.isnative and v.dtype.isnative and (type(third) is float or third.dtype.isnative)):
            return None
        if ws.twin is not None:
            return _fast_floating(_FAST_FLOATING[kernel], ws, model, data, q, v, third, blocks)
        if blocks:
            out = _derivative_outputs(ws, blocks)
            status = kernel(model._buf, data._buf, q, v, third, ws.spec, ws.buf, ws.derivative_buf, ws.x, ws.lam,
                            *out)
        else:
            out = np.empty(ws.nv), np.empty(ws.m)
            status = kernel(model._buf, data._buf, q, v, third, ws.spec, ws.buf, out[0], out[1])
    except _FAST_REFUSED:
        return None
    return out if status == _OK else None


def _fast_floating(kernel, ws, model, data, q, v, third, blocks):
    """_fast's call of a free flyer's kernel (kernels/floating_contact.py) on the twin's workspace."""
    if blocks:
        out = _derivative_outputs(ws, blocks)
        status = kernel(model._buf, data._buf, *ws.twin, q, v, third, ws.spec, ws.buf, ws.derivative_buf, ws.x,
                        ws.lam, *out)
    else:
        out = np.empty(ws.nv), np.empty(ws.m)
        status = kernel(model._buf, data._buf, *ws.twin, q, v, third, ws.spec, ws.buf, out[0], out[1])
    return out if status == _OK else None


def _derivative_outputs(ws, blocks):
    """New arrays for a derivative kernel of workspace `ws`: `blocks` (2 or 3) (nv, nv) blocks, then
    as many (m, nv) blocks. Unrolled, on shapes made once: built in a loop they cost three times as
    much, 0.6 us of a 5 us panda call."""
    new, square, rect = np.empty, ws.square, ws.rect
    if blocks == 2:
        return new(square), new(square), new(rect), new(rect)
    return new(square), new(square), new(square), new(rect), new(rect), new(rect)


def _compiled_derivatives(fast_kernel, kernel, model, data, ws, inputs, blocks):
    """The checked path's compiled derivative call on checked `inputs` (the kernel's arguments after
    the packed buffers): its outputs (_derivative_outputs), or None when the kernel declines (a
    singular M or G: the NumPy path)."""
    out = _derivative_outputs(ws, blocks)
    args = (model._buf, data._buf, *inputs, ws.spec, ws.buf, ws.derivative_buf, ws.x, ws.lam, *out)
    try:
        status = fast_kernel(*args)
    except _FAST_REFUSED:
        status = compiled_call(kernel, *args)
    return out if status == _cd.OK else None


def _check_state(model, data, q, v, name_v="v"):
    return checked_inputs(model, data, q=q, **{name_v: v})


def constrained_dynamics(model, data, q, v, tau, contacts):
    """Forward dynamics under rigid contacts and loop closures (KKT system, seed sec. XI):
    (a, lam) with M a + b(q, v) = tau + J^T lam and J a + gamma(q, v) = c (Baumgarte, zero by
    default). lam stacks the contacts' forces in their order: 3 per "point" contact, [n; f] per
    "frame" contact, in the contact's reference axes. New arrays."""
    out = _fast(_fast_constrained_dynamics, model, data, contacts, q, v, tau)
    if out is not None:
        return out
    if has_multi_dof(model):    # the tree twin's (multi_dof.py), its accelerations turned into the joints'
        twin, twin_data, q_t, v, tau = multi_dof_inputs(model, data, q, v=v, tau=tau)
        a, lam = constrained_dynamics(twin, twin_data, q_t, v, tau, contacts)
        _multi.add_bias(model, v, a)
        return a, lam
    if getattr(model, "root_joint", None) is not None:
        out = _floating_compiled(_fast_constrained_dynamics, model, data, contacts, q, v, "v",
                                 as_vector("tau", tau, model.nv), 0)
        if out is not None:
            return out
        return _floating_constrained_dynamics(model, data, q, v, tau, contacts)
    q, v = _check_state(model, data, q, v)
    tau = as_vector("tau", tau, model.nv)
    resolved = _check_contacts(model, contacts)
    ws = _workspace(model, data, resolved)
    if ws is not None:
        args = (model._buf, data._buf, q, v, tau, ws.spec, ws.buf, ws.x, ws.lam)
        try:
            status = _fast_constrained_dynamics(*args)
        except _FAST_REFUSED:
            status = compiled_call(_cd.constrained_dynamics, *args)
        if status == _cd.OK:
            return ws.x.copy(), ws.lam.copy()
    return _constrained_dynamics_numpy(model, data, q, v, tau, resolved)


def _constrained_dynamics_numpy(model, data, q, v, tau, resolved):
    """constrained_dynamics in NumPy: Baumgarte gains, singular M or redundant rows, and the errors."""
    inputs = dict(q=q, v=v, tau=tau)
    for k, (c, _, _) in enumerate(resolved):  # large Baumgarte gains may overflow too
        inputs.update({f"contacts[{k}].kp": c.kp, f"contacts[{k}].kd": c.kd})
    rows = _rows(model, data, q, v, np.zeros(model.nv), resolved, inputs)
    J = _stack(rows, "jacobian")
    gamma = _stack(rows, "acceleration")
    c = _stack(rows, "baumgarte")
    M = crba(model, data, q).copy()
    b = nonlinear_effects(model, data, q, v).copy()
    return _solve_checked(M, J, tau - b, c - gamma, inputs)


def constrained_dynamics_derivatives(model, data, q, v, tau, contacts):
    """First-order derivatives of `constrained_dynamics` (seed sec. XI.1, eqs. 314-319):
    (da_dq, da_dv, da_dtau, dlam_dq, dlam_dv, dlam_dtau). Differentiating the KKT system,
        [M  -J^T] [da  ]     [d(ID(q, v, a) - J^T lam)/dx]
        [J    0 ] [dlam] = - [d(J a + gamma)/dx          ]  (+ [I; 0] for tau),
    with the inverse-dynamics derivatives at the solution a and the contact forces held fixed
    in their reference axes. Needs zero Baumgarte gains."""
    out = _fast(_fast_constrained_dynamics_derivatives, model, data, contacts, q, v, tau, blocks=3)
    if out is not None:
        return out
    if has_multi_dof(model):    # the tree twin's, turned into the joints' (multi_dof.py)
        twin, twin_data, q_t, v, tau = multi_dof_inputs(model, data, q, v=v, tau=tau)
        a_twin = constrained_dynamics(twin, twin_data, q_t, v, tau, contacts)[0]
        out = [np.array(x) for x in constrained_dynamics_derivatives(twin, twin_data, q_t, v, tau, contacts)]
        _multi.correct_constrained_derivatives(model, v, tau, a_twin, *out)
        return tuple(out)
    if getattr(model, "root_joint", None) is not None:
        out = _floating_compiled(_fast_constrained_dynamics_derivatives, model, data, contacts, q, v, "v",
                                 as_vector("tau", tau, model.nv), 3)
        if out is not None:
            return out
        return _floating_constrained_dynamics_derivatives(model, data, q, v, tau, contacts)
    q, v = _check_state(model, data, q, v)
    tau = as_vector("tau", tau, model.nv)
    resolved = _check_contacts(model, contacts)
    ws = _workspace(model, data, resolved)  # None with Baumgarte gains
    if ws is None:
        for c, _, _ in resolved:
            if c.baumgarte:
                raise ValueError(f"constrained_dynamics_derivatives needs zero Baumgarte gains ({c} has some)")
    else:
        out = _compiled_derivatives(_fast_constrained_dynamics_derivatives, _cdd.constrained_dynamics_derivatives,
                                    model, data, ws, (q, v, tau), 3)
        if out is not None:
            return out
    return _constrained_dynamics_derivatives_numpy(model, data, q, v, tau, contacts, resolved)


def _constrained_dynamics_derivatives_numpy(model, data, q, v, tau, contacts, resolved):
    """constrained_dynamics_derivatives in NumPy: singular M or redundant rows, and the errors."""
    a, lam = constrained_dynamics(model, data, q, v, tau, contacts)
    inputs = dict(q=q, v=v, tau=tau)
    rows = _rows(model, data, q, v, a, resolved, inputs)
    J = _stack(rows, "jacobian")
    dalpha = [r.acceleration_derivatives() for r in rows]
    dalpha_dq = np.concatenate([d[0] for d in dalpha])
    dalpha_dv = np.concatenate([d[1] for d in dalpha])
    dforce_dq = _force_torque_derivatives(model, data, rows, lam)
    dtau_dq, dtau_dv, M = (x.copy() for x in rnea_derivatives(model, data, q, v, a))
    M = np.triu(M) + np.triu(M, 1).T
    nv, m = model.nv, J.shape[0]
    rhs_dynamics = np.concatenate([-(dtau_dq - dforce_dq), -dtau_dv, np.eye(nv)], axis=1)
    rhs_constraint = np.concatenate([-dalpha_dq, -dalpha_dv, np.zeros((m, nv))], axis=1)
    da, dlam = _solve_checked(M, J, rhs_dynamics, rhs_constraint, inputs)
    return (da[:, :nv], da[:, nv:2 * nv], da[:, 2 * nv:], dlam[:, :nv], dlam[:, nv:2 * nv],
            dlam[:, 2 * nv:])


def _check_restitution(restitution):
    try:
        e = float(restitution)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"restitution must be a number in [0, 1], got {restitution!r}") from None
    if not 0.0 <= e <= 1.0:
        raise ValueError(f"restitution must be in [0, 1], got {restitution!r}")
    return e


def impulse_dynamics(model, data, q, v_minus, contacts, restitution=0.0):
    """Velocity jump of a rigid impact (seed sec. XII, eq. 422): (v_plus, impulses) with
    M (v_plus - v_minus) = J^T impulses and J v_plus = -restitution J v_minus; impulses stacked
    like the forces of `constrained_dynamics`. New arrays."""
    if type(restitution) is float and 0.0 <= restitution <= 1.0:
        out = _fast(_fast_impulse_dynamics, model, data, contacts, q, v_minus, restitution)
        if out is not None:
            return out
    if has_multi_dof(model):    # the tree twin's: velocities are the joints'
        twin, twin_data, q_t, v_minus = multi_dof_inputs(model, data, q, v_minus=v_minus)
        return impulse_dynamics(twin, twin_data, q_t, v_minus, contacts, restitution)
    if getattr(model, "root_joint", None) is not None:
        out = _floating_compiled(_fast_impulse_dynamics, model, data, contacts, q, v_minus, "v_minus",
                                 _check_restitution(restitution), 0)
        if out is not None:
            return out
        return _floating_impulse_dynamics(model, data, q, v_minus, contacts, restitution)
    q, v_minus = _check_state(model, data, q, v_minus, "v_minus")
    e = _check_restitution(restitution)
    resolved = _check_contacts(model, contacts)
    inputs = dict(q=q, v_minus=v_minus)
    ws = _workspace(model, data, resolved)
    if ws is not None:
        args = (model._buf, data._buf, q, v_minus, e, ws.spec, ws.buf, ws.x, ws.lam)
        try:
            status = _fast_impulse_dynamics(*args)
        except _FAST_REFUSED:
            status = compiled_call(_cd.impulse_dynamics, *args)
        if status == _cd.OK:
            return ws.x.copy(), ws.lam.copy()
    rows = _rows(model, data, q, v_minus, np.zeros(model.nv), resolved, inputs)
    J = _stack(rows, "jacobian")
    M = crba(model, data, q).copy()
    dv, impulses = _solve_checked(M, J, np.zeros(model.nv), -(1.0 + e) * (J @ v_minus), inputs)
    return v_minus + dv, impulses


def impulse_dynamics_derivatives(model, data, q, v_minus, contacts, restitution=0.0):
    """First-order derivatives of `impulse_dynamics` (seed sec. XII.1, eqs. 424-430):
    (dv_plus_dq, dv_plus_dv_minus, dimpulses_dq, dimpulses_dv_minus). Differentiating
        M (v+ - v-) - J^T Lambda = 0,   J (v+ + e v-) = 0
    gives [M -J^T; J 0] [dv+; dLambda] = [-d(M dv)/dq + d(J^T Lambda)/dq; -d(J w)/dq] in q, with
    dv = v+ - v- and w = v+ + e v- held fixed, and = [M; -e J] in v-."""
    if type(restitution) is float and 0.0 <= restitution <= 1.0:
        out = _fast(_fast_impulse_dynamics_derivatives, model, data, contacts, q, v_minus, restitution, blocks=2)
        if out is not None:
            return out
    if has_multi_dof(model):    # the tree twin's, turned into the joints' (multi_dof.py)
        twin, twin_data, q_t, v_minus = multi_dof_inputs(model, data, q, v_minus=v_minus)
        v_plus = impulse_dynamics(twin, twin_data, q_t, v_minus, contacts, restitution)[0]
        out = [np.array(x) for x in impulse_dynamics_derivatives(twin, twin_data, q_t, v_minus, contacts, restitution)]
        _multi.correct_impulse_derivatives(model, v_minus, v_plus, *out)
        return tuple(out)
    if getattr(model, "root_joint", None) is not None:
        out = _floating_compiled(_fast_impulse_dynamics_derivatives, model, data, contacts, q, v_minus, "v_minus",
                                 _check_restitution(restitution), 2)
        if out is not None:
            return out
        return _floating_impulse_dynamics_derivatives(model, data, q, v_minus, contacts, restitution)
    q, v_minus = _check_state(model, data, q, v_minus, "v_minus")
    e = _check_restitution(restitution)
    resolved = _check_contacts(model, contacts)
    ws = _workspace(model, data, resolved)
    if ws is not None:
        out = _compiled_derivatives(_fast_impulse_dynamics_derivatives, _cdd.impulse_dynamics_derivatives,
                                    model, data, ws, (q, v_minus, e), 2)
        if out is not None:
            return out
    return _impulse_dynamics_derivatives_numpy(model, data, q, v_minus, contacts, e, resolved)


def _impulse_dynamics_derivatives_numpy(model, data, q, v_minus, contacts, e, resolved):
    """impulse_dynamics_derivatives in NumPy: singular M or redundant rows, and the errors."""
    v_plus, impulses = impulse_dynamics(model, data, q, v_minus, contacts, e)
    nv = model.nv
    zero = np.zeros(nv)
    inputs = dict(q=q, v_minus=v_minus)
    # d(J w)/dq at fixed w: the rows' velocity derivatives with the sides' twists built from w
    rows = _rows(model, data, q, v_plus + e * v_minus, zero, resolved, inputs)
    J = _stack(rows, "jacobian")
    du_dq = np.concatenate([r.velocity_derivatives() for r in rows])
    dforce_dq = _force_torque_derivatives(model, data, rows, impulses)
    # d(M dv)/dq at fixed dv: inverse dynamics at (v = 0, a = dv) less its gravity part
    dMdv_dq = rnea_derivatives(model, data, q, zero, v_plus - v_minus)[0].copy()
    dMdv_dq -= rnea_derivatives(model, data, q, zero, zero)[0]
    M = crba(model, data, q).copy()
    rhs_dynamics = np.concatenate([-dMdv_dq + dforce_dq, M], axis=1)
    rhs_constraint = np.concatenate([-du_dq, -e * J], axis=1)
    dv_plus, dimpulses = _solve_checked(M, J, rhs_dynamics, rhs_constraint, inputs)
    return dv_plus[:, :nv], dv_plus[:, nv:], dimpulses[:, :nv], dimpulses[:, nv:]


# ----------------------------------------------------------------------------------------------
# Floating bases: the functions above on the tree twin (floating_base.py), whose root is held at the
# root link's frame under gravity seen in that frame. Its accelerations are the free flyer's but the
# chain's velocity product b(nu) (added back); "local" rows are the same; "local_world_aligned" rows
# are in the root link's axes there (R turns them into the world's). The root's pose enters only
# through gravity (the bias b(q, v) of the KKT system gains d b / d delta = M[:, :6] ad(a_g) in the
# root's tangent directions delta, as in rnea_derivatives) and through R; an impulse sees no gravity.
# Compiled (kernels/floating_contact.py, _floating_compiled) but for Baumgarte gains and a singular M
# or G, where the NumPy functions below run the twin.


def _on_twin(model, data, q, v, name_v, contacts):
    """(twin, twin_data, q_tree, v checked, the contacts as the twin sees them): a fixed side's anchor
    (which enters only the Baumgarte term) moved into the root link's frame."""
    q, v = checked_inputs(model, data, True, **{"q": q, name_v: v})
    q_tree = floating_tree_state(model, data, q)[0].copy()
    twin, twin_data = _floating.tree_twin(model, data)
    T_inverse = np.eye(4)
    T_inverse[:3, :3] = data.base_R.T
    T_inverse[:3, 3] = -data.base_R.T @ data.base_p
    twin_contacts = []
    for c, _, _ in _check_contacts(twin, contacts):
        if c.other is None and c.baumgarte:
            c = Contact(c.frame, c.kind, c.reference, anchor=T_inverse @ c.anchor, kp=c.kp, kd=c.kd)
        twin_contacts.append(c)
    return twin, twin_data, q_tree, v, twin_contacts


def _floating_compiled(fixed_kernel, model, data, contacts, q, v, name_v, third, blocks):
    """The checked path's compiled call of a free flyer's contacts (kernels/floating_contact.py, the
    counterpart of fixed_kernel), registering the contacts for the fast path: its outputs, or None
    for the NumPy path on the twin (Baumgarte gains, a singular M or G, an error to name)."""
    twin, twin_data, q_tree, v, twin_contacts = _on_twin(model, data, q, v, name_v, contacts)
    ws = _workspace(twin, twin_data, _check_contacts(twin, twin_contacts))
    if ws is None:
        return None
    if ws.floating is None:
        ws.floating = _Workspace(twin, tuple(map(tuple, ws.spec)))
        world, start = [], 0
        for c in twin_contacts:
            if c.reference == "local_world_aligned":
                world.extend(range(start, start + c.dim, 3))
            start += c.dim
        ws.floating.twin = (twin._buf, twin_data._buf, np.array(world, dtype=np.int64))
    floating = ws.floating
    _validated(data, twin_contacts, model, floating)
    if blocks:
        out = _derivative_outputs(floating, blocks)
        buffers = (floating.buf, floating.derivative_buf, floating.x, floating.lam)
    else:
        out = np.empty(floating.nv), np.empty(floating.m)
        buffers = (floating.buf,)
    status = compiled_call(_FLOATING_KERNELS[fixed_kernel], model._buf, data._buf, *floating.twin, q, v, third,
                           floating.spec, *buffers, *out)
    return out if status == _OK else None


def _world_axes(contacts, R, rows):
    """Rows (axis 0) of "local_world_aligned" contacts from the root link's axes into the world's, in
    place."""
    start = 0
    for c in contacts:
        if c.reference == "local_world_aligned":
            for k in range(start, start + c.dim, 3):
                rows[k:k + 3] = R @ rows[k:k + 3]
        start += c.dim


def _turning_rows(contacts, R, forces, dforces_dq):
    """d(R forces)/d delta for the root's rotations delta (columns 0-2 of dforces_dq, forces in the
    root link's axes): -R [f]x per three rows of a "local_world_aligned" contact, added in place."""
    start = 0
    for c in contacts:
        if c.reference == "local_world_aligned":
            for k in range(start, start + c.dim, 3):
                dforces_dq[k:k + 3, :3] -= R @ skew(np.ascontiguousarray(forces[k:k + 3]))
        start += c.dim


def _gravity_turning(twin, twin_data, q_tree, base_accel):
    """d b / d delta (nv, 6) = M[:, :6] ad(a_g): the bias's change as gravity turns with the root."""
    return crba(twin, twin_data, q_tree)[:, :6] @ ad(np.ascontiguousarray(base_accel))


def _floating_constrained_dynamics(model, data, q, v, tau, contacts):
    twin, twin_data, q_tree, v, twin_contacts = _on_twin(model, data, q, v, "v", contacts)
    a, lam = constrained_dynamics(twin, twin_data, q_tree, v, tau, twin_contacts)
    _floating.add_bias(v, a, data._tmp6[0])
    _world_axes(contacts, data.base_R, lam)
    return a, lam


def _floating_impulse_dynamics(model, data, q, v_minus, contacts, restitution):
    twin, twin_data, q_tree, v_minus, twin_contacts = _on_twin(model, data, q, v_minus, "v_minus", contacts)
    v_plus, impulses = impulse_dynamics(twin, twin_data, q_tree, v_minus, twin_contacts, restitution)
    _world_axes(contacts, data.base_R, impulses)
    return v_plus, impulses


def _floating_constrained_dynamics_derivatives(model, data, q, v, tau, contacts):
    twin, twin_data, q_tree, v, twin_contacts = _on_twin(model, data, q, v, "v", contacts)
    da_dq, da_dv, da_dtau, dlam_dq, dlam_dv, dlam_dtau = constrained_dynamics_derivatives(
        twin, twin_data, q_tree, v, tau, twin_contacts)
    lam = constrained_dynamics(twin, twin_data, q_tree, v, tau, twin_contacts)[1]
    turning = _gravity_turning(twin, twin_data, q_tree, data.base_accel)
    da_dq[:, :6] = -da_dtau @ turning
    dlam_dq[:, :6] = -dlam_dtau @ turning
    da_dv[:6, :6] += _floating.bias_jacobian(v)
    for x in (dlam_dq, dlam_dv, dlam_dtau):
        _world_axes(contacts, data.base_R, x)
    _turning_rows(contacts, data.base_R, lam, dlam_dq)
    return da_dq, da_dv, da_dtau, dlam_dq, dlam_dv, dlam_dtau


def _floating_impulse_dynamics_derivatives(model, data, q, v_minus, contacts, restitution):
    twin, twin_data, q_tree, v_minus, twin_contacts = _on_twin(model, data, q, v_minus, "v_minus", contacts)
    dv_dq, dv_dv, dimpulse_dq, dimpulse_dv = impulse_dynamics_derivatives(
        twin, twin_data, q_tree, v_minus, twin_contacts, restitution)
    impulses = impulse_dynamics(twin, twin_data, q_tree, v_minus, twin_contacts, restitution)[1]
    dv_dq[:, :6] = 0.0          # no gravity in an impact: the root's pose changes nothing but R
    dimpulse_dq[:, :6] = 0.0
    for x in (dimpulse_dq, dimpulse_dv):
        _world_axes(contacts, data.base_R, x)
    _turning_rows(contacts, data.base_R, impulses, dimpulse_dq)
    return dv_dq, dv_dv, dimpulse_dq, dimpulse_dv
