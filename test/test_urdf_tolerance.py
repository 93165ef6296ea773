"""Issue 14: a URDF that urdfdom loads, loads. What dynamics does not need never blocks a model;
a physically doubtful file loads with `model.warnings` naming the element (strict=True refuses it
with the same message); an impossible value is refused with a URDFError naming the element.

Oracles: Pinocchio's reading (urdfdom) of the same file, or of the clean file the junk was added to;
the XML itself; float64 arithmetic written out in the test.
"""
import re

import numpy as np
import pinocchio as pin
import pytest

import dyn_control as dc
from oracles import all_robot_urdfs
from test_urdf import FIXED_CHAIN, assert_matches_pinocchio, joint, link, robot

pytestmark = pytest.mark.kernels


def with_extra(xml, element, extra):
    """`extra` inserted as the last child of the element that opens with `element`."""
    start = xml.index(element)
    closing = "</link>" if element.startswith("<link") else "</joint>"
    end = xml.index(closing, start)
    return xml[:end] + extra + xml[end:]


def replaced(xml, old, new):
    assert xml.count(old) == 1, old
    return xml.replace(old, new)


def assert_warnings(model, *patterns):
    """model.warnings holds one message per pattern, in order, each naming its element."""
    assert len(model.warnings) == len(patterns), model.warnings
    for message, pattern in zip(model.warnings, patterns):
        assert isinstance(message, str) and re.search(pattern, message), (pattern, message)


# ----------------------------------------------------------------------------------------------
# What dynamics does not need: visuals, collisions, calibration, safety controllers. A shape that
# cannot be read is left out with a warning (urdfdom logs an error and loads the link too).

L1 = '<link name="l1">'
J1 = '<joint name="j1" type="revolute">'
NOT_NEEDED = {
    "plane visual": (with_extra(FIXED_CHAIN, L1, '<visual><geometry><plane normal="0 0 1"/></geometry></visual>'),
                     r"^link 'l1' <visual>: its <geometry> holds <plane>"),
    "capsule collision": (with_extra(FIXED_CHAIN, L1, '<collision><geometry><capsule radius="0.1" length="0.3"/>'
                                                      '</geometry></collision>'),
                          r"^link 'l1' <collision>: its <geometry> holds <capsule>"),
    "empty geometry": (with_extra(FIXED_CHAIN, L1, "<visual><geometry/></visual>"),
                       r"^link 'l1' <visual>: its <geometry> holds nothing"),
    "visual without geometry": (with_extra(FIXED_CHAIN, L1, '<visual><origin xyz="0 0 1"/></visual>'),
                                r"^link 'l1' <visual>: its <geometry> holds nothing"),
    "mesh without filename": (with_extra(FIXED_CHAIN, L1, "<collision><geometry><mesh/></geometry></collision>"),
                              r"^link 'l1' <collision>: <mesh> has no filename"),
    "visual origin not numbers": (
        with_extra(FIXED_CHAIN, L1, '<visual><origin xyz="a b c"/><geometry><box size="1 1 1"/></geometry></visual>'),
        r"^link 'l1' <visual> <origin>: xyz='a b c' must be 3 finite numbers"),
    "mesh scale of two numbers": (
        with_extra(FIXED_CHAIN, L1, '<visual><geometry><mesh filename="part.stl" scale="1 2"/></geometry></visual>'),
        r"^link 'l1' <visual> <mesh>: scale='1 2' must be 3 finite numbers"),
    "geometry with two shapes": (  # urdfdom reads the first
        with_extra(FIXED_CHAIN, L1, '<collision><geometry><box size="1 1 1"/><sphere radius="1"/></geometry>'
                                    '</collision>'), None),
    "box of junk size": (with_extra(FIXED_CHAIN, L1, '<visual><geometry><box size="big"/></geometry></visual>'), None),
    "junk calibration and safety controller": (
        with_extra(FIXED_CHAIN, J1, '<calibration rising="soon"/><safety_controller k_velocity="fast" '
                                    'soft_lower_limit="nan"/>'), None),
    "unknown elements and attributes in a joint": (
        with_extra(FIXED_CHAIN, J1, '<hardwareInterface>effort</hardwareInterface><origin_note x="?"/>'), None),
}


