"""URDF -> Model: the one place a URDF is read.

Only what a Model needs is read, straight from the XML: each link's <inertial> and the <origin>
and mesh of its <visual> and <collision> elements (for `inertia_from_link_meshes`), each joint's
type, <parent>, <child>, <origin>, <axis>, <limit>, <dynamics> and <mimic>. Nothing else
(transmissions, Gazebo and ros2_control tags, materials, sensors, unknown elements and
attributes, a missing robot name) is looked at, so nothing else can fail a load. What is read falls
in three kinds, following urdfdom (which RViz, robot_state_publisher and Pinocchio use):
- unusable: a cycle, a missing link, a number that is not finite, a joint type other than revolute,
  continuous, prismatic, fixed, floating, planar (in the plane of its frame's x and y axes, as
  Pinocchio reads it: an <axis> other than 0 0 1 is refused) and ball (Drake's extension; also
  "spherical"), a negative mass, effort or velocity limit, damping or friction,
  an origin so large that the dynamics at the home configuration are not finite. URDFError
  naming the element;
- physically doubtful: joint limits reversed, an inertia tensor that is not positive
  semi-definite or breaks the triangle inequality, a moving leaf without mass, a visual or
  collision that cannot be read (it is left out). The model loads and `model.warnings` holds one
  message per doubt, naming the element; with `strict=True` the first doubt raises URDFError
  with that message instead;
- the rest loads as written.

A floating joint from the root link (a "world" link with no other joint, the joint's <origin> the
identity) makes its child the free flyer (floating_base.py), as Pinocchio's parser reads it; every
other floating, planar or ball joint becomes a multi-DoF joint of the tree (multi_dof.py).

The tree is walked depth-first from the root link with an explicit stack (chains of any length),
siblings ordered by joint name (the order urdfdom, and so Pinocchio, gives them); fixed joints are
merged into their parent body and their links stay addressable as frames.
"""
import math
import os
import re
import xml.etree.ElementTree as ET
from typing import NamedTuple

import numpy as np

from .model import (CONTINUOUS, FLOATING_JOINT, FREE_FLYER, FREE_FLYER_NAME, MULTI_DOF_COORDINATES, MULTI_DOF_SCREWS,
                    PLANAR, PRISMATIC, REVOLUTE, SPHERICAL, Model)
from .spatial import phi_to_parent_add


class URDFError(ValueError):
    """A URDF that cannot become a Model; the message names the element at fault."""


_FIXED = -1  # kind of a fixed joint: merged into its parent body, never a Model's joint
_FLOATING, _PLANAR, _BALL = -2, -3, -4   # multi-DoF joints (a floating one from the root link: _floating_root)
_MULTI_DOF = {_FLOATING: FLOATING_JOINT, _PLANAR: PLANAR, _BALL: SPHERICAL}
_KINDS = {"revolute": REVOLUTE, "continuous": CONTINUOUS, "prismatic": PRISMATIC, "fixed": _FIXED,
          "floating": _FLOATING, "planar": _PLANAR, "ball": _BALL, "spherical": _BALL}
_SHAPES = ("box", "cylinder", "sphere", "mesh")
_INERTIA_ROUNDOFF = 1e-7  # kg m^2: CAD exports leave round-off of a few 1e-8 (tiago's antennas)
# expat reads an XML declaration only at the very start; urdfdom also after whitespace and comments
_DECLARATION = re.compile(rb"\A((?:\s|<!--(?:(?!-->).)*-->)*)(<\?xml\s.*?\?>)", re.S)


class _Link(NamedTuple):
    phi: np.ndarray  # inertial parameters in the link's frame
    shapes: list     # collision and visual shapes (see _shapes)


class _Joint(NamedTuple):
    name: str
    kind: int        # REVOLUTE, CONTINUOUS, PRISMATIC, _FIXED or one of _MULTI_DOF
    parent: str
    child: str
    R: np.ndarray    # <origin>: the joint frame in the parent link's frame
    p: np.ndarray
    axis: np.ndarray = None  # unit vector; moving joints only, as all the fields below
    lower: float = -np.inf
    upper: float = np.inf
    velocity: float = np.inf
    effort: float = np.inf
    damping: float = 0.0
    friction: float = 0.0
    mimic: tuple = None  # (leader joint, multiplier, offset)


