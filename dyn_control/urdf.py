"""URDF -> Model: the one place a URDF is read.

The XML is first reduced to what matters for kinematics, dynamics and geometry (links with their
inertial, visual and collision elements, joints), so that real-world files with transmissions,
Gazebo tags, textured materials or a missing robot name still load; urdf_parser_py then parses
what is left. The tree is walked depth-first from the root link, siblings ordered by joint name
(the order urdfdom, and so Pinocchio, gives them); fixed joints are merged into their parent body
and their links stay addressable as frames.
"""
import os
import xml.etree.ElementTree as ET

import numpy as np

from .model import CONTINUOUS, PRISMATIC, REVOLUTE, Model
from .spatial import phi_to_parent_add


class URDFError(ValueError):
    """A URDF that cannot become a Model; the message names the element at fault."""


_KEPT_LINK_CHILDREN = {"inertial", "visual", "collision"}
_KEPT_JOINT_CHILDREN = {"origin", "parent", "child", "axis", "limit", "dynamics", "mimic",
                        "safety_controller", "calibration"}
_INERTIA_ROUNDOFF = 1e-7  # kg m^2: a more negative principal moment is an error
_MOVING_TYPES = {"revolute": REVOLUTE, "continuous": CONTINUOUS, "prismatic": PRISMATIC}


def load_urdf(source, package_dirs=None, mimic=False):
    """Build a Model from a URDF given as a file path, an XML string or bytes.

    package_dirs: folders searched for `package://` URIs (before the ament index and
    ROS_PACKAGE_PATH). mimic: False loads mimic joints as independent joints (as Pinocchio does);
    True makes each follow its leader, q = multiplier * q_leader + offset.
    """
    xml_bytes, source_dir = _read_source(source)
    robot_xml = _reduce_to_dynamics(xml_bytes)
    robot = _parse(robot_xml)
    if isinstance(package_dirs, (str, os.PathLike)):
        package_dirs = [package_dirs]
    package_dirs = [os.fspath(d) for d in (package_dirs or [])]
    return _build_model(robot, source_dir, package_dirs, mimic)


def _read_source(source):
    if isinstance(source, (bytes, bytearray)):
        return bytes(source), None
    if isinstance(source, os.PathLike) or (isinstance(source, str) and not source.lstrip().startswith("<")):
        path = os.fspath(source)
        if not os.path.isfile(path):
            raise URDFError(f"URDF file not found: {path!r}")
        with open(path, "rb") as f:
            return f.read(), os.path.dirname(os.path.abspath(path))
    if isinstance(source, str):
        # ElementTree reads an encoding declaration only from bytes
        return source.encode("utf-8") if "encoding" not in source[:200] else _str_with_declaration(source), None
    raise URDFError(f"urdf source must be a path, an XML string or bytes, not {type(source).__name__}")


def _str_with_declaration(text):
    head, sep, rest = text.partition("?>")
    if text.lstrip().startswith("<?xml") and sep:
        return rest.encode("utf-8")  # the declaration no longer applies to re-encoded text
    return text.encode("utf-8")


def _reduce_to_dynamics(xml_bytes):
    try:
        root = ET.fromstring(xml_bytes)
    except ET.ParseError as err:
        raise URDFError(f"URDF is not well-formed XML: {err}") from None
    if root.tag != "robot":
        raise URDFError(f"URDF root element must be <robot>, found <{root.tag}>")
    root.attrib.setdefault("name", "robot")
    for child in list(root):
        if child.tag not in ("link", "joint"):
            root.remove(child)
    for link in root.findall("link"):
        for child in list(link):
            if child.tag not in _KEPT_LINK_CHILDREN:
                link.remove(child)
        for shape in link.findall("visual") + link.findall("collision"):
            for child in list(shape):
                if child.tag not in ("origin", "geometry"):
                    shape.remove(child)
    for joint in root.findall("joint"):
        for child in list(joint):
            if child.tag not in _KEPT_JOINT_CHILDREN:
                joint.remove(child)
    return ET.tostring(root)