@pytest.mark.parametrize("case", NOT_NEEDED)
def test_what_dynamics_does_not_need_never_blocks_a_load(case):
    xml, warning = NOT_NEEDED[case]
    model = dc.load_urdf(xml)
    assert_matches_pinocchio(model, pin.buildModelFromXML(FIXED_CHAIN))
    if warning is None:
        assert model.warnings == ()
        assert dc.load_urdf(xml, strict=True).joint_names == model.joint_names
    else:
        assert_warnings(model, warning + r".*; the (visual|collision) is left out$")
        with pytest.raises(dc.URDFError) as caught:
            dc.load_urdf(xml, strict=True)
        assert str(caught.value) == model.warnings[0]


def test_unreadable_shapes_are_left_out_and_the_readable_ones_kept():
    xml = with_extra(FIXED_CHAIN, L1, '<collision><geometry><box size="1 1 1"/><sphere radius="1"/></geometry>'
                                      '</collision><visual><geometry><plane/></geometry></visual>'
                                      '<visual><origin xyz="0.1 0.2 0.3"/><geometry><mesh filename="a.stl"/>'
                                      '</geometry></visual>')
    shapes = dc.load_urdf(xml).link_geometry["l1"]
    assert [(s["kind"], s["type"]) for s in shapes] == [("collision", "box"), ("visual", "mesh")]
    np.testing.assert_array_equal(shapes[1]["p"], [0.1, 0.2, 0.3])
    np.testing.assert_array_equal(shapes[1]["scale"], [1.0, 1.0, 1.0])


LATIN1_COMMENT = "<!-- Entwurf: J\u00fcrgen M\u00fcller, 20 \u00b0C -->"
DECLARATION = '<?xml version="1.0" encoding="ISO-8859-1"?>'


@pytest.mark.parametrize("before", ["\n   ", "<!-- generated by a tool -->\n", " \t<!-- a -->\n<!-- b -->\n"])
def test_whitespace_and_comments_before_the_declaration(before, tmp_path):
    """urdfdom reads them (expat alone refuses: "XML or text declaration not at start of entity");
    the declared encoding still applies to bytes and files."""
    text = before + DECLARATION + "\n" + LATIN1_COMMENT + FIXED_CHAIN
    path = tmp_path / "robot.urdf"
    path.write_bytes(text.encode("latin-1"))
    pin_model = pin.buildModelFromXML(FIXED_CHAIN)
    for source in (text, text.encode("latin-1"), path, str(path)):
        model = dc.load_urdf(source)
        assert model.warnings == ()
        assert_matches_pinocchio(model, pin_model)


# ----------------------------------------------------------------------------------------------
# Physically doubtful: loaded with a warning (Pinocchio loads them too, and both libraries compute
# the same dynamics), refused with strict=True

DOUBTFUL = {
    "limits reversed": (
        replaced(FIXED_CHAIN, '<axis xyz="0.6 0 0.8"/><limit lower="-2" upper="2"',
                 '<axis xyz="0.6 0 0.8"/><limit lower="1.5" upper="-0.5"'),
        r"^joint 'j2': <limit> lower 1.5 is above upper -0.5$"),
    "inertia not positive semi-definite": (
        robot(link("base"), link("l1"), link("l2").replace('ixx="0.02"', 'ixx="-0.05"'),
              joint("j1", "revolute", "base", "l1"), joint("j2", "revolute", "l1", "l2", axis="0 1 0")),
        r"^link 'l2' <inertial>: inertia tensor is not positive semi-definite \(eigenvalues \[-0\.05"),
    "inertia breaks the triangle inequality": (  # principal moments 0.01, 0.02, 0.04: 0.04 > 0.01 + 0.02
        robot(link("base"), link("l1").replace('ixx="0.02" iyy="0.03" izz="0.04" ixy="0.001" ixz="0.002" iyz="0.003"',
                                              'ixx="0.01" iyy="0.02" izz="0.04" ixy="0" ixz="0" iyz="0"'),
              link("l2"), joint("j1", "revolute", "base", "l1"), joint("j2", "revolute", "l1", "l2", axis="0 1 0")),
        r"^link 'l1' <inertial>: inertia tensor breaks the triangle inequality.*\[0\.01 +0\.02 +0\.04\]"),
    "massless moving leaf": (
        robot(link("base"), link("l1"), '<link name="finger"/>', '<link name="pad"/>',
              joint("j1", "revolute", "base", "l1"), joint("finger_joint", "prismatic", "l1", "finger", axis="1 0 0"),
              joint("pad_joint", "fixed", "finger", "pad")),
        r"^link 'finger', moved by joint 'finger_joint', has zero mass"),
}


