"""The pieces of the consistent fit and of the parameter files: pseudo-inertia against its definition
(a cloud of point masses), the entropic divergence, the convex program on exact data, the YAML that
dc.load_parameters reads (and its named errors), and the identified URDF read by Pinocchio."""
import numpy as np
import pytest

import dyn_control as dc
from dyn_control.identification.base_parameters import regressor_rows, random_states, weighted_normal_form
from dyn_control.identification.consistent import consistent_parameters, entropic_divergence
from dyn_control.inertia.parameters import phi_of_pseudo_inertia, pseudo_inertia
from dyn_control.identification.parameters_file import write_parameters, write_urdf


def _point_cloud(rng, count=7):
    return rng.uniform(0.1, 1.0, count), rng.uniform(-0.3, 0.3, (count, 3))


def test_pseudo_inertia_is_the_second_moment_of_the_mass():
    """For point masses m_k at x_k: phi by its definition (m, sum m x, I about the origin) and
    J = sum m_k [x_k; 1] [x_k; 1]^T; and back."""
    masses, points = _point_cloud(np.random.default_rng(0))
    m = masses.sum()
    h = masses @ points
    I = sum(mk * (x @ x * np.eye(3) - np.outer(x, x)) for mk, x in zip(masses, points))
    phi = np.array([m, *h, I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]])
    J = sum(mk * np.outer(np.append(x, 1.0), np.append(x, 1.0)) for mk, x in zip(masses, points))
    np.testing.assert_allclose(pseudo_inertia(phi), J, atol=1e-14)
    np.testing.assert_allclose(phi_of_pseudo_inertia(J), phi, atol=1e-14)


def test_entropic_divergence_is_zero_at_the_prior_and_positive_elsewhere():
    rng = np.random.default_rng(1)
    J0 = pseudo_inertia(dc.load_urdf(dc.bundled_urdf("arm7")).phi[3])
    assert entropic_divergence(J0, J0) == pytest.approx(0.0, abs=1e-12)
    for _ in range(5):
        A = rng.standard_normal((4, 4))
        assert entropic_divergence(J0 + 0.01 * A @ A.T, J0) > 0.0
    assert entropic_divergence(-J0, J0) == np.inf


@pytest.mark.parametrize("massless_prior", [False, True], ids=["urdf_prior", "massless_link2_prior"])
def test_consistent_fit_recovers_consistent_truth_from_exact_data(massless_prior):
    """planar2 with heavier links and friction, torques from rnea at random states: the program's
    parameters reproduce those torques (the unidentifiable directions are free) and the friction,
    also from a prior whose link 2 is massless (not positive definite)."""
    model = dc.load_urdf(dc.bundled_urdf("planar2"))
    truth = model.with_inertial_parameters(model.phi * 1.3).with_joint_dynamics(viscous=[0.4, 0.2], coulomb=[1.0, 0.5])
    q, v, a = random_states(model, 60, np.random.default_rng(2))
    tau = dc.rnea_batch(truth, q, v, a).reshape(-1)
    W = regressor_rows(model, q, v, a, True)
    # weights as identify's for exact data: residuals in units of 1e-4 of the torques' RMS
    R, y, _ = weighted_normal_form(W, tau, np.full(tau.size, 1e4 / np.sqrt(np.mean(tau ** 2))))
    prior = model.phi.copy()
    if massless_prior:
        prior[1] = 0.0
    phi, joint = consistent_parameters(R, y, W.shape[0], prior, model.joint_parameters())
    fitted = model.with_inertial_parameters(phi).with_joint_dynamics(*joint.T)
    predicted = dc.rnea_batch(fitted, q, v, a).reshape(-1)
    assert np.sqrt(np.mean((predicted - tau) ** 2)) <= 1e-3 * np.sqrt(np.mean(tau ** 2))
    np.testing.assert_allclose(joint[:, 1:], truth.joint_parameters()[:, 1:], rtol=1e-3)


