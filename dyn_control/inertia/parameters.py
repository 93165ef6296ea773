"""Inertial parameters phi of one rigid body: conversions, frame changes, the derivative of a
transformed inertia, and a physical-consistency check.

    phi = [m, hx, hy, hz, Ixx, Iyy, Izz, Ixy, Ixz, Iyz]

h = m c is the first moment of mass (c the centre of mass), and I is the rotational inertia
tensor about the frame ORIGIN (not the centre of mass); products of inertia are tensor entries,
Ixy = -int rho x y dV, as in URDF. The spatial inertia (angular-first, motion [w; v]) is

    G = [[I, [h]], [[h]^T, m 1]],   so that  G [w; v] = [I w + h x v; m v - h x w].

Frame changes follow seed "Differential Dynamics and Mesh-Based Inertia", sec. 5, eq. (29):
G = Ad_T^-T Gbar Ad_T^-1, where T = (R, p) is the pose of the body's frame in the new frame.
The Python functions check their inputs and allocate; the `*_into` functions are @njit kernels
that allocate nothing, for the real-time loop.
"""
import numpy as np

from ..jit import njit
from ..spatial import phi_to_parent_add

__all__ = [
    "check_physical_consistency", "phi_to_spatial_inertia", "spatial_inertia_to_phi", "transform_phi",
    "transform_phi_into", "translated_inertia_derivative", "translated_inertia_derivative_into",
]


# ----------------------------------------------------------------------------------------------
# Kernels (no checks: the Python wrappers below check once).


@njit(cache=True)
def transform_phi_into(phi, R, p, out):
    """out = phi of the same body expressed in a frame where the old frame has pose (R, p)
    (parallel axis theorem, see spatial.phi_to_parent_add). `out` must not alias `phi`."""
    for k in range(10):
        out[k] = 0.0
    phi_to_parent_add(R, p, phi, out)


@njit(cache=True)
def translated_inertia_derivative_into(phi, out):
    """out (10x6) = d phi / d eta at eta = 0 for G(eta) = Ad_exp(eta)^-T G Ad_exp(eta)^-1, where
    phi are the parameters of G and eta = [dw; dv] (seed sec. 5, eqs. 30-34):

        dI = [dw] I - I [dw] - [dv][h] - [h][dv],   dh = dw x h + m dv,   dm = 0.
    """
    m, hx, hy, hz = phi[0], phi[1], phi[2], phi[3]
    ixx, iyy, izz, ixy, ixz, iyz = phi[4], phi[5], phi[6], phi[7], phi[8], phi[9]
    for r in range(10):
        for c in range(6):
            out[r, c] = 0.0
    # dm / d eta = 0 (eq. 34): row 0 stays zero
    # dh = -[h] dw + m dv (eq. 33)
    out[1, 1] = hz
    out[1, 2] = -hy
    out[2, 0] = -hz
    out[2, 2] = hx
    out[3, 0] = hy
    out[3, 1] = -hx
    out[1, 3] = m
    out[2, 4] = m
    out[3, 5] = m
    # diagonal of dI (eq. 32): d/d dw = 2 [[0, Ixz, -Ixy], [-Iyz, 0, Ixy], [Iyz, -Ixz, 0]],
    #                          d/d dv = 2 [[0, hy, hz], [hx, 0, hz], [hx, hy, 0]]
    out[4, 1] = 2.0 * ixz
    out[4, 2] = -2.0 * ixy
    out[5, 0] = -2.0 * iyz
    out[5, 2] = 2.0 * ixy
    out[6, 0] = 2.0 * iyz
    out[6, 1] = -2.0 * ixz
    out[4, 4] = 2.0 * hy
    out[4, 5] = 2.0 * hz
    out[5, 3] = 2.0 * hx
    out[5, 5] = 2.0 * hz
    out[6, 3] = 2.0 * hx
    out[6, 4] = 2.0 * hy
    # off-diagonal (Ixy, Ixz, Iyz) of dI: d/d dw = [[-Ixz, Iyz, Ixx - Iyy], [Ixy, Izz - Ixx, -Iyz],
    #                                               [Iyy - Izz, -Ixy, Ixz]],
    #                                     d/d dv = -[[hy, hx, 0], [hz, 0, hx], [0, hz, hy]]
    out[7, 0] = -ixz
    out[7, 1] = iyz
    out[7, 2] = ixx - iyy
    out[8, 0] = ixy
    out[8, 1] = izz - ixx
    out[8, 2] = -iyz
    out[9, 0] = iyy - izz
    out[9, 1] = -ixy
    out[9, 2] = ixz
    out[7, 3] = -hy
    out[7, 4] = -hx
    out[8, 3] = -hz
    out[8, 5] = -hx
    out[9, 4] = -hz
    out[9, 5] = -hy