@pytest.mark.parametrize("case", DOUBTFUL)
def test_doubtful_file_loads_with_a_warning_and_strict_refuses_it(case):
    xml, warning = DOUBTFUL[case]
    model = dc.load_urdf(xml)
    assert_warnings(model, warning)
    assert_matches_pinocchio(model, pin.buildModelFromXML(xml))
    with pytest.raises(dc.URDFError) as caught:
        dc.load_urdf(xml, strict=True)
    assert str(caught.value) == model.warnings[0]


def test_a_massless_leaf_with_a_massive_link_fixed_to_it_is_not_doubtful():
    xml = DOUBTFUL["massless moving leaf"][0].replace('<link name="pad"/>', link("pad", mass=0.2))
    model = dc.load_urdf(xml, strict=True)
    assert model.warnings == ()
    assert_matches_pinocchio(model, pin.buildModelFromXML(xml))


def test_warnings_accumulate_in_document_order():
    xml = robot(link("base"), link("l1").replace('ixx="0.02"', 'ixx="-0.05"'),
                '<link name="l2"><visual><geometry><plane/></geometry></visual></link>',
                joint("j1", "revolute", "base", "l1").replace('lower="-2" upper="2"', 'lower="2" upper="-2"'),
                joint("j2", "continuous", "l1", "l2"))
    model = dc.load_urdf(xml)
    assert_warnings(model, r"^link 'l1' <inertial>: .*positive semi-definite", r"^link 'l2' <visual>:",
                    r"^joint 'j1': <limit> lower 2\.0 is above upper -2\.0", r"^link 'l2', moved by joint 'j2'")
    assert model.with_gravity([0.0, 0.0, -1.62]).warnings == model.warnings


# ----------------------------------------------------------------------------------------------
# Impossible values: refused whatever strict says, the message naming the element

def chain_with(j2_extra="", j2_limit='<limit lower="-2" upper="2" effort="10" velocity="1"/>', j1_origin="0.1 0 0.2",
               l2=None):
    """base -j1-> l1 -j2-> l2, with j2's limit and extra children and j1's origin replaced."""
    j2 = joint("j2", "revolute", "l1", "l2", axis="0 1 0", extra=j2_extra).replace(
        '<limit lower="-2" upper="2" effort="10" velocity="1"/>', j2_limit)
    j1 = joint("j1", "revolute", "base", "l1").replace('xyz="0.1 0 0.2"', f'xyz="{j1_origin}"')
    return robot(link("base"), link("l1"), l2 or link("l2"), j1, j2)


def limit(**attributes):
    values = dict(lower="-2", upper="2", effort="10", velocity="1") | attributes
    return "<limit " + " ".join(f'{k}="{v}"' for k, v in values.items() if v is not None) + "/>"


IMPOSSIBLE = {
    **{f"effort {v}": (chain_with(j2_limit=limit(effort=v)), rf"^joint 'j2' <limit>: effort")
       for v in ("nan", "-5", "-inf", "inf", "NaN", "ten")},
    **{f"velocity {v}": (chain_with(j2_limit=limit(velocity=v)), rf"^joint 'j2' <limit>: velocity")
       for v in ("nan", "-0.1", "-inf")},
    "lower nan": (chain_with(j2_limit=limit(lower="nan")), r"^joint 'j2' <limit>: lower='nan'"),
    "effort missing": (chain_with(j2_limit=limit(effort=None)), r"^joint 'j2' <limit>: effort is missing"),
    **{f"{key} {v}": (chain_with(j2_extra=f'<dynamics {key}="{v}"/>'), rf"^joint 'j2' <dynamics>: {key}")
       for key in ("damping", "friction") for v in ("-0.5", "nan", "inf")},
    "mimic multiplier nan": (chain_with(j2_extra='<mimic joint="j1" multiplier="nan"/>'),
                             r"^joint 'j2' <mimic>: multiplier='nan'"),
    "mimic of no joint": (chain_with(j2_extra="<mimic/>"), r"^joint 'j2' <mimic>: joint is missing"),
    "origin nan": (chain_with(j1_origin="nan 0 0"), r"^joint 'j1' <origin>: xyz='nan 0 0' must be 3 finite numbers"),
    "origin of two numbers": (chain_with(j1_origin="1 0"), r"^joint 'j1' <origin>: xyz='1 0'"),
    "axis inf": (chain_with().replace('<axis xyz="0 1 0"/>', '<axis xyz="0 inf 0"/>'), r"^joint 'j2' <axis>: xyz"),
    "mass nan": (chain_with(l2=link("l2", mass="nan")), r"^link 'l2' <inertial> <mass>: value='nan'"),
    "mass missing": (chain_with(l2=link("l2").replace('<mass value="1.0"/>', "")),
                     r"^link 'l2' <inertial> <mass>: value is missing"),
    "inertia entry missing": (chain_with(l2=link("l2").replace(' ixy="0.001"', "")),
                              r"^link 'l2' <inertial> <inertia>: ixy is missing"),
    "inertia entry -inf": (chain_with(l2=link("l2").replace('iyy="0.03"', 'iyy="-inf"')),
                           r"^link 'l2' <inertial> <inertia>: iyy='-inf'"),
    "unknown joint type": (chain_with().replace('name="j2" type="revolute"', 'name="j2" type="helical"'),
                           r"^joint 'j2': type 'helical' is not supported"),
    "joint without type": (chain_with().replace('name="j2" type="revolute"', 'name="j2"'),
                           r"^joint 'j2': type None is not supported"),
    "joint without parent": (chain_with().replace('<parent link="l1"/>', ""), r"^joint 'j2' <parent>: link is missing"),
    "link without name": (chain_with().replace('<link name="l2">', "<link>"), r"^a <link>: name is missing"),
}


