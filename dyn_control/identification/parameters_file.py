"""The identified parameters on disk: a YAML file the nodes load (`model.parameters_file`) and
`load_parameters` applies, and optionally a URDF with the identified inertials.

    robot: arm7
    inertial:      # per link, in the link's frame: m [kg], h = m c [kg m], I about the link origin [kg m^2]
      arm7_link1: {m: 4.97, hx: 0.0193, hy: 0.0103, hz: -0.237, Ixx: 0.715, ..., Iyz: 0.0198}
    joints:        # armature [kg m^2], viscous [N m s/rad], coulomb [N m]
      arm7_joint1: {armature: 0.1, viscous: 1.0, coulomb: 2.0}

A link's parameters include those of the fixed links merged into it (a tool on the flange). Links
and joints left out keep the model's values.
"""
import xml.etree.ElementTree as ET

import numpy as np
import yaml

from ..model import JOINT_PARAMETER_NAMES, PARAMETER_NAMES


def parameters_document(model, joint_terms=True):
    """The YAML document (a dict) of the model's parameters."""
    document = {"robot": model.name,
                "inertial": {body: {name: float(x) for name, x in zip(PARAMETER_NAMES, phi)}
                             for body, phi in zip(model.body_names, model.phi)}}
    if joint_terms:
        terms = model.joint_parameters()
        document["joints"] = {joint: {name: float(x) for name, x in zip(JOINT_PARAMETER_NAMES, row)}
                              for joint, row in zip(model.joint_names, terms)}
    return document


def write_parameters(path, model, comment="", joint_terms=True):
    """Write the model's inertial parameters (and joint terms) to a YAML file at path."""
    header = "".join(f"# {line}\n" for line in comment.splitlines())
    with open(path, "w") as f:
        f.write(header + "# inertial: per link, in its frame: [m, hx, hy, hz] = mass and first moment m c, "
                "[Ixx .. Iyz] about the link origin\n")
        yaml.safe_dump(parameters_document(model, joint_terms), f, sort_keys=False, width=200, default_flow_style=None)


def _entries(document, key, names, fields, path, kind):
    section = document.get(key) or {}
    if not isinstance(section, dict):
        raise ValueError(f"{path}: `{key}` must map {kind} names to their parameters")
    unknown = [name for name in section if name not in names]
    if unknown:
        raise ValueError(f"{path}: unknown {kind}s {', '.join(map(str, unknown))} (the model's: {', '.join(names)})")
    values = {}
    for name, entry in section.items():
        missing = [f for f in fields if not isinstance(entry, dict) or f not in entry]
        if missing:
            raise ValueError(f"{path}: {kind} {name!r} lacks {', '.join(missing)}")
        try:
            row = np.array([float(entry[f]) for f in fields])
        except (TypeError, ValueError):
            raise ValueError(f"{path}: {kind} {name!r}: parameters must be numbers") from None
        if not np.all(np.isfinite(row)):
            raise ValueError(f"{path}: {kind} {name!r}: parameters must be finite")
        values[names.index(name)] = row
    return values


def load_parameters(model, path):
    """A new Model with the parameters of the YAML file at `path` (module docstring; e.g. from
    `dyn-control identify`): each listed link's inertial parameters and each listed joint's
    armature, viscous and Coulomb friction. ValueError naming the file and the entry for an
    unreadable file, another robot, unknown links or joints, missing or non-numeric values and
    physically inconsistent bodies."""
    try:
        with open(path) as f:
            document = yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as error:
        raise ValueError(f"cannot read parameters file {path!r}: {error}") from None
    if not isinstance(document, dict):
        raise ValueError(f"{path}: not a parameters file (expected `robot`, `inertial`, `joints`)")
    robot = document.get("robot")
    if robot is not None and robot != model.name:
        raise ValueError(f"{path}: parameters of robot {robot!r}, the model is {model.name!r}")
    bodies = _entries(document, "inertial", list(model.body_names), PARAMETER_NAMES, path, "link")
    joints = _entries(document, "joints", list(model.joint_names), JOINT_PARAMETER_NAMES, path, "joint")
    phi = model.phi.copy()
    for i, row in bodies.items():
        phi[i] = row
    identified = model.with_inertial_parameters(phi)
    if joints:
        terms = model.joint_parameters()
        for j, row in joints.items():
            terms[j] = row
        if np.any(terms < 0.0):
            raise ValueError(f"{path}: armature and friction must be non-negative")
        identified = identified.with_joint_dynamics(armature=terms[:, 0], viscous=terms[:, 1], coulomb=terms[:, 2])
    return identified


def _set_inertial(link, phi):
    """link's <inertial> <- phi (in the link frame): mass, centre of mass, inertia about it."""
    for old in link.findall("inertial"):
        link.remove(old)
    m, h = phi[0], phi[1:4]
    c = h / m
    I = np.array([[phi[4], phi[7], phi[8]], [phi[7], phi[5], phi[9]], [phi[8], phi[9], phi[6]]])
    I_c = I - m * (c @ c * np.eye(3) - np.outer(c, c))
    inertial = ET.SubElement(link, "inertial")
    ET.SubElement(inertial, "origin", xyz=" ".join(f"{x:.9g}" for x in c), rpy="0 0 0")
    ET.SubElement(inertial, "mass", value=f"{m:.9g}")
    ET.SubElement(inertial, "inertia", ixx=f"{I_c[0, 0]:.9g}", ixy=f"{I_c[0, 1]:.9g}", ixz=f"{I_c[0, 2]:.9g}",
                  iyy=f"{I_c[1, 1]:.9g}", iyz=f"{I_c[1, 2]:.9g}", izz=f"{I_c[2, 2]:.9g}")


def write_urdf(model, urdf_path, out_path, joint_terms=True):
    """A copy of the URDF at urdf_path with the model's inertials: each moving body's link gets the
    body's parameters (merged fixed links included, so those links lose their own <inertial>), and
    with joint_terms each joint's <dynamics damping friction> the viscous and Coulomb friction
    (armature has no URDF tag)."""
    tree = ET.parse(urdf_path, ET.XMLParser(target=ET.TreeBuilder(insert_comments=True)))
    root = tree.getroot()
    links = {link.get("name"): link for link in root.findall("link")}
    for i, body in enumerate(model.body_names):
        if body not in links:
            raise ValueError(f"{urdf_path}: no link {body!r} (the model's body {i})")
        _set_inertial(links[body], model.phi[i])
    for k, frame in enumerate(model.frame_names):
        body = model.frame_body[k]
        if body >= 0 and frame != model.body_names[body] and frame in links:
            for old in links[frame].findall("inertial"):
                links[frame].remove(old)
    if joint_terms:
        joints = {joint.get("name"): joint for joint in root.findall("joint")}
        for j, name in enumerate(model.joint_names):
            dynamics = joints[name].find("dynamics")
            if dynamics is None:
                dynamics = ET.SubElement(joints[name], "dynamics")
            dynamics.set("damping", f"{model.viscous_friction[j]:.9g}")
            dynamics.set("friction", f"{model.coulomb_friction[j]:.9g}")
    ET.indent(tree)
    tree.write(out_path, encoding="utf-8", xml_declaration=True)
