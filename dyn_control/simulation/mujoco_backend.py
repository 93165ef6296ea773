"""The robot simulated by MuJoCo: an independent physics engine with the same interface as
BuiltinSimulator (q, v, effort, time, step, applied_joint_torque).

MuJoCo reads the URDF itself, after two edits: every <visual> and <collision> is removed (no
meshes to resolve, no contacts wanted), and a <mujoco><compiler .../></mujoco> element (in place
of any the URDF has) keeps the URDF's inertias as written (balanceinertia off) and the fixed links
as separate welded bodies (fusestatic off), so every frame of the model is a MuJoCo body. The
simulated robot is then made the Model given, as BuiltinSimulator's is: each moving body gets the
model's inertial parameters (mass, centre of mass, principal moments and axes of model.phi, fixed
links merged in: a payload from `Model.with_payload` or identified parameters come in this way) and
the welded bodies none; each joint gets the model's armature (dof_armature), viscous friction
(dof_damping, or the `damping` argument) and dry friction (dof_frictionloss: MuJoCo's friction-loss
constraint, made to stick by NOSLIP_ITERATIONS of its noslip solver). Contacts and joint limits are
disabled: only gravity, the joint torques, the joint terms and the external wrench act, as in
BuiltinSimulator.
Integrator: implicitfast (semi-implicit Euler with the damping implicit), timestep dt: stable for
any damping but first order, so at the large accelerations of a free fall it drifts from the exact
motion faster than BuiltinSimulator's RK4; under computed-torque control at 1 ms both track to about
1e-4 rad.
Joint torques go through qfrc_applied; the external wrench through xfrc_applied, which MuJoCo
takes as [force; torque] at the body's centre of mass in world axes.
"""
import xml.etree.ElementTree as ET

import mujoco
import numpy as np

from ..control.checks import as_gain, as_scalar, require_finite
from ..dynamics import as_vector
from .builtin import checked_wrench, initial_state

DISABLED = mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_LIMIT
NOSLIP_ITERATIONS = 20  # arm7 held by dry friction against gravity: creeps 7e-6 rad in 1 s (0.1 rad without)


def mujoco_model_from_urdf(urdf):
    """MjModel of a URDF (path or XML text) without its geometry, inertias as written."""
    try:
        root = ET.fromstring(urdf) if urdf.lstrip().startswith("<") else ET.parse(urdf).getroot()
    except (OSError, ET.ParseError) as error:
        raise ValueError(f"urdf_path: cannot read the URDF: {error}") from None
    for link in root.iter("link"):
        for tag in ("visual", "collision"):
            for element in link.findall(tag):
                link.remove(element)
    for element in root.findall("mujoco"):
        root.remove(element)
    ET.SubElement(ET.SubElement(root, "mujoco"), "compiler", discardvisual="true", fusestatic="false",
                  balanceinertia="false")
    try:
        return mujoco.MjModel.from_xml_string(ET.tostring(root, encoding="unicode"))
    except ValueError as error:
        raise ValueError(f"urdf_path: MuJoCo cannot compile the URDF: {error}") from None


def set_body_inertias(mj_model, model):
    """The MuJoCo bodies' inertias made the model's: each moving body (the link of a model joint)
    gets model.phi of its body (mass, centre of mass, principal moments and axes), every other body
    (welded by a fixed joint, merged into its moving body by load_urdf) mass and inertia zero."""
    moving = {mj_model.body(name).id: i for i, name in enumerate(model.body_names)}
    for b in range(1, mj_model.nbody):
        i = moving.get(b)
        mass, com, moments, quat = (0.0, np.zeros(3), np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0]))
        if i is not None and model.phi[i, 0] > 0.0:
            mass, com, moments, quat = principal_inertia(model.phi[i])
        mj_model.body_mass[b] = mass
        mj_model.body_ipos[b] = com
        mj_model.body_inertia[b] = moments
        mj_model.body_iquat[b] = quat


def principal_inertia(phi):
    """(mass, centre of mass, principal moments, quaternion [w, x, y, z] of the principal axes) of
    phi = [m, h, Ixx, Iyy, Izz, Ixy, Ixz, Iyz] (inertia about the body origin, mass > 0)."""
    m, c = phi[0], phi[1:4] / phi[0]
    I_o = np.array([[phi[4], phi[7], phi[8]], [phi[7], phi[5], phi[9]], [phi[8], phi[9], phi[6]]])
    I_c = I_o - m * (c @ c * np.eye(3) - np.outer(c, c))
    moments, axes = np.linalg.eigh(I_c)
    if np.linalg.det(axes) < 0.0:
        axes[:, 0] = -axes[:, 0]
    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, np.ascontiguousarray(axes).reshape(-1))
    return m, c, np.maximum(moments, 0.0), quat


