"""Entry kernels: one compiled call per public function, on packed buffers.

Numba unboxes every array argument of a call (some 40 ns each through the dispatcher, plus its type
resolution): the kernels of this package take 15-25 arrays, so a call cost more than the compute of a
9-DoF arm. A Model keeps its arrays in one float64 buffer `model._buf` and a Data its workspace in
one `data._buf` (the named attributes are views of them, see model.py), each starting with a header:

    buf[0:HEADER] = nbodies, nv, nframes, coupled (1.0 for mimic coupling)
    buf[HEADER + k] = start of field k of MODEL_FIELDS / DATA_FIELDS (-1: absent), in float64 slots

(model.py packs them and defines the layout), so an entry kernel takes (model buffer, data buffer,
inputs), takes named views of the fields (no copy, nothing allocated) and calls the algorithm
kernels of the other modules with exactly what the public functions' checked paths pass them:
results are bit for bit the same. The joint terms (armature, friction: kernels/joint_terms.py) are
the model's field joint_terms, added by the same kernels on both paths. Integer fields (parents,
support, subtree_end) are int64 views of their slots. The views are borrowed (packed.py): the
buffers are the caller's arguments.

An entry kernel checks what its fast call did not: model and data of one size, no mimic coupling,
every field present (a LargeData allocates some on first use, outside the buffer), inputs of length
nv; then it returns the algorithm's verdict. Anything but OK sends the public function to its checked
path, which names the problem (dynamics.py).
"""
from ..jit import njit
from ..model import DATA_FIELDS, HEADER, MODEL_FIELDS
from .aba import aba as _aba
from .centroidal import center_of_mass as _center_of_mass
from .centroidal import centroidal as _centroidal
from .coriolis import coriolis_matrix as _coriolis_matrix
from .crba import crba as _crba
from .joint_terms import add_armature, add_joint_derivatives, add_joint_torque, joint_regressor
from .kinematics import forward_kinematics as _forward_kinematics
from .kinematics import frame_jacobian as _frame_jacobian
from .minverse import OK as MINV_OK
from .minverse import aba_derivatives as _aba_derivatives
from .minverse import minverse as _minverse
from .packed import int_view, view
from .regressor import regressor as _regressor
from .rnea import gravity as _gravity
from .rnea import rnea as _rnea
from .rnea_derivatives import rnea_derivatives as _rnea_derivatives
from .task_space import frame_jacobian_time_variation as _time_variation

OK = 0              # entry status: done
REFUSED = 1         # sizes, coupling or a missing field: the checked path decides
FAILED = 2          # the algorithm refused (non-finite input or result, singular M)

(PARENTS, SCREW_AXES, HOME_R, HOME_P, PHI, BASE_ACCEL, FRAME_BODY, FRAME_R,
 FRAME_P, JOINT_TERMS) = range(len(MODEL_FIELDS))

(R, P, OR, OP, V, VDOT, F, TMP6, TAU, NLE, G, ZERO, F_EXT_ZERO,
 M, PHI_COMPOSITE, OS, OV, PHI_WORLD, C, IA, PA, U, D, U_SMALL, OA, DDQ,
 OPSI, OIC, OBC, C_MATRIX, SUPPORT, J, FRAME_POSES, OPHI_C,
 DERIV_VECTORS, MINV_IA, MINV_F, SUBTREE_END, DERIV_JOINT, MINV,
 DERIVATIVES_TREE, Y, Y_FULL, Q_TREE, A_TREE, BASE_R, BASE_P, DATA_BASE_ACCEL, COM, J_COM,
 A_G) = range(len(DATA_FIELDS))


# ----------------------------------------------------------------------------------------------
# Named views of a packed buffer


@njit(cache=True, inline="always")
def start(buf, field):
    return int(buf[HEADER + field])


@njit(cache=True, inline="always")
def vec(buf, field, n0):
    return view(buf, start(buf, field), (n0,))


@njit(cache=True, inline="always")
def mat(buf, field, n0, n1):
    return view(buf, start(buf, field), (n0, n1))