def _parse(robot_xml):
    from urdf_parser_py import urdf as urdf_parser
    from urdf_parser_py.xml_reflection import core

    warnings = []
    previous = core.on_error
    core.on_error = warnings.append  # unknown attributes: not our concern, keep stderr clean
    try:
        return urdf_parser.URDF.from_xml_string(robot_xml)
    except Exception as err:  # urdf_parser_py raises its own ParseError and plain Exceptions
        raise URDFError(f"URDF parse error: {err}") from None
    finally:
        core.on_error = previous


def _rpy_matrix(rpy):
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return np.array([
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ])


def _pose(origin, where):
    if origin is None:
        return np.eye(3), np.zeros(3)
    xyz = np.zeros(3) if origin.xyz is None else np.asarray(origin.xyz, dtype=float)
    rpy = np.zeros(3) if origin.rpy is None else np.asarray(origin.rpy, dtype=float)
    if xyz.shape != (3,) or rpy.shape != (3,) or not (np.all(np.isfinite(xyz)) and np.all(np.isfinite(rpy))):
        raise URDFError(f"{where}: <origin> needs 3 finite xyz and rpy values")
    return _rpy_matrix(rpy), xyz


def _link_inertia(link):
    """phi of a link in its own frame, checked: mass >= 0, inertia positive semi-definite."""
    inertial = link.inertial
    if inertial is None or inertial.mass is None:
        return np.zeros(10)
    where = f"link {link.name!r} <inertial>"
    mass = float(inertial.mass)
    if not np.isfinite(mass) or mass < 0.0:
        raise URDFError(f"{where}: mass must be finite and non-negative, got {mass}")
    I = np.zeros((3, 3))
    if inertial.inertia is not None:
        t = inertial.inertia
        I = np.array([[t.ixx, t.ixy, t.ixz], [t.ixy, t.iyy, t.iyz], [t.ixz, t.iyz, t.izz]], dtype=float)
    if not np.all(np.isfinite(I)):
        raise URDFError(f"{where}: inertia entries must be finite")
    eig = np.linalg.eigvalsh(I)
    # CAD exports leave round-off of a few 1e-8 kg m^2 (tiago's antennas): tolerated
    if eig[0] < -(_INERTIA_ROUNDOFF + 1e-6 * abs(eig[-1])):
        raise URDFError(f"{where}: inertia tensor is not positive semi-definite "
                        f"(eigenvalues {np.array2string(eig, precision=4)})")
    R, c = _pose(inertial.origin, where)
    I_c = R @ I @ R.T
    I_o = I_c + mass * (c @ c * np.eye(3) - np.outer(c, c))  # parallel axis to the link origin
    return np.array([mass, *(mass * c), I_o[0, 0], I_o[1, 1], I_o[2, 2], I_o[0, 1], I_o[0, 2], I_o[1, 2]])


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


def _geometry(link, package_dirs, base_dir):
    shapes = []
    for kind, elements in (("collision", link.collisions), ("visual", link.visuals)):
        for element in elements or []:
            geometry = element.geometry
            if geometry is None:
                continue
            R, p = _pose(element.origin, f"link {link.name!r} <{kind}>")
            shape = {"kind": kind, "type": type(geometry).__name__.lower(), "R": R, "p": p}
            if shape["type"] == "mesh":
                shape["uri"] = geometry.filename
                shape["path"] = resolve_uri(geometry.filename, package_dirs, base_dir)
                shape["scale"] = np.ones(3) if geometry.scale is None else np.broadcast_to(
                    np.asarray(geometry.scale, dtype=float), (3,)).copy()
            shapes.append(shape)
    return shapes


