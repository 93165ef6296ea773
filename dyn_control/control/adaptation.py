"""Online adaptation of the inertial parameters that keeps every body physically consistent.

Each body's parameters phi = [m, hx, hy, hz, Ixx, Iyy, Izz, Ixy, Ixz, Iyz] (I about the body
origin) are held as the 4x4 pseudo-inertia

    J = [[Sigma, h], [h^T, m]],   Sigma = 0.5 tr(I) 1 - I  (the second moment of the mass),

which is positive definite exactly when the body is physically consistent (m > 0, rotational
inertia at the centre of mass positive definite and satisfying the triangle inequalities; Wensing,
Kim and Slotine 2017). The log-Cholesky parameterization (Rucker and Wensing, "Smooth
Parameterization of Rigid-Body Inertia", RA-L 2022) writes J = U U^T with

    U = e^alpha [[e^d1, s12, s13, t1], [0, e^d2, s23, t2], [0, 0, e^d3, t3], [0, 0, 0, 1]],
    theta = [alpha, d1, d2, d3, s12, s23, s13, t1, t2, t3],

so every theta in R^10 is a consistent body and every consistent body has one theta:
m = e^(2 alpha), h = m t, Sigma = m (L L^T + t t^T) with L the upper-left 3x3 of U / e^alpha.
Gradient steps are taken on theta (the projection onto the consistent set is built in), with the
chain rule from d loss / d phi, and each body's step bounded in norm.
"""
import numpy as np

from ..dynamics import as_vector
from ..inertia.parameters import phi_of_pseudo_inertia, pseudo_inertia
from .checks import as_scalar, copy_out, require_finite

# entries of Ubar (U / e^alpha) that theta[4:] holds, in theta order: s12, s23, s13, t1, t2, t3
_FREE_ENTRIES = ((0, 1), (1, 2), (0, 2), (0, 3), (1, 3), (2, 3))


def log_cholesky_factor(theta):
    """U (4x4, upper triangular) with J = U U^T, from theta (10,)."""
    U = np.zeros((4, 4))
    U[0, 0], U[1, 1], U[2, 2] = np.exp(theta[1:4])
    U[3, 3] = 1.0
    for value, (r, c) in zip(theta[4:], _FREE_ENTRIES):
        U[r, c] = value
    return np.exp(theta[0]) * U


def theta_to_phi(theta):
    U = log_cholesky_factor(theta)
    return np.array(phi_of_pseudo_inertia(U @ U.T))


def phi_to_theta(phi, min_eigenvalue=0.0):
    """theta of one body. A pseudo-inertia with eigenvalues below min_eigenvalue (a massless or
    degenerate body, a point mass) gets those eigenvalues raised to it first."""
    J = pseudo_inertia(phi)
    w, V = np.linalg.eigh(J)
    if w[0] <= min_eigenvalue:
        if min_eigenvalue <= 0.0:
            raise ValueError(f"pseudo-inertia is not positive definite (eigenvalues {w}); "
                             "pass min_eigenvalue > 0 to regularise it")
        J = (V * np.maximum(w, min_eigenvalue)) @ V.T
    # J = U U^T with U upper triangular: the Cholesky factor of J with rows and columns reversed
    U = np.linalg.cholesky(J[::-1, ::-1])[::-1, ::-1]
    scale = U[3, 3]
    theta = np.empty(10)
    theta[0] = np.log(scale)
    theta[1:4] = np.log(np.diag(U)[:3] / scale)
    theta[4:] = [U[r, c] / scale for r, c in _FREE_ENTRIES]
    return theta


def theta_gradient(theta, gradient_phi):
    """d loss / d theta (10,) of one body from d loss / d phi (10,), by the chain rule through
    phi(J), J = U U^T and U(theta)."""
    g = gradient_phi
    # dL = sum_ab G_ab dJ_ab over the symmetric J (off-diagonal pairs share their gradient)
    G = np.empty((4, 4))
    G[0, 0] = g[5] + g[6]      # Ixx = Syy + Szz, Iyy = Sxx + Szz, Izz = Sxx + Syy
    G[1, 1] = g[4] + g[6]
    G[2, 2] = g[4] + g[5]
    G[0, 1] = G[1, 0] = -0.5 * g[7]   # Ixy = -Sxy
    G[0, 2] = G[2, 0] = -0.5 * g[8]
    G[1, 2] = G[2, 1] = -0.5 * g[9]
    G[:3, 3] = G[3, :3] = 0.5 * g[1:4]
    G[3, 3] = g[0]
    U = log_cholesky_factor(theta)
    dU = 2.0 * G @ U             # d loss / d U for J = U U^T, G symmetric
    scale = np.exp(theta[0])
    out = np.empty(10)
    out[0] = np.sum(np.triu(dU) * U)                  # every entry of U scales with e^alpha
    out[1:4] = np.diag(dU)[:3] * np.diag(U)[:3]       # U_kk = e^alpha e^dk
    out[4:] = [dU[r, c] * scale for r, c in _FREE_ENTRIES]
    return out


