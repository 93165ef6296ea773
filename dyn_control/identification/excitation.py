"""Exciting motions for identification: a finite Fourier series per joint (Swevers, Ganseman,
Tukel, De Schutter & Van Brussel 1997), designed to minimise the condition number of the base
regressor over one period within the joint limits.

    q_i(t) = q0_i + sum_l (a_il / (l w_f)) sin(l w_f t) - (b_il / (l w_f)) cos(l w_f t)
    v_i(t) = sum_l a_il cos(l w_f t) + b_il sin(l w_f t)
    a_i(t) = sum_l -a_il l w_f sin(l w_f t) + b_il l w_f cos(l w_f t)

l = 1..L (harmonics), period T = 2 pi / w_f. The design keeps three linear conditions per joint,
sum_l a_il = 0, sum_l l b_il = 0 and sum_l b_il / l = 0, so that the motion starts (and ends each
period) at rest at q0 (v = a = 0, q = q0): a controller can hold q0, then start the series.

The design (`design_excitation`): variables q0 and the coefficients in the null space of those
conditions; objective log cond(Y_b), Y_b the stacked base regressor (base_parameters) at `samples`
points of one period; constraints: position, velocity and acceleration limits at those points,
linear in the variables. SciPy's SLSQP from a few random feasible starts, the best kept.
"""
import math

import numba
import numpy as np
import scipy.linalg
import scipy.optimize
import yaml

from .base_parameters import regressor_rows, structural_base_parameters

CONTROLLER_KEY = "/**/dyn_controller"   # the excitation file's node entry: the controller in any namespace
POSITION_MARGIN = 0.05      # of each joint's range, kept free at both ends
VELOCITY_MARGIN = 0.9       # fraction of the URDF velocity limit used
ACCELERATION_PER_VELOCITY = 2.0   # default acceleration limit [rad/s^2] per velocity limit [rad/s]


def fourier_trajectory(t, q0, a, b, omega_f):
    """(q, v, acc), each (len(t), n): the series at the times t (control.fourier.fourier_reference
    vectorised)."""
    t = np.asarray(t, dtype=np.float64)
    l = np.arange(1, a.shape[1] + 1)
    w = l * omega_f
    s, c = np.sin(np.outer(t, w)), np.cos(np.outer(t, w))
    q = q0 + (s / w) @ a.T - (c / w) @ b.T
    v = c @ a.T + s @ b.T
    acc = (c * w) @ b.T - (s * w) @ a.T
    return q, v, acc


class Excitation:
    """A Fourier excitation: q0 (n,), a, b (n, L), period [s], the joints it moves, and the
    condition number of the base regressor over a period (when designed)."""

    def __init__(self, joints, q0, a, b, period, condition_number=None):
        self.joints = list(joints)
        self.q0 = np.asarray(q0, dtype=np.float64)
        self.a = np.asarray(a, dtype=np.float64)
        self.b = np.asarray(b, dtype=np.float64)
        self.period = float(period)
        self.condition_number = condition_number

    @property
    def omega_f(self):
        return 2.0 * np.pi / self.period

    @property
    def harmonics(self):
        return self.a.shape[1]

    def __call__(self, t):
        """(q, v, acc) at times t, each (len(t), n)."""
        return fourier_trajectory(t, self.q0, self.a, self.b, self.omega_f)

    def parameters(self):
        """The controller's `reference` parameters of this motion (module parameters_file writes them)."""
        return {"type": "fourier", "fourier": {
            "joints": self.joints,
            "q0": [float(x) for x in self.q0],
            "a": [float(x) for x in self.a.reshape(-1)],
            "b": [float(x) for x in self.b.reshape(-1)],
            "harmonics": int(self.harmonics),
            "frequency": 1.0 / self.period,
        }}

    @classmethod
    def from_parameters(cls, reference):
        """The motion of `reference` parameters (the dict `parameters()` returns)."""
        try:
            f = reference["fourier"]
            joints, harmonics = list(f["joints"]), int(f["harmonics"])
            n = len(joints)
            q0 = np.array(f["q0"], dtype=np.float64)
            a = np.array(f["a"], dtype=np.float64).reshape(n, harmonics)
            b = np.array(f["b"], dtype=np.float64).reshape(n, harmonics)
            frequency = float(f["frequency"])
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"reference.fourier: not a Fourier excitation ({type(error).__name__}: {error})") from None
        if q0.shape != (n,) or not frequency > 0.0:
            raise ValueError("reference.fourier: q0 needs one value per joint and frequency must be positive")
        return cls(joints, q0, a, b, 1.0 / frequency)


