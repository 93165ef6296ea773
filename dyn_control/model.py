"""Model (immutable flat arrays and names) and Data (the preallocated workspace of every kernel).

A Model is a kinematic tree of `nbodies` bodies, each attached to its parent by one 1-DoF joint
whose motion is a screw (revolute [a; 0], prismatic [0; a], or any screw after a twist
perturbation). Body i's frame is its joint's frame; at configuration q its pose in the parent
body's frame is T_{parent,i}(q) = M_i exp([S_i] q_i) with M_i = (home_R[i], home_p[i]).
Bodies come in depth-first order (parents before children), so forward passes run i = 0..nb-1
and backward passes the other way. parent -1 is the fixed root link ("universe").

Without mimic coupling the generalized coordinates are the joint angles/displacements one per
body (nq = nv = nbodies). A multi-DoF joint (spherical, planar, floating; multi_dof.py) is a chain of
1-DoF bodies, one per coordinate of its v, the last of them its child link, and adds the entries of
its q beyond its v to nq. With `mimic=True` a mimic joint follows its leader,
q_tree = coupling @ q + coupling_offset, and nq = nv < nbodies. With a free-flyer root
(root_joint "free_flyer", floating_base.py) the first six bodies are the free flyer's, nv = nbodies
and nq = nv + 1 (its orientation is a quaternion).

Besides the bodies' inertial parameters phi, every joint of the tree carries three joint terms
(kernels/joint_terms.py), joint_terms[i] = [armature, viscous, coulomb]: the reflected rotor inertia
I_a added to M's diagonal, and viscous and Coulomb friction, so that the dynamics are

    tau = (M(q) + diag(I_a)) a + C(q, v) v + g(q) + F_v v + F_c sgn_s(v),   sgn_s(v) = tanh(v / v_s)

(v_s = kernels.joint_terms.COULOMB_VELOCITY_SCALE). A mimic joint's terms act on its own tree
coordinate and reach the actuated joints through the coupling, like its inertia. load_urdf leaves them
zero, as Pinocchio does: the URDF's <dynamics damping friction> stay in `damping` and `friction`,
applied by nothing, and `with_joint_dynamics(viscous=model.damping, coulomb=model.friction)` applies them.
"""
from typing import NamedTuple

import numpy as np


REVOLUTE = 0
PRISMATIC = 1
CONTINUOUS = 2
JOINT_TYPE_NAMES = {REVOLUTE: "revolute", PRISMATIC: "prismatic", CONTINUOUS: "continuous"}

FREE_FLYER = "free_flyer"   # a root joint (load_urdf's root_joint)
FREE_FLYER_DOFS = 6         # its velocity coordinates, [w; v]
FREE_FLYER_NAME = "root_joint"

# Multi-DoF joints inside the tree (multi_dof.py): per kind, the unit screws [w; v] of its chain in the
# child link's frame in the order of its v, the names of those coordinates, and its number of q entries
SPHERICAL, PLANAR, FLOATING_JOINT = "spherical", "planar", "floating"
MULTI_DOF_SCREWS = {SPHERICAL: (0, 1, 2), PLANAR: (2, 3, 4), FLOATING_JOINT: (0, 1, 2, 3, 4, 5)}
MULTI_DOF_COORDINATES = {SPHERICAL: ("wx", "wy", "wz"), PLANAR: ("wz", "vx", "vy"),
                         FLOATING_JOINT: ("wx", "wy", "wz", "vx", "vy", "vz")}
MULTI_DOF_NQ = {SPHERICAL: 4, PLANAR: 4, FLOATING_JOINT: 7}
# the neutral configuration: identity quaternion (x, y, z, w); planar (x, y, cos, sin)
MULTI_DOF_NEUTRAL = {SPHERICAL: (0.0, 0.0, 0.0, 1.0), PLANAR: (0.0, 0.0, 1.0, 0.0),
                     FLOATING_JOINT: (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)}


class MultiDofJoint(NamedTuple):
    """A multi-DoF joint of a Model: its bodies body .. body + nv - 1 (the last one its child link),
    its coordinates q[q_index : q_index + nq] and v[body : body + nv]."""
    name: str
    kind: str
    body: int
    nv: int
    nq: int
    q_index: int

PARAMETER_NAMES = ("m", "hx", "hy", "hz", "Ixx", "Iyy", "Izz", "Ixy", "Ixz", "Iyz")
JOINT_PARAMETER_NAMES = ("armature", "viscous", "coulomb")  # columns of Model.joint_terms


def as_real_array(name, x, expected):
    """x as a C-contiguous, aligned, writable float64 array (x itself when it is one, else a copy),
    or a ValueError naming it. Entries must be real numbers: NumPy would turn None into NaN and
    drop the imaginary part of a complex number."""
    try:
        array = np.asarray(x)
        if array.dtype.kind == "O":
            array = np.array([float(e) for e in array.flat]).reshape(array.shape)
        if array.dtype.kind not in "biuf":
            raise TypeError
        return np.require(array, np.float64, ("C", "A", "W"))
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{name} must be {expected}, got {type(x).__name__}") from None