def load_urdf(source, package_dirs=None, mimic=False, *, strict=False, root_joint=None):
    """Build a Model from a URDF given as a file path, an XML string or bytes.

    package_dirs: folders searched for `package://` URIs (before the ament index and
    ROS_PACKAGE_PATH). mimic: False loads mimic joints as independent joints (as Pinocchio does);
    True makes each follow its leader, q = multiplier * q_leader + offset. strict: False loads a
    physically doubtful file and lists the doubts in `model.warnings` (a tuple of messages, each
    naming its link or joint); True raises URDFError with the first doubt's message instead.
    root_joint: None fixes the root link to the world; "free_flyer" makes it a free body
    (Pinocchio's JointModelFreeFlyer; floating_base.py: its coordinates and what the model holds).
    A URDF's own floating joint from its root link (a "world" link) to that link's one child makes
    the child the free flyer with root_joint None, as Pinocchio's parser does. Other floating, planar
    and ball joints are multi-DoF joints of the tree (multi_dof.py: their coordinates).
    """
    if root_joint not in (None, FREE_FLYER):
        raise ValueError(f"root_joint must be None or {FREE_FLYER!r}, got {root_joint!r}")
    xml_bytes, source_dir = _read_source(source)
    if isinstance(package_dirs, (str, os.PathLike)):
        package_dirs = [package_dirs]
    package_dirs = [os.fspath(d) for d in (package_dirs or [])]
    warnings = []

    def doubt(message):
        if strict:
            raise URDFError(message)
        warnings.append(message)

    robot = _robot_element(xml_bytes)
    name = robot.get("name") or "robot"
    links = {}
    for element in robot.findall("link"):
        link_name = _attribute(element, "name", "a <link>")
        if link_name in links:
            raise URDFError(f"link {link_name!r} is defined twice")
        links[link_name] = _Link(_link_inertia(element.find("inertial"), link_name, doubt),
                                 _shapes(element, link_name, doubt, package_dirs, source_dir))
    if not links:
        raise URDFError(f"robot {name!r} has no <link>")
    joints = [_read_joint(element, doubt) for element in robot.findall("joint")]
    root, children = _topology(links, joints)
    if root_joint is None:
        links, joints, root_joint = _floating_root(links, joints, root, children)
        root, children = _topology(links, joints)
    tree = _Tree(links, root, children, free_flyer=root_joint == FREE_FLYER)
    unreached = [link for link in links if link not in tree.parent_joint]
    if unreached:
        raise URDFError(f"links {', '.join(unreached)} are not connected to the root link "
                        f"{root!r}: their joints form a cycle")
    _check_home_configuration(tree)
    moving_after = set(tree.parents)
    for i, (joint, link) in enumerate(zip(tree.joint_names, tree.body_names)):
        if i not in moving_after and tree.phi[i][0] == 0.0:
            doubt(f"link {link!r}, moved by joint {joint!r}, has zero mass (links fixed to it "
                  "included) and no moving link after it")

    coupling = coupling_offset = None
    mimic_of = [None] * len(tree.joint_names)
    moving = set(tree.joint_names)
    joint_by_name = {j.name: j for j in joints}
    for k, joint_name in enumerate(tree.joint_names):
        m = joint_by_name[joint_name].mimic if joint_name in joint_by_name else None  # not the free flyer's
        if m is not None:
            if m[0] not in moving:
                if not mimic:  # independent joints: a dangling <mimic> is only a comment
                    continue
                raise URDFError(f"joint {joint_name!r} mimics {m[0]!r}, which is not a moving joint")
            mimic_of[k] = m
    if mimic and any(mimic_of):
        if root_joint is not None:
            raise ValueError("mimic=True with a root_joint: mimic coupling is for fixed-base models only")
        coupling, coupling_offset = _mimic_coupling(tree.joint_names, mimic_of)
    return Model(
        name=name, root_name=root, joint_names=tree.joint_names,
        body_names=tree.body_names, joint_types=tree.joint_types, parents=tree.parents,
        screw_axes=np.reshape(tree.screws, (-1, 6)), home_R=np.reshape(tree.home_R, (-1, 3, 3)),
        home_p=np.reshape(tree.home_p, (-1, 3)),
        inertial_parameters=np.reshape(tree.phi, (-1, 10)),
        lower=tree.lower, upper=tree.upper, velocity_limit=tree.velocity, effort_limit=tree.effort,
        damping=tree.damping, friction=tree.friction, frame_names=tree.frame_names,
        frame_body=tree.frame_body, frame_R=np.reshape(tree.frame_R, (-1, 3, 3)),
        frame_p=np.reshape(tree.frame_p, (-1, 3)), coupling=coupling,
        coupling_offset=coupling_offset, mimic_of=[m[0] if m else None for m in mimic_of],
        link_geometry=tree.geometry, source_dir=source_dir, frame_aliases=tree.fixed_joint_frames,
        warnings=warnings, root_joint=root_joint, multi_dof_joints=tree.multi_dof)