class InertialAdaptation:
    """Gradient steps on the inertial parameters of every body of `model`, in log-Cholesky
    coordinates (module docstring), so the estimate is physically consistent after every step.

    update(d loss / d phi) takes theta <- theta - step_size * d loss / d theta, each body's step
    shortened to norm max_step if longer (in theta, max_step 0.05 changes a mass by at most ~10 %).
    Bodies whose initial pseudo-inertia has eigenvalues below min_eigenvalue (massless links,
    point masses) start from the nearest one with that smallest eigenvalue.
    """

    def __init__(self, model, step_size, max_step, min_eigenvalue=1e-9):
        self.base_model = model
        self.nbodies = model.nbodies
        self.step_size = as_scalar("step_size", step_size)
        self.max_step = as_scalar("max_step", max_step)
        self.min_eigenvalue = as_scalar("min_eigenvalue", min_eigenvalue)
        self.theta = np.array([phi_to_theta(model.phi[i], self.min_eigenvalue) for i in range(self.nbodies)])
        self._phi = np.array([theta_to_phi(t) for t in self.theta])
        self.joint_terms = np.array(model.joint_terms)
        self.steps = 0

    @property
    def phi(self):
        """The current estimate, (10 * nbodies,) as Model.inertial_parameters() orders it."""
        return self._phi.reshape(-1).copy()

    def update(self, gradient_phi, out=None):
        """One bounded gradient step from d loss / d phi (10 * nbodies,); returns the new phi."""
        nb = self.nbodies
        gradient_phi = as_vector("gradient_phi", gradient_phi, 10 * nb)
        require_finite("gradient_phi", gradient_phi)
        gradient_phi = gradient_phi.reshape(nb, 10)
        for i in range(nb):
            step = self.step_size * theta_gradient(self.theta[i], gradient_phi[i])
            norm = float(np.linalg.norm(step))
            if norm > self.max_step:
                step *= self.max_step / norm
            self.theta[i] -= step
            self._phi[i] = theta_to_phi(self.theta[i])
        self.steps += 1
        return copy_out(self._phi.reshape(-1), out)

    def update_joint_terms(self, gradient, sum_yy, rate, damping=1e-9):
        """One step of the joint terms (armature, viscous, Coulomb per joint: Model.joint_terms) from
        their window's gradient (3 * nbodies,) and Gauss-Newton matrices sum_yy (nbodies, 3, 3), the
        sums of y y^T with y = [a, v, sgn_s(v)] (tick.py): per joint the damped Gauss-Newton step
        -(sum_yy + damping max(diag) I)^-1 gradient, scaled by `rate` in (0, 1] (1: the window's least
        squares at once), then projected onto terms >= 0, which physical friction and rotor inertia
        are. Scale-free: the three terms have different units. Returns the new terms (nbodies, 3)."""
        nb = self.nbodies
        gradient = as_vector("gradient", gradient, 3 * nb).reshape(nb, 3)
        sum_yy = np.asarray(sum_yy, dtype=np.float64).reshape(nb, 3, 3)
        require_finite("gradient", gradient)
        require_finite("sum_yy", sum_yy)
        for i in range(nb):
            scale = max(float(np.max(np.diag(sum_yy[i]))), 1e-300)
            step = np.linalg.solve(sum_yy[i] + damping * scale * np.eye(3), gradient[i])
            self.joint_terms[i] = np.maximum(self.joint_terms[i] - rate * step, 0.0)
        return self.joint_terms.copy()

    def model(self):
        """The model with the current estimates (Model.with_inertial_parameters, with_joint_dynamics)."""
        terms = self.joint_terms.T
        return self.base_model.with_inertial_parameters(self._phi).with_joint_dynamics(*terms)