def _build_model(robot, source_dir, package_dirs, mimic):
    links = {}
    for link in robot.links:
        if link.name in links:
            raise URDFError(f"link {link.name!r} is defined twice")
        links[link.name] = link
    if not links:
        raise URDFError(f"robot {robot.name!r} has no <link>")
    parent_joint = {}
    children = {name: [] for name in links}
    seen_joints = set()
    for joint in robot.joints:
        if joint.name in seen_joints:
            raise URDFError(f"joint {joint.name!r} is defined twice")
        seen_joints.add(joint.name)
        for role, name in (("parent", joint.parent), ("child", joint.child)):
            if name not in links:
                raise URDFError(f"joint {joint.name!r}: {role} link {name!r} is not defined")
        if joint.type not in _MOVING_TYPES and joint.type != "fixed":
            raise URDFError(f"joint {joint.name!r}: type {joint.type!r} is not supported "
                            "(revolute, continuous, prismatic, fixed)")
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
    for joints in children.values():
        joints.sort(key=lambda j: j.name)

    tree = _TreeBuilder(links, children, package_dirs, source_dir)
    tree.walk(roots[0])
    unreached = [name for name in links if name not in tree.reached]
    if unreached:
        raise URDFError(f"links {', '.join(unreached)} are not connected to the root link "
                        f"{roots[0]!r}: their joints form a cycle")

    coupling = coupling_offset = None
    mimic_of = [None] * len(tree.joint_names)
    joint_by_name = {j.name: j for j in robot.joints}
    for k, name in enumerate(tree.joint_names):
        m = joint_by_name[name].mimic
        if m is not None:
            if m.joint not in tree.joint_names:
                if not mimic:  # independent joints: a dangling <mimic> is only a comment
                    continue
                raise URDFError(f"joint {name!r} mimics {m.joint!r}, which is not a moving joint")
            mimic_of[k] = (m.joint, 1.0 if m.multiplier is None else float(m.multiplier),
                           0.0 if m.offset is None else float(m.offset))
    if mimic and any(mimic_of):
        coupling, coupling_offset = _mimic_coupling(tree.joint_names, mimic_of)
    return Model(
        name=robot.name, root_name=roots[0], joint_names=tree.joint_names,
        body_names=tree.body_names, joint_types=tree.joint_types, parents=tree.parents,
        screw_axes=np.reshape(tree.screws, (-1, 6)), home_R=np.reshape(tree.home_R, (-1, 3, 3)),
        home_p=np.reshape(tree.home_p, (-1, 3)),
        inertial_parameters=np.reshape(tree.phi, (-1, 10)),
        lower=tree.lower, upper=tree.upper, velocity_limit=tree.velocity, effort_limit=tree.effort,
        damping=tree.damping, friction=tree.friction, frame_names=tree.frame_names,
        frame_body=tree.frame_body, frame_R=np.reshape(tree.frame_R, (-1, 3, 3)),
        frame_p=np.reshape(tree.frame_p, (-1, 3)), coupling=coupling,
        coupling_offset=coupling_offset, mimic_of=[m[0] if m else None for m in mimic_of],
        link_geometry=tree.geometry, source_dir=source_dir, frame_aliases=tree.fixed_joint_frames)


def _mimic_coupling(joint_names, mimic_of):
    """q_tree = coupling @ q + offset, q the independent joints, following chains of mimics."""
    independent = [n for n, m in zip(joint_names, mimic_of) if m is None]
    column = {n: c for c, n in enumerate(independent)}
    index = {n: k for k, n in enumerate(joint_names)}
    coupling = np.zeros((len(joint_names), len(independent)))
    offset = np.zeros(len(joint_names))

    def resolve(k, depth=0):
        if depth > len(joint_names):
            raise URDFError(f"mimic joints form a cycle through {joint_names[k]!r}")
        if mimic_of[k] is None:
            row = np.zeros(len(independent))
            row[column[joint_names[k]]] = 1.0
            return row, 0.0
        leader, multiplier, off = mimic_of[k]
        row, base = resolve(index[leader], depth + 1)
        return multiplier * row, multiplier * base + off

    for k in range(len(joint_names)):
        coupling[k], offset[k] = resolve(k)
    return coupling, offset


