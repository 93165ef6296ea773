"""The spherical five-bar linkage as a closed-chain mapping (seed "Differential Dynamics and
Mesh-Based Inertia", sec. 3, eqs. 11-14).

The equivalent tree (config/urdf/five_bar.urdf) has two branches from the two motors,
joints 1-2-3 ending in link 3 and joints 4-5 ending in a massless copy of link 3: joint 5 is the cut
joint. The loop is closed when the frame of link 3 (frame A) and the frame of its copy (frame B)
coincide, eq. (11). The residual is r(q) = P log(T_B^-1 T_A), P picking `closure_components` of the
screw [w; v]; for the spherical five-bar (all axes through one point) the rotation alone,
one equation per passive joint.

Differentiating the closure in frame A gives the constraint Jacobian
    K = P (J_A - J_B) = [g_a  g_p]   (columns of the active and passive joints, eq. 12)
with J_A, J_B the frames' body Jacobians, so dtheta_p = J_p dtheta_a with J_p = -g_p^-1 g_a and
dq = E dtheta_a, E = [I; J_p] (rows in tree order). In the body frame of link 3 the column of the
cut joint is its constant axis, which is why the last row of G_p in eq. (14) vanishes.

Derivatives of body Jacobian columns: d J_j / d q_l = ad(J_j) J_l when joint l lies between joint j
and the frame (l > j in depth-first order, both on the frame's chain), else 0. The acceleration
bias of a frame is b(q, v) = dJ/dt v = sum_{j<l} v_j v_l ad(J_j) J_l, and the closed chain's
accelerations satisfy K a + h = 0 with h = P (b_A - b_B).
"""
import math
import numbers

import numpy as np

from ..configuration import checked_configuration
from ..derivatives import rnea_derivatives
from ..dynamics import as_finite_array, crba, forward_kinematics, jacobian, rnea
from ..model import FREE_FLYER_DOFS, Model
from ..spatial import Ad, log_se3
from . import ClosedChainMapping, LoopFrames, configuration_entries

CLOSED_TOLERANCE = 1e-6      # a configuration given as closed may miss the closure by this much
MAX_NEWTON_STEP = 0.5        # rad, the longest Newton step on the passive joints
MAX_CONTINUATION_STEPS = 1000  # complete() refuses a move that needs more continuation steps
# ranges of the numeric parameters: (low, high, integer)
PARAMETER_RANGES = {
    "tolerance": (1e-15, CLOSED_TOLERANCE, False),
    "max_iterations": (1, 200, True),
    "singular_tolerance": (0.0, 1.0, False),
    "continuation_step": (1e-3, math.pi, False),
}


def _structure_constants():
    """LIE[i, j, k]: (ad_A B)_i = sum_jk LIE[i, j, k] A_j B_k for motion vectors [w; v]:
    ad_A B = [w_A x w_B; w_A x v_B + v_A x w_B]."""
    eps = np.zeros((3, 3, 3))
    eps[0, 1, 2] = eps[1, 2, 0] = eps[2, 0, 1] = 1.0
    eps[0, 2, 1] = eps[2, 1, 0] = eps[1, 0, 2] = -1.0
    lie = np.zeros((6, 6, 6))
    lie[:3, :3, :3] = eps
    lie[3:, :3, 3:] = eps
    lie[3:, 3:, :3] = eps
    return lie


_LIE = _structure_constants()


def _parameter(name, value):
    """A numeric parameter checked against PARAMETER_RANGES, or a ValueError naming it."""
    low, high, integer = PARAMETER_RANGES[name]
    kind = numbers.Integral if integer else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kind) or not low <= value <= high:
        raise ValueError(f"five_bar: {name} must be {'an integer' if integer else 'a number'} in "
                         f"[{low:g}, {high:g}], got {value!r}")
    return int(value) if integer else float(value)


def _as_list(name, value, expected):
    """value (a sequence, not a string) as a list, or a ValueError naming the parameter."""
    try:
        if isinstance(value, (str, bytes)):
            raise TypeError
        return list(value)
    except TypeError:
        raise ValueError(f"five_bar: {name} must be {expected}, got {value!r}") from None


def _named(name, lookup, value):
    """lookup(value), its ValueError prefixed by the parameter's name."""
    try:
        return lookup(value)
    except ValueError as exc:
        raise ValueError(f"five_bar: {name}: {exc}") from None


