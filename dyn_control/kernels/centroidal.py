"""Centre of mass, its Jacobian and the centroidal momentum matrix from the composite inertias
(Orin, Goswami and Lee, "Centroidal dynamics of a humanoid robot", 2013; Pinocchio's ccrba).

In the root frame: the composite inertia Ic_j of joint j's subtree (mass m_j, first moment h_j)
moving at unit qd_j with the joint's screw oS_j = [w_j; v_j] carries the momentum F_j = Ic_j oS_j
= [n_j; f_j] (at the root's origin), n_j - c x f_j about the centre of mass c, and moves the centre
of mass by (m_j v_j + w_j x h_j) / m. A floating base's root frame is its root link's, at (R, p) in the
world: the results are turned into the world's (R = I, p = 0 for a fixed base).
"""
from ..jit import njit
from ..spatial import inertia_times
from .crba import composite_inertias
from .inputs import all_finite
from .kinematics import body_poses


@njit(cache=True, inline="always")
def _rotate(R, x0, x1, x2, out, k, column):
    """out[k:k + 3, column] = R [x0, x1, x2]."""
    for r in range(3):
        out[k + r, column] = R[r, 0] * x0 + R[r, 1] * x1 + R[r, 2] * x2


@njit(cache=True)
def centroidal(parents, screw_axes, home_R, home_p, phi, q, root_R, root_p, R, p, oR, op, oS, phi_composite, F,
               com, J_com, A_g):
    """com (3,), its Jacobian J_com (3, nb) and the centroidal momentum matrix A_g (6, nb), [angular
    about com; linear], in the world frame, the root frame at (root_R, root_p); F (nb, 6): scratch.
    False when q is not finite or the robot has no mass."""
    if not all_finite(q):
        return False
    composite_inertias(parents, screw_axes, home_R, home_p, phi, q, R, p, oR, op, oS, phi_composite)
    mass = 0.0
    c0 = c1 = c2 = 0.0
    for i in range(q.shape[0]):
        inertia_times(phi_composite[i], oS[i], F[i])
        if parents[i] < 0:
            mass += phi_composite[i, 0]
            c0 += phi_composite[i, 1]
            c1 += phi_composite[i, 2]
            c2 += phi_composite[i, 3]
    if not mass > 0.0:
        return False
    c0, c1, c2 = c0 / mass, c1 / mass, c2 / mass
    for r in range(3):
        com[r] = root_R[r, 0] * c0 + root_R[r, 1] * c1 + root_R[r, 2] * c2 + root_p[r]
    for j in range(q.shape[0]):
        w, v, m_j, h = oS[j, :3], oS[j, 3:], phi_composite[j, 0], phi_composite[j, 1:4]
        _rotate(root_R, (m_j * v[0] + w[1] * h[2] - w[2] * h[1]) / mass,
                (m_j * v[1] + w[2] * h[0] - w[0] * h[2]) / mass, (m_j * v[2] + w[0] * h[1] - w[1] * h[0]) / mass,
                J_com, 0, j)
        n, f = F[j, :3], F[j, 3:]
        _rotate(root_R, n[0] - (c1 * f[2] - c2 * f[1]), n[1] - (c2 * f[0] - c0 * f[2]), n[2] - (c0 * f[1] - c1 * f[0]),
                A_g, 0, j)
        _rotate(root_R, f[0], f[1], f[2], A_g, 3, j)
    return all_finite(J_com) and all_finite(A_g)


@njit(cache=True)
def center_of_mass(parents, screw_axes, home_R, home_p, phi, q, root_R, root_p, R, p, oR, op, com):
    """com (3,) alone, in the world frame (the root frame at root_R, root_p): the bodies' poses and
    their mass-weighted centres, sum_i (m_i op_i + oR_i h_i) / sum_i m_i. False when q is not
    finite or the robot has no mass."""
    if not all_finite(q):
        return False
    body_poses(parents, screw_axes, home_R, home_p, q, R, p, oR, op)
    mass = 0.0
    c0 = c1 = c2 = 0.0
    for i in range(q.shape[0]):
        m_i, h0, h1, h2 = phi[i, 0], phi[i, 1], phi[i, 2], phi[i, 3]
        mass += m_i
        c0 += m_i * op[i, 0] + oR[i, 0, 0] * h0 + oR[i, 0, 1] * h1 + oR[i, 0, 2] * h2
        c1 += m_i * op[i, 1] + oR[i, 1, 0] * h0 + oR[i, 1, 1] * h1 + oR[i, 1, 2] * h2
        c2 += m_i * op[i, 2] + oR[i, 2, 0] * h0 + oR[i, 2, 1] * h1 + oR[i, 2, 2] * h2
    if not mass > 0.0:
        return False
    c0, c1, c2 = c0 / mass, c1 / mass, c2 / mass
    for r in range(3):
        com[r] = root_R[r, 0] * c0 + root_R[r, 1] * c1 + root_R[r, 2] * c2 + root_p[r]
    return all_finite(com)
