"""Entry kernels of free-flyer models (floating_base.py): one compiled call per public function, as
kernels/entry.py for fixed bases, which they follow: the configuration q (nq = nb + 1) becomes the
tree's inputs in data (q_tree, the root's pose base_R, base_p, and the base acceleration of gravity
in the root link's frame base_accel; a_tree = a - [b(nu); 0]), the same algorithm kernels run on them,
and the results become the free flyer's. A model of another kind, sizes that do not fit, a non-unit
quaternion (beyond free_flyer.UNIT_TOLERANCE) or a force on the free flyer's massless bodies is
REFUSED: the public function's checked path names it.
"""
import math

from ..jit import njit
from ..model import FLOATING
from .coriolis import free_flyer_coriolis_matrix
from .entry import (A_TREE, BASE_ACCEL, BASE_P, BASE_R, C_MATRIX, DATA_BASE_ACCEL, DDQ, DERIVATIVES_TREE, F, FRAME_BODY,
                    FRAME_P, FRAME_POSES, FRAME_R, F_EXT_ZERO, G, HOME_P, HOME_R, J, JOINT_TERMS, MINV, NLE, OBC, OIC,
                    OK, OP, OPSI, OR, OS, OV, P, PARENTS, PHI, PHI_WORLD, Q_TREE, R, REFUSED, SCREW_AXES, SUPPORT, TAU,
                    TMP6, VDOT, ZERO, aba_derivatives_into, aba_into, center_of_mass_into, centroidal_into, crba_into,
                    cube, has, ints, mat, minverse_into, rnea_derivatives_into, rnea_into, status, vec)
from .free_flyer import (FREE_FLYER_DOFS, UNIT_TOLERANCE, base_state, bias_acceleration, correct_derivatives,
                         correct_forward_derivatives, world_jacobian, world_poses)
from .joint_terms import add_joint_derivatives
from .kinematics import forward_kinematics as _forward_kinematics
from .kinematics import frame_jacobian as _frame_jacobian
from .rnea import gravity as _gravity


@njit(cache=True, inline="always")
def fits(model, data, q, nframes):
    """A free-flyer model and its data (nframes: compare frame counts too), q (nb + 1,) with a finite
    position and a unit quaternion."""
    nb = int(model[0])
    if not (model[3] == FLOATING and model[0] == data[0] and model[1] == data[1] and has(data, Q_TREE)
            and (not nframes or model[2] == data[2]) and q.shape[0] == nb + 1):
        return False
    norm = (q[3] * q[3] + q[4] * q[4] + q[5] * q[5] + q[6] * q[6]) ** 0.5
    return (abs(norm - 1.0) <= UNIT_TOLERANCE and math.isfinite(q[0]) and math.isfinite(q[1])
            and math.isfinite(q[2]))


@njit(cache=True, inline="always")
def joints_fit(nb, v, x):
    return v.shape[0] == nb and x.shape[0] == nb


@njit(cache=True, inline="always")
def forces_fit(nb, f_ext):
    """(nb, 6) external forces, none on the free flyer's five massless bodies."""
    if f_ext.shape != (nb, 6):
        return False
    for i in range(FREE_FLYER_DOFS - 1):
        for k in range(6):
            if f_ext[i, k] != 0.0:
                return False
    return True


@njit(cache=True, inline="always")
def tree_q(model, data, q):
    """q_tree, the root's pose and the base acceleration of gravity into data; q_tree."""
    nb = int(model[0])
    base_state(q, vec(model, BASE_ACCEL, 6), mat(data, BASE_R, 3, 3), vec(data, BASE_P, 3),
               vec(data, DATA_BASE_ACCEL, 6), vec(data, Q_TREE, nb))
    return vec(data, Q_TREE, nb)


@njit(cache=True, inline="always")
def tree_a(data, nb, v, a):
    """a_tree = a - [b(v[:6]); 0] into data; a_tree."""
    a_tree = vec(data, A_TREE, nb)
    bias_acceleration(v, a_tree)
    for k in range(FREE_FLYER_DOFS):
        a_tree[k] = a[k] - a_tree[k]
    for k in range(FREE_FLYER_DOFS, nb):
        a_tree[k] = a[k]
    return a_tree


@njit(cache=True, inline="always")
def _rnea(model, data, q, v, a, f_ext, out):
    nb = int(model[0])
    return status(rnea_into(model, data, tree_q(model, data, q), v, tree_a(data, nb, v, a), f_ext, out,
                            vec(data, DATA_BASE_ACCEL, 6)))


