"""Centre of mass, its Jacobian and the centroidal momentum matrix from the composite inertias
(Orin, Goswami and Lee, "Centroidal dynamics of a humanoid robot", 2013; Pinocchio's ccrba).

In the root frame: the composite inertia Ic_j of joint j's subtree (mass m_j, first moment h_j)
moving at unit qd_j with the joint's screw oS_j = [w_j; v_j] carries the momentum F_j = Ic_j oS_j
= [n_j; f_j] (at the root's origin), n_j - c x f_j about the centre of mass c, and moves the centre
of mass by (m_j v_j + w_j x h_j) / m. A floating base's root frame is its root link's, at (R, p) in the
world: the results are turned into the world's (R = I, p = 0 for a fixed base).
"""
from ..jit import njit
from ..spatial import force_to_parent_add, inertia_times
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


@njit(cache=True)
def momentum_and_rate(parents, R, p, phi, V, F, base_R, base_p, gravity, momenta, moments, totals, pose, h, dh):
    """The centroidal momentum h (6,) and its rate dh (6,), [angular about the centre of mass; linear],
    world axes, after an inverse dynamics pass at (q, v, a) that left each body's pose in its parent
    (R, p), twist V and the force F through its joint (gravity included), body frames; the tree's
    root frame at (base_R, base_p) in the world. Backward over the bodies: each subtree's momentum
    sum_i I_i V_i and first moment of mass [m; m c] in its root body's frame, then at the root
    bodies in the world (about its origin) with their joints' forces: their sum is the rate of the
    momentum less gravity's wrench. Scratch: momenta (nb, 6), moments (nb, 4), totals (3, 6), pose
    (4, 3). False when the robot has no mass or a result is not finite."""
    nb = parents.shape[0]
    for i in range(nb):
        inertia_times(phi[i], V[i], momenta[i])
        for k in range(4):
            moments[i, k] = phi[i, k]
    totals[:, :] = 0.0
    k_o, n_o = totals[0], totals[1]     # the momentum and the root joints' forces about the world's origin
    first = totals[2, :4]               # mass and first moment of mass in the world
    Rw, pw = pose[:3], pose[3]
    for i in range(nb - 1, -1, -1):
        parent = parents[i]
        if parent >= 0:
            force_to_parent_add(R[i], p[i], momenta[i], momenta[parent])
            _moment_to_parent_add(R[i], p[i], moments[i], moments[parent])
        else:   # the root body's pose in the world: the root frame's times its own
            for r in range(3):
                for c in range(3):
                    Rw[r, c] = base_R[r, 0] * R[i, 0, c] + base_R[r, 1] * R[i, 1, c] + base_R[r, 2] * R[i, 2, c]
                pw[r] = base_R[r, 0] * p[i, 0] + base_R[r, 1] * p[i, 1] + base_R[r, 2] * p[i, 2] + base_p[r]
            force_to_parent_add(Rw, pw, momenta[i], k_o)
            force_to_parent_add(Rw, pw, F[i], n_o)
            _moment_to_parent_add(Rw, pw, moments[i], first)
    mass = first[0]
    if not mass > 0.0:
        return False
    c0, c1, c2 = first[1] / mass, first[2] / mass, first[3] / mass
    _about(k_o, c0, c1, c2, h)
    _about(n_o, c0, c1, c2, dh)
    for r in range(3):  # gravity's wrench about c: its force alone
        dh[3 + r] += mass * gravity[r]
    return all_finite(h) and all_finite(dh)


@njit(cache=True, inline="always")
def _about(x, c0, c1, c2, out):
    """out = x, a force about the origin, about the point c: [n - c x f; f]."""
    out[0] = x[0] - (c1 * x[5] - c2 * x[4])
    out[1] = x[1] - (c2 * x[3] - c0 * x[5])
    out[2] = x[2] - (c0 * x[4] - c1 * x[3])
    out[3], out[4], out[5] = x[3], x[4], x[5]


@njit(cache=True, inline="always")
def _moment_to_parent_add(R, p, moment, out):
    """out += a child's [mass; first moment of mass] in its parent's frame: [m; R h + m p]."""
    m = moment[0]
    out[0] += m
    for r in range(3):
        out[1 + r] += R[r, 0] * moment[1] + R[r, 1] * moment[2] + R[r, 2] * moment[3] + m * p[r]
