"""A simulated robot for the identification tests: the bundled arm7 with other inertial parameters,
joint friction, rotor inertia and a 1.5 kg payload (the truth, which identification never reads),
recorded with the builtin simulator while a PD + feedforward controller on the nominal model tracks
an excitation designed for the nominal model. Each recording is made once per test process."""
import functools

import numpy as np

import dyn_control as dc
from dyn_control.identification.base_parameters import random_states, regressor_rows
from dyn_control.identification.excitation import design_excitation
from dyn_control.identification.synthetic import track
from dyn_control.inertia.parameters import transform_phi
from dyn_control.simulation.builtin import BuiltinSimulator

DURATION = 10.0                   # [s] recorded, one period of the excitation
NOISE = (1e-5, 1e-3, 0.05)        # position [rad], velocity [rad/s], effort [N m] standard deviations


@functools.lru_cache(maxsize=None)
def nominal():
    return dc.load_urdf(dc.bundled_urdf("arm7"))


@functools.lru_cache(maxsize=None)
def truth():
    """arm7 with 20 % more mass per link, centres of mass moved by up to 2 cm, joint terms and a payload."""
    model = nominal()
    rng = np.random.default_rng(1)
    phi = [transform_phi(1.2 * p, np.eye(3), rng.uniform(-0.02, 0.02, 3)) for p in model.phi]
    nb = model.nbodies
    robot = model.with_inertial_parameters(phi).with_joint_dynamics(
        armature=np.linspace(0.3, 0.05, nb), viscous=np.linspace(1.0, 0.2, nb), coulomb=np.linspace(2.0, 0.5, nb))
    return robot.with_payload("arm7_tool", 1.5, [0.0, 0.01, 0.05], np.diag([2e-3, 2e-3, 1e-3]))


@functools.lru_cache(maxsize=None)
def excitation():
    """A short design (one start, 20 iterations): enough to excite every base parameter."""
    return design_excitation(nominal(), DURATION, 5, restarts=1, max_iterations=20)


@functools.lru_cache(maxsize=None)
def recording(noisy, engine="builtin"):
    """10 s of the truth tracking the excitation, simulated by the builtin simulator or by MuJoCo."""
    simulator = BuiltinSimulator
    if engine == "mujoco":
        from dyn_control.simulation.mujoco_backend import MujocoSimulator

        def simulator(robot, dt, q0):
            return MujocoSimulator(robot, dc.bundled_urdf("arm7"), dt, q0)
    return track(truth(), nominal(), excitation(), DURATION, noise=NOISE if noisy else None, seed=2,
                 simulator=simulator)


@functools.lru_cache(maxsize=None)
def truth_base_parameters(base):
    """The truth's values of the base parameters `base` (its independent columns), by least squares of
    the truth's joint torques (rnea of the truth model, joint terms included) at random states on
    those columns: independent of the combination coefficients under test. Also returns each
    combination's significance floor: the value whose torque is 1 % of the torques' RMS."""
    q, v, a = random_states(nominal(), 400, np.random.default_rng(7))
    tau = dc.rnea_batch(truth(), q, v, a).reshape(-1)
    Wb = regressor_rows(nominal(), q, v, a, True)[:, base.independent]
    beta, *_ = np.linalg.lstsq(Wb, tau, rcond=None)
    residual = np.abs(Wb @ beta - tau).max()
    assert residual < 1e-9 * np.abs(tau).max(), f"the truth is not in the base regressor's span ({residual})"
    floor = 0.01 * np.sqrt(np.mean(tau ** 2)) / np.sqrt(np.mean(Wb ** 2, axis=0))
    return beta, floor


def pseudo_inertia_eigenvalues(phi):
    """Eigenvalues of J = [[Sigma, h], [h^T, m]], Sigma = tr(I)/2 1 - I, written here from the definition."""
    m, h = phi[0], phi[1:4]
    I = np.array([[phi[4], phi[7], phi[8]], [phi[7], phi[5], phi[9]], [phi[8], phi[9], phi[6]]])
    J = np.block([[0.5 * np.trace(I) * np.eye(3) - I, h[:, None]], [h[None, :], np.array([[m]])]])
    return np.linalg.eigvalsh(J)