@njit(cache=True, inline="always")
def cube(buf, field, n0, n1, n2):
    return view(buf, start(buf, field), (n0, n1, n2))


@njit(cache=True, inline="always")
def ints(buf, field, n0):
    return int_view(buf, start(buf, field), n0)


@njit(cache=True, inline="always")
def fits(model, data, nframes):
    """Model and data of one tree, without mimic coupling (nframes: compare frame counts too)."""
    return (model[0] == data[0] and model[1] == data[1] and model[3] == 0.0 and data[3] == 0.0
            and (not nframes or model[2] == data[2]))


@njit(cache=True, inline="always")
def state_fits(nb, q, v, x):
    """q, v and x (a or tau) have nb entries each."""
    return q.shape[0] == nb and v.shape[0] == nb and x.shape[0] == nb


@njit(cache=True, inline="always")
def has(data, field):
    return data[HEADER + field] >= 0.0


@njit(cache=True, inline="always")
def status(done):
    return OK if done else FAILED


# ----------------------------------------------------------------------------------------------
# Inverse dynamics (kernels/rnea.py, plus the joint terms), its parts, and the external-force variant


@njit(cache=True, inline="always")
def rnea_into(model, data, q, v, a, f_ext, out, base_accel):
    nb = q.shape[0]
    return _rnea(ints(model, PARENTS, nb), mat(model, SCREW_AXES, nb, 6), cube(model, HOME_R, nb, 3, 3),
                 mat(model, HOME_P, nb, 3), mat(model, PHI, nb, 10), q, v, a, base_accel,
                 f_ext, cube(data, R, nb, 3, 3), mat(data, P, nb, 3), mat(data, V, nb, 6),
                 mat(data, VDOT, nb, 6), mat(data, F, nb, 6), mat(data, TMP6, 4, 6), out
                 ) and add_joint_torque(mat(model, JOINT_TERMS, nb, 3), v, a, out)


@njit(cache=True, _nrt=False)
def rnea(model, data, q, v, a):
    """data.tau = rnea(q, v, a) without external forces."""
    nb = int(model[0])
    if not (fits(model, data, False) and state_fits(nb, q, v, a)):
        return REFUSED
    return status(rnea_into(model, data, q, v, a, mat(data, F_EXT_ZERO, nb, 6), vec(data, TAU, nb),
                             vec(model, BASE_ACCEL, 6)))


@njit(cache=True, _nrt=False)
def rnea_ext(model, data, q, v, a, f_ext):
    """data.tau = rnea(q, v, a, f_ext)."""
    nb = int(model[0])
    if not (fits(model, data, False) and state_fits(nb, q, v, a) and f_ext.shape == (nb, 6)):
        return REFUSED
    return status(rnea_into(model, data, q, v, a, f_ext, vec(data, TAU, nb), vec(model, BASE_ACCEL, 6)))


@njit(cache=True, _nrt=False)
def nonlinear_effects(model, data, q, v):
    """data.nle = rnea(q, v, 0)."""
    nb = int(model[0])
    if not (fits(model, data, False) and q.shape[0] == nb and v.shape[0] == nb):
        return REFUSED
    return status(rnea_into(model, data, q, v, vec(data, ZERO, nb), mat(data, F_EXT_ZERO, nb, 6),
                             vec(data, NLE, nb), vec(model, BASE_ACCEL, 6)))


@njit(cache=True, _nrt=False)
def gravity(model, data, q):
    """data.g = rnea(q, 0, 0), by the gravity-only pass of kernels/rnea.py (no velocity terms)."""
    nb = int(model[0])
    if not (fits(model, data, False) and q.shape[0] == nb):
        return REFUSED
    return status(_gravity(ints(model, PARENTS, nb), mat(model, SCREW_AXES, nb, 6), cube(model, HOME_R, nb, 3, 3),
                           mat(model, HOME_P, nb, 3), mat(model, PHI, nb, 10), q, vec(model, BASE_ACCEL, 6),
                           cube(data, R, nb, 3, 3), mat(data, P, nb, 3), mat(data, VDOT, nb, 6),
                           mat(data, F, nb, 6), vec(data, G, nb)))