class MujocoSimulator:
    """State q, v (arrays in the model's joint order), effort (the joint torque commanded for the last
    step: the drive's, without friction and the external wrench), time [s]; mj_model and mj_data are
    MuJoCo's own. The robot is `model` (module docstring); `damping`, when given, replaces
    model.viscous_friction (a number or one per joint)."""

    def __init__(self, model, urdf_path, dt, q0=None, v0=None, damping=None):
        if model.coupling is not None:
            raise ValueError("model: mimic-coupled joints are not supported by MujocoSimulator")
        self.model = model
        self.nv = model.nv
        self.dt = as_scalar("dt", dt)
        self.mj_model = mj_model = mujoco_model_from_urdf(urdf_path)
        mj_model.opt.timestep = self.dt
        mj_model.opt.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
        mj_model.opt.gravity[:] = model.gravity
        mj_model.opt.disableflags |= DISABLED
        try:
            joints = [mj_model.joint(name) for name in model.joint_names]
            self._frame_bodies = {name: mj_model.body(name).id for name in model.frame_names}
        except KeyError as error:
            raise ValueError(f"urdf_path: the URDF does not match the model ({error})") from None
        self._qpos = np.array([j.qposadr[0] for j in joints])   # our joint order -> MuJoCo's
        self._dof = np.array([j.dofadr[0] for j in joints])
        damping = as_gain("damping", model.viscous_friction if damping is None else damping, self.nv)
        mj_model.dof_damping[:] = 0.0
        mj_model.dof_damping[self._dof] = damping
        mj_model.dof_armature[:] = 0.0
        mj_model.dof_armature[self._dof] = model.armature
        mj_model.dof_frictionloss[:] = 0.0
        mj_model.dof_frictionloss[self._dof] = model.coulomb_friction
        # dry friction holds a joint still (MuJoCo's noslip post-processing of the friction rows,
        # where its soft friction-loss constraint alone lets a held arm creep ~0.1 rad/s)
        mj_model.opt.noslip_iterations = NOSLIP_ITERATIONS if np.any(model.coulomb_friction > 0.0) else 0
        set_body_inertias(mj_model, model)
        self.mj_data = mujoco.MjData(mj_model)
        mujoco.mj_setConst(mj_model, self.mj_data)  # constants that depend on the masses
        self._qfrc = np.zeros(mj_model.nv)
        self.effort = np.zeros(self.nv)
        self.q = np.zeros(self.nv)
        self.v = np.zeros(self.nv)
        self.reset(q0, v0)

    def reset(self, q0=None, v0=None):
        """Back to time 0 at state (q0, v0) (default: the neutral configuration, at rest)."""
        self.q[:] = initial_state("q0", q0, self.model.neutral_configuration())
        self.v[:] = initial_state("v0", v0, np.zeros(self.nv))
        mujoco.mj_resetData(self.mj_model, self.mj_data)
        self.mj_data.qpos[self._qpos] = self.q
        self.mj_data.qvel[self._dof] = self.v
        self.effort[:] = 0.0
        self._wrench_body = -1        # MuJoCo body holding the last step's xfrc_applied

    @property
    def time(self):
        return self.mj_data.time

    def frame_body(self, frame):
        """MuJoCo body id of a model frame (link or joint name)."""
        return self._frame_bodies[self.model.frame_names[self.model.frame_id(frame)]]

    def applied_joint_torque(self, wrench, frame):
        """J(q)^T w for the wrench w = [n; f] (6,) at the origin of `frame`, root-frame axes,
        computed by MuJoCo (mj_applyFT at the frame origin)."""
        body, wrench = self._checked_wrench(wrench, frame)
        mujoco.mj_kinematics(self.mj_model, self.mj_data)
        mujoco.mj_comPos(self.mj_model, self.mj_data)
        self._qfrc[:] = 0.0
        mujoco.mj_applyFT(self.mj_model, self.mj_data, wrench[3:], wrench[:3], self.mj_data.xpos[body],
                          body, self._qfrc)
        return self._qfrc[self._dof].copy()

    def step(self, tau, wrench=None, frame=None):
        """Advance by dt with joint torques tau (nv,) and optionally an external wrench (6,)
        [n; f] at the origin of `frame`, in root-frame axes."""
        tau = as_vector("tau", tau, self.nv)
        require_finite("tau", tau)
        m, d = self.mj_model, self.mj_data
        d.qfrc_applied[self._dof] = tau
        if self._wrench_body >= 0:
            d.xfrc_applied[self._wrench_body] = 0.0
            self._wrench_body = -1
        if wrench is not None:
            body, wrench = self._checked_wrench(wrench, frame)
            mujoco.mj_kinematics(m, d)   # positions of the frame origin and the centre of mass now
            # the same wrench at the centre of mass c: force f, torque n + (o - c) x f
            arm = d.xpos[body] - d.xipos[body]
            d.xfrc_applied[body, :3] = wrench[3:]
            d.xfrc_applied[body, 3:] = wrench[:3] + np.cross(arm, wrench[3:])
            self._wrench_body = body
        mujoco.mj_step(m, d)
        self.q[:] = d.qpos[self._qpos]
        self.v[:] = d.qvel[self._dof]
        self.effort[:] = tau

    def _checked_wrench(self, wrench, frame):
        wrench = checked_wrench(self.model, wrench, frame)
        return self.frame_body(frame), wrench
