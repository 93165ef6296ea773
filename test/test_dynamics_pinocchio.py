"""Acceptance: our URDF -> Model and dynamics against Pinocchio, on every example-robot-data URDF.

Pinocchio is linear-first and takes (cos, sin) for continuous joints (see oracles.py); joint i's
frame is body i's frame in both libraries, so external forces and Jacobians compare directly once
their halves are swapped. Every quantity must agree to 1e-9 relative to max(1, |reference|).
"""
import functools
import os
import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin
import pytest

import dyn_control as dc
from oracles import JIT_DISABLED, all_robot_urdfs, pin_q, random_state, swap_halves

pytestmark = pytest.mark.kernels

TOLERANCE = 1e-9
JIT_OFF_ROBOTS = ("panda", "ur5_robot", "talos_reduced", "tiago")
N_STATES = 1 if JIT_DISABLED else 3

ALL_URDFS = dict(all_robot_urdfs())
if JIT_DISABLED:  # pure-Python kernels: a handful of robots, one state each
    ROBOTS = [rel for rel in ALL_URDFS if os.path.basename(rel)[:-5] in JIT_OFF_ROBOTS]
else:
    ROBOTS = list(ALL_URDFS)

# URDFs whose inertia tensors are not positive semi-definite: file -> those links. We load them,
# as Pinocchio does, with a warning naming each link (strict=True refuses them); the test re-checks
# the fault from the XML itself.
NOT_POSITIVE_SEMI_DEFINITE = {
    "romeo_description/urdf/romeo_laas_small.urdf": ("body", "LHipPitch_link", "RHipPitch_link"),
}


def assert_close(ours, reference, what, amplification=1.0):
    ours, reference = np.asarray(ours), np.asarray(reference)
    assert ours.shape == reference.shape, f"{what}: shape {ours.shape} != {reference.shape}"
    scale = max(1.0, float(np.abs(reference).max(initial=0.0)))
    error = float(np.abs(ours - reference).max(initial=0.0))
    assert error <= TOLERANCE * amplification * scale, (
        f"{what}: max error {error:.3e} (reference scale {scale:.3e})")


class Robot:
    """One URDF loaded by both libraries, with a few random states (q, v, a, tau, f_ext)."""

    def __init__(self, rel):
        self.rel = rel
        self.path = ALL_URDFS[rel]
        self.skip_reason = None
        try:
            self.pin_model = pin.buildModelFromUrdf(self.path)
        except Exception as err:  # Pinocchio's own parse errors are plain exceptions
            self.skip_reason = f"Pinocchio cannot load {rel}: {str(err).splitlines()[0]}"
            return
        if self.pin_model.njoints == 1:
            self.skip_reason = f"{rel}: Pinocchio's model has no moving joint, nothing to compare"
            return
        self.model = dc.load_urdf(self.path)
        self.data = self.model.create_data()
        self.pin_data = self.pin_model.createData()
        rng = np.random.default_rng(sum(map(ord, rel)))
        self.states = []
        for _ in range(N_STATES):
            q, v, a = random_state(self.model, rng)
            tau = rng.normal(size=self.model.nv) * 10.0
            f_ext = rng.normal(size=(self.model.nbodies, 6))
            self.states.append((q, v, a, tau, f_ext))

    def pin_forces(self, f_ext):
        """Our body-frame forces [n; f] as Pinocchio's per-joint local forces [f; n]."""
        return [pin.Force.Zero()] + [pin.Force(swap_halves(f)) for f in f_ext]


@functools.lru_cache(maxsize=None)
def _robot(rel):
    return Robot(rel)


def robot(rel):
    r = _robot(rel)
    if r.skip_reason:
        pytest.skip(r.skip_reason)
    return r


def negative_inertia_eigenvalue(path, link_name):
    """The smallest eigenvalue of a link's URDF inertia tensor, read from the XML directly."""
    link = ET.parse(path).getroot().find(f"link[@name='{link_name}']")
    i = {k: float(v) for k, v in link.find("inertial/inertia").attrib.items()}
    tensor = np.array([[i["ixx"], i["ixy"], i["ixz"]],
                       [i["ixy"], i["iyy"], i["iyz"]],
                       [i["ixz"], i["iyz"], i["izz"]]])
    return np.linalg.eigvalsh(tensor)[0]


@pytest.mark.parametrize("rel", ROBOTS)
def test_loader_agrees_with_pinocchio(rel):
    """Same moving joints in the same order as Pinocchio; a warning for each inertia tensor that is
    not positive semi-definite, which strict=True refuses."""
    path = ALL_URDFS[rel]
    try:
        pin_model = pin.buildModelFromUrdf(path)
    except Exception as err:
        pytest.skip(f"Pinocchio cannot load {rel}: {str(err).splitlines()[0]}")
    model = dc.load_urdf(path)
    assert list(model.joint_names) == list(pin_model.names[1:])
    assert model.nv == pin_model.nv
    assert model.total_mass() == pytest.approx(
        sum(pin_model.inertias[i].mass for i in range(1, pin_model.njoints)), rel=1e-12, abs=1e-12)
    links = NOT_POSITIVE_SEMI_DEFINITE.get(rel, ())
    not_psd = [w for w in model.warnings if "inertia tensor is not positive semi-definite" in w]
    assert [w.split("'")[1] for w in not_psd] == list(links)
    for link in links:
        assert negative_inertia_eigenvalue(path, link) < -1e-3
    if model.warnings:
        with pytest.raises(dc.URDFError) as caught:
            dc.load_urdf(path, strict=True)
        assert str(caught.value) == model.warnings[0]


