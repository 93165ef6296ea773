"""The identifiable combinations of a robot's parameters (base parameters) and their least-squares
estimate.

Joint torques are linear in the standard parameters theta (per body [m, hx, hy, hz, Ixx, Iyy, Izz,
Ixy, Ixz, Iyz], then per joint [armature, viscous, coulomb] with the joint terms): tau = Y(q, v, a)
theta. Some columns of Y are zero whatever the motion (a parameter without effect) and some are
linear combinations of others (Gautier & Khalil 1990), so only r combinations of theta, the base
parameters, can be identified. They are found structurally, from the regressor at random states:
QR with column pivoting, Y P = Q R, gives the rank r, the independent columns (the first r pivots)
and the others' coefficients K = R11^-1 R12, so that

    Y theta = Y_b beta,   beta = theta[independent] + K theta[dependent].

A recorded motion identifies them when its stacked regressor Y_b has full column rank; the
combinations it leaves unexcited are found the same way, on Y_b with unit-norm columns.
"""
import numpy as np
import scipy.linalg

import dyn_control as dc

STRUCTURAL_TOLERANCE = 1e-8   # |R_ii| / |R_00| below it: a column dependent on the previous ones
EXCITATION_TOLERANCE = 1e-3   # same on the recorded motion's base regressor with unit-norm columns (an
#                               exciting motion gives 0.1-0.3; below this a combination's column lies
#                               within 0.1 % of the others' span, its estimate amplified a thousandfold)
STRUCTURAL_SAMPLES = 40       # random states per structural rank estimate (times nv rows each)


class IdentificationError(ValueError):
    """Input or data from which the parameters cannot be identified (the message says why)."""


def parameter_labels(model, joint_terms):
    """Labels of the standard parameters: `link/m`, ..., `link/Iyz`, then (joint_terms)
    `joint/armature`, `joint/viscous`, `joint/coulomb`."""
    labels = model.parameter_labels()
    return labels if joint_terms else labels[:10 * model.nbodies]


def standard_parameters(model, joint_terms):
    """theta of the model: the inertial block, then (joint_terms) the joint block."""
    return model.parameters() if joint_terms else model.inertial_parameters()


def regressor_rows(model, q, v, a, joint_terms):
    """The stacked regressor (N nv, P) of samples q, v, a (each (N, nv)): rows sample by sample,
    joint by joint, so that tau.reshape(-1) = rows @ theta."""
    Y = dc.regressor_batch(model, q, v, a, joint_terms=joint_terms)
    return Y.reshape(-1, Y.shape[2])


def random_states(model, count, rng):
    """count random (q, v, a) of the model: q within its limits (+-pi where unlimited), v and a of
    unit scale."""
    lower = np.where(np.isfinite(model.lower), model.lower, -np.pi)
    upper = np.where(np.isfinite(model.upper), model.upper, np.pi)
    if model.coupling is not None:
        index = [model.joint_names.index(n) for n in model.actuated_joints]
        lower, upper = lower[index], upper[index]
    q = rng.uniform(lower, upper, (count, model.nv))
    return q, rng.standard_normal((count, model.nv)), rng.standard_normal((count, model.nv))


class BaseParameters:
    """beta = theta[independent] + K theta[dependent] (= P theta): the identifiable combinations of
    the standard parameters, labelled by `labels` (parameter_labels)."""

    def __init__(self, independent, dependent, K, labels):
        self.independent = np.asarray(independent, dtype=np.int64)
        self.dependent = np.asarray(dependent, dtype=np.int64)
        self.K = np.asarray(K, dtype=np.float64)
        self.labels = list(labels)
        self.count = self.independent.size

    @property
    def P(self):
        """(r, n) with beta = P theta."""
        P = np.zeros((self.count, len(self.labels)))
        P[np.arange(self.count), self.independent] = 1.0
        P[:, self.dependent] = self.K
        return P

    def of(self, theta):
        """The base parameters of standard parameters theta."""
        theta = np.asarray(theta, dtype=np.float64)
        return theta[self.independent] + self.K @ theta[self.dependent]

    def describe(self, k, digits=4):
        """Combination k as text: `arm7_link2/Izz + 0.1 arm7_link3/m - ...`."""
        text = self.labels[self.independent[k]]
        for j, c in sorted(zip(self.dependent, self.K[k])):
            if c != 0.0:
                factor = "" if abs(abs(c) - 1.0) < 1e-9 else f"{abs(c):.{digits}g} "
                text += f" {'-' if c < 0 else '+'} {factor}{self.labels[j]}"
        return text

    def unidentifiable(self):
        """Labels of the parameters that take part in no combination (no effect on the torques)."""
        unused = ~np.any(self.K != 0.0, axis=0)
        return [self.labels[j] for j in np.sort(self.dependent[unused])]


