"""Centre of mass, its Jacobian and the centroidal momentum matrix from the composite inertias
(Orin, Goswami and Lee, "Centroidal dynamics of a humanoid robot", 2013; Pinocchio's ccrba).

In the root frame: the composite inertia Ic_j of joint j's subtree (mass m_j, first moment h_j)
moving at unit qd_j with the joint's screw oS_j = [w_j; v_j] carries the momentum F_j = Ic_j oS_j
(at the root's origin) and moves the centre of mass by (m_j v_j + w_j x h_j) / m.
"""
from ..jit import njit
from ..spatial import inertia_times
from .crba import composite_inertias
from .inputs import all_finite


@njit(cache=True)
def centroidal(parents, screw_axes, home_R, home_p, phi, q, R, p, oR, op, oS, phi_composite, F, com, J_com):
    """com (3,): the centre of mass; J_com (3, nb): its Jacobian; F (nb, 6): each joint's column of
    the momentum matrix at the root's origin [n; f]; all in the root frame. False when q is not finite
    or the robot has no mass."""
    if not all_finite(q):
        return False
    composite_inertias(parents, screw_axes, home_R, home_p, phi, q, R, p, oR, op, oS, phi_composite)
    mass = 0.0
    for r in range(3):
        com[r] = 0.0
    for i in range(q.shape[0]):
        inertia_times(phi_composite[i], oS[i], F[i])
        if parents[i] < 0:
            mass += phi_composite[i, 0]
            for r in range(3):
                com[r] += phi_composite[i, 1 + r]
    if not mass > 0.0:
        return False
    for r in range(3):
        com[r] /= mass
    for j in range(q.shape[0]):
        w, v, m_j = oS[j, :3], oS[j, 3:], phi_composite[j, 0]
        h = phi_composite[j, 1:4]
        J_com[0, j] = (m_j * v[0] + w[1] * h[2] - w[2] * h[1]) / mass
        J_com[1, j] = (m_j * v[1] + w[2] * h[0] - w[0] * h[2]) / mass
        J_com[2, j] = (m_j * v[2] + w[0] * h[1] - w[1] * h[0]) / mass
    return all_finite(J_com) and all_finite(F)