def _loop_joints(model, body_a, body_b, cut_link):
    """Tree indices of the loop's joints: those on the paths from body_a and body_b to their common
    ancestor (tree order); a ValueError names a free flyer's or multi-DoF joint among them."""
    def path(body):
        joints = set()
        while body >= 0:
            joints.add(int(body))
            body = model.parents[body]
        return joints

    loop = sorted(path(body_a) ^ path(body_b))
    blocks = [("the free flyer", range(FREE_FLYER_DOFS))] if model.root_joint is not None else []
    blocks += [(f"the {joint.kind} joint {joint.name!r}", range(joint.body, joint.body + joint.nv))
               for joint in model.multi_dof_joints]
    for name, block in blocks:
        if set(block) & set(loop):
            raise ValueError(f"five_bar: {name} lies in the loop between {cut_link!r} and its copy; the loop's "
                             f"joints must be 1-DoF joints")
    return loop


def _ad(A, B):
    """ad_A B = A x B of motion vectors stacked along the last axis (broadcasting)."""
    return np.einsum("ijk,...j,...k->...i", _LIE, A, B)


class _FrameTerms:
    """A frame's body Jacobian J (6, nv), columns zero off its chain, and its derivatives."""

    def __init__(self, J, later):
        self.columns = J.T          # (nv, 6), J_j in row j
        self.later = later          # later[j, l] = 1 when l > j

    def dJ(self):
        """dJ[j, l] = d J_j / d q_l = ad(J_j) J_l for l > j, (nv, nv, 6)."""
        return _ad(self.columns[:, None, :], self.columns[None, :, :]) * self.later[:, :, None]

    def bias(self, v):
        """dJ/dt v = sum_{j<l} v_j v_l ad(J_j) J_l: the frame's body acceleration at zero joint
        accelerations (no gravity)."""
        after = (self.later * v[None, :]) @ self.columns       # after[j] = sum_{l>j} v_l J_l
        return _ad(self.columns * v[:, None], after).sum(axis=0)

    def bias_derivatives(self, dJ, v):
        """(d bias / d q, d bias / d v), each (6, nv), given dJ = self.dJ()."""
        d_dv = np.einsum("mli,l->im", dJ, v) + np.einsum("jmi,j->im", dJ, v)
        after = (self.later * v[None, :]) @ self.columns       # after[j] = sum_{l>j} v_l J_l
        before = (self.later.T * v[None, :]) @ self.columns    # before[l] = sum_{j<l} v_j J_j
        # d/dq_m of ad(J_j) J_l = ad(dJ_j/dq_m) J_l + ad(J_j) dJ_l/dq_m
        d_dq = (np.einsum("jmi,j->im", _ad(dJ, after[:, None, :]), v)
                + np.einsum("lmi,l->im", _ad(before[:, None, :], dJ), v))
        return d_dq, d_dv


class _Closure:
    """Loop kinematics at a closed configuration q, from the body Jacobians of the two frames."""

    def __init__(self, mapping, q, J_A, J_B):
        self.q = q
        self.A = _FrameTerms(J_A, mapping._later)
        self.B = _FrameTerms(J_B, mapping._later)
        comp = mapping.closure_components
        self.components = comp
        self.K = (J_A - J_B)[comp]                                   # [g_a g_p] of eq. (12)
        self.K_a = self.K[:, mapping.active_indices]
        self.K_p = self.K[:, mapping.passive_indices]
        self.J_p = -np.linalg.solve(self.K_p, self.K_a)              # eq. (12)
        self.E = np.zeros((mapping.model.nv, mapping.active_indices.size))   # v = E dtheta_a
        self.E[mapping.active_indices] = np.eye(mapping.active_indices.size)
        self.E[mapping.passive_indices] = self.J_p
        self._dJ = None

    def _frame_dJ(self):
        if self._dJ is None:
            self._dJ = (self.A.dJ(), self.B.dJ())
        return self._dJ

    def bias(self, v):
        """h = dK/dt v, so that K a + h = 0 along the closed chain."""
        return (self.A.bias(v) - self.B.bias(v))[self.components]

    def bias_derivatives(self, v):
        """(dh/dq, dh/dv), each (n_passive, nv)."""
        dJ_A, dJ_B = self._frame_dJ()
        dA_dq, dA_dv = self.A.bias_derivatives(dJ_A, v)
        dB_dq, dB_dv = self.B.bias_derivatives(dJ_B, v)
        return (dA_dq - dB_dq)[self.components], (dA_dv - dB_dv)[self.components]

    def dK(self):
        """dK[i] = d K / d theta_a_i along the closed chain, (n_active, n_passive, nv)."""
        dJ_A, dJ_B = self._frame_dJ()
        D = (dJ_A - dJ_B)[:, :, self.components]                   # D[j, l, r] = d K[r, j] / d q_l
        return np.einsum("jlr,li->irj", D, self.E)