# The packed buffers of a Model (model._buf) and a Data (data._buf), as the entry kernels read them
# (kernels/entry.py): a header, then the start of each field in float64 slots.
HEADER = 4          # nbodies, nv, nframes, tree kind (TREE, COUPLED or FLOATING)
TREE, COUPLED, FLOATING, MULTI_DOF = 0.0, 1.0, 2.0, 3.0   # a plain tree, mimic coupling, a free-flyer root,
# multi-DoF joints (which the entry kernels refuse: multi_dof.py runs them on a tree twin)
MODEL_FIELDS = ("parents", "screw_axes", "home_R", "home_p", "phi", "base_accel", "frame_body",
                "frame_R", "frame_p", "joint_terms")
DATA_FIELDS = ("R", "p", "oR", "op", "V", "Vdot", "F", "tmp6", "tau", "nle", "g", "zero", "f_ext_zero",
               "M", "phi_composite", "oS", "oV", "phi_world", "c", "IA", "pA", "U", "D", "u", "oA", "ddq",
               "oPsi", "oIc", "oBc", "C", "support", "J", "frame_poses", "ophi_c",
               "deriv_vectors", "Minv_IA", "Minv_F", "subtree_end", "deriv_joint", "Minv",
               "derivatives_tree", "Y", "Y_full", "q_tree", "a_tree", "base_R", "base_p", "base_accel", "com",
               "J_com", "A_g")


