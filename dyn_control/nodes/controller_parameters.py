"""dyn_controller's parameters: the table (name, default, type, phase, description, range: params.py)
that the node declares and reads, and the checks of their values beyond their types and ranges.
doc/parameters.md is generated from the table (parameter_reference.py)."""
import numpy as np

from ..control.collision import REACTIONS
from ..control.computed_torque import SAFE_MODES
from . import follow_joint_trajectory, params, trajectory_input
from .params import Param
from .robot import joint_term_parameters, payload_parameters, per_joint

REFERENCE_TYPES = ("hold", "sine", "fourier")
CONTROL_MODES = ("joint", "cartesian_impedance")
GRAVITY_MODES = ("controller", "robot")
FINAL_MODES = ("silent", "zero", "hold")
MAX_RATE_HZ = 10000.0


PARAMETERS = (
    Param("robot_description", "", "string", "configure", "URDF XML of the robot (first choice)"),
    Param("urdf_path", "", "string", "configure",
          "URDF file when robot_description is empty (package://PKG/... allowed)"),
    Param("joints", [], "strings", "configure",
          "controlled joints, the order of the command array (empty: every movable joint)"),
    Param("command_topic", "effort_controller/commands", "string", "configure",
          "std_msgs/Float64MultiArray of efforts in `joints` order (relative: in the node's namespace)"),
    Param("joint_states_topic", "joint_states", "string", "configure",
          "sensor_msgs/JointState of the robot (relative: in the node's namespace; e.g. franka/joint_states)"),
    Param("mapping.name", "", "string", "configure",
          "closed-chain mapping plugin (dc.load_mapping) of an equivalent-tree URDF; its keyword "
          "arguments as mapping.parameters.* (empty: a tree robot)"),
    Param("rate_hz", 1000.0, "number", "activate", "control loop rate [Hz]", 1.0, MAX_RATE_HZ),
    Param("gains.kp", 400.0, "numbers", "live", "position gain [1/s^2], one number or one per joint", 0.0, 1e6),
    Param("gains.kd", 40.0, "numbers", "live", "velocity gain [1/s], one number or one per joint", 0.0, 1e4),
    Param("reference.type", "hold", "string", "activate",
          "built-in reference: hold | sine (a ~/reference message overrides it)"),
    Param("reference.position", [], "numbers", "activate",
          "hold position / sine centre [rad], one per joint (empty: the position at activation)"),
    Param("reference.amplitude", 0.1, "numbers", "activate", "sine amplitude [rad], one or one per joint"),
    Param("reference.fourier.joints", [], "strings", "activate",
          "fourier: the joints the series moves (the others hold their position at activation)"),
    Param("reference.fourier.q0", [], "numbers", "activate", "fourier: the series' offset per joint [rad]"),
    Param("reference.fourier.a", [], "numbers", "activate",
          "fourier: sine coefficients a_il [rad/s], joint-major (a[i * harmonics + l - 1])"),
    Param("reference.fourier.b", [], "numbers", "activate", "fourier: cosine coefficients b_il [rad/s], joint-major"),
    Param("reference.fourier.harmonics", 0, "integer", "activate", "fourier: harmonics per joint", 0, 1000),
    Param("reference.fourier.frequency", 0.1, "number", "activate",
          "fourier: the base frequency w_f / 2 pi [Hz] (1 / the period)", 1e-6, 100.0),
    Param("model.parameters_file", "", "string", "configure",
          "identified parameters (dyn-control identify's YAML: inertial parameters per link, joint terms per "
          "joint), applied over the URDF's and model.*'s (empty: none)"),
    Param("reference.frequency", 0.5, "number", "activate", "sine frequency [Hz]", 0.0, 100.0),
    Param("estimator.frame", "", "string", "configure",
          "link whose origin the wrench estimate acts at (empty: the model's last frame, a serial arm's tip)"),
    Param("estimator.gain", 50.0, "number", "configure", "momentum observer gain K_O [1/s]", 0.0, 1e4),
    Param("estimator.damping", 1e-3, "number", "configure",
          "damping of the Jacobian pseudo-inverse that maps torques to the wrench"),
    Param("estimator.compensation", False, "bool", "live",
          "subtract the estimated external torque from the command"),
    Param("gradient.period", 100, "integer", "activate", "ticks between ~/parameter_gradient messages (0: off)",
          0, 1000000),
    Param("gradient.window", 200, "integer", "configure", "samples in the gradient's sliding window", 1, 100000),
    Param("gradient.cutoff_hz", 20.0, "number", "configure", "low-pass cutoff of the acceleration estimate [Hz]",
          0.0, 1e4),
    Param("gradient.twist", True, "bool", "configure",
          "also publish ~/twist_gradient, the joint-twist block (about 25 us per joint state, 7 joints)"),
    Param("adaptation.enabled", False, "bool", "configure",
          "adapt the inertial parameters online (a bounded gradient step every gradient.period ticks)"),
    Param("adaptation.step_size", 2e-7, "number", "configure", "gradient step size in log-Cholesky coordinates"),
    Param("adaptation.max_step", 0.01, "number", "configure", "largest step norm per body and update"),
    Param("adaptation.joint_rate", 0.1, "number", "configure",
          "joint terms (armature, friction): the fraction of the window's damped Gauss-Newton step taken per "
          "update, projected onto terms >= 0 (0: the joint terms stay)", 0.0, 1.0),
    Param("watchdog_timeout", 0.05, "number", "live", "no valid joint state for this long [s] -> safe mode",
          0.001, 60.0),
    Param("safe_mode", "gravity", "string", "live",
          "torque while the joint states are stale: gravity (g(q) at the last joint state, no velocity term) | zero"),
    Param("safe_mode_timeout", 0.05, "number", "live",
          "stale joint states for this long [s] -> safe_mode_final (the default, the watchdog's: at once)",
          0.001, 60.0),
    Param("safe_mode_final", "silent", "string", "live",
          "after safe_mode_timeout: silent (stop publishing: the robot's own command timeout brakes it) | "
          "zero (publish zero effort) | hold (go on publishing the safe-mode torque)"),
    Param("braking_gain", 20.0, "numbers", "live",
          "on deactivate and shutdown, and before re-anchoring from a fast state (reengage.brake_speed), with "
          "fresh joint states: the computed torque of a = -braking_gain v "
          "[1/s] until the arm rests, one or one per joint", 0.0, 1000.0),
    Param("braking_time", 0.5, "number", "live", "longest braking on deactivate and shutdown [s]", 0.0, 10.0),
    Param("torque_rate_limit", 1000.0, "numbers", "live",
          "largest change of a joint's command [N m/s] (1000: Franka's 1 N m per ms), one or one per joint",
          1e-3, 1e7),
    Param("reengage.duration", 1.0, "number", "live",
          "after activation, safe mode, a gap or a large error: seconds over which the reference blends from "
          "the measured state back to the commanded one", 0.0, 60.0),
    Param("reengage.max_velocity", 0.5, "number", "live",
          "the blend lasts longer where its position offset would otherwise move faster than this [rad/s]",
          1e-3, 100.0),
    Param("reengage.brake_speed", 1.0, "number", "live",
          "an anchor (leaving safe mode, a gap, a large error) waits while a controlled joint is faster than "
          "this [rad/s]: the arm brakes first (a = -braking_gain v), then the blend starts", 1e-3, 100.0),
    Param("reengage.error_limit", 0.3, "number", "live",
          "a tracking error above this [rad] re-anchors the reference at the measured state", 1e-6, 1e3),
    Param("max_stamp_lead", 1.0, "number", "live",
          "joint states stamped more than this [s] ahead of this machine's clock are refused", 0.0, 3600.0),
    Param("state_publish_period", 10, "integer", "activate",
          "ticks between ~/desired, ~/external_torque and ~/wrench_estimate messages", 1, 1000000),
    Param("gravity_compensation", "controller", "string", "configure",
          "who compensates gravity: controller (g(q) in every command) | robot (the robot adds g(q) itself, "
          "as Franka and UR do: commands leave it out)"),
    Param("realtime.priority", 50, "integer", "activate",
          "SCHED_FIFO priority of the loop thread (0: off); best effort, a warning when refused", 0, 99),
    Param("realtime.cpu", -1, "integer", "activate",
          "CPU the loop thread is pinned to (-1: the last CPU when the process may use 2 or more, else any, "
          "with the node's other threads moved off it; -2: no pinning)", -2, 4096),
    Param("realtime.spin_us", 200.0, "number", "activate",
          "the loop thread spins (instead of sleeping) this long before each deadline [us]", 0.0, 100000.0),
    Param("autostart", False, "bool", "configure",
          "configure and activate right after start-up (activate no earlier than 4 s after it with Fast DDS)"),
    Param("control.mode", "joint", "string", "activate",
          "the control law: joint (computed torque on the joint reference) | cartesian_impedance (trees only)"),
    Param("control.frame", "", "string", "configure",
          "cartesian_impedance: the controlled frame, a link or joint of the model (empty: estimator.frame's)"),
    Param("cartesian.stiffness.translational", [500.0], "numbers", "live",
          "K_p [N/m], one number or x, y, z in the root frame", 0.0, 1e6),
    Param("cartesian.stiffness.rotational", [30.0], "numbers", "live",
          "K_R [N m/rad], one number or about x, y, z", 0.0, 1e5),
    Param("cartesian.damping_ratio", 1.0, "number", "live",
          "zeta: D_i = 2 zeta sqrt(Lambda_ii K_i) on each task axis", 0.0, 10.0),
    Param("cartesian.nullspace.stiffness", [10.0], "numbers", "live",
          "K_n [N m/rad] of the posture in the nullspace, one or one per joint", 0.0, 1e5),
    Param("cartesian.nullspace.damping", [], "numbers", "live",
          "D_n [N m s/rad], one or one per joint (empty: 2 sqrt(K_n))", 0.0, 1e5),
    Param("cartesian.nullspace.posture", [], "numbers", "activate",
          "the posture q_n [rad], one per joint (empty: the posture at activation)"),
    Param("cartesian.target_time_constant", 0.1, "number", "live",
          "the equilibrium follows ~/target_pose through a first-order filter of this time constant [s]",
          1e-4, 100.0),
    Param("cartesian.singularity_damping", 0.01, "number", "live",
          "d in Lambda = (J M^-1 J^T + d^2 I)^-1: bounds Lambda near singularities (0: exact)", 0.0, 10.0),
    Param("collision.enabled", False, "bool", "live",
          "collision detection on the momentum observer's residual (needs fresh joint states; all modes)"),
    Param("collision.lower_threshold", [10.0], "numbers", "live",
          "residual [N m] above which a joint is in contact, one or one per joint", 0.0, 1e5),
    Param("collision.upper_threshold", [20.0], "numbers", "live",
          "residual [N m] above which a joint has collided, one or one per joint", 0.0, 1e5),
    Param("collision.acceleration_gain", 0.0, "number", "live",
          "both thresholds grow by this [N m s^2/rad] times the joint's |reference acceleration|", 0.0, 1e4),
    Param("collision.reaction", "stop", "string", "live",
          "on a collision, until ~/reset_collision: report (only) | stop (to rest within collision.stop_time, then "
          "hold) | float (gravity and damping) | reflex (stop and retreat along the residual, then hold)"),
    Param("collision.float_damping", [5.0], "numbers", "live",
          "float: the rate [1/s] at which each joint's speed decays (the computed torque of -rate v), one or "
          "one per joint", 0.0, 500.0),
    Param("collision.stop_time", 0.2, "number", "live",
          "stop and reflex: the longest time [s] to bring a joint from its speed at the collision to rest on a "
          "smooth deceleration; each joint stops sooner where half its drives' torque-rate and effort limits "
          "allow, and the stop gives way while the arm is pushed (0: at once, a step of the torque)", 0.0, 2.0),
    Param("collision.reflex.distance", 0.05, "number", "live", "reflex: the retreat [rad]", 0.0, 1.0),
    Param("collision.reflex.duration", 0.3, "number", "live", "reflex: its duration [s]", 0.01, 10.0),
) + (joint_term_parameters("model.", "the controller model's") + payload_parameters("model.payload.", "the controller's")
     + trajectory_input.PARAMETERS + follow_joint_trajectory.PARAMETERS)


