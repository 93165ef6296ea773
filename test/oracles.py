"""Independent references: Pinocchio on example-robot-data URDFs, and central differences.

Pinocchio is linear-first ([v; w], [f; n]) where we are angular-first, stores inertial parameters
as [m, mc, Ixx, Ixy, Iyy, Ixz, Iyz, Izz] where we use [m, h, Ixx, Iyy, Izz, Ixy, Ixz, Iyz], and
gives continuous joints two configuration entries (cos, sin) where we use the angle.
"""
import glob
import os

import numpy as np

JIT_DISABLED = os.environ.get("NUMBA_DISABLE_JIT", "0") == "1"


def robots_dir():
    """The example-robot-data wheel installs its robots under site-packages/cmeel.prefix."""
    import site
    for sp in site.getsitepackages():
        d = os.path.join(sp, "cmeel.prefix", "share", "example-robot-data", "robots")
        if os.path.isdir(d):
            return d
    raise RuntimeError("example-robot-data robots folder not found")


def all_robot_urdfs():
    """Every URDF shipped by example-robot-data, as (short name, path), sorted."""
    root = robots_dir()
    paths = sorted(glob.glob(os.path.join(root, "**", "*.urdf"), recursive=True))
    return [(os.path.relpath(p, root), p) for p in paths]


def robot_urdf(name):
    """Path of an example-robot-data URDF by file stem, e.g. "panda", "talos_reduced", "ur5_robot"."""
    for rel, path in all_robot_urdfs():
        if os.path.basename(rel) == name + ".urdf":
            return path
    raise KeyError(name)


def pinocchio_model(path):
    import pinocchio as pin
    return pin.buildModelFromUrdf(path)


def pin_q(pin_model, q):
    """Our joint angles as a Pinocchio configuration ((cos, sin) for continuous joints)."""
    out = []
    for k, joint in enumerate(pin_model.joints[1:]):
        if joint.nq == 2:
            out += [np.cos(q[k]), np.sin(q[k])]
        else:
            out.append(q[k])
    return np.array(out)


def force_across_link_4(urdf, q, newtons):
    """A force of `newtons` at the end of arm7's link 4 (the origin of link 5), across link 4 and
    joint 4's axis at the joint angles q, in root axes: it acts on joint 4 and the joints before it,
    by Pinocchio's kinematics."""
    import pinocchio as pin

    import dyn_control as dc
    pin_model = pin.buildModelFromUrdf(urdf)
    data = pin_model.createData()
    pin.framesForwardKinematics(pin_model, data, pin_q(pin_model, np.asarray(q, dtype=float)))
    link4, link5 = (data.oMf[pin_model.getFrameId(name)] for name in ("arm7_link4", "arm7_link5"))
    axis4 = link4.rotation @ dc.load_urdf(urdf).screw_axes[3, :3]
    force = np.cross(axis4, link5.translation - link4.translation)
    return force * newtons / np.linalg.norm(force)


def swap_halves(x, axis=0):
    """Linear-first <-> angular-first along `axis` (6 entries there)."""
    x = np.asarray(x)
    idx = [3, 4, 5, 0, 1, 2]
    return np.take(x, idx, axis=axis)


def pin_phi_to_ours(pin_phi):
    """Pinocchio dynamic parameters [m, mc, Ixx, Ixy, Iyy, Ixz, Iyz, Izz] -> ours (per body)."""
    m, hx, hy, hz, ixx, ixy, iyy, ixz, iyz, izz = pin_phi
    return np.array([m, hx, hy, hz, ixx, iyy, izz, ixy, ixz, iyz])


OURS_FROM_PIN_PARAM = [0, 1, 2, 3, 4, 6, 9, 5, 7, 8]  # ours[k] = pin[OURS_FROM_PIN_PARAM[k]]


def random_state(model, rng, scale=1.0):
    """A random (q, v, a) inside the joint limits."""
    lo = np.where(np.isfinite(model.lower), model.lower, -np.pi)
    hi = np.where(np.isfinite(model.upper), model.upper, np.pi)
    q = rng.uniform(np.minimum(lo, hi), np.maximum(lo, hi))  # a doubtful URDF may give them reversed
    if model.coupling is not None:
        q = q[[model.joint_names.index(n) for n in model.actuated_joints]]
    v = scale * rng.normal(size=model.nv)
    a = scale * rng.normal(size=model.nv)
    return q, v, a


def central_difference(f, x, eps=1e-6):
    """d f / d x by central differences; f returns an array, the result has x's axis last."""
    x = np.array(x, dtype=float)
    f0 = np.asarray(f(x.copy()))
    out = np.zeros(f0.shape + x.shape)
    for k in np.ndindex(x.shape):
        xp = x.copy()
        xm = x.copy()
        xp[k] += eps
        xm[k] -= eps
        out[(Ellipsis,) + k] = (np.asarray(f(xp)) - np.asarray(f(xm))) / (2 * eps)
    return out