def write_excitation(path, excitation, comment=""):
    """A ROS 2 parameter file at path that gives the controller (CONTROLLER_KEY) the excitation as
    its `reference` (type fourier); comment: lines written above it."""
    header = "".join(f"# {line}\n" for line in comment.splitlines())
    document = {CONTROLLER_KEY: {"ros__parameters": {"reference": excitation.parameters()}}}
    with open(path, "w") as f:
        f.write(header)
        yaml.safe_dump(document, f, sort_keys=False, width=200, default_flow_style=None)


def read_excitation(path):
    """The Excitation of a parameter file (write_excitation's, or any whose controller entry has a
    `reference.fourier`)."""
    with open(path) as f:
        document = yaml.safe_load(f) or {}
    for key, entry in document.items():
        if str(key).rstrip("/").endswith("dyn_controller") and isinstance(entry, dict):
            reference = (entry.get("ros__parameters") or {}).get("reference") or {}
            if "fourier" in reference:
                return Excitation.from_parameters(reference)
    raise ValueError(f"{path}: no dyn_controller entry with a reference.fourier")


def _per_joint(name, value, default, n):
    if value is None:
        return np.asarray(default, dtype=np.float64)
    x = np.broadcast_to(np.asarray(value, dtype=np.float64), (n,)).copy() if np.ndim(value) == 0 \
        else np.asarray(value, dtype=np.float64)
    if x.shape != (n,) or not np.all(np.isfinite(x)) or np.any(x <= 0.0):
        raise ValueError(f"{name} must be one positive number or one per joint ({n}), got {value!r}")
    return x


def joint_limits(model, max_velocity=None, max_acceleration=None):
    """(lower, upper, v_max, a_max) of the design: the URDF's position range less POSITION_MARGIN at
    each end (+-pi for a continuous joint), VELOCITY_MARGIN of its velocity limit (or max_velocity),
    and max_acceleration (default ACCELERATION_PER_VELOCITY times the velocity limit)."""
    if model.coupling is not None:
        raise ValueError("excitation design: mimic-coupled models are not supported")
    lower = np.where(np.isfinite(model.lower), model.lower, -np.pi)
    upper = np.where(np.isfinite(model.upper), model.upper, np.pi)
    margin = POSITION_MARGIN * (upper - lower)
    urdf_velocity = np.where(np.isfinite(model.velocity_limit) & (model.velocity_limit > 0.0),
                             VELOCITY_MARGIN * model.velocity_limit, np.nan)
    if max_velocity is None and np.any(np.isnan(urdf_velocity)):
        missing = [j for j, x in zip(model.joint_names, urdf_velocity) if np.isnan(x)]
        raise ValueError(f"joints {', '.join(missing)} have no velocity limit in the URDF: give max_velocity")
    v_max = _per_joint("max_velocity", max_velocity, urdf_velocity, model.nv)
    a_max = _per_joint("max_acceleration", max_acceleration, ACCELERATION_PER_VELOCITY * v_max, model.nv)
    return lower + margin, upper - margin, v_max, a_max


def _start_at_rest_basis(harmonics):
    """N (2L, 2L - 3), orthonormal: coefficients [a_1..a_L, b_1..b_L] = N c meet the three
    at-rest conditions of the module docstring."""
    l = np.arange(1, harmonics + 1, dtype=np.float64)
    zero = np.zeros(harmonics)
    conditions = np.array([np.concatenate([np.ones(harmonics), zero]),
                           np.concatenate([zero, l]),
                           np.concatenate([zero, 1.0 / l])])
    return scipy.linalg.null_space(conditions)