def structural_base_parameters(model, joint_terms=True, seed=0):
    """The model's base parameters from its regressor at random states (module docstring)."""
    rng = np.random.default_rng(seed)
    labels = parameter_labels(model, joint_terms)
    samples = max(STRUCTURAL_SAMPLES, 4 * len(labels) // model.nv)
    W = regressor_rows(model, *random_states(model, samples, rng), joint_terms)
    _, R, pivots = scipy.linalg.qr(W, mode="economic", pivoting=True)
    diagonal = np.abs(np.diag(R))
    rank = int(np.sum(diagonal > STRUCTURAL_TOLERANCE * diagonal[0]))
    K = scipy.linalg.solve_triangular(R[:rank, :rank], R[:rank, rank:])
    K[np.abs(K) < 1e-9 * max(1.0, np.abs(K).max(initial=0.0))] = 0.0
    # order the combinations like the standard parameters (body by body), not by pivot
    order = np.argsort(pivots[:rank])
    return BaseParameters(pivots[:rank][order], pivots[rank:], K[order], labels)


def unexcited_combinations(base, W):
    """Indices of the base parameters that the stacked regressor W (rows, n) of a motion leaves
    (numerically) unexcited: pivoted QR of its base columns scaled to unit norm."""
    Wb = W[:, base.independent]
    norms = np.linalg.norm(Wb, axis=0)
    zero = norms == 0.0
    R, pivots = scipy.linalg.qr(Wb[:, ~zero] / norms[~zero], mode="r", pivoting=True)
    diagonal = np.abs(np.diag(R))
    rank = int(np.sum(diagonal > EXCITATION_TOLERANCE * diagonal[0])) if diagonal.size else 0
    lacking = np.flatnonzero(~zero)[pivots[rank:]]
    return np.sort(np.concatenate([np.flatnonzero(zero), lacking]))


def check_identifiable(base, W):
    """IdentificationError unless the motion's stacked regressor W has as many rows as base
    parameters and excites every one of them (the message lists those it does not)."""
    rows = W.shape[0]
    if rows < base.count:
        raise IdentificationError(
            f"too few samples: {rows} torque rows for {base.count} base parameters (record longer)")
    lacking = unexcited_combinations(base, W)
    if lacking.size:
        listed = "\n  ".join(base.describe(k) for k in lacking)
        raise IdentificationError(
            f"the motion does not excite {lacking.size} of the {base.count} base parameters "
            f"(record a richer motion, e.g. an excitation from `dyn-control excite`):\n  {listed}")


class BaseEstimate:
    """Weighted least-squares base parameters: values, covariance, relative standard deviations [%]."""

    def __init__(self, values, covariance):
        self.values = values
        self.covariance = covariance
        std = np.sqrt(np.maximum(np.diag(covariance), 0.0))
        with np.errstate(divide="ignore", invalid="ignore"):
            self.relative_std = np.where(values != 0.0, 100.0 * std / np.abs(values), np.inf)


def estimate_base_parameters(base, R, y, rest, rows):
    """The weighted least-squares base parameters from the weighted stacked regressor's normal form
    (R, y, rest of weighted_normal_form, of `rows` torque rows): beta minimising
    ||R[:, independent] beta - y||, its covariance from the residual's variance per row."""
    Rb = R[:, base.independent]
    beta, *_ = np.linalg.lstsq(Rb, y, rcond=None)
    variance = (float(np.sum((Rb @ beta - y) ** 2)) + rest) / max(rows - base.count, 1)
    return BaseEstimate(beta, variance * np.linalg.pinv(Rb.T @ Rb))


def weighted_normal_form(W, tau, weights):
    """(R, y, rest): W and tau with row weights, reduced by a QR factorization W_w = Q R so that
    ||W_w theta - tau_w||^2 = ||R theta - y||^2 + rest for every theta (R (n, n), y (n,))."""
    Ww = W * weights[:, None]
    tw = tau * weights
    Q, R = np.linalg.qr(Ww)
    y = Q.T @ tw
    return R, y, max(float(tw @ tw - y @ y), 0.0)
