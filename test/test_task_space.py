"""Task-space quantities (dyn_control/task_space.py, kernels/task_space.py) against Pinocchio and
central differences: frame Jacobian time variation, frame velocity and classical acceleration, the
operational-space inertia, the dynamically consistent nullspace projector, the pose error and
quaternions, on panda (hand), the bundled arm7 (tool) and talos_reduced (a gripper on a 32-DoF tree).

Pinocchio is linear-first: its 6-vectors and Jacobian rows are swapped into angular-first.
Exact quantities agree to 1e-10 relative to max(1, |reference|); differences to 1e-6.
"""
import functools

import numpy as np
import pinocchio as pin
import pytest

import dyn_control as dc
from dyn_control.kernels import task_space as kernels
from oracles import JIT_DISABLED, pin_q, random_state, robot_urdf, swap_halves

pytestmark = pytest.mark.kernels

TOLERANCE = 1e-10
N_STATES = 1 if JIT_DISABLED else 3
ROBOTS = {"panda": "panda_hand", "arm7": "arm7_tool", "talos_reduced": "gripper_left_base_link"}
REFERENCES = {"world": pin.WORLD, "local": pin.LOCAL, "local_world_aligned": pin.LOCAL_WORLD_ALIGNED}


def assert_close(ours, reference, what, tolerance=TOLERANCE):
    ours, reference = np.asarray(ours), np.asarray(reference)
    assert ours.shape == reference.shape, f"{what}: shape {ours.shape} != {reference.shape}"
    scale = max(1.0, float(np.abs(reference).max(initial=0.0)))
    error = float(np.abs(ours - reference).max(initial=0.0))
    assert error <= tolerance * scale, f"{what}: max error {error:.3e} (reference scale {scale:.3e})"


class Robot:
    """One URDF in both libraries, a frame on it, and random states (q, v, a)."""

    def __init__(self, name):
        path = dc.bundled_urdf(name) if name == "arm7" else robot_urdf(name)
        self.frame = ROBOTS[name]
        self.model = dc.load_urdf(path)
        self.data = self.model.create_data()
        self.pm = pin.buildModelFromUrdf(path)
        self.pd = self.pm.createData()
        self.fid = self.pm.getFrameId(self.frame)
        assert self.fid < self.pm.nframes, f"Pinocchio has no frame {self.frame!r}"
        rng = np.random.default_rng(sum(map(ord, name)))
        self.states = [random_state(self.model, rng) for _ in range(N_STATES)]

    def pin_minverse(self, q):
        Minv = pin.computeMinverse(self.pm, self.pd, pin_q(self.pm, q))
        return np.triu(Minv) + np.triu(Minv, 1).T  # Pinocchio fills the upper triangle

    def pin_jacobian(self, q, reference=pin.LOCAL_WORLD_ALIGNED):
        return swap_halves(pin.computeFrameJacobian(self.pm, self.pd, pin_q(self.pm, q), self.fid, reference))


@functools.lru_cache(maxsize=None)
def robot(name):
    return Robot(name)


@pytest.mark.parametrize("name", ROBOTS)
@pytest.mark.parametrize("reference", REFERENCES)
def test_jacobian_time_variation_velocity_and_acceleration_against_pinocchio(name, reference):
    r = robot(name)
    pin_reference = REFERENCES[reference]
    for q, v, a in r.states:
        qp = pin_q(r.pm, q)
        pin.computeJointJacobiansTimeVariation(r.pm, r.pd, qp, v)
        pin.forwardKinematics(r.pm, r.pd, qp, v, a)
        pin.updateFramePlacements(r.pm, r.pd)
        expected_dJ = swap_halves(pin.getFrameJacobianTimeVariation(r.pm, r.pd, r.fid, pin_reference))
        expected_velocity = swap_halves(pin.getFrameVelocity(r.pm, r.pd, r.fid, pin_reference).vector)
        expected_acceleration = swap_halves(
            pin.getFrameClassicalAcceleration(r.pm, r.pd, r.fid, pin_reference).vector)
        assert np.abs(expected_dJ).max() > 0.1, "a test state that moves the frame"
        assert_close(dc.frame_jacobian_time_variation(r.model, r.data, q, v, r.frame, reference), expected_dJ,
                     f"dJ/dt of {r.frame} ({reference})")
        assert_close(dc.frame_velocity(r.model, r.data, q, v, r.frame, reference), expected_velocity,
                     f"velocity of {r.frame} ({reference})")
        assert_close(dc.frame_classical_acceleration(r.model, r.data, q, v, a, r.frame, reference),
                     expected_acceleration, f"classical acceleration of {r.frame} ({reference})")