def check_closed_chain_values(values, model):
    """What a closed-chain mapping does not offer: joint terms and a payload on the model, the
    joint-twist gradient, gravity compensated by the robot."""
    if np.any(model.joint_terms) or values["model.payload.link"]:
        raise ValueError("parameters model.*: joint terms (armature, friction) are not modelled on a "
                         "closed chain; leave them empty and the URDF without <dynamics>")
    if values["gradient.twist"]:
        raise ValueError("parameter gradient.twist: the joint-twist gradient is not available with a "
                         "closed-chain mapping (it needs the loop closure's derivative with respect to "
                         "the joint twists); set gradient.twist: false")
    if values["gravity_compensation"] == "robot":
        raise ValueError("parameter gravity_compensation: robot is not available with a closed-chain mapping")


def check_values(values, njoints=None):
    """Range checks beyond the types; njoints (when known) checks per-joint list lengths."""
    def positive(name):
        if not values[name] > 0.0:
            raise ValueError(f"parameter {name}: must be > 0, got {values[name]!r}")

    def non_negative(name):
        if any(x < 0.0 for x in np.atleast_1d(values[name])):
            raise ValueError(f"parameter {name}: must be >= 0, got {values[name]!r}")

    def choice(name, options):
        if values[name] not in options:
            raise ValueError(f"parameter {name}: must be one of {', '.join(options)}, got {values[name]!r}")

    for name in ("gains.kp", "gains.kd", "braking_gain", "torque_rate_limit", "collision.lower_threshold",
                 "collision.upper_threshold"):
        if name in values:
            non_negative(name)
            if not values[name]:
                raise ValueError(f"parameter {name}: needs one number or one per joint")
    checks = {

        "estimator.gain": positive,
        "estimator.damping": non_negative,
        "gradient.cutoff_hz": positive,
        "adaptation.step_size": positive,
        "adaptation.max_step": positive,
        "reference.frequency": non_negative,
        "safe_mode": lambda n: choice(n, SAFE_MODES),
        "safe_mode_final": lambda n: choice(n, FINAL_MODES),
        "reference.type": lambda n: choice(n, REFERENCE_TYPES),
        "gravity_compensation": lambda n: choice(n, GRAVITY_MODES),
        "control.mode": lambda n: choice(n, CONTROL_MODES),
        "collision.reaction": lambda n: choice(n, REACTIONS),
    }
    for name, check in checks.items():
        if name in values:
            check(name)
    params.check_ranges(PARAMETERS, values)
    if njoints is not None:
        for name in ("gains.kp", "gains.kd", "braking_gain", "torque_rate_limit", "reference.amplitude",
                     "reference.position", "cartesian.nullspace.stiffness", "cartesian.nullspace.damping",
                     "cartesian.nullspace.posture", "collision.lower_threshold", "collision.upper_threshold",
                     "collision.float_damping"):
            if name in values:
                per_joint(name, values[name], njoints, default=0.0)