# ----------------------------------------------------------------------------------------------
# Mass matrix, forward dynamics, Coriolis matrix, kinematics, centre of mass


@njit(cache=True, _nrt=False)
def centroidal(model, data, q):
    """data.com, J_com, A_g at q (a free flyer's: kernels/floating_entry.py)."""
    nb = int(model[0])
    if not (fits(model, data, False) and q.shape[0] == nb):
        return REFUSED
    return centroidal_into(model, data, q)


@njit(cache=True, inline="always")
def centroidal_into(model, data, q):
    nb = q.shape[0]
    return status(_centroidal(
        ints(model, PARENTS, nb), mat(model, SCREW_AXES, nb, 6), cube(model, HOME_R, nb, 3, 3),
        mat(model, HOME_P, nb, 3), mat(model, PHI, nb, 10), q, mat(data, BASE_R, 3, 3), vec(data, BASE_P, 3),
        cube(data, R, nb, 3, 3), mat(data, P, nb, 3), cube(data, OR, nb, 3, 3), mat(data, OP, nb, 3),
        mat(data, OS, nb, 6), mat(data, PHI_COMPOSITE, nb, 10), mat(data, F, nb, 6), vec(data, COM, 3),
        mat(data, J_COM, 3, nb), mat(data, A_G, 6, nb)))


@njit(cache=True, _nrt=False)
def center_of_mass(model, data, q):
    """data.com at q alone (a free flyer's: kernels/floating_entry.py)."""
    nb = int(model[0])
    if not (fits(model, data, False) and q.shape[0] == nb):
        return REFUSED
    return center_of_mass_into(model, data, q)


@njit(cache=True, inline="always")
def center_of_mass_into(model, data, q):
    nb = q.shape[0]
    return status(_center_of_mass(
        ints(model, PARENTS, nb), mat(model, SCREW_AXES, nb, 6), cube(model, HOME_R, nb, 3, 3),
        mat(model, HOME_P, nb, 3), mat(model, PHI, nb, 10), q, mat(data, BASE_R, 3, 3), vec(data, BASE_P, 3),
        cube(data, R, nb, 3, 3), mat(data, P, nb, 3), cube(data, OR, nb, 3, 3), mat(data, OP, nb, 3),
        vec(data, COM, 3)))


@njit(cache=True, _nrt=False)
def crba(model, data, q):
    """data.M = M(q)."""
    nb = int(model[0])
    if not (fits(model, data, False) and q.shape[0] == nb):
        return REFUSED
    return crba_into(model, data, q)


@njit(cache=True, inline="always")
def crba_into(model, data, q):
    nb = q.shape[0]
    done = _crba(ints(model, PARENTS, nb), mat(model, SCREW_AXES, nb, 6), cube(model, HOME_R, nb, 3, 3),
                 mat(model, HOME_P, nb, 3), mat(model, PHI, nb, 10), q, cube(data, R, nb, 3, 3),
                 mat(data, P, nb, 3), cube(data, OR, nb, 3, 3), mat(data, OP, nb, 3), mat(data, OS, nb, 6),
                 mat(data, PHI_COMPOSITE, nb, 10), mat(data, F, nb, 6), mat(data, M, nb, nb))
    if done:
        add_armature(mat(model, JOINT_TERMS, nb, 3), mat(data, M, nb, nb))
    return status(done)


@njit(cache=True, inline="always")
def aba_into(model, data, q, v, tau, f_ext, base_accel):
    nb = q.shape[0]
    return _aba(ints(model, PARENTS, nb), mat(model, SCREW_AXES, nb, 6), cube(model, HOME_R, nb, 3, 3),
                mat(model, HOME_P, nb, 3), mat(model, PHI, nb, 10), mat(model, JOINT_TERMS, nb, 3), q, v, tau,
                base_accel,
                f_ext, cube(data, R, nb, 3, 3), mat(data, P, nb, 3), cube(data, OR, nb, 3, 3),
                mat(data, OP, nb, 3), mat(data, OS, nb, 6), mat(data, OV, nb, 6), mat(data, PHI_WORLD, nb, 10),
                mat(data, C, nb, 6), cube(data, IA, nb, 6, 6), mat(data, PA, nb, 6), mat(data, U, nb, 6),
                vec(data, D, nb), vec(data, U_SMALL, nb), mat(data, OA, nb, 6), mat(data, TMP6, 4, 6),
                vec(data, DDQ, nb))