def _read_source(source):
    """(the XML as bytes with any declaration first, the file's folder or None)."""
    if isinstance(source, (bytes, bytearray)):
        return _DECLARATION.sub(rb"\2\1", bytes(source), count=1), None
    if isinstance(source, os.PathLike) or (isinstance(source, str) and not source.lstrip().startswith("<")):
        path = os.fspath(source)
        if not os.path.isfile(path):
            raise URDFError(f"URDF file not found: {path!r}")
        with open(path, "rb") as f:
            return _DECLARATION.sub(rb"\2\1", f.read(), count=1), os.path.dirname(os.path.abspath(path))
    if isinstance(source, str):
        # text re-encoded as UTF-8: a declaration naming another encoding no longer applies
        return _DECLARATION.sub(rb"\1", source.encode("utf-8"), count=1), None
    raise URDFError(f"urdf source must be a path, an XML string or bytes, not {type(source).__name__}")


def _robot_element(xml_bytes):
    try:
        robot = ET.fromstring(xml_bytes)
    except ET.ParseError as err:
        raise URDFError(f"URDF is not well-formed XML: {err}") from None
    if robot.tag != "robot":
        raise URDFError(f"URDF root element must be <robot>, found <{robot.tag}>")
    return robot


def _attribute(element, attribute, where):
    """A required text attribute of an element (which may be absent)."""
    value = None if element is None else element.get(attribute)
    if not value:
        raise URDFError(f"{where}: {attribute} is missing")
    return value


def _numbers(element, attribute, where, default=None, count=1):
    """An attribute of `count` finite numbers (a float, or an array when count > 1); `default` when
    the element or the attribute is absent, which is an error when default is None."""
    text = None if element is None else element.get(attribute)
    if text is None:
        if default is None:
            raise URDFError(f"{where}: {attribute} is missing")
        return default
    try:
        values = [float(word) for word in text.split()]
    except ValueError:
        values = []
    if len(values) != count or not all(map(math.isfinite, values)):
        expected = "a finite number" if count == 1 else f"{count} finite numbers"
        raise URDFError(f"{where}: {attribute}={text!r} must be {expected}")
    return values[0] if count == 1 else np.array(values)


def _rpy_matrix(rpy):
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return np.array([
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ])


def _origin(element, where):
    """(R, p) of an <origin> (identity when absent)."""
    where = f"{where} <origin>"
    return (_rpy_matrix(_numbers(element, "rpy", where, np.zeros(3), 3)),
            _numbers(element, "xyz", where, np.zeros(3), 3))