@pytest.mark.parametrize("rel", ROBOTS)
def test_rnea(rel):
    r = robot(rel)
    for q, v, a, _, f_ext in r.states:
        pq = pin_q(r.pin_model, q)
        assert_close(dc.rnea(r.model, r.data, q, v, a), pin.rnea(r.pin_model, r.pin_data, pq, v, a), "rnea")
        assert_close(dc.rnea(r.model, r.data, q, v, a, f_ext),
                     pin.rnea(r.pin_model, r.pin_data, pq, v, a, r.pin_forces(f_ext)), "rnea with f_ext")


@pytest.mark.parametrize("rel", ROBOTS)
def test_aba(rel):
    """Forward dynamics amplifies round-off by up to cond(M): beyond cond(M) = 1e7 (icub's
    fingers, 3e8) the 1e-9 tolerance grows with it. Where M(q) is singular Pinocchio returns NaN
    and we must refuse with a ValueError instead."""
    r = robot(rel)
    for q, v, _, tau, f_ext in r.states:
        pq = pin_q(r.pin_model, q)
        expected = pin.aba(r.pin_model, r.pin_data, pq, v, tau).copy()
        if not np.all(np.isfinite(expected)):
            with pytest.raises(ValueError, match="M\\(q\\) is singular"):
                dc.aba(r.model, r.data, q, v, tau)
            continue
        upper = np.triu(pin.crba(r.pin_model, r.pin_data, pq))
        amplification = max(1.0, np.linalg.cond(upper + np.triu(upper, 1).T) / 1e7)
        expected_f_ext = pin.aba(r.pin_model, r.pin_data, pq, v, tau, r.pin_forces(f_ext))
        assert_close(dc.aba(r.model, r.data, q, v, tau), expected, "aba", amplification)
        assert_close(dc.aba(r.model, r.data, q, v, tau, f_ext), expected_f_ext, "aba with f_ext", amplification)


@pytest.mark.parametrize("rel", ROBOTS)
def test_crba(rel):
    r = robot(rel)
    for q, *_ in r.states:
        upper = np.triu(pin.crba(r.pin_model, r.pin_data, pin_q(r.pin_model, q)))
        assert_close(dc.crba(r.model, r.data, q), upper + np.triu(upper, 1).T, "crba")


@pytest.mark.parametrize("rel", ROBOTS)
def test_nonlinear_effects_and_gravity(rel):
    r = robot(rel)
    for q, v, *_ in r.states:
        pq = pin_q(r.pin_model, q)
        assert_close(dc.nonlinear_effects(r.model, r.data, q, v),
                     pin.nonLinearEffects(r.pin_model, r.pin_data, pq, v), "nonlinear_effects")
        assert_close(dc.gravity(r.model, r.data, q),
                     pin.computeGeneralizedGravity(r.pin_model, r.pin_data, pq), "gravity")


@pytest.mark.parametrize("rel", ROBOTS)
def test_coriolis_matrix(rel):
    r = robot(rel)
    for q, v, *_ in r.states:
        assert_close(dc.coriolis_matrix(r.model, r.data, q, v),
                     pin.computeCoriolisMatrix(r.pin_model, r.pin_data, pin_q(r.pin_model, q), v),
                     "coriolis_matrix")


@pytest.mark.parametrize("rel", ROBOTS)
def test_forward_kinematics_of_every_frame(rel):
    r = robot(rel)
    pin_ids = [r.pin_model.getFrameId(name, pin.BODY) for name in r.model.frame_names]
    assert all(i < r.pin_model.nframes for i in pin_ids), "a frame of ours is not a Pinocchio link frame"
    for q, *_ in r.states:
        pin.framesForwardKinematics(r.pin_model, r.pin_data, pin_q(r.pin_model, q))
        ours = dc.forward_kinematics(r.model, r.data, q)
        for name, f, pin_id in zip(r.model.frame_names, ours, pin_ids):
            assert_close(f, r.pin_data.oMf[pin_id].homogeneous, f"pose of frame {name!r}")


def jacobian_frames(model):
    """(name, Pinocchio frame type): the first moving body, a link merged by a fixed joint, the
    last frame, and the last moving joint by its joint name (unless a link has that name: then
    the name means the link, as in Pinocchio's getFrameId)."""
    frames = [(model.body_names[0], pin.BODY)]
    merged = [n for n, b in zip(model.frame_names, model.frame_body) if b >= 0 and n not in model.body_names]
    if merged:
        frames.append((merged[len(merged) // 2], pin.BODY))
    frames.append((model.frame_names[-1], pin.BODY))
    joints = [n for n in model.joint_names if n not in model.frame_names]
    if joints:
        frames.append((joints[-1], pin.JOINT))
    return frames


@pytest.mark.parametrize("rel", ROBOTS)
def test_frame_jacobians(rel):
    r = robot(rel)
    references = {"world": pin.WORLD, "local": pin.LOCAL, "local_world_aligned": pin.LOCAL_WORLD_ALIGNED}
    for q, *_ in r.states:
        pq = pin_q(r.pin_model, q)
        for name, frame_type in jacobian_frames(r.model):
            pin_id = r.pin_model.getFrameId(name, frame_type)
            assert pin_id < r.pin_model.nframes, f"Pinocchio has no frame {name!r}"
            for reference, pin_reference in references.items():
                expected = pin.computeFrameJacobian(r.pin_model, r.pin_data, pq, pin_id, pin_reference)
                assert_close(dc.jacobian(r.model, r.data, q, name, reference), swap_halves(expected),
                             f"jacobian of {name!r} ({reference})")