@njit(cache=True, _nrt=False)
def aba(model, data, q, v, tau):
    """data.ddq = aba(q, v, tau) without external forces (ZeroDivisionError: M(q) singular)."""
    nb = int(model[0])
    if not (fits(model, data, False) and state_fits(nb, q, v, tau)):
        return REFUSED
    return status(aba_into(model, data, q, v, tau, mat(data, F_EXT_ZERO, nb, 6), vec(model, BASE_ACCEL, 6)))


@njit(cache=True, _nrt=False)
def aba_ext(model, data, q, v, tau, f_ext):
    """data.ddq = aba(q, v, tau, f_ext) (ZeroDivisionError: M(q) singular)."""
    nb = int(model[0])
    if not (fits(model, data, False) and state_fits(nb, q, v, tau) and f_ext.shape == (nb, 6)):
        return REFUSED
    return status(aba_into(model, data, q, v, tau, f_ext, vec(model, BASE_ACCEL, 6)))


@njit(cache=True, _nrt=False)
def coriolis_matrix(model, data, q, v):
    """data.C = C(q, v)."""
    nb = int(model[0])
    if not (fits(model, data, False) and q.shape[0] == nb and v.shape[0] == nb):
        return REFUSED
    return status(_coriolis_matrix(
        ints(model, PARENTS, nb), mat(model, SCREW_AXES, nb, 6), cube(model, HOME_R, nb, 3, 3),
        mat(model, HOME_P, nb, 3), mat(model, PHI, nb, 10), q, v, cube(data, R, nb, 3, 3), mat(data, P, nb, 3),
        cube(data, OR, nb, 3, 3), mat(data, OP, nb, 3), mat(data, OS, nb, 6), mat(data, OV, nb, 6),
        mat(data, OPSI, nb, 6), cube(data, OIC, nb, 6, 6), cube(data, OBC, nb, 6, 6),
        mat(data, PHI_WORLD, nb, 10), mat(data, TMP6, 4, 6), mat(data, C_MATRIX, nb, nb)))


@njit(cache=True, _nrt=False)
def forward_kinematics(model, data, q):
    """data.frame_poses = world poses of all frames."""
    nb = int(model[0])
    nf = int(model[2])
    if not (fits(model, data, True) and q.shape[0] == nb):
        return REFUSED
    return status(_forward_kinematics(
        ints(model, PARENTS, nb), mat(model, SCREW_AXES, nb, 6), cube(model, HOME_R, nb, 3, 3),
        mat(model, HOME_P, nb, 3), ints(model, FRAME_BODY, nf), cube(model, FRAME_R, nf, 3, 3),
        mat(model, FRAME_P, nf, 3), q, cube(data, R, nb, 3, 3), mat(data, P, nb, 3), cube(data, OR, nb, 3, 3),
        mat(data, OP, nb, 3), cube(data, FRAME_POSES, nf, 4, 4)))


@njit(cache=True, _nrt=False)
def jacobian(model, data, q, frame, reference):
    """data.J = the Jacobian of frame `frame` (an index) in `reference` (kinematics.WORLD, ...)."""
    nb = int(model[0])
    nf = int(model[2])
    if not (fits(model, data, True) and q.shape[0] == nb and 0 <= frame < nf and 0 <= reference <= 2):
        return REFUSED
    return status(_frame_jacobian(
        ints(model, PARENTS, nb), mat(model, SCREW_AXES, nb, 6), cube(model, HOME_R, nb, 3, 3),
        mat(model, HOME_P, nb, 3), q, ints(data, SUPPORT, nb), cube(data, R, nb, 3, 3), mat(data, P, nb, 3),
        cube(data, OR, nb, 3, 3), mat(data, OP, nb, 3), ints(model, FRAME_BODY, nf)[frame],
        cube(model, FRAME_R, nf, 3, 3)[frame], mat(model, FRAME_P, nf, 3)[frame], reference,
        mat(data, J, 6, nb)))