class _Problem:
    """The design's variables x = [q0 (n), c (n, 2L - 3)], its sampled trajectory and constraints."""

    def __init__(self, model, base, period, harmonics, samples, limits, joint_terms):
        self.model, self.base, self.joint_terms = model, base, joint_terms
        self.n, self.L = model.nv, harmonics
        self.omega_f = 2.0 * np.pi / period
        self.N = _start_at_rest_basis(harmonics)
        self.t = np.arange(samples) * (period / samples)
        w = np.arange(1, harmonics + 1) * self.omega_f
        s, c = np.sin(np.outer(self.t, w)), np.cos(np.outer(self.t, w))
        # rows: the sampled q - q0, v, a of one joint as linear maps of its c
        self.Pq = np.hstack([s / w, -c / w]) @ self.N
        self.Pv = np.hstack([c, s]) @ self.N
        self.Pa = np.hstack([-s * w, c * w]) @ self.N
        self.lower, self.upper, self.v_max, self.a_max = limits
        self._constraints()

    def split(self, x):
        return x[:self.n], x[self.n:].reshape(self.n, -1)

    def coefficients(self, x):
        """(q0, a, b) of variables x."""
        q0, c = self.split(x)
        ab = c @ self.N.T
        return q0, ab[:, :self.L], ab[:, self.L:]

    def trajectory(self, x):
        q0, c = self.split(x)
        return q0 + (self.Pq @ c.T), self.Pv @ c.T, self.Pa @ c.T

    def _constraints(self):
        """G x <= h: per joint and sample, q within [lower, upper], |v| <= v_max, |a| <= a_max."""
        n, m = self.n, self.N.shape[1]
        K = self.t.size
        blocks, bounds = [], []
        for i in range(n):
            for P, low, high, offset in ((self.Pq, self.lower[i], self.upper[i], True),
                                         (self.Pv, -self.v_max[i], self.v_max[i], False),
                                         (self.Pa, -self.a_max[i], self.a_max[i], False)):
                for sign, bound in ((1.0, high), (-1.0, -low)):
                    G = np.zeros((K, n + n * m))
                    G[:, n + i * m: n + (i + 1) * m] = sign * P
                    if offset:
                        G[:, i] = sign
                    blocks.append(G)
                    bounds.append(np.full(K, bound))
        self.G = np.vstack(blocks)
        self.h = np.concatenate(bounds)

    def condition_number(self, x):
        """cond(Y_b) = sqrt of the eigenvalue ratio of Y_b^T Y_b (a small symmetric matrix: several
        times faster than the SVD of Y_b, and exact enough for conditions far below 1e7)."""
        W = regressor_rows(self.model, *self.trajectory(x), self.joint_terms)[:, self.base.independent]
        eigenvalues = np.linalg.eigvalsh(W.T @ W)
        return math.sqrt(eigenvalues[-1] / eigenvalues[0]) if eigenvalues[0] > 0.0 else np.inf

    def objective(self, x):
        return math.log(min(self.condition_number(x), 1e300))

    def random_start(self, rng, fill=0.7):
        """Random coefficients, each joint's scaled to use `fill` of its tightest limit, about the
        middle of its range."""
        m = self.N.shape[1]
        c = rng.standard_normal((self.n, m))
        middle = 0.5 * (self.lower + self.upper)
        half_range = 0.5 * (self.upper - self.lower)
        for i in range(self.n):
            use = max(np.abs(self.Pq @ c[i]).max() / half_range[i], np.abs(self.Pv @ c[i]).max() / self.v_max[i],
                      np.abs(self.Pa @ c[i]).max() / self.a_max[i])
            c[i] *= fill / use
        return np.concatenate([middle, c.reshape(-1)])


def design_excitation(model, period=10.0, harmonics=5, samples=None, restarts=3, max_iterations=100,
                      max_velocity=None, max_acceleration=None, joint_terms=True, seed=0, progress=None):
    """The Excitation of `harmonics` harmonics and period `period` [s] that minimises the condition
    number of the model's stacked base regressor over a period (module docstring). samples: points
    per period (default 20 per harmonic, at least 100); progress(text) is told about each start."""
    if harmonics < 3:
        raise ValueError(f"harmonics must be at least 3 (three go to starting at rest), got {harmonics}")
    if not period > 0.0:
        raise ValueError(f"period must be positive, got {period}")
    samples = samples or max(100, 20 * harmonics)
    limits = joint_limits(model, max_velocity, max_acceleration)
    base = structural_base_parameters(model, joint_terms)
    problem = _Problem(model, base, period, harmonics, samples, limits, joint_terms)
    rng = np.random.default_rng(seed)
    constraint = {"type": "ineq", "fun": lambda x: problem.h - problem.G @ x, "jac": lambda x: -problem.G}
    threads = numba.get_num_threads()
    numba.set_num_threads(1)   # a period's regressor is small: threads would cost more than they give
    try:
        best = _best_of_starts(problem, constraint, rng, restarts, max_iterations, progress)
    finally:
        numba.set_num_threads(threads)
    cond, x = best
    q0, a, b = problem.coefficients(x)
    return Excitation(model.joint_names, q0, a, b, period, cond)


def _best_of_starts(problem, constraint, rng, restarts, max_iterations, progress):
    """(condition number, x) of the best of `restarts` SLSQP runs from random feasible starts."""
    best = None
    for start in range(restarts):
        x0 = problem.random_start(rng)
        result = scipy.optimize.minimize(problem.objective, x0, method="SLSQP", constraints=[constraint],
                                         options={"maxiter": max_iterations, "ftol": 1e-6})
        x = result.x if np.all(problem.G @ result.x <= problem.h + 1e-6) else x0
        cond = problem.condition_number(x)
        if progress is not None:
            progress(f"start {start + 1}/{restarts}: condition number {problem.condition_number(x0):.4g} -> {cond:.4g}")
        if best is None or cond < best[0]:
            best = (cond, x)
    return best