def test_parameters_file_round_trip_and_errors(tmp_path):
    model = dc.load_urdf(dc.bundled_urdf("arm7"))
    changed = model.with_inertial_parameters(model.phi * 1.1).with_joint_dynamics(
        armature=0.1, viscous=np.arange(7) * 0.1, coulomb=1.5)
    path = tmp_path / "p.yaml"
    write_parameters(path, changed, "a test")
    loaded = dc.load_parameters(model, path)
    np.testing.assert_array_equal(loaded.parameters(), changed.parameters())

    def bad(text, match):
        path.write_text(text)
        with pytest.raises(ValueError, match=match):
            dc.load_parameters(model, path)

    bad("robot: ur5\ninertial: {}\n", "parameters of robot 'ur5', the model is 'arm7'")
    bad("inertial: {arm7_link9: {}}\n", "unknown links arm7_link9")
    bad("joints: {arm7_joint1: {armature: 1, viscous: 1}}\n", "joint 'arm7_joint1' lacks coulomb")
    bad("joints: {arm7_joint1: {armature: 1, viscous: x, coulomb: 1}}\n", "'arm7_joint1': parameters must be numbers")
    bad("joints: {arm7_joint1: {armature: 1, viscous: -1, coulomb: 1}}\n", "non-negative")
    phi = dict(zip(dc.PARAMETER_NAMES, [-1.0] + [0.0] * 9))
    bad(f"inertial: {{arm7_link2: {phi}}}\n", "arm7_link2.*mass must be non-negative")
    bad("[1, 2]\n", "not a parameters file")
    # a file with some links only keeps the others
    path.write_text("inertial: {arm7_link3: " + str(dict(zip(dc.PARAMETER_NAMES, changed.phi[2].tolist()))) + "}\n")
    partial = dc.load_parameters(model, path)
    np.testing.assert_array_equal(partial.phi[2], changed.phi[2])
    np.testing.assert_array_equal(np.delete(partial.phi, 2, 0), np.delete(model.phi, 2, 0))


def test_identified_urdf_read_by_pinocchio(tmp_path):
    """write_urdf puts each body's parameters (merged fixed links included: arm7_link7 carries the
    flange and the tool) on its link: Pinocchio's inertias of the written file equal them."""
    pin = pytest.importorskip("pinocchio", reason="Pinocchio is the oracle (pip install pin)")
    model = dc.load_urdf(dc.bundled_urdf("arm7"))
    rng = np.random.default_rng(3)
    from dyn_control.inertia.parameters import transform_phi
    changed = model.with_inertial_parameters([transform_phi(1.3 * p, np.eye(3), rng.uniform(-0.01, 0.01, 3))
                                              for p in model.phi])
    out = str(tmp_path / "identified.urdf")
    write_urdf(changed, dc.bundled_urdf("arm7"), out)
    pm = pin.buildModelFromUrdf(out)
    for i, body in enumerate(changed.body_names):
        inertia = pm.inertias[pm.getJointId(changed.joint_names[i])]
        m, c, I_c = inertia.mass, inertia.lever, inertia.inertia
        I_o = I_c + m * (c @ c * np.eye(3) - np.outer(c, c))
        phi = [m, *(m * c), I_o[0, 0], I_o[1, 1], I_o[2, 2], I_o[0, 1], I_o[0, 2], I_o[1, 2]]
        np.testing.assert_allclose(phi, changed.phi[i], rtol=1e-7, atol=1e-9, err_msg=body)


def test_mesh_prior_adds_the_merged_links_meshes(tmp_path):
    """--prior mesh: link1's box plus the box of the fixed link `flange` merged into it (0.5 m up
    its z axis), as solid boxes by the closed form; link2, without a mesh, keeps its URDF inertial."""
    trimesh = pytest.importorskip("trimesh", reason="meshes are read through trimesh")
    from dyn_control.identification.identify import mesh_prior
    extents = np.array([0.25, 0.5, 0.125])     # exact in the STL's float32
    trimesh.creation.box(extents=extents).export(str(tmp_path / "box.stl"))
    mesh = '<collision><geometry><mesh filename="box.stl"/></geometry></collision>'
    inertial = '<inertial><mass value="2"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial>'
    joint = ('<joint name="{0}" type="{1}"><parent link="{2}"/><child link="{3}"/><origin xyz="{4}"/>'
             '<axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>')
    (tmp_path / "boxes.urdf").write_text(
        f'<robot name="boxes"><link name="base"/><link name="link1">{inertial}{mesh}</link>'
        f'<link name="flange">{mesh}</link><link name="link2">{inertial}</link>'
        + joint.format("j1", "revolute", "base", "link1", "0 0 0")
        + joint.format("flange_joint", "fixed", "link1", "flange", "0 0 0.5")
        + joint.format("j2", "revolute", "link1", "link2", "1 0 0") + "</robot>")
    model = dc.load_urdf(str(tmp_path / "boxes.urdf"))
    density = 800.0
    m = density * np.prod(extents)
    a, b, c = extents
    I_box = m / 12.0 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])
    offset = np.array([0.0, 0.0, 0.5])
    I_shifted = I_box + m * (offset @ offset * np.eye(3) - np.outer(offset, offset))
    I = I_box + I_shifted
    expected = [2 * m, *(m * offset), I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]]
    prior = mesh_prior(model, density)
    np.testing.assert_allclose(prior.phi[0], expected, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(prior.phi[1], model.phi[1])