@njit(cache=True, _nrt=False)
def frame_jacobian_time_variation(model, data, q, v, frame, reference, out):
    """out = [J (6, nb), dJ/dt (6, nb), J v (6), dJ/dt v (6)] of frame `frame` (an index) in
    `reference`, flat (task_space.py's workspace); data's support and oV as its workspace."""
    nb = int(model[0])
    nf = int(model[2])
    if not (fits(model, data, True) and has(data, OV) and q.shape[0] == nb and v.shape[0] == nb
            and 0 <= frame < nf and 0 <= reference <= 2 and out.shape[0] == 12 * nb + 12):
        return REFUSED
    return status(_time_variation(
        ints(model, PARENTS, nb), mat(model, SCREW_AXES, nb, 6), cube(model, HOME_R, nb, 3, 3),
        mat(model, HOME_P, nb, 3), q, v, ints(data, SUPPORT, nb), cube(data, R, nb, 3, 3), mat(data, P, nb, 3),
        cube(data, OR, nb, 3, 3), mat(data, OP, nb, 3), mat(data, OV, nb, 6), ints(model, FRAME_BODY, nf)[frame],
        cube(model, FRAME_R, nf, 3, 3)[frame], mat(model, FRAME_P, nf, 3)[frame], reference,
        view(out, 0, (6, nb)), view(out, 6 * nb, (6, nb)), view(out, 12 * nb, (6,)), view(out, 12 * nb + 6, (6,))))


# ----------------------------------------------------------------------------------------------
# Regressor, first-order derivatives and M^-1 (buffers of Data's families: absent from a LargeData's
# packed workspace, whose families come on first use)


@njit(cache=True, inline="always")
def _regressor_into(model, data, q, v, a):
    nb = int(model[0])
    if not (fits(model, data, False) and has(data, Y) and q.shape[0] == nb and v.shape[0] == nb
            and a.shape[0] == nb):
        return REFUSED
    return status(_regressor(
        ints(model, PARENTS, nb), mat(model, SCREW_AXES, nb, 6), cube(model, HOME_R, nb, 3, 3),
        mat(model, HOME_P, nb, 3), q, v, a, vec(model, BASE_ACCEL, 6), cube(data, R, nb, 3, 3),
        mat(data, P, nb, 3), cube(data, OR, nb, 3, 3), mat(data, OP, nb, 3), mat(data, OS, nb, 6),
        mat(data, V, nb, 6), mat(data, VDOT, nb, 6), mat(data, TMP6, 4, 6), mat(data, Y, nb, 10 * nb)))


@njit(cache=True, _nrt=False)
def regressor(model, data, q, v, a):
    """data.Y = the joint torque regressor at (q, v, a)."""
    return _regressor_into(model, data, q, v, a)


@njit(cache=True, _nrt=False)
def regressor_full(model, data, q, v, a):
    """data.Y_full = [Y | joint block] at (q, v, a): data.Y, then its copy beside the joint terms'
    columns (kernels/joint_terms.py)."""
    nb = int(model[0])
    if not has(data, Y_FULL):
        return REFUSED
    done = _regressor_into(model, data, q, v, a)
    if done != OK:
        return done
    Y_rigid = mat(data, Y, nb, 10 * nb)
    Y_all = mat(data, Y_FULL, nb, 13 * nb)
    for i in range(nb):
        for k in range(10 * nb):
            Y_all[i, k] = Y_rigid[i, k]
    joint_regressor(v, a, Y_all, 10 * nb)
    return OK


@njit(cache=True, inline="always")
def rnea_derivatives_into(model, data, q, v, a, f_ext, base_accel):
    nb = q.shape[0]
    return _rnea_derivatives(
        ints(model, PARENTS, nb), mat(model, SCREW_AXES, nb, 6), cube(model, HOME_R, nb, 3, 3),
        mat(model, HOME_P, nb, 3), mat(model, PHI, nb, 10), q, v, a, base_accel, f_ext,
        cube(data, R, nb, 3, 3), mat(data, P, nb, 3), cube(data, OR, nb, 3, 3), mat(data, OP, nb, 3),
        mat(data, OPHI_C, nb, 10), cube(data, DERIV_VECTORS, 9, nb, 6), mat(data, TMP6, 4, 6),
        cube(data, DERIVATIVES_TREE, 6, nb, nb))