def pack_arrays(arrays, fields, head):
    """(buf, {name: copy}): the arrays {name: array} copied into one new float64 buffer `buf`, laid out
    as kernels/entry.py reads it: buf[:HEADER] = head, buf[HEADER + k] = start of fields[k] in
    float64 slots (-1 when absent or not contiguous), then the arrays. Arrays that share memory
    (views of one array, such as Data's stacks and their named rows) share it in the buffer too."""
    def owner(x):
        while isinstance(x.base, np.ndarray):
            x = x.base
        return x

    def address(x):
        return x.__array_interface__["data"][0]

    slots = {}  # id(owner) -> first slot of its copy
    end = HEADER + len(fields)
    for x in arrays.values():
        o = owner(x)
        if id(o) not in slots:
            slots[id(o)] = end
            end += -(-o.nbytes // 8)
    buf = np.zeros(end)
    buf[:HEADER] = head
    buf[HEADER:HEADER + len(fields)] = -1.0
    copies = {}
    for name, x in arrays.items():
        o = owner(x)
        offset = 8 * slots[id(o)] + address(x) - address(o)
        copy = np.ndarray(x.shape, x.dtype, buffer=buf, offset=offset, strides=x.strides)
        copy[...] = x
        copies[name] = copy
    for k, name in enumerate(fields):
        if name in copies and copies[name].flags.c_contiguous and copies[name].itemsize == 8:
            buf[HEADER + k] = (address(copies[name]) - address(buf)) // 8
    return buf, copies


def _frozen(array, dtype=np.float64):
    """(writable array for the kernels, read-only view of it for everyone else).

    Kernels get the writable original because Numba dispatches read-only arrays markedly slower."""
    out = np.array(array, dtype=dtype, copy=True)
    view = out.view()
    view.setflags(write=False)
    return out, view


class Model:
    """A robot's kinematic tree, inertial data and joint terms. Build it with `dyn_control.load_urdf`.

    Joint terms (read-only, one per joint of `joint_names`): `armature` [kg m^2 or kg],
    `viscous_friction` [N m s/rad or N s/m], `coulomb_friction` [N m or N], views of the columns of
    `joint_terms` (nbodies, 3). `damping` and `friction` are the URDF's <dynamics> values as written,
    which no computation applies (see the module docstring)."""

    def __init__(self, *, name, joint_names, body_names, joint_types, parents, screw_axes, home_R,
                 home_p, inertial_parameters, lower, upper, velocity_limit, effort_limit, damping,
                 friction, frame_names, frame_body, frame_R, frame_p, root_name,
                 coupling=None, coupling_offset=None, mimic_of=None, link_geometry=None,
                 source_dir=None, gravity=(0.0, 0.0, -9.81), frame_aliases=None, warnings=(),
                 joint_terms=None, root_joint=None, multi_dof_joints=()):
        self.name = name
        self.root_joint = root_joint    # None (fixed to the world) or FREE_FLYER
        self.warnings = tuple(warnings)  # load_urdf's doubts about the file, one message each
        self.root_name = root_name
        self.joint_names = tuple(joint_names)
        self.body_names = tuple(body_names)  # the link each joint moves (body i's own frame)
        self.nbodies = len(self.joint_names)
        self._parents, self.parents = _frozen(parents, np.int64)
        self._joint_types, self.joint_types = _frozen(joint_types, np.int64)
        self._screw_axes, self.screw_axes = _frozen(screw_axes)
        self._home_R, self.home_R = _frozen(home_R)
        self._home_p, self.home_p = _frozen(home_p)
        self._phi, self.phi = _frozen(inertial_parameters)  # (nbodies, 10), order of PARAMETER_NAMES
        self._lower, self.lower = _frozen(lower)
        self._upper, self.upper = _frozen(upper)
        self._velocity_limit, self.velocity_limit = _frozen(velocity_limit)
        self._effort_limit, self.effort_limit = _frozen(effort_limit)
        self._damping, self.damping = _frozen(damping)
        self._friction, self.friction = _frozen(friction)
        # [armature, viscous, coulomb] per joint (JOINT_PARAMETER_NAMES), applied by the dynamics
        self._joint_terms, self.joint_terms = _frozen(np.zeros((self.nbodies, 3)) if joint_terms is None
                                                      else np.reshape(joint_terms, (self.nbodies, 3)))
        self.frame_names = tuple(frame_names)
        self._frame_body, self.frame_body = _frozen(frame_body, np.int64)  # -1: attached to the root
        self._frame_R, self.frame_R = _frozen(frame_R)  # frame pose in its body's frame
        self._frame_p, self.frame_p = _frozen(frame_p)
        self._gravity, self.gravity = _frozen(gravity)
        # gravity enters the kernels as the base acceleration [0; -g]
        self._base_accel, self.base_accel = _frozen(np.concatenate([np.zeros(3), -self._gravity]))
        self.link_geometry = dict(link_geometry or {})
        self.source_dir = source_dir
        self.mimic_of = tuple(mimic_of) if mimic_of is not None else (None,) * self.nbodies
        if coupling is None:
            self.coupling = None
            self.coupling_offset = None
            self.nv = self.nbodies
            # a free flyer is not actuated: its coordinates come first (floating_base.py)
            self.actuated_joints = self.joint_names[FREE_FLYER_DOFS if root_joint else 0:]
        else:
            self._coupling, self.coupling = _frozen(coupling)
            self._coupling_offset, self.coupling_offset = _frozen(coupling_offset)
            self.nv = self.coupling.shape[1]
            self.actuated_joints = tuple(n for n, m in zip(self.joint_names, self.mimic_of) if m is None)
        self.nq = self.nv + (root_joint == FREE_FLYER)
        self.multi_dof_joints = self._multi_dof(multi_dof_joints)
        # a multi-DoF joint's coordinates are not actuated (no single drive moves them), as the free flyer's
        passive = {self.joint_names[j.body + k] for j in self.multi_dof_joints for k in range(j.nv)}
        self.actuated_joints = tuple(n for n in self.actuated_joints if n not in passive)
        self._frame_index = {n: i for i, n in enumerate(self.frame_names)}
        # a joint name also names its child link's frame (fixed joints through frame_aliases)
        self.frame_aliases = dict(frame_aliases or {})
        self.frame_aliases.update(zip(self.joint_names, self.body_names))
        for alias, frame in self.frame_aliases.items():
            if frame in self._frame_index:  # not the free flyer's massless bodies
                self._frame_index.setdefault(alias, self._frame_index[frame])
        self._pack()

    def _pack(self):
        """All arrays into one buffer `_buf` (kernels/entry.py: one argument for the whole model);
        the writable `_name` and read-only `name` attributes become views of it."""
        names = [n[1:] for n, x in vars(self).items() if n.startswith("_") and isinstance(x, np.ndarray)]
        kind = (MULTI_DOF if self.multi_dof_joints else FLOATING if self.root_joint is not None
                else COUPLED if self.coupling is not None else TREE)
        head = (self.nbodies, self.nv, len(self.frame_names), kind)
        self._buf, copies = pack_arrays({n: getattr(self, "_" + n) for n in names}, MODEL_FIELDS, head)
        for name, copy in copies.items():
            view = copy.view()
            view.flags.writeable = False
            setattr(self, "_" + name, copy)
            setattr(self, name, view)
        self.armature, self.viscous_friction, self.coulomb_friction = self.joint_terms.T

    def _multi_dof(self, joints):
        """MultiDofJoint per (name, kind, body), in the order of their bodies; nq grows by their
        coordinates beyond v (a quaternion's fourth entry, a planar angle's cosine and sine)."""
        found = []
        for name, kind, body in sorted(joints, key=lambda joint: joint[2]):
            if kind not in MULTI_DOF_SCREWS:
                raise ValueError(f"joint {name!r}: unknown multi-DoF kind {kind!r} (one of {', '.join(MULTI_DOF_SCREWS)})")
            if self.coupling is not None:
                raise ValueError(f"joint {name!r}: mimic coupling is for models of 1-DoF joints only")
            nv, nq = len(MULTI_DOF_SCREWS[kind]), MULTI_DOF_NQ[kind]
            q_index = body + self.nq - self.nv   # the free flyer's and earlier joints' extra entries before it
            found.append(MultiDofJoint(name, kind, body, nv, nq, q_index))
            self.nq += nq - nv
        return tuple(found)

    def __repr__(self):
        root = f"free-flyer root {self.root_name!r}" if self.root_joint else f"root {self.root_name!r}"
        return (f"Model({self.name!r}: {self.nbodies} moving bodies, nq = {self.nq}, nv = {self.nv}, "
                f"{len(self.frame_names)} frames, {root})")

    def create_data(self):
        """The buffers of every kernel for this model (see Data; LargeData above LAZY_BODIES bodies)."""
        return Data(self) if self.nbodies <= LAZY_BODIES else LargeData(self)

    def frame_id(self, frame):
        """Index of a frame given by link or joint name (or an index)."""
        if isinstance(frame, (int, np.integer)) and not isinstance(frame, bool):
            if not 0 <= frame < len(self.frame_names):
                raise ValueError(f"frame index {frame} out of range (the model has "
                                 f"{len(self.frame_names)} frames)")
            return int(frame)
        try:
            return self._frame_index[frame]
        except (KeyError, TypeError):
            raise ValueError(f"unknown frame {frame!r}: not a link or joint of robot "
                             f"{self.name!r}") from None

    def joint_index(self, joint):
        try:
            return self.joint_names.index(joint)
        except ValueError:
            raise ValueError(f"unknown joint {joint!r}: robot {self.name!r} has joints "
                             f"{', '.join(self.joint_names)}") from None

    def inertial_parameters(self):
        """All bodies' parameters stacked, (10 * nbodies,), order [m, hx, hy, hz, Ixx, Iyy, Izz,
        Ixy, Ixz, Iyz] per body, rotational inertia about the body frame origin."""
        return self.phi.reshape(-1).copy()

    def with_inertial_parameters(self, phi):
        """A new Model with the bodies' inertial parameters replaced: phi (10 * nbodies,) as
        `inertial_parameters()` returns them, or (nbodies, 10). Every body must be physically
        consistent (mass >= 0, rotational inertia at the centre of mass positive semi-definite
        and satisfying the triangle inequalities), else a ValueError names its link."""
        from .inertia.parameters import check_physical_consistency
        nb = self.nbodies
        phi = as_real_array("phi", phi, f"an array of {10 * nb} numbers")
        if phi.shape not in ((10 * nb,), (nb, 10)):
            raise ValueError(f"phi must have shape ({10 * nb},) or ({nb}, 10), got {phi.shape}")
        phi = phi.reshape(nb, 10)
        for i in range(nb):
            check_physical_consistency(phi[i], self.body_names[i])
        return self._replace(inertial_parameters=phi)

    def joint_parameters(self):
        """The joint terms, (nbodies, 3): per joint of `joint_names`, [armature, viscous, coulomb]
        (JOINT_PARAMETER_NAMES)."""
        return self.joint_terms.copy()

    def parameters(self):
        """The full parameter vector (13 * nbodies,): the inertial block (10 per body, as
        `inertial_parameters()`) then the joint block (3 per joint, as `joint_parameters()`), so that
        `regressor(..., joint_terms=True) @ parameters()` is the joint torque. Names: parameter_labels()."""
        return np.concatenate([self.phi.reshape(-1), self.joint_terms.reshape(-1)])

    def parameter_labels(self):
        """Names of `parameters()`: "<link>/m", "<link>/hx", ... (PARAMETER_NAMES, body order), then
        "<joint>/armature", "<joint>/viscous", "<joint>/coulomb" (joint order)."""
        return ([f"{body}/{p}" for body in self.body_names for p in PARAMETER_NAMES]
                + [f"{joint}/{p}" for joint in self.joint_names for p in JOINT_PARAMETER_NAMES])

    def with_parameters(self, parameters):
        """A new Model with every parameter replaced: a (13 * nbodies,) vector as `parameters()`
        returns it; checked as by with_inertial_parameters and with_joint_dynamics."""
        nb = self.nbodies
        x = as_real_array("parameters", parameters, f"an array of {13 * nb} numbers")
        if x.shape != (13 * nb,):
            raise ValueError(f"parameters must have shape ({13 * nb},) (10 inertial parameters per body, "
                             f"then 3 joint terms per joint), got {x.shape}")
        joint = x[10 * nb:].reshape(nb, 3)
        model = self.with_inertial_parameters(x[:10 * nb])
        return model.with_joint_dynamics(armature=joint[:, 0], viscous=joint[:, 1], coulomb=joint[:, 2])

    def with_joint_dynamics(self, armature=None, viscous=None, coulomb=None):
        """A new Model with joint terms replaced: armature (reflected rotor inertia, added to M's
        diagonal), viscous (F_v) and coulomb (F_c) friction, tau_i += I_a a_i + F_v v_i + F_c sgn_s(v_i).
        Each: None keeps the model's, a number sets every joint, or one number per joint of
        `joint_names`. Values must be finite and >= 0, else a ValueError names the argument and joint."""
        terms = self.joint_terms.copy()
        for column, (name, value) in enumerate((("armature", armature), ("viscous", viscous),
                                               ("coulomb", coulomb))):
            if value is not None:
                terms[:, column] = self._per_joint(name, value)
        for owner, first, nv in self._chains():
            if np.any(terms[first:first + nv]):
                raise ValueError(f"joint terms act on the actuated 1-DoF joints only: {owner} coordinates "
                                 f"{', '.join(self.joint_names[first:first + nv])} must have zero "
                                 f"{', '.join(JOINT_PARAMETER_NAMES)}")
        return self._replace(joint_terms=terms)

    def _chains(self):
        """(owner, first body, nv) of the free flyer's and each multi-DoF joint's chain of bodies."""
        chains = [("the free flyer's", 0, FREE_FLYER_DOFS)] if self.root_joint is not None else []
        return chains + [(f"multi-DoF joint {j.name!r}'s", j.body, j.nv) for j in self.multi_dof_joints]

    def _per_joint(self, name, value):
        """value (a number or one per joint) as (nbodies,) finite, non-negative numbers."""
        nb = self.nbodies
        x = as_real_array(name, value, f"a number or {nb} numbers (one per joint)")
        if x.ndim == 0:
            x = np.full(nb, float(x))
        if x.shape != (nb,):
            raise ValueError(f"{name} must be a number or {nb} numbers (one per joint of "
                             f"{', '.join(self.joint_names)}), got shape {x.shape}")
        for joint, entry in zip(self.joint_names, x):
            if not (np.isfinite(entry) and entry >= 0.0):
                raise ValueError(f"{name} of joint {joint!r} must be finite and >= 0, got {entry}")
        return x

    def with_payload(self, frame, mass, center_of_mass=(0.0, 0.0, 0.0), inertia=None):
        """A new Model whose body carrying `frame` (link or joint name) also carries a rigid payload:
        mass [kg], center_of_mass (3,) in `frame`'s axes and origin, inertia (3, 3) about the centre
        of mass in `frame`'s axes (default zero: a point mass). Its parameters (seed "Differential
        Dynamics and Mesh-Based Inertia", sec. 4: m, h = m c, I about the origin) are moved into the
        body frame and added to that body's. A ValueError names what is wrong: mass < 0, a non-finite
        entry, an inertia that is not symmetric, not positive semi-definite or breaks the triangle
        inequality, or a frame fixed to the root (no body to carry it)."""
        from .inertia.parameters import transform_phi
        k = self.frame_id(frame)
        body = int(self.frame_body[k])
        if body < 0:
            raise ValueError(f"frame {frame!r} is fixed to the root link {self.root_name!r}: a payload "
                             "there moves no joint")
        m = as_real_array("mass", mass, "a number")
        if m.shape != () or not np.isfinite(m) or m < 0.0:
            raise ValueError(f"mass must be a finite number >= 0, got {mass!r}")
        m = float(m)
        c = as_real_array("center_of_mass", center_of_mass, "3 numbers")
        if c.shape != (3,) or not np.all(np.isfinite(c)):
            raise ValueError(f"center_of_mass must be 3 finite numbers, got {center_of_mass!r}")
        I_c = np.zeros((3, 3)) if inertia is None else as_real_array("inertia", inertia, "a (3, 3) array")
        if I_c.shape != (3, 3) or not np.all(np.isfinite(I_c)):
            raise ValueError(f"inertia must be a finite (3, 3) array, got {inertia!r}")
        if not np.allclose(I_c, I_c.T, rtol=0.0, atol=1e-12 * max(1.0, np.abs(I_c).max())):
            raise ValueError(f"inertia must be symmetric, got {I_c.tolist()}")
        I_c = 0.5 * (I_c + I_c.T)
        J = np.linalg.eigvalsh(I_c)  # principal moments, ascending
        tol = 1e-9 * np.abs(J).max(initial=0.0)
        if J[0] < -tol:
            raise ValueError(f"inertia must be positive semi-definite, got principal moments {J.tolist()}")
        if J[0] + J[1] < J[2] - tol:
            raise ValueError("inertia breaks the triangle inequality J1 + J2 >= J3 of a rigid body, got "
                             f"principal moments {J.tolist()}")
        if m == 0.0 and np.any(I_c):
            raise ValueError(f"inertia of a massless payload must be zero, got {I_c.tolist()}")
        # about the frame's origin (parallel axis), then into the body's frame
        I_o = I_c + m * (c @ c * np.eye(3) - np.outer(c, c))
        phi = np.array([m, *(m * c), I_o[0, 0], I_o[1, 1], I_o[2, 2], I_o[0, 1], I_o[0, 2], I_o[1, 2]])
        phi_all = self.phi.copy()
        phi_all[body] += transform_phi(phi, self.frame_R[k], self.frame_p[k])
        return self._replace(inertial_parameters=phi_all)

    def total_mass(self):
        return float(self.phi[:, 0].sum())

    def neutral_configuration(self):
        """Zeros, moved inside the joint limits where zero is outside them; a free flyer at the
        world's origin with the identity orientation (floating_base.py)."""
        q = np.zeros(self.nbodies)
        q = np.clip(q, self.lower, self.upper)
        if self.multi_dof_joints:
            k = FREE_FLYER_DOFS if self.root_joint is not None else 0
            parts = [np.zeros(3), [0.0, 0.0, 0.0, 1.0]] if self.root_joint is not None else []
            for joint in self.multi_dof_joints:
                parts += [q[k:joint.body], MULTI_DOF_NEUTRAL[joint.kind]]
                k = joint.body + joint.nv
            return np.concatenate([*parts, q[k:]])
        if self.root_joint is not None:
            return np.concatenate([np.zeros(3), [0.0, 0.0, 0.0, 1.0], q[FREE_FLYER_DOFS:]])
        if self.coupling is None:
            return q
        return q[[self.joint_names.index(n) for n in self.actuated_joints]]

    def _replace(self, **changes):
        fields = dict(
            name=self.name, joint_names=self.joint_names, body_names=self.body_names,
            joint_types=self.joint_types, parents=self.parents, screw_axes=self.screw_axes,
            home_R=self.home_R, home_p=self.home_p, inertial_parameters=self.phi,
            lower=self.lower, upper=self.upper, velocity_limit=self.velocity_limit,
            effort_limit=self.effort_limit, damping=self.damping, friction=self.friction,
            frame_names=self.frame_names, frame_body=self.frame_body, frame_R=self.frame_R,
            frame_p=self.frame_p, root_name=self.root_name, coupling=self.coupling,
            coupling_offset=self.coupling_offset, mimic_of=self.mimic_of,
            link_geometry=self.link_geometry, source_dir=self.source_dir, gravity=self.gravity,
            frame_aliases=self.frame_aliases, warnings=self.warnings, joint_terms=self.joint_terms,
            root_joint=self.root_joint,
            multi_dof_joints=tuple((j.name, j.kind, j.body) for j in self.multi_dof_joints))
        fields.update(changes)
        return Model(**fields)

    def with_twist_perturbation(self, eta):
        """A new Model whose joint screws are perturbed as in seed "Differential Dynamics and
        Mesh-Based Inertia", eq. 6: S_i <- Ad_{exp(eta_i)} S_i, i.e.
        T_{parent,i}(q) = M_i exp(eta_i) exp([S_i] q_i) exp(-eta_i). eta: (nbodies, 6), or
        (6 * nbodies,) in the column order of `twist_derivatives`, each [w; v] in joint i's frame at
        q_i = 0. Home poses, inertias and frames stay: body frames are unchanged at q = 0."""
        from .spatial import Ad, exp_se3
        nb = self.nbodies
        eta = as_real_array("eta", eta, f"an array of {6 * nb} numbers")
        if eta.shape not in ((nb, 6), (6 * nb,)):
            raise ValueError(f"eta must have shape ({nb}, 6) or ({6 * nb},), got {eta.shape}")
        if not np.all(np.isfinite(eta)):
            raise ValueError("eta has non-finite entries (NaN or inf)")
        eta = eta.reshape(nb, 6)
        for owner, first, nv in self._chains():
            if np.any(eta[first:first + nv]):
                raise ValueError(f"eta of {owner} coordinates ({', '.join(self.joint_names[first:first + nv])}) "
                                 "must be zero: they have no screw of their own")
        screws = np.empty((nb, 6))
        for i in range(nb):
            T = exp_se3(eta[i])
            screws[i] = Ad(np.ascontiguousarray(T[:3, :3]), np.ascontiguousarray(T[:3, 3])) @ self.screw_axes[i]
        return self._replace(screw_axes=screws)

    def with_gravity(self, gravity):
        g = as_real_array("gravity", gravity, "3 finite numbers")
        if g.shape != (3,) or not np.all(np.isfinite(g)):
            raise ValueError(f"gravity must be 3 finite numbers, got {gravity!r}")
        return self._replace(gravity=g)


LAZY_BODIES = 64  # Data of a model with more bodies allocates its families of buffers on first use


def _family(*names):
    """Marks a Data method that allocates a family of buffers `names`."""
    def mark(method):
        method.buffers = names
        return method
    return mark


class _FirstUse:
    """A buffer (public or _writable name) of a family that LargeData allocates on first use: the
    first read runs the family's method, whose instance attributes then shadow this descriptor (a
    non-data descriptor, as functools.cached_property): later reads find them in the instance."""

    def __init__(self, allocate, name):
        self.allocate = allocate
        self.name = name

    def __get__(self, data, owner=None):
        if data is None:
            return self
        self.allocate(data)
        data._publish()
        return data.__dict__[self.name]


class Data:
    """Every buffer a kernel writes, allocated once per model (nothing is allocated per call). For a
    model of more than LAZY_BODIES bodies, create_data() gives a LargeData, which allocates the
    families of O(nbodies^2) and O(nbodies^3) buffers (regressor, derivatives, second order: the
    latter 88 nb^3 bytes, 88 GB at 1,000 bodies) on their first use only.

    `data.<name>` is a read-only view (the public functions return such views: copy a result to keep
    or modify it); the kernels and the public functions write the writable original, `data._<name>`.
    Since the API boundary copies read-only inputs, a result passed back as an input (e.g.
    `aba(model, data, q, v, data.tau)`) never aliases a buffer the call writes."""

    def __init__(self, model):
        nb, nv, nf = model.nbodies, model.nv, len(model.frame_names)
        self.nbodies = nb
        self.nv = nv
        self.coupled = model.coupling is not None
        # tree coordinates (one per body): equal to q, v, a without mimic coupling
        self.q_tree = np.zeros(nb)             # joint positions of the tree
        self.v_tree = np.zeros(nb)             # joint velocities of the tree
        self.a_tree = np.zeros(nb)             # joint accelerations of the tree
        self.tau_tree = np.zeros(nb)           # joint efforts of the tree
        # a free flyer's pose in the world and the base acceleration [0; -R^T g] (floating_base.py); a
        # fixed base's stays at the origin
        self.base_R = np.eye(3)
        self.base_p = np.zeros(3)
        self.base_accel = np.zeros(6)
        # kinematics
        self.R = np.zeros((nb, 3, 3))          # rotation of T_{parent,i}(q)
        self.p = np.zeros((nb, 3))             # translation of T_{parent,i}(q)
        self.oR = np.zeros((nb, 3, 3))         # body rotation in the root frame
        self.op = np.zeros((nb, 3))            # body origin in the root frame
        self.frame_poses = np.zeros((nf, 4, 4))  # world poses of all frames
        self.V = np.zeros((nb, 6))             # body twist, body frame
        self.Vdot = np.zeros((nb, 6))          # body acceleration (gravity included), body frame
        self.F = np.zeros((nb, 6))             # force transmitted by joint i, body frame
        self.f_ext_zero = np.zeros((nb, 6))    # stands in for f_ext=None
        self.tmp6 = np.zeros((4, 6))           # scratch 6-vectors
        # centre of mass and centroidal momentum (centroidal.py)
        self.com = np.zeros(3)                 # centre of mass, world frame
        self.J_com = np.zeros((3, nv))         # its Jacobian
        self.J_com_tree = np.zeros((3, nb)) if self.coupled else self.J_com
        self.A_g = np.zeros((6, nv))           # centroidal momentum matrix [angular; linear]
        self.A_g_tree = np.zeros((6, nb)) if self.coupled else self.A_g
        # inverse dynamics outputs
        self.tau = np.zeros(nv)                # rnea
        self.nle = np.zeros(nv)                # C(q, v) v + g(q)
        self.g = np.zeros(nv)                  # g(q)
        self.zero = np.zeros(nv)               # stands in for v = 0 and a = 0 (never written)
        # crba
        self.M = np.zeros((nv, nv))            # joint-space inertia
        self.M_tree = np.zeros((nb, nb)) if self.coupled else self.M
        self.phi_composite = np.zeros((nb, 10))  # composite-body inertial parameters, root frame
        # aba (root frame)
        self.ddq = np.zeros(nv)                # forward dynamics output
        self.phi_world = np.zeros((nb, 10))    # body inertial parameters in the root frame
        self.IA = np.zeros((nb, 6, 6))         # articulated-body inertia
        self.pA = np.zeros((nb, 6))            # articulated-body bias force
        self.c = np.zeros((nb, 6))             # velocity-product acceleration (oV_i x oS_i) qd_i
        self.oA = np.zeros((nb, 6))            # body spatial acceleration
        self.U = np.zeros((nb, 6))             # IA_i S_i
        self.D = np.zeros(nb)                  # S_i^T IA_i S_i
        self.u = np.zeros(nb)                  # tau_i - S_i^T pA_i
        # coriolis matrix
        self.C = np.zeros((nv, nv))            # C(q, v) with Mdot - 2C skew-symmetric
        self.C_tree = np.zeros((nb, nb)) if self.coupled else self.C
        self.oS = np.zeros((nb, 6))            # joint screw in the root frame
        self.oV = np.zeros((nb, 6))            # body twist in the root frame
        self.oPsi = np.zeros((nb, 6))          # d/dt of oS: oV x oS
        self.oIc = np.zeros((nb, 6, 6))        # composite inertia, root frame
        self.oBc = np.zeros((nb, 6, 6))        # composite Coriolis body matrix, root frame
        # jacobians
        self.support = np.zeros(nb, dtype=np.int64)  # a body and its supports, leaf to root
        self.J = np.zeros((6, nv))             # frame Jacobian output
        self.J_tree = np.zeros((6, nb))
        # first-order derivatives and Minv (dyn_control/derivatives.py; matrices: _first_order)
        # kernels take stacks (Numba's call overhead grows with the number of arguments); the names
        # are views of them. Per body, root frame (order fixed by kernels/rnea_derivatives.py):
        self.deriv_vectors = np.zeros((9, nb, 6))
        (self.deriv_oS,                        # joint screw
         self.deriv_oV,                        # twist
         self.oA_gf,                           # spatial acceleration, gravity included
         self.oL_c,                            # momentum of the subtree
         self.oB_sym,                          # symmetric block of d force / d twist, subtree
         self.oF_c,                            # force transmitted by the joint
         self.oAlpha,                          # s_i x a_parent - oBeta_i x v_parent
         self.oBeta,                           # s_i x v_parent
         self.Minv_U) = self.deriv_vectors     # IA_i s_i (minverse)
        self.ophi_c = np.zeros((nb, 10))       # composite inertial parameters, root frame
        self.Minv_IA = np.zeros((nb, 6, 6))    # articulated-body inertia, root frame
        self.subtree_end = np.zeros(nb, dtype=np.int64)  # last body of each subtree (depth-first)
        self.deriv_joint = np.zeros((2, nb))
        self.Minv_Dinv, self.zeros_nb = self.deriv_joint  # 1 / (s^T IA s); zeros standing in for a = 0
        # joint-twist derivatives (kernels/twist_derivatives.py, model_derivatives.py; output:
        # _twist_derivatives), root frame
        self.eta_columns = np.zeros((2, nb, 6, 6))  # alpha_j, beta_j per column of eta_j (Qbar, Pbar)
        self.eta_pose = np.zeros((4, 3))       # oT_parent M_i (rotation rows, then translation)
        self.eta_tmp6 = np.zeros((12, 6))      # scratch 6-vectors
        # second-order derivatives (kernels/rnea_second_derivatives.py, second_order.py; tensors:
        # _second_order), root frame
        self.so_vectors = np.zeros((11, nb, 6))  # per body: S, V, A, psid, psidd, phi, F, I S, B^T S,
        #                                          dF/dq_i, dF/dv_i (see the kernel's docstring)
        self.so_matrices = np.zeros((2, nb, 6, 6))  # composite inertia and body-Coriolis matrix
        self.so_mats = np.zeros((3, 6, 6))     # dI_d/dq_d, 2 dB_d/dq_d, B(I_d, S_d) of one joint d
        self.so_pair = np.zeros((11, 6))       # 6-vectors of one (deepest, middle) joint pair
        self.so_tau = np.zeros(nb)             # tau of the tree (by-product)
        # contacts and loop closures (kernels/contact.py, contact.py), root frame
        self.ct_oS = np.zeros((nb, 6))         # joint screw
        self.ct_oV = np.zeros((nb, 6))         # body twist
        self.ct_oA = np.zeros((nb, 6))         # body acceleration, gravity left out
        if self.families_now:
            for allocate in _FAMILIES:
                allocate(self)
        # one buffer for all of the above (kernels/entry.py: one argument for the whole workspace);
        # a LargeData's families come later, in arrays of their own
        arrays = {n: x for n, x in vars(self).items() if isinstance(x, np.ndarray)}
        head = (nb, nv, nf, float(self.coupled))
        self._buf, copies = pack_arrays(arrays, DATA_FIELDS, head)
        for name, copy in copies.items():
            setattr(self, name, copy)
        self._publish()

    def _publish(self):
        """Every new buffer b: self._b keeps the writable array, self.b becomes a read-only view
        (setattr interns the new name, which keeps attribute reads on CPython's fast path)."""
        for name, array in list(vars(self).items()):
            if isinstance(array, np.ndarray) and not name.startswith("_") and "_" + name not in vars(self):
                view = array.view()
                view.flags.writeable = False
                setattr(self, "_" + name, array)
                setattr(self, name, view)

    families_now = True  # allocate the families below in __init__

    # Families of buffers of O(nbodies^2) and more. "_tree" buffers serve mimic-coupled models only;
    # without coupling they are the same arrays as the outputs.

    @_family("Y", "Y_tree")
    def _regressor(self):
        nb, nv = self.nbodies, self.nv
        self.Y = np.zeros((nv, 10 * nb))       # joint torque regressor: tau = Y phi
        self.Y_tree = np.zeros((nb, 10 * nb)) if self.coupled else self.Y

    @_family("Y_full", "Y_full_tree")
    def _full_regressor(self):
        nb, nv = self.nbodies, self.nv
        self.Y_full = np.zeros((nv, 13 * nb))  # with the joint block: tau = Y_full model.parameters()
        self.Y_full_tree = np.zeros((nb, 13 * nb)) if self.coupled else self.Y_full

    @_family("Minv_F", "derivatives_tree", "dtau_dq", "dtau_dv", "dtau_da", "Minv", "ddq_dq",
                   "ddq_dv")
    def _first_order(self):
        nb, nv = self.nbodies, self.nv
        self.Minv_F = np.zeros((nb, nb, 6))    # [i, k]: bias force, then acceleration, of body i
        #                                        for a unit torque at joint k
        # outputs of the tree: dtau_dq, dtau_dv, M = dtau_da, Minv, ddq_dq, ddq_dv
        self.derivatives_tree = np.zeros((6, nb, nb))
        first = np.zeros((6, nv, nv)) if self.coupled else self.derivatives_tree
        self.dtau_dq, self.dtau_dv, self.dtau_da, self.Minv, self.ddq_dq, self.ddq_dv = first

    @_family("dtau_deta", "dtau_deta_tree")
    def _twist_derivatives(self):
        nb, nv = self.nbodies, self.nv
        self.dtau_deta = np.zeros((nv, 6 * nb))  # d tau / d eta: 6 columns per joint, angular first
        self.dtau_deta_tree = np.zeros((nb, 6 * nb)) if self.coupled else self.dtau_deta

    @_family("so_first", "so_second", "d2tau_dq2", "d2tau_dv2", "d2tau_dqdv", "dM_dq")
    def _second_order(self):
        nb, nv = self.nbodies, self.nv
        self.so_first = np.zeros((3, nb, nb))  # dtau_dq, dtau_dv, M of the tree (by-products)
        self.so_second = np.zeros((4, nb, nb, nb))  # second-order tensors of the tree (the kernel
        #                                            writes the root-to-leaf paths only: zeros here)
        # outputs [i, j, k]: d2 tau_i / dq_j dq_k, d2 tau_i / dv_j dv_k, d2 tau_i / dq_j dv_k, d M_ij / dq_k
        second = np.zeros((4, nv, nv, nv)) if self.coupled else self.so_second
        self.d2tau_dq2, self.d2tau_dv2, self.d2tau_dqdv, self.dM_dq = second

    @_family("d2ddq", "d2ddq_dq2", "d2ddq_dv2", "d2ddq_dqdv", "dMinv_dq", "so_cube")
    def _second_order_forward(self):
        nv = self.nv
        # the four of _second_order for forward dynamics, the fourth being d Minv_ij / dq_k
        self.d2ddq = np.zeros((4, nv, nv, nv))
        self.d2ddq_dq2, self.d2ddq_dv2, self.d2ddq_dqdv, self.dMinv_dq = self.d2ddq
        self.so_cube = np.zeros((3, nv, nv, nv))  # scratch for aba_second_derivatives


_FAMILIES = [method for method in vars(Data).values() if hasattr(method, "buffers")]


def _first_use_descriptors(cls):
    """Gives cls a _FirstUse descriptor for every buffer of every family (both names)."""
    for allocate in _FAMILIES:
        for name in allocate.buffers:
            for attribute in (name, "_" + name):
                setattr(cls, attribute, _FirstUse(allocate, attribute))
    return cls


@_first_use_descriptors
class LargeData(Data):
    """Data of a model of more than LAZY_BODIES bodies: each family of buffers is allocated on the
    first use of one of its buffers (by name, public or _writable), then reused. (A class of its own:
    the descriptors cost every read of those names some 20 ns, which only large models pay.)"""

    families_now = False
