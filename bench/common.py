"""Shared timing helpers for `make bench`, in microseconds per call: the best of repeats, or ours
against a reference in interleaved rounds (median times and the spread of their ratio)."""
import os
import sys
import timeit

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test"))
from oracles import pin_q, pinocchio_model, robot_urdf  # noqa: E402,F401


def per_call_us(fn, min_time=0.2, repeat=5):
    """Best per-call time of fn() in microseconds (after one warm-up call)."""
    number = _calls_for(fn, min_time / repeat)
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def _calls_for(fn, min_time):
    """How many calls of fn() take at least min_time seconds (powers of 4)."""
    fn()
    number = 1
    while timeit.timeit(fn, number=number) < min_time and number < 1 << 20:
        number *= 4
    return number


def interleaved_us(ours, ref, rounds=9, min_time=0.03):
    """Per-call times of ours() and ref() timed in alternating rounds, so that both see the same
    machine: (median ours [us], median ref [us], median, lowest and highest of the rounds' ratios)."""
    n_ours, n_ref = _calls_for(ours, min_time), _calls_for(ref, min_time)
    t_ours, t_ref = [], []
    for _ in range(rounds):
        t_ours.append(timeit.timeit(ours, number=n_ours) / n_ours * 1e6)
        t_ref.append(timeit.timeit(ref, number=n_ref) / n_ref * 1e6)
    ratios = sorted(a / b for a, b in zip(t_ours, t_ref))
    return (sorted(t_ours)[rounds // 2], sorted(t_ref)[rounds // 2], ratios[rounds // 2], ratios[0],
            ratios[-1])


class Case:
    """A robot loaded both ways at one random state: ours (model, data) and Pinocchio's (pm, pd),
    q, v, a, and tau = rnea(q, v, a)."""

    def __init__(self, name, rng):
        import dyn_control as dc
        path = robot_urdf(name)
        self.name = name
        self.model = dc.load_urdf(path)
        self.data = self.model.create_data()
        self.pm = pinocchio_model(path)
        self.pd = self.pm.createData()
        nv = self.model.nv
        self.q = rng.uniform(-1, 1, nv)
        self.v = rng.normal(size=nv)
        self.a = rng.normal(size=nv)
        self.tau = dc.rnea(self.model, self.data, self.q, self.v, self.a).copy()


class Row:
    """One benchmark line: our time against the reference's (None when there is none). A row made
    by `versus` also carries the spread of the ratio over its rounds and its robot, for the
    geometric mean per robot that run.py prints."""

    def __init__(self, case, ours_us, ref_us=None, ref_name="pinocchio", note=""):
        self.case, self.ours_us, self.ref_us, self.ref_name, self.note = case, ours_us, ref_us, ref_name, note
        self.ratio = None if ref_us is None else ours_us / ref_us
        self.spread = None
        self.robot = None

    @classmethod
    def value(cls, case, value, unit):
        """A measurement with no reference (a compile time, a count), printed with its unit."""
        return cls(case, value, note=unit)

    @classmethod
    def versus(cls, case, robot, ours, ref, note=""):
        """ours() against Pinocchio's ref() per call, in interleaved rounds (interleaved_us): median
        times, the median ratio and its range over the rounds."""
        ours_us, ref_us, ratio, low, high = interleaved_us(ours, ref)
        row = cls(case, ours_us, ref_us, note=f"[{low:.2f}-{high:.2f}] {note}".rstrip())
        row.ratio, row.spread, row.robot = ratio, (low, high), robot
        return row

    def format(self):
        if self.ref_us is None:
            return f"{self.case:44s} {self.ours_us:12.2f} {'':>12s} {'':>7s}  {self.note}"
        return (f"{self.case:44s} {self.ours_us:12.2f} {self.ref_us:12.2f} {self.ratio:7.2f}  "
                f"{self.ref_name} {self.note}").rstrip()


def pinocchio_cases(model, data, pm, pd, q, v, a, tau, to_pinocchio):
    """(case, ours, Pinocchio's) per-call pairs of the dynamics, kinematics, first-order derivatives and
    integrate on the model's last frame; to_pinocchio permutes a velocity-like vector of ours into
    Pinocchio's order (a free flyer's or planar joint's velocity is ordered differently)."""
    import pinocchio as pin

    import dyn_control as dc
    vp, ap, taup = (to_pinocchio(x) for x in (v, a, tau))
    frame = model.frame_names[-1]
    fid = pm.getFrameId(frame)
    return [
        ("rnea", lambda: dc.rnea(model, data, q, v, a), lambda: pin.rnea(pm, pd, q, vp, ap)),
        ("aba", lambda: dc.aba(model, data, q, v, tau), lambda: pin.aba(pm, pd, q, vp, taup)),
        ("crba", lambda: dc.crba(model, data, q), lambda: pin.crba(pm, pd, q)),
        ("jacobian (world)", lambda: dc.jacobian(model, data, q, frame),
         lambda: pin.computeFrameJacobian(pm, pd, q, fid, pin.WORLD)),
        ("forward_kinematics", lambda: dc.forward_kinematics(model, data, q),
         lambda: pin.framesForwardKinematics(pm, pd, q)),
        ("rnea_derivatives", lambda: dc.rnea_derivatives(model, data, q, v, a),
         lambda: pin.computeRNEADerivatives(pm, pd, q, vp, ap)),
        ("aba_derivatives", lambda: dc.aba_derivatives(model, data, q, v, tau),
         lambda: pin.computeABADerivatives(pm, pd, q, vp, taup)),
        ("integrate", lambda: dc.integrate(model, q, v), lambda: pin.integrate(pm, q, vp)),
    ]