@njit(cache=True, _nrt=False)
def rnea_derivatives(model, data, q, v, a):
    """data.dtau_dq, dtau_dv, dtau_da at (q, v, a) without external forces."""
    nb = int(model[0])
    if not (fits(model, data, False) and has(data, DERIVATIVES_TREE) and state_fits(nb, q, v, a)):
        return REFUSED
    if not rnea_derivatives_into(model, data, q, v, a, mat(data, F_EXT_ZERO, nb, 6), vec(model, BASE_ACCEL, 6)):
        return FAILED
    out = cube(data, DERIVATIVES_TREE, 6, nb, nb)
    add_joint_derivatives(mat(model, JOINT_TERMS, nb, 3), v, out[1], out[2])
    return OK


@njit(cache=True, _nrt=False)
def minverse(model, data, q):
    """data.Minv = M(q)^-1."""
    nb = int(model[0])
    if not (fits(model, data, False) and has(data, MINV) and q.shape[0] == nb):
        return REFUSED
    return minverse_into(model, data, q)


@njit(cache=True, inline="always")
def minverse_into(model, data, q):
    nb = q.shape[0]
    deriv_vectors = cube(data, DERIV_VECTORS, 9, nb, 6)
    return OK if _minverse(
        ints(model, PARENTS, nb), mat(model, SCREW_AXES, nb, 6), cube(model, HOME_R, nb, 3, 3),
        mat(model, HOME_P, nb, 3), mat(model, PHI, nb, 10), mat(model, JOINT_TERMS, nb, 3), q,
        cube(data, R, nb, 3, 3), mat(data, P, nb, 3), cube(data, OR, nb, 3, 3), mat(data, OP, nb, 3),
        mat(data, OPHI_C, nb, 10), deriv_vectors,
        cube(data, MINV_IA, nb, 6, 6), cube(data, MINV_F, nb, nb, 6), ints(data, SUBTREE_END, nb),
        mat(data, DERIV_JOINT, 2, nb)[0], mat(data, MINV, nb, nb)) == MINV_OK else FAILED


@njit(cache=True, _nrt=False)
def aba_derivatives(model, data, q, v, tau):
    """data.ddq_dq, ddq_dv, Minv (and ddq, dtau_dq, dtau_dv) at (q, v, tau) without external forces."""
    nb = int(model[0])
    if not (fits(model, data, False) and has(data, DERIVATIVES_TREE) and state_fits(nb, q, v, tau)):
        return REFUSED
    return aba_derivatives_into(model, data, q, v, tau, vec(model, BASE_ACCEL, 6))


@njit(cache=True, inline="always")
def aba_derivatives_into(model, data, q, v, tau, base_accel):
    nb = q.shape[0]
    return OK if _aba_derivatives(
        ints(model, PARENTS, nb), mat(model, SCREW_AXES, nb, 6), cube(model, HOME_R, nb, 3, 3),
        mat(model, HOME_P, nb, 3), mat(model, PHI, nb, 10), mat(model, JOINT_TERMS, nb, 3), q, v, tau,
        base_accel, mat(data, F_EXT_ZERO, nb, 6), cube(data, R, nb, 3, 3), mat(data, P, nb, 3),
        cube(data, OR, nb, 3, 3), mat(data, OP, nb, 3), mat(data, OPHI_C, nb, 10), cube(data, DERIV_VECTORS, 9, nb, 6),
        mat(data, TMP6, 4, 6), cube(data, MINV_IA, nb, 6, 6), cube(data, MINV_F, nb, nb, 6),
        ints(data, SUBTREE_END, nb), mat(data, DERIV_JOINT, 2, nb), vec(data, DDQ, nb),
        cube(data, DERIVATIVES_TREE, 6, nb, nb)) == MINV_OK else FAILED
