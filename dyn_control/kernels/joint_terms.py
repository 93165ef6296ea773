"""Joint terms: reflected rotor inertia (armature) and joint friction, per joint of the tree.

Each joint i carries joint_terms[i] = [I_a, F_v, F_c] (model.joint_terms; order of JOINT_PARAMETER_NAMES
in model.py) and adds to the rigid-body inverse dynamics the torque

    tau_joint_i = I_a a_i + F_v v_i + F_c sgn_s(v_i),     sgn_s(v) = tanh(v / COULOMB_VELOCITY_SCALE):

the armature adds I_a to M's diagonal (the rotor turns with the joint, geared: it has no spatial
coupling), F_v is viscous and F_c Coulomb (dry) friction, with the sign smoothed over a velocity of
COULOMB_VELOCITY_SCALE (sgn_s = 0.76 at v = v_s, 0.995 at 3 v_s), so a feedforward and every derivative
stay continuous. The terms are linear in [I_a, F_v, F_c]: their regressor row i is [a_i, v_i, sgn_s(v_i)].

Every kernel here leaves a joint whose three terms are zero untouched (no `+ 0.0`), so a model without
joint terms gives the rigid-body results bit for bit. Nothing is allocated; inputs are checked by the
callers (finite v, a).
"""
import math

from ..jit import njit
from .inputs import all_finite

ARMATURE, VISCOUS, COULOMB = 0, 1, 2  # columns of joint_terms
COULOMB_VELOCITY_SCALE = 1e-3  # v_s of sgn_s [rad/s for a revolute joint, m/s for a prismatic one]


@njit(cache=True, inline="always")
def smooth_sign(v):
    """sgn_s(v) = tanh(v / COULOMB_VELOCITY_SCALE)."""
    return math.tanh(v / COULOMB_VELOCITY_SCALE)


@njit(cache=True, inline="always")
def smooth_sign_derivative(v):
    """d sgn_s / dv = (1 - sgn_s^2) / v_s."""
    s = math.tanh(v / COULOMB_VELOCITY_SCALE)
    return (1.0 - s * s) / COULOMB_VELOCITY_SCALE


@njit(cache=True, inline="always")
def smooth_sign_second_derivative(v):
    """d^2 sgn_s / dv^2 = -2 sgn_s (1 - sgn_s^2) / v_s^2."""
    s = math.tanh(v / COULOMB_VELOCITY_SCALE)
    return -2.0 * s * (1.0 - s * s) / (COULOMB_VELOCITY_SCALE * COULOMB_VELOCITY_SCALE)


@njit(cache=True, inline="always")
def has_terms(joint_terms, i):
    return joint_terms[i, 0] != 0.0 or joint_terms[i, 1] != 0.0 or joint_terms[i, 2] != 0.0


@njit(cache=True, inline="always")
def friction(joint_terms, i, v):
    """F_v v + F_c sgn_s(v) of joint i at its velocity v."""
    return joint_terms[i, VISCOUS] * v + joint_terms[i, COULOMB] * smooth_sign(v)


@njit(cache=True, forceinline=True)
def add_joint_torque(joint_terms, v, a, tau):
    """tau_i += I_a a_i + F_v v_i + F_c sgn_s(v_i) for every joint with terms. False when a changed
    entry is not finite (finite inputs that overflow)."""
    finite = True
    for i in range(tau.shape[0]):
        if has_terms(joint_terms, i):
            tau[i] += joint_terms[i, ARMATURE] * a[i] + friction(joint_terms, i, v[i])
            finite &= math.isfinite(tau[i])
    return finite


@njit(cache=True, forceinline=True)
def add_armature_torque(joint_terms, a, tau):
    """tau_i += I_a a_i: the rotors' torque at the joint accelerations a."""
    for i in range(tau.shape[0]):
        if joint_terms[i, ARMATURE] != 0.0:
            tau[i] += joint_terms[i, ARMATURE] * a[i]


@njit(cache=True, forceinline=True)
def add_friction_torque(joint_terms, v, tau):
    """tau_i += F_v v_i + F_c sgn_s(v_i) (the joint torque at zero acceleration). False when a changed
    entry is not finite."""
    finite = True
    for i in range(tau.shape[0]):
        if joint_terms[i, VISCOUS] != 0.0 or joint_terms[i, COULOMB] != 0.0:
            tau[i] += friction(joint_terms, i, v[i])
            finite &= math.isfinite(tau[i])
    return finite


@njit(cache=True, forceinline=True)
def add_armature(joint_terms, M):
    """M_ii += I_a,i: the joint-space inertia with the rotors."""
    for i in range(M.shape[0]):
        if joint_terms[i, ARMATURE] != 0.0:
            M[i, i] += joint_terms[i, ARMATURE]


@njit(cache=True, forceinline=True)
def add_friction_derivative(joint_terms, v, dtau_dv):
    """dtau_dv_ii += F_v + F_c sgn_s'(v_i)."""
    for i in range(dtau_dv.shape[0]):
        if joint_terms[i, VISCOUS] != 0.0 or joint_terms[i, COULOMB] != 0.0:
            dtau_dv[i, i] += joint_terms[i, VISCOUS] + joint_terms[i, COULOMB] * smooth_sign_derivative(v[i])


@njit(cache=True, forceinline=True)
def add_friction_second_derivative(joint_terms, v, d2tau_dv2):
    """d2tau_dv2_iii += F_c sgn_s''(v_i) (the only second derivative of the joint terms)."""
    for i in range(d2tau_dv2.shape[0]):
        if joint_terms[i, COULOMB] != 0.0:
            d2tau_dv2[i, i, i] += joint_terms[i, COULOMB] * smooth_sign_second_derivative(v[i])


@njit(cache=True, forceinline=True)
def add_joint_derivatives(joint_terms, v, dtau_dv, M):
    """The joint terms' first-order derivatives: dtau_dv_ii += F_v + F_c sgn_s'(v_i), M_ii += I_a."""
    add_friction_derivative(joint_terms, v, dtau_dv)
    add_armature(joint_terms, M)


@njit(cache=True, forceinline=True)
def joint_regressor(v, a, Y, col):
    """The joint block of a regressor: Y[:, col: col + 3 nb] = 0, then row i gets [a_i, v_i, sgn_s(v_i)]
    in columns col + 3 i .. col + 3 i + 2, so that Y[:, col:] @ joint_terms.ravel() is the joint torque.
    False when v or a is not finite."""
    nb = v.shape[0]
    for i in range(Y.shape[0]):
        for k in range(col, col + 3 * nb):
            Y[i, k] = 0.0
    for i in range(nb):
        c = col + 3 * i
        Y[i, c + ARMATURE] = a[i]
        Y[i, c + VISCOUS] = v[i]
        Y[i, c + COULOMB] = smooth_sign(v[i])
    return all_finite(v) and all_finite(a)