class FiveBarMapping(ClosedChainMapping):
    """Loop closure of a five-bar (spherical by default) given as its equivalent tree.

    The loop's joints are the 1-DoF joints between cut_link and the cut joint's child through their
    common ancestor; every joint outside the loop (a free flyer, multi-DoF joints, other limbs) is
    active and does not enter the closure: active_indices lists those first, in tree order, then the
    motors (see ClosedChainMapping for theta_a on a floating base).

    Parameters (defaults fit config/urdf/five_bar.urdf):
      active_joints: the motors, joints of the loop, in theta_a order; the loop's other joints are
        passive.
      cut_joint: the cut joint, whose child link is a massless copy of `cut_link` (a leaf).
      cut_link: the link (or a frame fixed to it) that the copy coincides with when closed.
      closure_components: entries of log(T_copy^-1 T_cut_link) = [w; v] that close the loop, one per
        passive joint: (0, 1, 2) (rotation) for a spherical linkage, e.g. (2, 3, 4) for a planar one
        moving about z.
      reference_configuration: a tree configuration (nq,) near a closed one (the model's neutral
        configuration by default); it picks the assembly mode that complete() follows when given no
        guess.
      tolerance: Newton stops when the residual norm is below it.
      max_iterations: Newton iterations per solve.
      singular_tolerance: the passive joints are singular where the smallest singular value of
        g_p falls below it.
      continuation_step: complete() moves the active joints from the guess (or the reference) in
        steps of at most this many radians, at most MAX_CONTINUATION_STEPS of them.
    Numeric parameters must lie in PARAMETER_RANGES; every bad parameter is a ValueError naming it.
    """

    def __init__(self, model, active_joints=("joint1", "joint4"), cut_joint="joint5", cut_link="link3",
                 closure_components=(0, 1, 2), reference_configuration=None, tolerance=1e-12,
                 max_iterations=30, singular_tolerance=1e-4, continuation_step=0.25):
        if not isinstance(model, Model):
            raise ValueError(f"model must be a dyn_control.Model, got {type(model).__name__}")
        if model.coupling is not None:
            raise ValueError("five_bar: models with mimic-coupled joints are not supported")
        self.tolerance = _parameter("tolerance", tolerance)
        self.max_iterations = _parameter("max_iterations", max_iterations)
        self.singular_tolerance = _parameter("singular_tolerance", singular_tolerance)
        self.continuation_step = _parameter("continuation_step", continuation_step)
        super().__init__(model)
        self._data = model.create_data()   # kinematics workspace of the mapping
        nv = model.nv
        cut_body = _named("cut_joint", model.joint_index, cut_joint)
        if np.any(model.phi[cut_body] != 0.0) or np.any(model.parents == cut_body):
            raise ValueError(f"cut_joint {cut_joint!r}: its child link {model.body_names[cut_body]!r} must "
                             f"be a massless leaf (the copy of {cut_link!r} closing the loop)")
        self.cut_joint = cut_joint
        self.cut_link = cut_link
        self._frame_a = _named("cut_link", model.frame_id, cut_link)
        self._frame_b = model.frame_id(model.body_names[cut_body])
        loop = _loop_joints(model, model.frame_body[self._frame_a], cut_body, cut_link)

        names = _as_list("active_joints", active_joints, "a list of joint names")
        active = [_named("active_joints", model.joint_index, name) for name in names]
        if len(set(active)) != len(active) or not active:
            raise ValueError(f"five_bar: active_joints must name distinct joints, got {names}")
        outside = [model.joint_names[i] for i in active if i not in loop]
        if outside:
            raise ValueError(f"five_bar: active_joints {outside} are not joints of the loop between {cut_link!r} "
                             f"and its copy ({', '.join(model.joint_names[i] for i in loop)})")
        self.active_indices = np.array([i for i in range(nv) if i not in loop] + active, dtype=np.int64)
        self.passive_indices = np.array([i for i in loop if i not in active], dtype=np.int64)
        self._later = np.triu(np.ones((nv, nv)), 1)   # [j, l] = 1 when joint l comes after joint j
        self._n_others = nv - len(loop)                # the active joints before the motors
        self._motor_q = configuration_entries(model, active)
        self._passive_q = configuration_entries(model, self.passive_indices)
        self._others_q = configuration_entries(model, self.active_indices[:self._n_others])

        n_passive = self.passive_indices.size
        expected = f"{n_passive} distinct indices in 0..5 (one per passive joint)"
        comp = _as_list("closure_components", closure_components, expected)
        if not (all(isinstance(c, numbers.Integral) and 0 <= c <= 5 for c in comp)
                and len(comp) == len(set(comp)) == n_passive):
            raise ValueError(f"five_bar: closure_components must be {expected}, got {closure_components!r}")
        self.closure_components = np.array(comp, dtype=np.int64)

        if reference_configuration is None:
            reference_configuration = model.neutral_configuration()
        reference = self._configuration("reference_configuration", reference_configuration).copy()
        if self._newton(reference)[1] is None:
            raise ValueError(f"five_bar: reference_configuration: no closed configuration found near it "
                             f"(Newton with tolerance {self.tolerance:g}, max_iterations {self.max_iterations})")
        self.reference_configuration = reference

    def _configuration(self, name, q):
        """q as a tree configuration (nq,), finite, with unit quaternions, else a ValueError naming it."""
        return checked_configuration(self.model, name, q)

    # ------------------------------------------------------------------------------------------
    # loop closure (eq. 11)

    def _kinematics(self, q):
        """(residual, J_A, J_B) at any q; J_B's columns transported to frame A."""
        poses = forward_kinematics(self.model, self._data, q)
        T_A = poses[self._frame_a].copy()
        T_B = poses[self._frame_b].copy()
        R_AB = T_A[:3, :3].T @ T_B[:3, :3]                          # T_A^-1 T_B = T_rel^-1
        p_AB = T_A[:3, :3].T @ (T_B[:3, 3] - T_A[:3, 3])
        T_rel = np.eye(4)
        T_rel[:3, :3] = R_AB.T
        T_rel[:3, 3] = -R_AB.T @ p_AB
        residual = log_se3(T_rel)[self.closure_components]
        J_A = jacobian(self.model, self._data, q, self._frame_a, "local").copy()
        J_B = Ad(R_AB, p_AB) @ jacobian(self.model, self._data, q, self._frame_b, "local")
        return residual, J_A, J_B

    def closure_residual(self, q):
        return self._kinematics(self._configuration("q", q))[0]

    def _singular_error(self, K_p, q, exactly_singular=False):
        """The ValueError for singular passive joints at q, or None where g_p is regular."""
        smallest = np.linalg.svd(K_p, compute_uv=False)[-1]
        if smallest < self.singular_tolerance or exactly_singular:
            return ValueError(
                f"five_bar: the passive joints {', '.join(self.passive_joints)} are singular at q = "
                f"{np.array2string(q, precision=6)} (smallest singular value of g_p {smallest:.3g} < "
                f"singular_tolerance {self.singular_tolerance:g}): the loop closure does not determine them")
        return None

    def _newton(self, q):
        """Move the passive joints of q in place towards closing the loop (active joints stay).
        Returns (residual norm, J_A, J_B): on success the norm is below `tolerance` and the body
        Jacobians are those of the final q; else the Jacobians are None."""
        passive = self.passive_indices
        for _ in range(self.max_iterations):
            residual, J_A, J_B = self._kinematics(q)
            K_p = (J_A - J_B)[self.closure_components][:, passive]
            norm = np.linalg.norm(residual)
            if norm < self.tolerance:
                error = self._singular_error(K_p, q)
                if error is not None:
                    raise error
                return norm, J_A, J_B
            try:
                step = -np.linalg.solve(K_p, residual)
            except np.linalg.LinAlgError:
                raise self._singular_error(K_p, q, exactly_singular=True) from None
            length = np.linalg.norm(step)
            if length > MAX_NEWTON_STEP:
                step *= MAX_NEWTON_STEP / length
            q[self._passive_q] += step
        return norm, None, None

    def complete(self, theta_a, guess=None):
        """The tree configuration closing the loop with active joints theta_a (eq. 11): Newton on the
        passive joints from `guess`, or, without a guess, continuation from the reference
        configuration in steps of at most continuation_step. ValueError when the passive joints are
        singular or no closing configuration is found."""
        return self._complete(theta_a, guess).q

    def _complete(self, theta_a, guess):
        """complete() with the loop kinematics of the result, a _Closure."""
        theta_a = as_finite_array("theta_a", theta_a, (self.active_configuration_indices.size,))
        if guess is None:
            q = self.reference_configuration.copy()
        else:
            q = self._configuration("guess", guess).copy()
        # the joints outside the loop do not move it: they take their values at once
        q[self._others_q] = theta_a[:self._others_q.size]
        self._configuration("theta_a (in the tree configuration)", q)
        motors = theta_a[self._others_q.size:]
        start = q[self._motor_q].copy()
        distance = np.max(np.abs(motors - start))
        if distance > MAX_CONTINUATION_STEPS * self.continuation_step:
            start_name = "reference configuration" if guess is None else "guess"
            raise ValueError(f"five_bar: theta_a is {distance:.3g} rad from the {start_name}, more than "
                             f"{MAX_CONTINUATION_STEPS} continuation steps of {self.continuation_step:g} rad")
        steps = max(1, math.ceil(distance / self.continuation_step))
        for k in range(1, steps + 1):
            q[self._motor_q] = start + (motors - start) * (k / steps)
            residual, J_A, J_B = self._newton(q)
            if J_A is None:
                raise ValueError(
                    f"five_bar: no loop-closing configuration found for the active joints "
                    f"{', '.join(self.active_joints[self._n_others:])} at "
                    f"{np.array2string(motors, precision=6)}: Newton stalled at "
                    f"{np.array2string(q[self._motor_q], precision=6)} with residual {residual:.3g} "
                    f"after {self.max_iterations} iterations (out of the linkage's reach, or too far "
                    f"from the guess)")
        return _Closure(self, q, J_A, J_B)

    def _closure(self, q):
        """Loop kinematics at q, which must close the loop; ValueError where the passive joints are
        singular."""
        residual, J_A, J_B = self._kinematics(q)
        if np.linalg.norm(residual) > CLOSED_TOLERANCE:
            raise ValueError(f"q does not close the loop (residual {np.linalg.norm(residual):.3g}); "
                             f"get a closed configuration from complete(theta_a)")
        error = self._singular_error((J_A - J_B)[self.closure_components][:, self.passive_indices], q)
        if error is not None:
            raise error
        return _Closure(self, q, J_A, J_B)

    # ------------------------------------------------------------------------------------------
    # velocities and torques (eqs. 12-14)

    def loop_frames(self):
        """The loop for the compiled paths: cut_link and its copy, the child link of cut_joint."""
        return LoopFrames(frame_a=self.cut_link, frame_b=self.model.frame_names[self._frame_b],
                          components=tuple(int(c) for c in self.closure_components),
                          active=tuple(int(i) for i in self.active_indices),
                          passive=tuple(int(i) for i in self.passive_indices), tolerance=self.tolerance,
                          singular_tolerance=self.singular_tolerance, max_iterations=self.max_iterations)

    def completion_jacobian(self, q):
        """G = dq/dtheta_a = E (identity rows of the active joints, J_p of eq. 12 in the passive rows)."""
        q = self._configuration("q", q)
        return self._closure(q).E

    def passive_jacobian(self, q):
        """J_p = -g_p^-1 g_a (eq. 12) at a closed configuration q, (n_passive, n_active)."""
        q = self._configuration("q", q)
        return self._closure(q).J_p

    def _torque_derivative(self, closure, tau_tree, dtau_tree):
        """Eq. (14): d tau_a / d theta_a = -G_a + g_a^T g_p^-T G_p + [I J_p^T] S_tr, with
        tau_hat = g_p^-T tau_p, G_a[k, i] = tau_hat^T d(g_a column k)/d theta_a_i, G_p likewise."""
        dK = closure.dK()
        tau_hat = np.linalg.solve(closure.K_p.T, tau_tree[self.passive_indices])
        G_a = np.einsum("r,irk->ki", tau_hat, dK[:, :, self.active_indices])
        G_p = np.einsum("r,irk->ki", tau_hat, dK[:, :, self.passive_indices])
        return -G_a - closure.J_p.T @ G_p + closure.E.T @ dtau_tree   # g_a^T g_p^-T = -J_p^T

    def map_torque_derivative(self, q, tau_tree, dtau_tree):
        """d tau_a / d theta_a (eq. 14) at a closed configuration q, given the tree torques and their
        total derivative dtau_tree = d tau_tree / d theta_a (nv, n_active) along the closed chain."""
        nv, na = self.model.nv, self.active_indices.size
        q = self._configuration("q", q)
        tau_tree = as_finite_array("tau_tree", tau_tree, (nv,))
        dtau_tree = as_finite_array("dtau_tree", dtau_tree, (nv, na))
        return self._torque_derivative(self._closure(q), tau_tree, dtau_tree)

    # ------------------------------------------------------------------------------------------
    # dynamics

    def _check_model(self, model):
        if model is not self.model and (not isinstance(model, Model)
                                        or model.joint_names != self.model.joint_names):
            raise ValueError("model must be the equivalent tree this mapping was built on")

    def _state(self, theta_a, dtheta_a, ddtheta_a, guess):
        """(closure, v, a): the tree velocities and accelerations of the closed chain."""
        na = self.active_indices.size
        dtheta_a = as_finite_array("dtheta_a", dtheta_a, (na,))
        ddtheta_a = as_finite_array("ddtheta_a", ddtheta_a, (na,))
        closure = self._complete(theta_a, guess)
        v = closure.E @ dtheta_a
        a = np.zeros(self.model.nv)
        a[self.active_indices] = ddtheta_a
        # K a + h = 0: g_p a_p = -(g_a ddtheta_a + h)
        a[self.passive_indices] = -np.linalg.solve(closure.K_p, closure.K_a @ ddtheta_a + closure.bias(v))
        return closure, v, a

    def tree_state(self, theta_a, dtheta_a, ddtheta_a, guess=None):
        """(q, v, a) of the equivalent tree moving with the closed chain."""
        closure, v, a = self._state(theta_a, dtheta_a, ddtheta_a, guess)
        return closure.q, v, a

    def inverse_dynamics(self, model, data, theta_a, dtheta_a, ddtheta_a, guess=None):
        """Actuator torques of the closed chain: passive velocities and accelerations from the loop
        closure, tree inverse dynamics (RNEA), then eq. (13). `guess` as in complete()."""
        self._check_model(model)
        closure, v, a = self._state(theta_a, dtheta_a, ddtheta_a, guess)
        return closure.E.T @ rnea(model, data, closure.q, v, a)

    def forward_dynamics(self, model, data, theta_a, dtheta_a, tau_a, guess=None):
        """ddtheta_a = M_a^-1 (tau_a - bias) with M_a = E^T M E and the bias the mapped inverse
        dynamics at zero actuator acceleration."""
        self._check_model(model)
        tau_a = as_finite_array("tau_a", tau_a, (self.active_indices.size,))
        closure, v, a = self._state(theta_a, dtheta_a, np.zeros(self.active_indices.size), guess)
        E = closure.E
        bias = E.T @ rnea(model, data, closure.q, v, a)
        M_a = E.T @ crba(model, data, closure.q) @ E
        return np.linalg.solve(M_a, tau_a - bias)

    def inverse_dynamics_derivatives(self, model, data, theta_a, dtheta_a, ddtheta_a, guess=None):
        """(d tau_a / d theta_a, d tau_a / d dtheta_a, M_a), each (n_active, n_active), of
        inverse_dynamics, by the chain rule through the loop closure and eq. (14)."""
        self._check_model(model)
        closure, v, a = self._state(theta_a, dtheta_a, ddtheta_a, guess)
        q, E, K_p, passive = closure.q, closure.E, closure.K_p, self.passive_indices
        tau = rnea(model, data, q, v, a).copy()
        dtau_dq, dtau_dv, M = (x.copy() for x in rnea_derivatives(model, data, q, v, a))
        dK = closure.dK()
        dh_dq, dh_dv = closure.bias_derivatives(v)
        na = self.active_indices.size
        # theta_a -> v = E(q) dtheta_a: K v = 0 gives g_p dv_p = -dK v
        dv = np.zeros((model.nv, na))
        dv[passive] = -np.linalg.solve(K_p, np.einsum("irj,j->ri", dK, v))
        # theta_a -> a: K a + h(q, v) = 0 gives g_p da_p = -(dK a + dh/dq E + dh/dv dv)
        da = np.zeros((model.nv, na))
        da[passive] = -np.linalg.solve(K_p, np.einsum("irj,j->ri", dK, a) + dh_dq @ E + dh_dv @ dv)
        dtau_tree = dtau_dq @ E + dtau_dv @ dv + M @ da
        dtau_dtheta = self._torque_derivative(closure, tau, dtau_tree)
        # dtheta_a -> v = E dtheta_a, a_p = -g_p^-1 (g_a ddtheta_a + h(q, v))
        da_v = np.zeros((model.nv, na))
        da_v[passive] = -np.linalg.solve(K_p, dh_dv @ E)
        dtau_ddtheta = E.T @ (dtau_dv @ E + M @ da_v)
        return dtau_dtheta, dtau_ddtheta, E.T @ M @ E