@pytest.mark.parametrize("name", ROBOTS)
@pytest.mark.parametrize("reference", REFERENCES)
def test_jacobian_time_variation_is_the_derivative_of_the_jacobian(name, reference):
    """dJ/dt = (J(q + t v) - J(q - t v)) / 2t, and dJ/dt v + J a = d/dt (J v) along q(t) = q + t v
    + t^2 a / 2, v(t) = v + t a (the acceleration the velocity's reference defines)."""
    r = robot(name)
    q, v, a = r.states[0]
    t = 1e-6
    plus = r.pin_jacobian(q + t * v, REFERENCES[reference])
    minus = r.pin_jacobian(q - t * v, REFERENCES[reference])
    dJ = dc.frame_jacobian_time_variation(r.model, r.data, q, v, r.frame, reference).copy()
    assert_close(dJ, (plus - minus) / (2 * t), f"dJ/dt of {r.frame} ({reference})", 1e-6)
    velocity_plus = dc.frame_velocity(r.model, r.data, q + t * v + 0.5 * t * t * a, v + t * a, r.frame,
                                      reference).copy()
    velocity_minus = dc.frame_velocity(r.model, r.data, q - t * v + 0.5 * t * t * a, v - t * a, r.frame,
                                       reference).copy()
    J = dc.jacobian(r.model, r.data, q, r.frame, reference).copy()
    assert_close(dJ @ v + J @ a, (velocity_plus - velocity_minus) / (2 * t), f"d/dt (J v) ({reference})", 1e-6)


def test_kernel_outputs_and_frame_pose():
    """The kernel's J equals dc.jacobian, its drift dJ v, frame_world_pose Pinocchio's oMf; columns of
    joints not supporting the frame are zero."""
    r = robot("talos_reduced")
    m, d = r.model, r.data
    f = m.frame_id(r.frame)
    q, v, _ = r.states[0]
    nb = m.nbodies
    J, dJ = np.full((6, nb), np.nan), np.full((6, nb), np.nan)
    velocity, drift, oV, path = np.zeros(6), np.zeros(6), np.zeros((nb, 6)), np.zeros(nb, dtype=np.int64)
    R, p = np.zeros((nb, 3, 3)), np.zeros((nb, 3))
    oR, op = np.zeros((nb, 3, 3)), np.zeros((nb, 3))
    assert kernels.frame_jacobian_time_variation(m._parents, m._screw_axes, m._home_R, m._home_p, q, v, path, R,
                                                 p, oR, op, oV, m._frame_body[f], m._frame_R[f], m._frame_p[f],
                                                 kernels.LOCAL_WORLD_ALIGNED, J, dJ, velocity, drift)
    assert_close(J, r.pin_jacobian(q), "J")
    assert_close(drift, dJ @ v, "drift")
    supporting = np.flatnonzero(np.abs(J).max(axis=0) > 0)
    assert 0 < len(supporting) < nb
    assert not dJ[:, np.setdiff1d(np.arange(nb), supporting)].any()
    frame_R, frame_p = np.zeros((3, 3)), np.zeros(3)
    kernels.frame_world_pose(oR, op, m._frame_body[f], m._frame_R[f], m._frame_p[f], frame_R, frame_p)
    pin.framesForwardKinematics(r.pm, r.pd, pin_q(r.pm, q))
    assert_close(frame_R, r.pd.oMf[r.fid].rotation, "frame rotation")
    assert_close(frame_p, r.pd.oMf[r.fid].translation, "frame origin")
    # a frame on the root: all zero
    root = m.frame_id(m.root_name)
    assert kernels.frame_jacobian_time_variation(m._parents, m._screw_axes, m._home_R, m._home_p, q, v, path, R,
                                                 p, oR, op, oV, m._frame_body[root], m._frame_R[root],
                                                 m._frame_p[root], kernels.LOCAL, J, dJ, velocity, drift)
    assert not (J.any() or dJ.any() or velocity.any() or drift.any())
    assert not kernels.frame_jacobian_time_variation(m._parents, m._screw_axes, m._home_R, m._home_p, q,
                                                     np.full(nb, np.nan), path, R, p, oR, op, oV,
                                                     m._frame_body[f], m._frame_R[f], m._frame_p[f],
                                                     kernels.WORLD, J, dJ, velocity, drift)