def _link_inertia(inertial, name, doubt):
    """phi of a link in its own frame (zero without <inertial>): a mass >= 0 or an error; an inertia
    tensor that is not positive semi-definite or breaks the triangle inequality is a doubt."""
    if inertial is None:
        return np.zeros(10)
    where = f"link {name!r} <inertial>"
    mass = _numbers(inertial.find("mass"), "value", f"{where} <mass>")
    if mass < 0.0:
        raise URDFError(f"{where}: mass must be finite and non-negative, got {mass}")
    tensor = inertial.find("inertia")
    ixx, iyy, izz, ixy, ixz, iyz = (_numbers(tensor, key, f"{where} <inertia>")
                                    for key in ("ixx", "iyy", "izz", "ixy", "ixz", "iyz"))
    I = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    eig = np.linalg.eigvalsh(I)
    tolerance = _INERTIA_ROUNDOFF + 1e-6 * abs(eig[-1])
    if eig[0] < -tolerance:
        doubt(f"{where}: inertia tensor is not positive semi-definite "
              f"(eigenvalues {np.array2string(eig, precision=4)})")
    elif eig[2] > eig[0] + eig[1] + tolerance:
        doubt(f"{where}: inertia tensor breaks the triangle inequality, its largest principal "
              f"moment exceeds the sum of the other two (eigenvalues {np.array2string(eig, precision=4)})")
    R, c = _origin(inertial.find("origin"), where)
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is refused just below
        I_o = R @ I @ R.T + mass * (c @ c * np.eye(3) - np.outer(c, c))  # parallel axis to the link origin
        phi = np.array([mass, *(mass * c), I_o[0, 0], I_o[1, 1], I_o[2, 2], I_o[0, 1], I_o[0, 2], I_o[1, 2]])
    if not np.all(np.isfinite(phi)):
        raise URDFError(f"{where}: the inertia about the link's origin is not finite: the <origin> or "
                        "the inertia is too large")
    return phi


def resolve_uri(uri, package_dirs=(), base_dir=None):
    """The file a mesh URI names, or None: package:// through package_dirs, the ament index and
    ROS_PACKAGE_PATH; file://; or a path relative to the URDF's folder."""
    if uri.startswith("package://"):
        package, _, rest = uri[len("package://"):].partition("/")
        candidates = []
        for d in package_dirs:
            candidates += [os.path.join(d, package, rest), os.path.join(d, rest) if os.path.basename(os.path.normpath(d)) == package else None]
        for prefix in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep):
            if prefix:
                candidates.append(os.path.join(prefix, "share", package, rest))
        for d in os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep):
            if d:
                candidates += [os.path.join(d, package, rest),
                               os.path.join(d, rest) if os.path.basename(os.path.normpath(d)) == package else None]
        for c in candidates:
            if c and os.path.isfile(c):
                return c
        return None
    path = uri[len("file://"):] if uri.startswith("file://") else uri
    if not os.path.isabs(path) and base_dir is not None:
        path = os.path.join(base_dir, path)
    return path if os.path.isfile(path) else None


def _shapes(element, name, doubt, package_dirs, base_dir):
    """A link's collision and visual shapes: kind, type, pose (R, p) in the link's frame, and for a
    mesh its uri, resolved path and scale. A shape that cannot be read is left out (a doubt)."""
    shapes = []
    for kind in ("collision", "visual"):
        for shape_element in element.findall(kind):
            where = f"link {name!r} <{kind}>"
            geometry = shape_element.find("geometry")
            geometry = None if geometry is None else next(iter(geometry), None)  # urdfdom reads the first
            try:
                if geometry is None or geometry.tag not in _SHAPES:
                    found = "nothing" if geometry is None else f"<{geometry.tag}>"
                    raise URDFError(f"{where}: its <geometry> holds {found}, not a box, cylinder, "
                                    "sphere or mesh")
                R, p = _origin(shape_element.find("origin"), where)
                shape = {"kind": kind, "type": geometry.tag, "R": R, "p": p}
                if geometry.tag == "mesh":
                    shape["uri"] = geometry.get("filename")
                    if not shape["uri"]:
                        raise URDFError(f"{where}: <mesh> has no filename")
                    shape["path"] = resolve_uri(shape["uri"], package_dirs, base_dir)
                    shape["scale"] = _numbers(geometry, "scale", f"{where} <mesh>", np.ones(3), 3)
            except URDFError as error:
                doubt(f"{error}; the {kind} is left out")
                continue
            shapes.append(shape)
    return shapes


