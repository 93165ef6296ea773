"""Shared timing helpers for `make bench`: best-of-repeats per-call time, in microseconds."""
import os
import sys
import timeit

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test"))
from oracles import pin_q, pinocchio_model, robot_urdf  # noqa: E402,F401


def per_call_us(fn, min_time=0.2, repeat=5):
    """Best per-call time of fn() in microseconds (after one warm-up call)."""
    fn()
    number = 1
    while True:
        t = timeit.timeit(fn, number=number)
        if t >= min_time / repeat or number >= 1 << 20:
            break
        number *= 4
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


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
    """One benchmark line: our time against the reference's (None when there is none)."""

    def __init__(self, case, ours_us, ref_us=None, ref_name="pinocchio", note=""):
        self.case, self.ours_us, self.ref_us, self.ref_name, self.note = case, ours_us, ref_us, ref_name, note

    @classmethod
    def value(cls, case, value, unit):
        """A measurement with no reference (a compile time, a count), printed with its unit."""
        return cls(case, value, note=unit)

    def format(self):
        if self.ref_us is None:
            return f"{self.case:44s} {self.ours_us:12.2f} {'':>12s} {'':>7s}  {self.note}"
        ratio = self.ours_us / self.ref_us
        return (f"{self.case:44s} {self.ours_us:12.2f} {self.ref_us:12.2f} {ratio:7.2f}  "
                f"{self.ref_name} {self.note}").rstrip()