@njit(cache=True, _nrt=False)
def rnea(model, data, q, v, a):
    nb = int(model[0])
    if not (fits(model, data, q, False) and joints_fit(nb, v, a)):
        return REFUSED
    return _rnea(model, data, q, v, a, mat(data, F_EXT_ZERO, nb, 6), vec(data, TAU, nb))


@njit(cache=True, _nrt=False)
def rnea_ext(model, data, q, v, a, f_ext):
    nb = int(model[0])
    if not (fits(model, data, q, False) and joints_fit(nb, v, a) and forces_fit(nb, f_ext)):
        return REFUSED
    return _rnea(model, data, q, v, a, f_ext, vec(data, TAU, nb))


@njit(cache=True, _nrt=False)
def nonlinear_effects(model, data, q, v):
    nb = int(model[0])
    if not (fits(model, data, q, False) and joints_fit(nb, v, v)):
        return REFUSED
    return _rnea(model, data, q, v, vec(data, ZERO, nb), mat(data, F_EXT_ZERO, nb, 6), vec(data, NLE, nb))


@njit(cache=True, _nrt=False)
def gravity(model, data, q):
    nb = int(model[0])
    if not fits(model, data, q, False):
        return REFUSED
    return status(_gravity(ints(model, PARENTS, nb), mat(model, SCREW_AXES, nb, 6), cube(model, HOME_R, nb, 3, 3),
                           mat(model, HOME_P, nb, 3), mat(model, PHI, nb, 10), tree_q(model, data, q),
                           vec(data, DATA_BASE_ACCEL, 6), cube(data, R, nb, 3, 3), mat(data, P, nb, 3),
                           mat(data, VDOT, nb, 6), mat(data, F, nb, 6), vec(data, G, nb)))


@njit(cache=True, _nrt=False)
def crba(model, data, q):
    if not fits(model, data, q, False):
        return REFUSED
    return crba_into(model, data, tree_q(model, data, q))


@njit(cache=True, _nrt=False)
def coriolis_matrix(model, data, q, v):
    nb = int(model[0])
    if not (fits(model, data, q, False) and joints_fit(nb, v, v)):
        return REFUSED
    return status(free_flyer_coriolis_matrix(
        ints(model, PARENTS, nb), mat(model, SCREW_AXES, nb, 6), cube(model, HOME_R, nb, 3, 3),
        mat(model, HOME_P, nb, 3), mat(model, PHI, nb, 10), tree_q(model, data, q), v, cube(data, R, nb, 3, 3),
        mat(data, P, nb, 3), cube(data, OR, nb, 3, 3), mat(data, OP, nb, 3), mat(data, OS, nb, 6), mat(data, OV, nb, 6),
        mat(data, OPSI, nb, 6), cube(data, OIC, nb, 6, 6), cube(data, OBC, nb, 6, 6), mat(data, PHI_WORLD, nb, 10),
        mat(data, TMP6, 4, 6), mat(data, C_MATRIX, nb, nb)))


@njit(cache=True, _nrt=False)
def centroidal(model, data, q):
    if not fits(model, data, q, False):
        return REFUSED
    return centroidal_into(model, data, tree_q(model, data, q))


@njit(cache=True, _nrt=False)
def center_of_mass(model, data, q):
    if not fits(model, data, q, False):
        return REFUSED
    return center_of_mass_into(model, data, tree_q(model, data, q))


@njit(cache=True, _nrt=False)
def minverse(model, data, q):
    if not (fits(model, data, q, False) and has(data, MINV)):
        return REFUSED
    return minverse_into(model, data, tree_q(model, data, q))


@njit(cache=True, inline="always")
def _aba(model, data, q, v, tau, f_ext):
    nb = int(model[0])
    if not aba_into(model, data, tree_q(model, data, q), v, tau, f_ext, vec(data, DATA_BASE_ACCEL, 6)):
        return status(False)
    ddq = vec(data, DDQ, nb)
    bias = mat(data, TMP6, 4, 6)[0]
    bias_acceleration(v, bias)
    for k in range(FREE_FLYER_DOFS):
        ddq[k] += bias[k]
    return OK