def _read_joint(element, doubt):
    """A <joint> as a _Joint, checked (reversed limits are a doubt)."""
    name = _attribute(element, "name", "a <joint>")
    where = f"joint {name!r}"
    kind = _KINDS.get(element.get("type"))
    if kind is None:
        raise URDFError(f"{where}: type {element.get('type')!r} is not supported "
                        f"(one of {', '.join(_KINDS)})")
    parent, child = (_attribute(element.find(role), "link", f"{where} <{role}>")
                     for role in ("parent", "child"))
    R, p = _origin(element.find("origin"), where)
    if kind == _PLANAR and element.find("axis") is not None:
        normal = _numbers(element.find("axis"), "xyz", f"{where} <axis>", np.array([0.0, 0.0, 1.0]), 3)
        if not np.allclose(normal, (0.0, 0.0, 1.0), rtol=0.0, atol=1e-9):
            raise URDFError(f"{where}: a planar joint moves in the x-y plane of its frame (<axis> 0 0 1, as "
                            f"Pinocchio reads every planar joint), got <axis> {normal}: turn its <origin> instead")
    if kind == _FIXED or kind in _MULTI_DOF:
        return _Joint(name, kind, parent, child, R, p)
    axis = _numbers(element.find("axis"), "xyz", f"{where} <axis>", np.array([1.0, 0.0, 0.0]), 3)
    norm = np.linalg.norm(axis)
    if norm < 1e-12:
        raise URDFError(f"{where}: <axis> must be a non-zero 3-vector, got {axis}")
    limits = {"lower": -np.inf, "upper": np.inf, "velocity": np.inf, "effort": np.inf}
    limit = element.find("limit")
    if limit is not None:
        for key in ("velocity", "effort"):
            limits[key] = _numbers(limit, key, f"{where} <limit>")
            if limits[key] < 0.0:
                raise URDFError(f"{where} <limit>: {key} must be >= 0, got {limits[key]}")
        if kind != CONTINUOUS:
            for key in ("lower", "upper"):
                limits[key] = _numbers(limit, key, f"{where} <limit>", 0.0)  # urdfdom's default
            if limits["lower"] > limits["upper"]:
                doubt(f"{where}: <limit> lower {limits['lower']} is above upper {limits['upper']}")
    dynamics = element.find("dynamics")
    losses = {key: _numbers(dynamics, key, f"{where} <dynamics>", 0.0) for key in ("damping", "friction")}
    for key, value in losses.items():
        if value < 0.0:
            raise URDFError(f"{where} <dynamics>: {key} must be >= 0, got {value}")
    mimic = element.find("mimic")
    if mimic is not None:
        mimic = (_attribute(mimic, "joint", f"{where} <mimic>"),
                 _numbers(mimic, "multiplier", f"{where} <mimic>", 1.0),
                 _numbers(mimic, "offset", f"{where} <mimic>", 0.0))
    return _Joint(name, kind, parent, child, R, p, axis / norm, **limits, **losses, mimic=mimic)


def _topology(links, joints):
    """(root link, each link's child joints sorted by name), checked to be one tree."""
    parent_joint = {}
    children = {name: [] for name in links}
    seen_joints = set()
    for joint in joints:
        if joint.name in seen_joints:
            raise URDFError(f"joint {joint.name!r} is defined twice")
        seen_joints.add(joint.name)
        for role, name in (("parent", joint.parent), ("child", joint.child)):
            if name not in links:
                raise URDFError(f"joint {joint.name!r}: {role} link {name!r} is not defined")
        if joint.child in parent_joint:
            raise URDFError(f"link {joint.child!r} is the child of two joints "
                            f"({parent_joint[joint.child].name!r} and {joint.name!r}): a closed "
                            "chain cannot be a URDF tree; use a closed-chain mapping instead")
        parent_joint[joint.child] = joint
        children[joint.parent].append(joint)
    roots = [name for name in links if name not in parent_joint]
    if not roots:
        raise URDFError("the joints form a cycle: every link has a parent joint, so there is no root link")
    if len(roots) > 1:
        raise URDFError(f"the URDF has several root links ({', '.join(roots)}): links must form one tree")
    for joints_of_link in children.values():
        joints_of_link.sort(key=lambda j: j.name)
    return roots[0], children


def _floating_root(links, joints, root, children):
    """A floating joint from the root link, the root link's only joint, its <origin> the identity (the
    world link of a URDF written for a simulator), read as Pinocchio reads it: its child becomes the
    free-flyer root and the root link, fixed to the world, leaves. Returns (links, joints, root_joint),
    unchanged with root_joint None where there is no such joint."""
    joint = children[root][0] if len(children[root]) == 1 else None
    if (joint is None or joint.kind != _FLOATING
            or not np.allclose(joint.R, np.eye(3), rtol=0.0, atol=1e-12)
            or not np.allclose(joint.p, 0.0, rtol=0.0, atol=1e-12)):
        return links, joints, None
    return ({name: link for name, link in links.items() if name != root},
            [j for j in joints if j is not joint], FREE_FLYER)


