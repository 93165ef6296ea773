"""Bags through rosbags: joint states written (MCAP) and read back in any joint order, a sqlite3 bag
as `ros2 bag record` writes by default, `dyn-control identify` on a bag end to end, the named errors
of bad input (and the command's exit code), and the ROS recorder on a live topic."""
import os
import time

import numpy as np
import pytest

import dyn_control as dc
from dyn_control.identification.bag import (BagWriter, IdentificationError, read_joint_states, typestore,
                                            write_bag, write_joint_states)
from dyn_control.identification.base_parameters import check_identifiable, structural_base_parameters
from dyn_control.identification.identify import identify
from dyn_control.identification.synthetic import track
from dyn_control.nodes.cli import main

pytest.importorskip("rosbags", reason="bags need rosbags (pip install .[identification])")

JOINTS = ("j1", "j2", "j3")


def _states(rng, count=50):
    t = 0.001 * np.arange(count) + 3.0
    return t, rng.standard_normal((count, 3)), rng.standard_normal((count, 3)), rng.standard_normal((count, 3))


def test_joint_states_read_back_in_the_models_order(tmp_path):
    rng = np.random.default_rng(0)
    t, q, v, effort = _states(rng)
    order = [2, 0, 1]          # the bag names j3, j1, j2 and an extra joint the robot does not have
    path = str(tmp_path / "states")
    names = [JOINTS[k] for k in order] + ["gripper"]
    extra = np.zeros((len(t), 1))
    write_joint_states(path, t, names, np.hstack([q[:, order], extra]), np.hstack([v[:, order], extra]),
                       np.hstack([effort[:, order], extra]), commands=effort)
    states = read_joint_states(path, JOINTS)
    np.testing.assert_allclose(states.t, t - t[0], atol=1e-9)
    np.testing.assert_array_equal(states.q, q)
    np.testing.assert_array_equal(states.v, v)
    np.testing.assert_array_equal(states.effort, effort)