@pytest.mark.parametrize("case", IMPOSSIBLE)
def test_impossible_value_is_refused_naming_the_element(case):
    xml, words = IMPOSSIBLE[case]
    for strict in (False, True):
        with pytest.raises(dc.URDFError, match=words) as caught:
            dc.load_urdf(xml, strict=strict)
        assert isinstance(caught.value, ValueError)


def test_origins_so_large_that_the_home_dynamics_overflow():
    """The kernels sum the bodies' inertias in the root frame, where a body of mass m at distance d
    from the root has a moment of inertia m d^2: refused where that overflows float64, or where a
    link's position itself does."""
    with np.errstate(over="ignore"):
        assert not np.isfinite(1.0 * np.float64(-1e300) ** 2)  # l1 (mass 1) at x = -1e300
        assert not np.isfinite(1.0 * np.float64(1e200) ** 2)
        assert not np.isfinite(np.float64(1e308) + np.float64(1e308))
    with pytest.raises(dc.URDFError, match=r"^link 'l1' \(child of joint 'j1'\): its inertia in the root frame "
                                           r"at the home configuration .* is not finite"):
        dc.load_urdf(chain_with(j1_origin="-1e300 0 0"))
    with pytest.raises(dc.URDFError, match=r"^link 'l2' <inertial>: the inertia about the link's origin is not finite"):
        dc.load_urdf(chain_with(l2=link("l2", com="1e200 0 0")))
    massless_l1 = chain_with(j1_origin="1e308 0 0").replace(link("l1"), '<link name="l1"/>').replace(
        '<joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/><origin xyz="0.1 0 0.2"',
        '<joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/><origin xyz="1e308 0 0.2"')
    with pytest.raises(dc.URDFError, match=r"^link 'l2' \(child of joint 'j2'\): its position at the home "
                                           r"configuration, \[ *inf"):
        dc.load_urdf(massless_l1)


# ----------------------------------------------------------------------------------------------
# example-robot-data: limits as Pinocchio reads them (so the controller's effort clamp only ever
# sees limits >= 0), and warnings that name an element of the file

@pytest.mark.parametrize("rel,path", all_robot_urdfs(), ids=[rel for rel, _ in all_robot_urdfs()])
def test_limits_agree_with_pinocchio_and_warnings_name_elements(rel, path):
    try:
        pin_model = pin.buildModelFromUrdf(path)
    except Exception as err:  # Pinocchio's own parse errors are plain exceptions
        pytest.skip(f"Pinocchio cannot load {rel}: {str(err).splitlines()[0]}")
    model = dc.load_urdf(path)
    assert list(model.joint_names) == list(pin_model.names[1:])
    np.testing.assert_array_equal(model.effort_limit, pin_model.effortLimit)
    np.testing.assert_array_equal(model.velocity_limit, pin_model.velocityLimit)
    assert np.all(model.effort_limit >= 0.0) and np.all(model.damping >= 0.0)
    elements = {"link": set(model.frame_names), "joint": set(model.joint_names) | set(model.frame_aliases)}
    for message in model.warnings:
        kind, name = message.split(" ")[0], message.split("'")[1]
        assert name in elements[kind], message