# ----------------------------------------------------------------------------------------------
# Checked Python API.


def _where(name):
    return "inertial parameters" if name is None else f"body {name!r}"


def _as_phi(phi, name=None, arg="phi"):
    try:
        out = np.array(phi, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{_where(name)}: {arg} must be 10 numbers ({exc})") from None
    if out.shape != (10,):
        raise ValueError(f"{_where(name)}: {arg} must have shape (10,), got {out.shape}")
    if not np.all(np.isfinite(out)):
        raise ValueError(f"{_where(name)}: {arg} must be finite, got {out}")
    return out


def _as_pose(R, p, name=None):
    R = np.eye(3) if R is None else np.array(R, dtype=np.float64)
    p = np.zeros(3) if p is None else np.array(p, dtype=np.float64)
    if R.shape != (3, 3) or p.shape != (3,):
        raise ValueError(f"{_where(name)}: pose needs R of shape (3, 3) and p of shape (3,), "
                         f"got {R.shape} and {p.shape}")
    if not (np.all(np.isfinite(R)) and np.all(np.isfinite(p))):
        raise ValueError(f"{_where(name)}: pose (R, p) must be finite")
    if not np.allclose(R.T @ R, np.eye(3), atol=1e-9) or np.linalg.det(R) <= 0.0:
        raise ValueError(f"{_where(name)}: R must be a rotation matrix (orthonormal, det +1)")
    return R, p


def phi_to_spatial_inertia(phi):
    """The 6x6 spatial inertia G = [[I, [h]], [[h]^T, m 1]] (angular-first) of phi."""
    phi = _as_phi(phi)
    m, h = phi[0], phi[1:4]
    I = np.array([[phi[4], phi[7], phi[8]], [phi[7], phi[5], phi[9]], [phi[8], phi[9], phi[6]]])
    H = np.array([[0.0, -h[2], h[1]], [h[2], 0.0, -h[0]], [-h[1], h[0], 0.0]])
    G = np.zeros((6, 6))
    G[:3, :3] = I
    G[:3, 3:] = H
    G[3:, :3] = H.T
    G[3:, 3:] = m * np.eye(3)
    return G


def spatial_inertia_to_phi(G):
    """phi of a 6x6 spatial inertia G = [[I, [h]], [[h]^T, m 1]].

    G is read by least squares onto that structure (m the mean of the lower-right diagonal, h from
    both off-diagonal blocks, I symmetrised), so round-off asymmetry is averaged out, not rejected.
    """
    try:
        G = np.array(G, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"spatial inertia G must be a 6x6 array ({exc})") from None
    if G.shape != (6, 6):
        raise ValueError(f"spatial inertia G must have shape (6, 6), got {G.shape}")
    if not np.all(np.isfinite(G)):
        raise ValueError("spatial inertia G must be finite")
    I = 0.5 * (G[:3, :3] + G[:3, :3].T)
    # upper-right block is [h], lower-left is [h]^T = -[h]
    H = 0.5 * (G[:3, 3:] - G[3:, :3])
    h = 0.5 * np.array([H[2, 1] - H[1, 2], H[0, 2] - H[2, 0], H[1, 0] - H[0, 1]])
    m = np.trace(G[3:, 3:]) / 3.0
    return np.array([m, h[0], h[1], h[2], I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]])


def transform_phi(phi, R, p, name=None):
    """phi of a body expressed in a new frame, where the body's current frame has pose (R, p)
    (x_new = R x_old + p). Equals spatial_inertia_to_phi(Ad_T^-T G Ad_T^-1), seed eq. (29)."""
    phi = _as_phi(phi, name)
    R, p = _as_pose(R, p, name)
    out = np.empty(10)
    transform_phi_into(phi, R, p, out)
    return out


