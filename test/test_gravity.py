"""Issue 12: gravity(model, data, q) by the gravity-only pass (kernels/rnea.py gravity: kinematics and
the backward pass of the gravity forces, no velocity terms) against Pinocchio's
computeGeneralizedGravity on example-robot-data robots, under another gravity vector too, and its
non-finite inputs named."""
import numpy as np
import pinocchio as pin
import pytest

import dyn_control as dc
from oracles import JIT_DISABLED, pin_q, pinocchio_model, random_state, robot_urdf

pytestmark = pytest.mark.kernels

ROBOTS = ("panda", "ur5_robot") if JIT_DISABLED else ("panda", "ur5_robot", "talos_reduced", "solo12", "xarm7",
                                                       "tiago")
TOLERANCE = 1e-9


def assert_close(ours, reference, what):
    scale = max(1.0, float(np.abs(reference).max()))
    error = float(np.abs(np.asarray(ours) - reference).max())
    assert error <= TOLERANCE * scale, f"{what}: max error {error:.3g} (scale {scale:.3g})"


@pytest.mark.parametrize("name", ROBOTS)
def test_gravity_against_pinocchio(name):
    path = robot_urdf(name)
    model = dc.load_urdf(path)
    data = model.create_data()
    pm = pinocchio_model(path)
    pd = pm.createData()
    rng = np.random.default_rng(7)
    for _ in range(3):
        q = random_state(model, rng)[0]
        assert_close(dc.gravity(model, data, q), pin.computeGeneralizedGravity(pm, pd, pin_q(pm, q)), name)
    # another gravity vector (the base acceleration of the pass)
    g = np.array([1.0, -2.0, -7.0])
    pm.gravity.linear = g
    heavy = model.with_gravity(g)
    assert_close(dc.gravity(heavy, heavy.create_data(), q), pin.computeGeneralizedGravity(pm, pd, pin_q(pm, q)),
                 f"{name} with gravity {g}")
    # the checked path (a list) gives the same values
    np.testing.assert_array_equal(dc.gravity(model, data, list(q)), dc.gravity(model, data, q))


def test_gravity_kernel_is_the_gravity_only_pass():
    """The entry kernel's result is the gravity pass's, and equals RNEA at v = a = 0."""
    from dyn_control.kernels import rnea as _rnea
    model = dc.load_urdf(robot_urdf("panda"))
    data = model.create_data()
    q = random_state(model, np.random.default_rng(3))[0]
    g = np.empty(model.nv)
    assert _rnea.gravity(model._parents, model._screw_axes, model._home_R, model._home_p, model._phi, q,
                         model._base_accel, data._R, data._p, data._Vdot, data._F, g)
    np.testing.assert_array_equal(dc.gravity(model, data, q), g)
    zero = np.zeros(model.nv)
    np.testing.assert_allclose(g, dc.rnea(model, data, q, zero, zero), rtol=0, atol=1e-12)


def test_gravity_names_non_finite_inputs():
    model = dc.load_urdf(robot_urdf("panda"))
    data = model.create_data()
    q = np.zeros(model.nv)
    q[2] = np.inf
    with pytest.raises(ValueError, match=r"non-finite.*\bq at indices \[2\]"):
        dc.gravity(model, data, q)
    with pytest.raises(ValueError, match=r"q must have shape"):
        dc.gravity(model, data, q[:3])
