"""Cartesian impedance control with a posture in the nullspace (the law of franka_example_controllers'
cartesian_impedance_example_controller and of Mayr et al.'s Cartesian impedance controller):

    tau = J^T (-K e - D J v + w_d) + N^T (K_n (q_n - q) - D_n v) + C(q, v) v + g(q)

at a frame of the model (`control.frame`), in the root frame's axes, spatial vectors angular first:
- J: the frame's "local_world_aligned" Jacobian (angular velocity; velocity of the frame's origin);
- e = [e_R; e_p]: e_p = p - p_eq, e_R = log(R R_eq^T), the rotation vector that takes the
  equilibrium's orientation to the frame's, in root axes (kernels/task_space.pose_error), so -K e
  pulls the frame back to the equilibrium pose (R_eq, p_eq);
- K = diag(K_R, K_p) [N m/rad, N/m]; D = diag(D_i), D_i = 2 zeta sqrt(Lambda_ii K_i): the damping
  ratio zeta on each axis of the task-space inertia Lambda's diagonal (exact where Lambda is
  diagonal in these axes; the Franka example's D = 2 sqrt(K) is this with Lambda = I and zeta = 1);
- w_d: a feedforward wrench [n; f] the frame exerts on the environment;
- N^T = I - J^T Jbar^T, Jbar = M^-1 J^T Lambda, the dynamically consistent pseudo-inverse of J, with
  Lambda = (J M^-1 J^T + d^2 I)^-1 (kernels/task_space.operational_space_inertia): a torque
  N^T tau_0 accelerates the frame by nothing (exactly with d = 0), so the posture torque
  K_n (q_n - q) - D_n v acts in the nullspace only. Near a singularity J M^-1 J^T loses rank and
  Lambda grows without bound; the damping d (`cartesian.singularity_damping`) bounds Lambda (its
  eigenvalues stay <= 1 / d^2) at the price of a projector that is no longer exact there.
At rest (v = 0) with an external wrench F on the frame, J^T (K e - F) = N^T tau_0 and Jbar^T N^T = 0
give K e = F: the frame moves by K^-1 F, whatever the posture torque (with d = 0).

The equilibrium follows the target through a first-order filter (filter_equilibrium): a jump of
the target moves the equilibrium, and so the torque, continuously.
Everything here is @njit on arrays, composed by the controller's tick (tick.py).
"""
import math

from ..jit import njit
from ..kernels.task_space import project_to_nullspace, rotation_log


@njit(cache=True, nogil=True)
def rotation_exp(w, R):
    """R = exp([w]x) (Rodrigues)."""
    theta2 = w[0] * w[0] + w[1] * w[1] + w[2] * w[2]
    theta = math.sqrt(theta2)
    if theta < 1e-6:
        a, b = 1.0 - theta2 / 6.0, 0.5 - theta2 / 24.0
    else:
        a, b = math.sin(theta) / theta, (1.0 - math.cos(theta)) / theta2
    x, y, z = w[0], w[1], w[2]
    R[0, 0] = 1.0 - b * (y * y + z * z)
    R[1, 1] = 1.0 - b * (x * x + z * z)
    R[2, 2] = 1.0 - b * (x * x + y * y)
    R[0, 1] = -a * z + b * x * y
    R[1, 0] = a * z + b * x * y
    R[0, 2] = a * y + b * x * z
    R[2, 0] = -a * y + b * x * z
    R[1, 2] = -a * x + b * y * z
    R[2, 1] = a * x + b * y * z


@njit(cache=True, nogil=True)
def filter_equilibrium(alpha, R_target, p_target, R_eq, p_eq, work33, work3):
    """One step of the equilibrium's first-order filter toward the target, by the fraction alpha
    in [0, 1]: p_eq += alpha (p_target - p_eq); R_eq <- exp(alpha log(R_target R_eq^T)) R_eq (the
    geodesic, in root axes). work33 (2, 3, 3), work3 (3,) scratch."""
    for i in range(3):
        p_eq[i] += alpha * (p_target[i] - p_eq[i])
    delta = work33[0]
    rotation_product(R_target, R_eq, True, delta)
    rotation_log(delta, work3)
    for i in range(3):
        work3[i] *= alpha
    rotation_exp(work3, delta)
    step = work33[1]
    rotation_product(delta, R_eq, False, step)
    R_eq[:, :] = step


@njit(cache=True, inline="always")
def rotation_product(A, B, transpose_b, out):
    """out = A B, or A B^T when transpose_b (3x3)."""
    for i in range(3):
        for j in range(3):
            if transpose_b:
                out[i, j] = A[i, 0] * B[j, 0] + A[i, 1] * B[j, 1] + A[i, 2] * B[j, 2]
            else:
                out[i, j] = A[i, 0] * B[0, j] + A[i, 1] * B[1, j] + A[i, 2] * B[2, j]


@njit(cache=True, nogil=True)
def impedance_torque(J, J_bar, Lambda, v, q, e, stiffness, zeta, wrench, nullspace_stiffness, nullspace_damping,
                     posture, work6, work_nv, tau):
    """tau = J^T (-K e - D J v + w_d) + N^T (K_n (q_n - q) - D_n v) (module docstring), with Lambda
    and J_bar = M^-1 J^T Lambda from kernels/task_space.operational_space_inertia; the caller adds
    C v + g and the joint friction. stiffness (6,) [K_R; K_p]; work6 (2, 6), work_nv (nv,) scratch."""
    nv = v.shape[0]
    force, task = work6[0], work6[1]
    for a in range(6):
        velocity = 0.0
        for k in range(nv):
            velocity += J[a, k] * v[k]
        damping = 2.0 * zeta * math.sqrt(max(Lambda[a, a], 0.0) * stiffness[a])
        force[a] = -stiffness[a] * e[a] - damping * velocity + wrench[a]
    # the posture torque tau_0 and its nullspace share N^T tau_0 = tau_0 - J^T (J_bar^T tau_0)
    tau0 = work_nv
    for k in range(nv):
        tau0[k] = nullspace_stiffness[k] * (posture[k] - q[k]) - nullspace_damping[k] * v[k]
    project_to_nullspace(J, J_bar, tau0, task, tau0)
    for k in range(nv):
        total = tau0[k]
        for a in range(6):
            total += J[a, k] * force[a]
        tau[k] = total