@njit(cache=True, _nrt=False)
def aba(model, data, q, v, tau):
    """data.ddq (ZeroDivisionError: M(q) singular)."""
    nb = int(model[0])
    if not (fits(model, data, q, False) and joints_fit(nb, v, tau)):
        return REFUSED
    return _aba(model, data, q, v, tau, mat(data, F_EXT_ZERO, nb, 6))


@njit(cache=True, _nrt=False)
def aba_ext(model, data, q, v, tau, f_ext):
    nb = int(model[0])
    if not (fits(model, data, q, False) and joints_fit(nb, v, tau) and forces_fit(nb, f_ext)):
        return REFUSED
    return _aba(model, data, q, v, tau, f_ext)


@njit(cache=True, _nrt=False)
def rnea_derivatives(model, data, q, v, a):
    """data.dtau_dq, dtau_dv, dtau_da of the free flyer at (q, v, a) without external forces."""
    nb = int(model[0])
    if not (fits(model, data, q, False) and has(data, DERIVATIVES_TREE) and joints_fit(nb, v, a)):
        return REFUSED
    if not rnea_derivatives_into(model, data, tree_q(model, data, q), v, tree_a(data, nb, v, a),
                                 mat(data, F_EXT_ZERO, nb, 6), vec(data, DATA_BASE_ACCEL, 6)):
        return status(False)
    out = cube(data, DERIVATIVES_TREE, 6, nb, nb)
    add_joint_derivatives(mat(model, JOINT_TERMS, nb, 3), v, out[1], out[2])
    correct_derivatives(out[2], vec(data, DATA_BASE_ACCEL, 6), v, out[0], out[1], mat(data, TMP6, 4, 6))
    return OK


@njit(cache=True, _nrt=False)
def aba_derivatives(model, data, q, v, tau):
    """data.ddq_dq, ddq_dv, Minv (and ddq) of the free flyer at (q, v, tau) without external forces."""
    nb = int(model[0])
    if not (fits(model, data, q, False) and has(data, DERIVATIVES_TREE) and joints_fit(nb, v, tau)):
        return REFUSED
    done = aba_derivatives_into(model, data, tree_q(model, data, q), v, tau, vec(data, DATA_BASE_ACCEL, 6))
    if done != OK:
        return done
    out = cube(data, DERIVATIVES_TREE, 6, nb, nb)
    correct_forward_derivatives(vec(data, DATA_BASE_ACCEL, 6), v, vec(data, DDQ, nb), out[4], out[5],
                                mat(data, TMP6, 4, 6)[0])
    return OK


@njit(cache=True, _nrt=False)
def forward_kinematics(model, data, q):
    nb = int(model[0])
    nf = int(model[2])
    if not fits(model, data, q, True):
        return REFUSED
    poses = cube(data, FRAME_POSES, nf, 4, 4)
    if not _forward_kinematics(
            ints(model, PARENTS, nb), mat(model, SCREW_AXES, nb, 6), cube(model, HOME_R, nb, 3, 3),
            mat(model, HOME_P, nb, 3), ints(model, FRAME_BODY, nf), cube(model, FRAME_R, nf, 3, 3),
            mat(model, FRAME_P, nf, 3), tree_q(model, data, q), cube(data, R, nb, 3, 3), mat(data, P, nb, 3),
            cube(data, OR, nb, 3, 3), mat(data, OP, nb, 3), poses):
        return status(False)
    world_poses(mat(data, BASE_R, 3, 3), vec(data, BASE_P, 3), poses)
    return OK


@njit(cache=True, _nrt=False)
def jacobian(model, data, q, frame, reference):
    nb = int(model[0])
    nf = int(model[2])
    if not (fits(model, data, q, True) and 0 <= frame < nf and 0 <= reference <= 2):
        return REFUSED
    out = mat(data, J, 6, nb)
    if not _frame_jacobian(
            ints(model, PARENTS, nb), mat(model, SCREW_AXES, nb, 6), cube(model, HOME_R, nb, 3, 3),
            mat(model, HOME_P, nb, 3), tree_q(model, data, q), ints(data, SUPPORT, nb), cube(data, R, nb, 3, 3),
            mat(data, P, nb, 3), cube(data, OR, nb, 3, 3), mat(data, OP, nb, 3), ints(model, FRAME_BODY, nf)[frame],
            cube(model, FRAME_R, nf, 3, 3)[frame], mat(model, FRAME_P, nf, 3)[frame], reference, out):
        return status(False)
    world_jacobian(mat(data, BASE_R, 3, 3), vec(data, BASE_P, 3), reference, out)
    return OK