def test_sqlite3_bag_and_messages_of_another_publisher(tmp_path):
    """A bag in rosbag2's default sqlite3 storage, with a second publisher's JointState (a gripper's
    joints only) on the same topic: its messages are skipped."""
    from rosbags.rosbag2 import StoragePlugin, Writer
    rng = np.random.default_rng(1)
    t, q, v, effort = _states(rng, 20)
    types = typestore()
    JointState, Header, Time = (types.types[n] for n in ("sensor_msgs/msg/JointState", "std_msgs/msg/Header",
                                                          "builtin_interfaces/msg/Time"))
    path = tmp_path / "sqlite"
    with Writer(path, version=8, storage_plugin=StoragePlugin.SQLITE3) as writer:
        connection = writer.add_connection("/joint_states", "sensor_msgs/msg/JointState", typestore=types)
        for k in range(len(t)):
            ns = int(round(t[k] * 1e9))
            stamp = Header(stamp=Time(sec=ns // 10 ** 9, nanosec=ns % 10 ** 9), frame_id="")
            arm = JointState(header=stamp, name=list(JOINTS), position=q[k], velocity=v[k], effort=effort[k])
            gripper = JointState(header=stamp, name=["finger"], position=np.ones(1), velocity=np.zeros(1),
                                 effort=np.zeros(1))
            writer.write(connection, ns, types.serialize_cdr(arm, "sensor_msgs/msg/JointState"))
            writer.write(connection, ns + 1, types.serialize_cdr(gripper, "sensor_msgs/msg/JointState"))
    states = read_joint_states(str(path), JOINTS)
    np.testing.assert_array_equal(states.q, q)
    np.testing.assert_array_equal(states.effort, effort)


def test_bad_bags_are_named_errors(tmp_path, capsys):
    rng = np.random.default_rng(2)
    t, q, v, effort = _states(rng)
    empty = str(tmp_path / "empty")
    write_bag(empty, [])
    with pytest.raises(IdentificationError, match="is empty"):
        read_joint_states(empty, JOINTS)
    no_effort = str(tmp_path / "no_effort")
    write_joint_states(no_effort, t, JOINTS, q, v, None)
    with pytest.raises(IdentificationError, match="no effort field"):
        read_joint_states(no_effort, JOINTS)
    other = str(tmp_path / "other_robot")
    write_joint_states(other, t, ["a", "b"], q[:, :2], v[:, :2], effort[:, :2])
    with pytest.raises(IdentificationError, match="lack joints j1, j2, j3 of the robot"):
        read_joint_states(other, JOINTS)
    with pytest.raises(IdentificationError, match="has no topic /states"):
        read_joint_states(other, JOINTS, topic="/states")
    with pytest.raises(IdentificationError, match="cannot read bag"):
        read_joint_states(str(tmp_path / "missing"), JOINTS)
    # through the command: exit code 1 and the message (planar2's joints are joint1, joint2)
    assert main(["identify", no_effort, "--urdf", dc.bundled_urdf("planar2")]) == 1
    assert "lack joints joint1, joint2 of the robot (they name j1, j2, j3)" in capsys.readouterr().err


def test_too_few_samples_and_unexcited_combinations_are_named():
    """planar2 (true values = its URDF's plus friction): too few rows for the base parameters, and a
    motion of joint 2 alone with joint 1 held at 0.3 rad: its gravity then acts at one angle only,
    so its two gravity combinations (link1/hz, link2/m + link1/hx: cos and sin of a constant) act as
    one, and the error names one of them."""
    model = dc.load_urdf(dc.bundled_urdf("planar2"))
    base = structural_base_parameters(model)
    with pytest.raises(IdentificationError, match=f"too few samples: 10 torque rows for {base.count} base"):
        check_identifiable(base, np.ones((10, len(base.labels))))
    robot = model.with_joint_dynamics(viscous=0.5, coulomb=1.0)

    def joint_2_only(t):
        zero = np.zeros_like(t)
        return (np.column_stack([zero + 0.3, 0.5 * np.sin(2 * t)]), np.column_stack([zero, np.cos(2 * t)]),
                np.column_stack([zero, -2 * np.sin(2 * t)]))

    states = track(robot, model, joint_2_only, 4.0)
    with pytest.raises(IdentificationError, match="does not excite") as error:
        identify(model, states, validation=0.0)
    message = str(error.value)
    lines = message.splitlines()
    terms = set(lines[1].strip().split(" + "))      # a combination's terms, in whichever order the QR gave
    assert len(lines) == 2 and terms in ({"link1/hz"}, {"link1/hx", "link2/m"}), message


def test_identify_command_on_a_bag(tmp_path, capsys):
    """The command end to end on a bag of the simulated arm (identification_truth), joints in reverse
    order: the parameters file loads into the Model identify() returns, the plot is written, the
    validation table printed."""
    from identification_truth import nominal, recording
    states = recording(True)
    path = str(tmp_path / "arm")
    write_joint_states(path, states.t, nominal().joint_names[::-1], states.q[:, ::-1], states.v[:, ::-1],
                       states.effort[:, ::-1])
    output, plot, urdf_out = (str(tmp_path / name) for name in ("identified.yaml", "torques.png", "identified.urdf"))
    urdf = dc.bundled_urdf("arm7")
    assert main(["identify", path, "--urdf", urdf, "-o", output, "--plot", plot, "--urdf-out", urdf_out]) == 0
    printed = capsys.readouterr().out
    assert "62 base parameters" in printed and "held-out validation" in printed
    loaded = dc.load_parameters(nominal(), output)
    # the parameters no motion identifies: their prior's (the URDF's) value and the one written
    listed = printed.split("no effect on the torques")[1].split("\n\n")[0].splitlines()[1:]
    prior = dict(zip(dc.load_urdf(urdf).parameter_labels(), dc.load_urdf(urdf).parameters()))
    written = dict(zip(loaded.parameter_labels(), loaded.parameters()))
    assert listed
    for line in listed:
        label, _, before, _, after = line.split()
        assert float(before) == pytest.approx(prior[label], rel=1e-4, abs=1e-12)
        assert float(after) == pytest.approx(written[label], rel=1e-4, abs=1e-12)
    direct = identify(nominal(), states).model
    np.testing.assert_allclose(loaded.parameters(), direct.parameters(), rtol=1e-12, atol=1e-15)
    assert os.path.getsize(plot) > 10_000
    np.testing.assert_allclose(dc.load_urdf(urdf_out).phi, direct.phi, rtol=1e-7, atol=1e-10)


@pytest.mark.ros
def test_recorder_writes_a_live_topic(tmp_path):
    """BagRecorder (dyn-control record) on a JointState topic published in this process."""
    import rclpy
    from sensor_msgs.msg import JointState

    from dyn_control.nodes.bag_recorder import BagRecorder
    context = rclpy.Context()
    rclpy.init(args=[], context=context)
    node = rclpy.create_node("recorder_test", context=context)
    publisher = node.create_publisher(JointState, "/recorder_test/joint_states", 100)
    path = str(tmp_path / "live")
    recorder = BagRecorder(path, {"/recorder_test/joint_states": None})
    try:
        recorder.start(node)     # finds the topic's type in the graph
        time.sleep(0.5)          # let the subscription match the publisher
        q = np.arange(30 * 3, dtype=float).reshape(30, 3)
        for k in range(30):
            msg = JointState(name=list(JOINTS), position=q[k].tolist(), velocity=[0.0] * 3, effort=[1.0] * 3)
            msg.header.stamp.sec, msg.header.stamp.nanosec = 1, 1_000_000 * k
            publisher.publish(msg)
            time.sleep(0.002)
            recorder.poll()
        deadline = time.monotonic() + 5.0
        while recorder.count < 30 and time.monotonic() < deadline:
            recorder.poll()
            time.sleep(0.01)
    finally:
        recorder.stop()
        node.destroy_node()
        rclpy.try_shutdown(context=context)
    states = read_joint_states(path, JOINTS, topic="/recorder_test/joint_states")
    np.testing.assert_array_equal(states.q, q)
    np.testing.assert_allclose(states.t, 0.001 * np.arange(30), atol=1e-9)


def test_bag_writer_refuses_an_existing_folder(tmp_path):
    with pytest.raises(ValueError, match="exists already"):
        BagWriter(str(tmp_path))


@pytest.mark.ros
def test_record_command(tmp_path, capsys):
    """`dyn-control record OUT --duration 1 --topics TOPIC:TYPE` while this process publishes."""
    import threading

    import rclpy
    from sensor_msgs.msg import JointState
    context = rclpy.Context()
    rclpy.init(args=[], context=context)
    node = rclpy.create_node("record_command_test", context=context)
    publisher = node.create_publisher(JointState, "/record_test/joint_states", 10)
    stop = threading.Event()

    def publish():
        k = 0
        while not stop.is_set():
            msg = JointState(name=list(JOINTS), position=[float(k)] * 3, velocity=[0.0] * 3, effort=[0.0] * 3)
            msg.header.stamp.sec, msg.header.stamp.nanosec = 1 + k // 1000, 1_000_000 * (k % 1000)
            publisher.publish(msg)
            k += 1
            time.sleep(0.005)

    thread = threading.Thread(target=publish)
    thread.start()
    path = str(tmp_path / "recorded")
    try:
        code = main(["record", path, "--duration", "1.5", "--topics",
                     "/record_test/joint_states:sensor_msgs/msg/JointState"])
    finally:
        stop.set()
        thread.join()
        node.destroy_node()
        rclpy.try_shutdown(context=context)
    assert code == 0 and "wrote" in capsys.readouterr().out
    states = read_joint_states(path, JOINTS, topic="/record_test/joint_states")
    assert len(states.t) > 50
    assert np.all(np.diff(states.q[:, 0]) >= 1.0)    # in the order published (best effort may drop one)


def test_identify_command_without_joint_terms(tmp_path):
    """planar2 without friction, heavier than its URDF: `--no-joint-terms` fits the inertial
    parameters only and writes no joint section; the loaded model's torques along the motion are
    the truth's (rnea of both)."""
    from dyn_control.identification.excitation import design_excitation
    urdf = dc.bundled_urdf("planar2")
    model = dc.load_urdf(urdf)
    truth = model.with_inertial_parameters(model.phi * [1.3, 1.0, 1.0, 1.0, 1.2, 1.2, 1.2, 1.0, 1.0, 1.0])
    excitation = design_excitation(model, 4.0, 4, restarts=1, max_iterations=20, joint_terms=False)
    states = track(truth, model, excitation, 8.0)
    path, output = str(tmp_path / "planar"), str(tmp_path / "planar.yaml")
    write_joint_states(path, states.t, model.joint_names, states.q, states.v, states.effort)
    assert main(["identify", path, "--urdf", urdf, "-o", output, "--no-joint-terms"]) == 0
    assert "joints:" not in open(output).read()
    loaded = dc.load_parameters(model, output)
    q, v, a = excitation(np.linspace(0.0, 4.0, 200))
    ours, true = dc.rnea_batch(loaded, q, v, a), dc.rnea_batch(truth, q, v, a)
    assert np.sqrt(np.mean((ours - true) ** 2)) <= 1e-3 * np.sqrt(np.mean(true ** 2))


@pytest.mark.ros
def test_demo_records_a_bag(tmp_path, capsys):
    """`dyn-control demo --record PATH`: the demo's joint states, commands and ~/desired in an MCAP
    bag that reads back (the arm's joints and efforts, the commands in the controller's joint
    order); a PATH that exists is refused before any node starts (exit code 2)."""
    import ros_harness  # noqa: F401  (this process's own ROS domain: the demo's nodes run in it)
    from rosbags.rosbag2 import Reader
    path, output = str(tmp_path / "demo_bag"), str(tmp_path / "out")
    assert main(["demo", "--duration", "2", "--output", output, "--record", path]) == 0
    assert f"bag: {path}" in capsys.readouterr().out
    nominal = dc.load_urdf(dc.bundled_urdf("arm7"))
    states = read_joint_states(path, nominal.joint_names)
    assert len(states.t) > 1000 and np.all(np.diff(states.t) > 0)      # 2 s at 1 kHz (best effort may drop some)
    assert np.all(np.isfinite(states.effort)) and np.abs(states.effort).max() > 1.0   # the arm is held against gravity
    types = typestore()
    with Reader(path) as reader:
        counts = {c.topic: c.msgcount for c in reader.connections}
        assert counts.get("/effort_controller/commands", 0) > 1000 and counts.get("/dyn_controller/desired", 0) > 100
        commands = [types.deserialize_cdr(raw, c.msgtype).data for c, _, raw in
                    reader.messages([c for c in reader.connections if c.topic == "/effort_controller/commands"])]
    assert all(len(c) == nominal.nv and np.all(np.isfinite(c)) for c in commands)
    assert main(["demo", "--duration", "2", "--output", output, "--record", path]) == 2
    assert "exists already" in capsys.readouterr().err
