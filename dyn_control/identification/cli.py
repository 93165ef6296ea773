"""The identification commands of `dyn-control` (nodes/cli.py registers them with add_commands; it
holds `dyn-control record`, which records a bag from the running graph, too):

    dyn-control excite ROBOT.urdf [--duration 10] [--harmonics 5] [-o excitation.yaml]
    dyn-control identify BAG --urdf ROBOT.urdf [-o identified.yaml] [--validation 0.3] [--cutoff HZ]
                         [--prior urdf|mesh --density RHO] [--effort-delay S] [--plot out.png]
                         [--urdf-out identified.urdf]

Exit codes: 0 done, 1 the data or the inputs do not allow it (the message says why), 2 bad arguments.
"""
import os
import sys
import time

COMMANDS = ("excite", "identify")


def add_commands(commands):
    """Add the identification subcommands to an argparse subparsers object."""
    excite = commands.add_parser("excite", help="design an exciting Fourier motion for identification")
    excite.add_argument("urdf", help="the robot's URDF")
    excite.add_argument("--duration", type=float, default=10.0, help="period of the motion [s] (default 10)")
    excite.add_argument("--harmonics", type=int, default=5, help="harmonics per joint (default 5, at least 3)")
    excite.add_argument("-o", "--output", default="excitation.yaml", help="parameter file to write "
                        "(default excitation.yaml)")
    excite.add_argument("--max-velocity", type=float, nargs="+", help="velocity limits [rad/s], one or one per "
                        "joint (default 0.9 of the URDF's)")
    excite.add_argument("--max-acceleration", type=float, nargs="+", help="acceleration limits [rad/s^2], one "
                        "or one per joint (default twice the velocity limit, per second)")
    excite.add_argument("--restarts", type=int, default=3, help="random starts of the optimiser (default 3)")
    excite.add_argument("--iterations", type=int, default=100, help="iterations per start (default 100)")
    excite.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    excite.add_argument("--no-joint-terms", action="store_true", help="design for the inertial parameters only")


    identify = commands.add_parser("identify", help="identify the robot's parameters from a bag")
    identify.add_argument("bag", help="a rosbag2 bag (MCAP or sqlite3) with sensor_msgs/JointState")
    identify.add_argument("--urdf", required=True, help="the robot's URDF (the joints and the prior)")
    identify.add_argument("-o", "--output", default="identified.yaml", help="parameters file to write "
                          "(default identified.yaml)")
    identify.add_argument("--topic", default="/joint_states", help="joint state topic (default /joint_states)")
    identify.add_argument("--validation", type=float, default=0.3, help="held-out fraction at the end of the "
                          "recording (default 0.3)")
    identify.add_argument("--cutoff", type=float, default=10.0, help="low-pass cut-off [Hz] (default 10)")
    identify.add_argument("--effort-delay", type=float, default=0.0, help="how late the efforts are against "
                          "the positions [s] (default 0; dyn_simulator's: half its period, 0.0005 at 1 kHz)")
    identify.add_argument("--prior", choices=("urdf", "mesh"), default="urdf", help="prior parameters: the "
                          "URDF's inertials (default) or the link meshes at --density")
    identify.add_argument("--density", type=float, default=1000.0, help="mesh prior density [kg/m^3]")
    identify.add_argument("--regularization", type=float, default=None, help="weight of the prior "
                          "(entropic divergence; default 1: as one sample)")
    identify.add_argument("--no-joint-terms", action="store_true", help="identify the inertial parameters only")
    identify.add_argument("--plot", help="PNG of measured and predicted torques on the held-out part")
    identify.add_argument("--urdf-out", help="also write a URDF with the identified inertials")


def run(args):
    """Run the parsed identification command; returns the exit code."""
    from .base_parameters import IdentificationError
    try:
        if args.command == "excite":
            return _excite(args)
        return _identify(args)
    except (IdentificationError, ValueError) as error:
        print(f"{args.command}: {error}", file=sys.stderr)
        return 1