class _Tree:
    """The flat arrays of a Model, filled depth-first (pre-order) from the root link."""

    def __init__(self, links, root, children, free_flyer=False):
        self.links = links
        self.parent_joint = {root: None}  # reached link -> the joint whose child it is
        self.joint_names, self.body_names, self.joint_types, self.parents = [], [], [], []
        self.screws, self.home_R, self.home_p, self.phi = [], [], [], []
        self.lower, self.upper, self.velocity, self.effort = [], [], [], []
        self.damping, self.friction = [], []
        self.frame_names, self.frame_body, self.frame_R, self.frame_p = [], [], [], []
        self.geometry = {}
        self.fixed_joint_frames = {}  # fixed (and multi-DoF) joint name -> its child link (the joint's frame)
        self.multi_dof = []    # (name, kind, first body) of each multi-DoF joint
        root_body = self._add_free_flyer(root) if free_flyer else -1
        self._add_link(root, root_body, np.eye(3), np.zeros(3))
        # a joint waits on the stack with its parent link's body and pose; popped, it numbers its
        # body after everything before it in pre-order, and pushes its child link's joints
        stack = [(joint, root_body, np.eye(3), np.zeros(3)) for joint in reversed(children[root])]
        while stack:
            joint, body, R_link, p_link = stack.pop()
            R, p = R_link @ joint.R, R_link @ joint.p + p_link  # the joint's frame in body's frame
            if joint.kind == _FIXED:
                self.fixed_joint_frames[joint.name] = joint.child
            elif joint.kind in _MULTI_DOF:
                body = self._add_multi_dof(joint, body, R, p)
                R, p = np.eye(3), np.zeros(3)
            else:
                body = self._add_body(joint, body, R, p)
                R, p = np.eye(3), np.zeros(3)
            self.parent_joint[joint.child] = joint.name
            self._add_link(joint.child, body, R, p)
            stack.extend((child, body, R, p) for child in reversed(children[joint.child]))

    def _add_link(self, name, body, R, p):
        """Link `name` placed at (R, p) in body `body`'s frame: a frame, its inertia and shapes."""
        self.frame_names.append(name)
        self.frame_body.append(body)
        self.frame_R.append(R)
        self.frame_p.append(p)
        link = self.links[name]
        self.geometry[name] = link.shapes
        # inertia fixed to the root does not move; a massless link may still carry rotational
        # inertia (bolt's feet), which counts as in Pinocchio
        if body >= 0 and np.any(link.phi != 0.0):
            phi_to_parent_add(R, p, link.phi, self.phi[body])

    def _add_free_flyer(self, root):
        """The free flyer's six bodies (floating_base.py): unit screws [w; v] at the root link's frame,
        the last of them the root link; its index."""
        return self._add_chain(FREE_FLYER_NAME, FLOATING_JOINT, root, -1, np.eye(3), np.zeros(3))

    def _add_multi_dof(self, joint, parent, R, p):
        """A multi-DoF joint (multi_dof.py), its frame at (R, p) in body `parent`'s frame; the index of
        its last body, its child link."""
        kind = _MULTI_DOF[joint.kind]
        self.multi_dof.append((joint.name, kind, len(self.joint_names)))
        self.fixed_joint_frames[joint.name] = joint.child
        return self._add_chain(joint.name, kind, joint.child, parent, R, p)

    def _add_chain(self, name, kind, child, parent, R, p):
        """A chain of bodies, one per coordinate of a multi-DoF joint's v (model.py): its kind's unit
        screws at the joint's frame, the first body placed at (R, p) in body `parent`'s frame, the
        last one the child link (its index is returned), the others massless."""
        for k, (screw, coordinate) in enumerate(zip(MULTI_DOF_SCREWS[kind], MULTI_DOF_COORDINATES[kind])):
            last = k == len(MULTI_DOF_SCREWS[kind]) - 1
            self.joint_names.append(f"{name}_{coordinate}")
            self.body_names.append(child if last else f"{name}_{coordinate}")
            self.joint_types.append(REVOLUTE if screw < 3 else PRISMATIC)
            self.parents.append(parent if k == 0 else len(self.joint_names) - 2)
            self.screws.append(np.eye(6)[screw])
            self.home_R.append(R if k == 0 else np.eye(3))
            self.home_p.append(p if k == 0 else np.zeros(3))
            self.phi.append(np.zeros(10))
            for limits, value in ((self.lower, -np.inf), (self.upper, np.inf), (self.velocity, np.inf),
                                  (self.effort, np.inf), (self.damping, 0.0), (self.friction, 0.0)):
                limits.append(value)
        return len(self.joint_names) - 1

    def _add_body(self, joint, parent, R, p):
        """A body moved by `joint`, its frame at (R, p) in body `parent`'s frame; its index."""
        self.joint_names.append(joint.name)
        self.body_names.append(joint.child)
        self.joint_types.append(joint.kind)
        self.parents.append(parent)
        self.screws.append(np.concatenate([np.zeros(3), joint.axis]) if joint.kind == PRISMATIC
                           else np.concatenate([joint.axis, np.zeros(3)]))
        self.home_R.append(R)
        self.home_p.append(p)
        self.phi.append(np.zeros(10))
        self.lower.append(joint.lower)
        self.upper.append(joint.upper)
        self.velocity.append(joint.velocity)
        self.effort.append(joint.effort)
        self.damping.append(joint.damping)
        self.friction.append(joint.friction)
        return len(self.joint_names) - 1


