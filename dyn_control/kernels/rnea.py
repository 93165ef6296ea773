"""Recursive Newton-Euler inverse dynamics, in body frames (seed "Differential Dynamics and
Mesh-Based Inertia", eqs. 1-5)."""
from ..jit import njit
from ..spatial import cross_force, cross_motion, force_to_parent_add, inertia_times, motion_to_child
from .inputs import all_finite
from .kinematics import joint_transforms


@njit(cache=True, inline="always")
def body_motion(i, parents, S, R, p, base_accel, v, a, V, Vdot, tmp):
    """Body i's twist V_i and acceleration Vdot_i in its own frame, from its parent's (tmp: 6-vector):
    eq. 2: V_i = Ad_{T^-1} V_parent + S_i qd_i
    eq. 3: Vdot_i = Ad_{T^-1} Vdot_parent + S_i qdd_i + ad_{V_i} S_i qd_i  (root: Vdot = [0; -g])"""
    j = parents[i]
    if j < 0:
        V[i, :] = 0.0
        motion_to_child(R[i], p[i], base_accel, Vdot[i])
    else:
        motion_to_child(R[i], p[i], V[j], V[i])
        motion_to_child(R[i], p[i], Vdot[j], Vdot[i])
    for k in range(6):
        V[i, k] += S[k] * v[i]
    cross_motion(V[i], S, tmp)
    for k in range(6):
        Vdot[i, k] += S[k] * a[i] + tmp[k] * v[i]


@njit(cache=True, forceinline=True)
def rnea(parents, screw_axes, home_R, home_p, phi, q, v, a, base_accel, f_ext, R, p, V, Vdot, F,
         tmp6, tau):
    """tau = M(q) a + C(q, v) v + g(q) - sum_i J_i^T f_ext_i.

    base_accel is the root's acceleration [0; -g] (gravity as a fictitious base acceleration).
    Returns False, computing nothing, when q, v or a is not finite, or when tau is not (overflow).
    """
    if not (all_finite(q) and all_finite(v) and all_finite(a)):
        return False
    nb = q.shape[0]
    joint_transforms(screw_axes, home_R, home_p, q, R, p)
    GV = tmp6[0]
    VxGV = tmp6[1]
    for i in range(nb):
        body_motion(i, parents, screw_axes[i], R, p, base_accel, v, a, V, Vdot, VxGV)
        # eq. 4 (own part): F_i = G_i Vdot_i - ad*_{V_i} G_i V_i - f_ext_i
        inertia_times(phi[i], Vdot[i], F[i])
        inertia_times(phi[i], V[i], GV)
        cross_force(V[i], GV, VxGV)
        for k in range(6):
            F[i, k] += VxGV[k] - f_ext[i, k]
    joint_torques(parents, screw_axes, R, p, F, tau)
    return all_finite(tau)


@njit(cache=True, forceinline=True)
def gravity(parents, screw_axes, home_R, home_p, phi, q, base_accel, R, p, Vdot, F, g):
    """g = g(q), the generalized gravity: RNEA at v = a = 0 with the velocity terms left out.

    With every twist zero, eq. 3 reduces to Vdot_i = Ad_{T^-1} Vdot_parent (the base acceleration
    [0; -g] carried into each body frame) and eq. 4 to F_i = G_i Vdot_i: one kinematics pass, one
    transform and one inertia product a body, then the backward pass of eq. 5 (joint_torques). Returns False,
    computing nothing, when q is not finite, or when g is not (overflow)."""
    if not all_finite(q):
        return False
    nb = q.shape[0]
    joint_transforms(screw_axes, home_R, home_p, q, R, p)
    for i in range(nb):
        # eq. 3 at v = a = 0: the parent's acceleration (the base's at the root) in body i's frame
        j = parents[i]
        motion_to_child(R[i], p[i], base_accel if j < 0 else Vdot[j], Vdot[i])
        # eq. 4 at V = 0: F_i = G_i Vdot_i
        inertia_times(phi[i], Vdot[i], F[i])
    joint_torques(parents, screw_axes, R, p, F, g)
    return all_finite(g)


@njit(cache=True, inline="always")
def joint_torques(parents, screw_axes, R, p, F, tau):
    """The backward pass, leaves to root: eq. 5, tau_i = S_i^T F_i, with F_i the force of body i's
    subtree, each body's own F_i on entry (eq. 4, children: F_parent += Ad*_{T^-1} F_i)."""
    for i in range(parents.shape[0] - 1, -1, -1):
        S = screw_axes[i]
        tau[i] = (S[0] * F[i, 0] + S[1] * F[i, 1] + S[2] * F[i, 2]
                  + S[3] * F[i, 3] + S[4] * F[i, 4] + S[5] * F[i, 5])
        j = parents[i]
        if j >= 0:
            force_to_parent_add(R[i], p[i], F[i], F[j])