@pytest.mark.parametrize("name", ROBOTS)
@pytest.mark.parametrize("translation_only", [False, True])
def test_operational_space_inertia_and_nullspace_projector(name, translation_only):
    """Lambda = (J M^-1 J^T + d^2 I)^-1 from Pinocchio's M^-1 and J; N = I - J^T J_bar^T with
    J_bar = M^-1 J^T Lambda; exact (d = 0): a torque through N gives the frame no acceleration
    (J M^-1 N = 0) and N is idempotent."""
    r = robot(name)
    rows = slice(3, 6) if translation_only else slice(0, 6)
    for q, _, tau_0 in r.states:
        Minv = r.pin_minverse(q)
        J = r.pin_jacobian(q)[rows]
        m = J.shape[0]
        for damping in (0.0, 0.05):
            expected = np.linalg.inv(J @ Minv @ J.T + damping ** 2 * np.eye(m))
            Lambda = dc.operational_space_inertia(r.model, r.data, q, r.frame, damping,
                                                  translation_only=translation_only)
            assert_close(Lambda, expected, f"Lambda (damping {damping})")
            N = dc.nullspace_projector(r.model, r.data, q, r.frame, damping, translation_only=translation_only)
            expected_N = np.eye(r.model.nv) - J.T @ (Minv @ J.T @ expected).T
            assert_close(N, expected_N, f"N (damping {damping})")
            # the kernel that projects a torque without forming N
            out = np.zeros(r.model.nv)
            kernels.project_to_nullspace(np.ascontiguousarray(J), Minv @ J.T @ expected, tau_0, np.zeros(m), out)
            assert_close(out, expected_N @ tau_0, "project_to_nullspace")
            if damping == 0.0:
                assert_close(J @ Minv @ N, np.zeros(J.shape), "J M^-1 N (exact)", 1e-9)
                assert_close(N @ N, N, "N N = N", 1e-9)


def test_damping_bounds_lambda_at_a_singularity():
    """panda_link1's origin lies on joint 1's axis: its translational Jacobian is zero. Undamped, Lambda
    does not exist (a ValueError saying to damp); damped, Lambda = I / d^2 and N = I."""
    r = robot("panda")
    q = r.states[0][0]
    with pytest.raises(ValueError, match="singular.*damping > 0"):
        dc.operational_space_inertia(r.model, r.data, q, "panda_link1", translation_only=True)
    Lambda = dc.operational_space_inertia(r.model, r.data, q, "panda_link1", 0.1, translation_only=True)
    assert_close(Lambda, np.eye(3) / 0.01, "damped Lambda")
    N = dc.nullspace_projector(r.model, r.data, q, "panda_link1", 0.1, translation_only=True)
    assert_close(N, np.eye(r.model.nv), "N")


def random_rotation(rng, angle=None):
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    return pin.exp3(axis * (rng.uniform(0, np.pi) if angle is None else angle)), axis


def pose(R, p):
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R, p
    return T


def test_pose_error_against_pinocchio_log3():
    rng = np.random.default_rng(3)
    for angle in [None] * 20 + [0.0, 1e-12, 1e-7, 1e-3, 2.0, 2.7, 3.0, np.pi - 1e-3]:
        R_d, _ = random_rotation(rng)
        R = random_rotation(rng, angle)[0] @ R_d
        p, p_d = rng.normal(size=3), rng.normal(size=3)
        e = dc.pose_error(pose(R, p), pose(R_d, p_d))
        assert_close(e[:3], pin.log3(R @ R_d.T), f"rotation error at angle {angle}")
        assert_close(e[3:], p - p_d, "position error")
        assert_close(pin.exp3(e[:3]) @ R_d, R, "R = exp([e_rot]) R_d")


def test_rotation_log_near_pi():
    """log(exp(w)) = w up to pi (the near-pi branch recovers the axis from the symmetric part)."""
    rng = np.random.default_rng(4)
    w_out = np.zeros(3)
    for angle in (2.5, 2.69, 2.7, 3.1, np.pi - 1e-6, np.pi - 1e-9):
        axis = rng.normal(size=3)
        w = axis / np.linalg.norm(axis) * angle
        kernels.rotation_log(pin.exp3(w), w_out)
        assert_close(w_out, w, f"log(exp(w)) at angle {angle}", 1e-8 if angle > 3.14 else TOLERANCE)


def test_pose_error_derivative_is_the_frame_velocity():
    """At the target, d/dt e(q(t)) = the frame's local_world_aligned velocity J v, both halves: the
    pose error and the task velocity share their coordinates (so -K e - D J v is a consistent law)."""
    r = robot("panda")
    q, v, _ = r.states[0]
    target = dc.frame_pose(r.model, r.data, q, r.frame).copy()
    t = 1e-6
    e_plus = dc.pose_error(dc.frame_pose(r.model, r.data, q + t * v, r.frame), target)
    e_minus = dc.pose_error(dc.frame_pose(r.model, r.data, q - t * v, r.frame), target)
    assert_close((e_plus - e_minus) / (2 * t), dc.frame_velocity(r.model, r.data, q, v, r.frame), "de/dt", 1e-6)