class _Progress:
    """Prints each step with the time since the start."""

    def __init__(self, command):
        self.command, self.start = command, time.perf_counter()

    def __call__(self, text):
        print(f"{self.command} [{time.perf_counter() - self.start:6.1f} s] {text}", flush=True)


def _load(path):
    import dyn_control as dc
    if not os.path.isfile(path):
        raise ValueError(f"no such URDF: {path}")
    return dc.load_urdf(path)


def _excite(args):
    from .excitation import design_excitation, write_excitation
    model = _load(args.urdf)
    progress = _Progress("excite")
    progress(f"{model.name}: {model.nv} joints, {args.harmonics} harmonics, period {args.duration:g} s")
    per_joint = (lambda x: None if x is None else (x[0] if len(x) == 1 else x))
    excitation = design_excitation(model, args.duration, args.harmonics, restarts=args.restarts,
                                   max_iterations=args.iterations, max_velocity=per_joint(args.max_velocity),
                                   max_acceleration=per_joint(args.max_acceleration),
                                   joint_terms=not args.no_joint_terms, seed=args.seed, progress=progress)
    comment = (f"dyn-control excite {os.path.basename(args.urdf)}: a Fourier excitation of {model.name}, "
               f"period {args.duration:g} s, {args.harmonics} harmonics\n"
               f"condition number of the base regressor over a period: {excitation.condition_number:.4g}\n"
               "It starts and ends each period at rest at reference.fourier.q0.")
    write_excitation(args.output, excitation, comment)
    print(f"condition number {excitation.condition_number:.4g}; wrote {args.output}")
    return 0


def _identify(args):
    from .bag import read_joint_states
    from .filtering import LOW_VELOCITY
    from .identify import identify, mesh_prior
    from .parameters_file import write_parameters, write_urdf
    from .validation import plot, table
    model = _load(args.urdf)
    joint_terms = not args.no_joint_terms
    progress = _Progress("identify")
    progress(f"reading {args.topic} of {args.bag}")
    states = read_joint_states(args.bag, model.joint_names, args.topic)
    prior = mesh_prior(model, args.density, progress) if args.prior == "mesh" else model
    options = {} if args.regularization is None else {"gamma": args.regularization}
    result = identify(model, states, args.cutoff, args.validation, prior, joint_terms,
                      effort_delay=args.effort_delay, progress=progress, **options)

    estimate = result.base_estimate
    print(f"\n{result.base.count} base parameters (identifiable combinations), weighted least squares:")
    for k in range(result.base.count):
        print(f"  {estimate.values[k]:12.5g}  +-{estimate.relative_std[k]:7.3g} %   {result.base.describe(k)}")
    unused = result.base.unidentifiable()
    if unused:
        before = dict(zip(prior.parameter_labels(), prior.parameters()))
        after = dict(zip(result.model.parameter_labels(), result.model.parameters()))
        print("no effect on the torques (no motion identifies them: what is written comes from the physical-"
              "consistency constraints and the pull toward the prior, not from the data):")
        for label in unused:
            print(f"  {label:24s} prior {before[label]:12.5g}   written {after[label]:12.5g}")
    if result.t is not None:
        print(f"\nheld-out validation (last {100 * args.validation:g} % of the recording, RMS torque error "
              f"where the joint moves faster than {LOW_VELOCITY:g} rad/s):")
        print(table(model.joint_names, result.errors["prior"], result.errors["identified"]))
    comment = (f"dyn-control identify {os.path.basename(args.bag)} --urdf {os.path.basename(args.urdf)}: "
               f"physically consistent parameters of {model.name}")
    write_parameters(args.output, result.model, comment, joint_terms)
    print(f"\nwrote {args.output}")
    if args.urdf_out:
        write_urdf(result.model, args.urdf, args.urdf_out, joint_terms)
        print(f"wrote {args.urdf_out}")
    if args.plot and result.t is not None:
        plot(args.plot, result.t, result.measured, result.predicted["prior"], result.predicted["identified"],
             model.joint_names, result.usable)
        print(f"wrote {args.plot}")
    return 0