def translated_inertia_derivative(phi, R=None, p=None, name=None):
    """d phi / d eta (10x6) of a transformed inertia, seed sec. 5, eqs. (29-34).

    phi are the body's parameters in its own frame (Gbar) and T = (R, p) the pose of that frame in
    the outer frame (identity if omitted), so G = Ad_T^-T Gbar Ad_T^-1 = transform_phi(phi, R, p).
    Convention: LEFT perturbation, T(eta) = exp([eta]) T, i.e. [d eta] = dT T^-1 (eq. 30), with
    eta = [dw; dv] angular-first and expressed in the OUTER frame. The result is

        d/d eta  transform_phi(phi, exp([eta]) T)  at eta = 0,

    which depends only on G. For a right perturbation T exp([xi]) (xi in the body frame) use
    eta = Ad_T xi: the derivative is this matrix times Ad_T.
    """
    phi = _as_phi(phi, name)
    R, p = _as_pose(R, p, name)
    G_phi = np.empty(10)
    transform_phi_into(phi, R, p, G_phi)
    out = np.empty((10, 6))
    translated_inertia_derivative_into(G_phi, out)
    return out


def check_physical_consistency(phi, name=None, rtol=1e-9, atol=0.0):
    """Raise ValueError naming the body unless phi is physically consistent:
    finite, m >= 0, and the rotational inertia about the centre of mass has principal moments
    J1, J2, J3 >= 0 that satisfy the triangle inequalities (Ji + Jj >= Jk). A massless body must
    have h = 0 and I = 0 (within tolerance). Tolerance: atol + rtol * trace(I about the origin),
    the scale of the numbers the parallel-axis shift subtracts. Returns phi as a float array."""
    phi = _as_phi(phi, name)
    where = _where(name)
    m, h = phi[0], phi[1:4]
    I_o = np.array([[phi[4], phi[7], phi[8]], [phi[7], phi[5], phi[9]], [phi[8], phi[9], phi[6]]])
    scale = abs(np.trace(I_o)) + np.abs(I_o).max()
    tol = atol + rtol * scale
    if m < 0.0:
        raise ValueError(f"{where}: mass must be non-negative, got {m}")
    if m == 0.0:
        if np.abs(h).max() > atol or np.abs(I_o).max() > tol:
            raise ValueError(f"{where}: a massless body must have zero first moment and inertia, "
                             f"got h = {h} and I = {I_o.tolist()}")
        return phi
    c = h / m
    I_c = I_o - m * (c @ c * np.eye(3) - np.outer(c, c))  # parallel axis to the centre of mass
    J = np.linalg.eigvalsh(I_c)  # ascending
    if J[0] < -tol:
        raise ValueError(f"{where}: rotational inertia at the centre of mass is not positive "
                         f"semi-definite (principal moments {np.array2string(J, precision=6)})")
    if J[0] + J[1] < J[2] - tol:
        raise ValueError(f"{where}: principal moments at the centre of mass violate the triangle "
                         f"inequality J1 + J2 >= J3 (principal moments {np.array2string(J, precision=6)})")
    return phi


def pseudo_inertia(phi):
    """The 4x4 pseudo-inertia J = [[Sigma, h], [h^T, m]], Sigma = tr(I)/2 1 - I, of phi = [m, hx, hy, hz,
    Ixx, Iyy, Izz, Ixy, Ixz, Iyz]: positive definite exactly for a physically consistent body (Wensing,
    Kim and Slotine 2017)."""
    m, h = phi[0], np.asarray(phi[1:4])
    I = np.array([[phi[4], phi[7], phi[8]], [phi[7], phi[5], phi[9]], [phi[8], phi[9], phi[6]]])
    J = np.empty((4, 4))
    J[:3, :3] = 0.5 * np.trace(I) * np.eye(3) - I
    J[:3, 3] = J[3, :3] = h
    J[3, 3] = m
    return J


def phi_of_pseudo_inertia(J):
    """phi of a pseudo-inertia J (inverse of pseudo_inertia); works on cvxpy expressions too."""
    s00, s11, s22 = J[0, 0], J[1, 1], J[2, 2]
    return [J[3, 3], J[0, 3], J[1, 3], J[2, 3], s11 + s22, s00 + s22, s00 + s11, -J[0, 1], -J[0, 2], -J[1, 2]]