class _TreeBuilder:
    """Depth-first walk producing the flat arrays of a Model."""

    def __init__(self, links, children, package_dirs, source_dir):
        self.links, self.children = links, children
        self.package_dirs, self.source_dir = package_dirs, source_dir
        self.reached = set()
        self.joint_names, self.body_names, self.joint_types, self.parents = [], [], [], []
        self.screws, self.home_R, self.home_p, self.phi = [], [], [], []
        self.lower, self.upper, self.velocity, self.effort = [], [], [], []
        self.damping, self.friction = [], []
        self.frame_names, self.frame_body, self.frame_R, self.frame_p = [], [], [], []
        self.geometry = {}
        self.fixed_joint_frames = {}  # fixed joint name -> its child link (the joint's frame)

    def walk(self, root):
        self._visit(root, -1, np.eye(3), np.zeros(3))

    def _add_link(self, name, body, R, p):
        """Link `name` placed at (R, p) in body `body`'s frame: a frame, its inertia and shapes."""
        self.reached.add(name)
        self.frame_names.append(name)
        self.frame_body.append(body)
        self.frame_R.append(R)
        self.frame_p.append(p)
        link = self.links[name]
        self.geometry[name] = _geometry(link, self.package_dirs, self.source_dir)
        phi = _link_inertia(link)
        # inertia fixed to the root does not move; a massless link may still carry rotational
        # inertia (bolt's feet), which counts as in Pinocchio
        if body >= 0 and np.any(phi != 0.0):
            phi_to_parent_add(R, p, phi, self.phi[body])

    def _visit(self, name, body, R_link, p_link):
        """Link `name` at (R_link, p_link) in body `body`'s frame, then its subtree, pre-order."""
        self._add_link(name, body, R_link, p_link)
        for joint in self.children[name]:
            child_body, R_child, p_child = self._joint(joint, body, R_link, p_link)
            self._visit(joint.child, child_body, R_child, p_child)

    def _joint(self, joint, body, R_link, p_link):
        where = f"joint {joint.name!r}"
        R_o, p_o = _pose(joint.origin, where)
        R = R_link @ R_o
        p = R_link @ p_o + p_link
        if joint.type == "fixed":
            self.fixed_joint_frames[joint.name] = joint.child
            return body, R, p
        axis = np.array([1.0, 0.0, 0.0]) if joint.axis is None else np.asarray(joint.axis, dtype=float)
        norm = np.linalg.norm(axis) if axis.shape == (3,) else 0.0
        if not np.isfinite(norm) or norm < 1e-12:
            raise URDFError(f"{where}: <axis> must be a non-zero 3-vector, got {joint.axis!r}")
        axis = axis / norm
        kind = _MOVING_TYPES[joint.type]
        limit = joint.limit
        lower, upper = -np.inf, np.inf
        velocity = effort = np.inf
        if limit is not None:
            if kind != CONTINUOUS:
                lower = -np.inf if limit.lower is None else float(limit.lower)
                upper = np.inf if limit.upper is None else float(limit.upper)
            velocity = np.inf if limit.velocity is None else abs(float(limit.velocity))
            effort = np.inf if limit.effort is None else abs(float(limit.effort))
        if lower > upper:
            raise URDFError(f"{where}: <limit> lower {lower} is above upper {upper}")
        dynamics = joint.dynamics
        new_body = len(self.joint_names)
        self.joint_names.append(joint.name)
        self.body_names.append(joint.child)
        self.joint_types.append(kind)
        self.parents.append(body)
        self.screws.append(np.concatenate([np.zeros(3), axis]) if kind == PRISMATIC
                           else np.concatenate([axis, np.zeros(3)]))
        self.home_R.append(R)
        self.home_p.append(p)
        self.phi.append(np.zeros(10))
        self.lower.append(lower)
        self.upper.append(upper)
        self.velocity.append(velocity)
        self.effort.append(effort)
        self.damping.append(0.0 if dynamics is None or dynamics.damping is None else float(dynamics.damping))
        self.friction.append(0.0 if dynamics is None or dynamics.friction is None else float(dynamics.friction))
        return new_body, np.eye(3), np.zeros(3)