def test_restoring_velocity_drives_the_pose_to_the_target():
    """Integrating w = -k e_rot, pdot = -k e_pos (exactly, root frame) takes the pose to the target:
    the error shrinks by exp(-k t) (the axis stays), whatever the sign convention would break."""
    rng = np.random.default_rng(5)
    R_d, _ = random_rotation(rng)
    R = random_rotation(rng, 2.5)[0] @ R_d
    p, p_d = rng.normal(size=3), rng.normal(size=3)
    k, dt = 2.0, 0.01
    e0 = dc.pose_error(pose(R, p), pose(R_d, p_d))
    for _ in range(100):
        e = dc.pose_error(pose(R, p), pose(R_d, p_d))
        R = pin.exp3(-k * e[:3] * dt) @ R
        p = p - k * e[3:] * dt
    assert_close(dc.pose_error(pose(R, p), pose(R_d, p_d)), e0 * (1 - k * dt) ** 100, "error after 1 s")


def test_quaternions_against_pinocchio():
    rng = np.random.default_rng(6)
    for angle in [None] * 10 + [0.0, np.pi, np.pi - 1e-9]:
        R, _ = random_rotation(rng, angle)
        expected = pin.Quaternion(R).coeffs()  # (x, y, z, w)
        expected = expected if expected[3] >= 0 else -expected
        quaternion = dc.rotation_to_quaternion(R)
        if angle == np.pi:  # w = 0: q and -q are the same rotation
            expected = expected * np.sign(expected @ quaternion)
        assert_close(quaternion, expected, f"quaternion at angle {angle}")
        assert_close(dc.quaternion_to_rotation(quaternion), R, "rotation")
        assert_close(dc.quaternion_to_rotation(3.0 * quaternion), R, "rotation of a scaled quaternion")


def test_bad_inputs_name_the_argument():
    r = robot("arm7")
    q, v, a = r.states[0]
    with pytest.raises(ValueError, match="reference"):
        dc.frame_jacobian_time_variation(r.model, r.data, q, v, r.frame, "body")
    with pytest.raises(ValueError, match="unknown frame 'nowhere'"):
        dc.frame_velocity(r.model, r.data, q, v, "nowhere")
    with pytest.raises(ValueError, match=r"v must have shape \(7,\)"):
        dc.frame_jacobian_time_variation(r.model, r.data, q, v[:3], r.frame)
    with pytest.raises(ValueError, match=r"non-finite input.*v at indices \[2\]"):
        dc.frame_velocity(r.model, r.data, q, np.where(np.arange(7) == 2, np.nan, v), r.frame)
    with pytest.raises(ValueError, match=r"a must have shape"):
        dc.frame_classical_acceleration(r.model, r.data, q, v, a[:2], r.frame)
    for damping in (-1.0, np.nan, "x"):
        with pytest.raises(ValueError, match="damping must be a real number >= 0"):
            dc.operational_space_inertia(r.model, r.data, q, r.frame, damping)
    with pytest.raises(ValueError, match="quaternion must not be zero"):
        dc.quaternion_to_rotation([0, 0, 0, 0])
    with pytest.raises(ValueError, match="R must be a rotation matrix"):
        dc.rotation_to_quaternion(2 * np.eye(3))
    with pytest.raises(ValueError, match="target's rotation block must be a rotation"):
        dc.pose_error(np.eye(4), np.diag([1.0, 1.0, -1.0, 1.0]))
    with pytest.raises(ValueError, match=r"pose must have shape \(4, 4\)"):
        dc.pose_error(np.eye(3), np.eye(4))


def test_mimic_coupled_model():
    """panda with its second finger mimicking the first (nv = 8): dJ/dt by central differences of the
    coupled Jacobian J G, and Lambda from the coupled M and J (both checked against Pinocchio in
    test_dynamics_pinocchio / test_derivatives)."""
    model = dc.load_urdf(robot_urdf("panda"), mimic=True)
    data = model.create_data()
    assert model.nv == 8
    q, v, a = random_state(model, np.random.default_rng(7))
    t = 1e-6
    for frame in ("panda_rightfinger", "panda_hand"):
        for reference in REFERENCES:
            plus = dc.jacobian(model, data, q + t * v, frame, reference).copy()
            minus = dc.jacobian(model, data, q - t * v, frame, reference).copy()
            J = dc.jacobian(model, data, q, frame, reference).copy()
            dJ = dc.frame_jacobian_time_variation(model, data, q, v, frame, reference)
            assert_close(dJ, (plus - minus) / (2 * t), f"dJ/dt of {frame} ({reference})", 1e-6)
            assert_close(dc.frame_velocity(model, data, q, v, frame, reference), J @ v, "J v")
        M = dc.crba(model, data, q).copy()
        J = dc.jacobian(model, data, q, frame, "local_world_aligned")[3:].copy()
        assert_close(dc.operational_space_inertia(model, data, q, frame, translation_only=True),
                     np.linalg.inv(J @ np.linalg.solve(M, J.T)), f"Lambda of {frame}")