def _check_home_configuration(tree):
    """The dynamics at the home configuration (q = 0) must be finite: every link's pose and every
    body's inertial parameters in the root frame, the frame the kernels sum them in."""
    oR, op = np.zeros((len(tree.parents), 3, 3)), np.zeros((len(tree.parents), 3))
    phi_root = np.zeros(10)
    with np.errstate(all="ignore"):  # an overflow is what is looked for
        for i, parent in enumerate(tree.parents):
            R0, p0 = (np.eye(3), np.zeros(3)) if parent < 0 else (oR[parent], op[parent])
            oR[i], op[i] = R0 @ tree.home_R[i], R0 @ tree.home_p[i] + p0
        for name, body, R, p in zip(tree.frame_names, tree.frame_body, tree.frame_R, tree.frame_p):
            position = p if body < 0 else oR[body] @ p + op[body]
            if not np.all(np.isfinite(position)):
                raise URDFError(f"link {name!r} (child of joint {tree.parent_joint[name]!r}): its "
                                f"position at the home configuration, {position}, is not finite: an "
                                "<origin> on its path from the root link is too large")
        for i, name in enumerate(tree.body_names):
            phi_root[:] = 0.0
            phi_to_parent_add(oR[i], op[i], tree.phi[i], phi_root)
            if not np.all(np.isfinite(phi_root)):
                raise URDFError(f"link {name!r} (child of joint {tree.joint_names[i]!r}): its inertia "
                                "in the root frame at the home configuration (links fixed to it "
                                "included) is not finite, nor are the dynamics: an <origin> on its "
                                "path from the root link or an <inertial> is too large")


def _mimic_coupling(joint_names, mimic_of):
    """q_tree = coupling @ q + offset, q the independent joints, following chains of mimics."""
    independent = [n for n, m in zip(joint_names, mimic_of) if m is None]
    column = {n: c for c, n in enumerate(independent)}
    index = {n: k for k, n in enumerate(joint_names)}
    coupling = np.zeros((len(joint_names), len(independent)))
    offset = np.zeros(len(joint_names))
    for k in range(len(joint_names)):
        scale, j = 1.0, k  # q_k = scale * q_j + offset[k] while following the leaders
        for _ in joint_names:
            if mimic_of[j] is None:
                break
            leader, multiplier, shift = mimic_of[j]  # q_j = multiplier * q_leader + shift
            offset[k] += scale * shift
            scale *= multiplier
            j = index[leader]
        else:
            raise URDFError(f"mimic joints form a cycle through {joint_names[k]!r}")
        coupling[k, column[joint_names[j]]] = scale
    return coupling, offset
