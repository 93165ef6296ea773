"""Spatial algebra on angular-first 6-vectors: motion [w; v], force [n; f].

A rigid transform T = (R, p) maps coordinates of a child frame into its parent frame. The
matrix forms (`Ad`, `ad`, `ad_star`, `exp_se3`, `log_se3`, ...) allocate and are meant for set-up
code and tests; the `*_into` / in-place helpers below them allocate nothing and are what the
kernels call in their hot loops (seed "Mathematics for Classical Dynamics": spatial vectors,
transforms and inertia; seed "Differential Dynamics and Mesh-Based Inertia", eqs. 1-5).
"""
import numpy as np

from .jit import njit

_SMALL_ANGLE = 1e-6


@njit(cache=True)
def skew(w):
    """[w] such that [w] x = w x x."""
    out = np.zeros((3, 3))
    out[0, 1] = -w[2]
    out[0, 2] = w[1]
    out[1, 0] = w[2]
    out[1, 2] = -w[0]
    out[2, 0] = -w[1]
    out[2, 1] = w[0]
    return out


@njit(cache=True, inline='always')
def screw_exp_into(screw, theta, R, p):
    """(R, p) = exp([screw] * theta) for a screw [w; v], unit |w| or w = 0 (any |v|)."""
    wx = screw[0] * theta
    wy = screw[1] * theta
    wz = screw[2] * theta
    vx = screw[3] * theta
    vy = screw[4] * theta
    vz = screw[5] * theta
    angle2 = wx * wx + wy * wy + wz * wz
    angle = np.sqrt(angle2)
    if angle < _SMALL_ANGLE:
        # Taylor series of Rodrigues' coefficients
        a = 1.0 - angle2 / 6.0
        b = 0.5 - angle2 / 24.0
        c = 1.0 / 6.0 - angle2 / 120.0
    else:
        s = np.sin(angle)
        half = np.sin(0.5 * angle) / angle
        a = s / angle
        b = 2.0 * half * half  # (1 - cos) / angle^2 without its cancellation at small angles
        c = (angle - s) / (angle2 * angle)
    # R = I + a [w] + b [w]^2 ; [w]^2 = w w^T - |w|^2 I
    R[0, 0] = 1.0 + b * (wx * wx - angle2)
    R[0, 1] = -a * wz + b * wx * wy
    R[0, 2] = a * wy + b * wx * wz
    R[1, 0] = a * wz + b * wx * wy
    R[1, 1] = 1.0 + b * (wy * wy - angle2)
    R[1, 2] = -a * wx + b * wy * wz
    R[2, 0] = -a * wy + b * wx * wz
    R[2, 1] = a * wx + b * wy * wz
    R[2, 2] = 1.0 + b * (wz * wz - angle2)
    # p = (I + b [w] + c [w]^2) v
    wv0 = wy * vz - wz * vy
    wv1 = wz * vx - wx * vz
    wv2 = wx * vy - wy * vx
    wwv0 = wy * wv2 - wz * wv1
    wwv1 = wz * wv0 - wx * wv2
    wwv2 = wx * wv1 - wy * wv0
    p[0] = vx + b * wv0 + c * wwv0
    p[1] = vy + b * wv1 + c * wwv1
    p[2] = vz + b * wv2 + c * wwv2


@njit(cache=True, inline='always')
def compose_into(R1, p1, R2, p2, R, p):
    """(R, p) = (R1, p1) * (R2, p2). The outputs must not alias (R1, p1); they may be (R2, p2)
    itself, which is read into locals first (which also lets the compiler keep it in registers: it
    cannot tell that the stores to R leave R2 be)."""
    a00, a01, a02 = R2[0, 0], R2[0, 1], R2[0, 2]
    a10, a11, a12 = R2[1, 0], R2[1, 1], R2[1, 2]
    a20, a21, a22 = R2[2, 0], R2[2, 1], R2[2, 2]
    b0, b1, b2 = p2[0], p2[1], p2[2]
    for r in range(3):
        h0, h1, h2 = R1[r, 0], R1[r, 1], R1[r, 2]
        R[r, 0] = h0 * a00 + h1 * a10 + h2 * a20
        R[r, 1] = h0 * a01 + h1 * a11 + h2 * a21
        R[r, 2] = h0 * a02 + h1 * a12 + h2 * a22
        p[r] = h0 * b0 + h1 * b1 + h2 * b2 + p1[r]


@njit(cache=True, inline='always')
def motion_to_child(R, p, m_parent, out):
    """out = Ad_{T^-1} m_parent: a parent-frame motion vector in the child frame, T = (R, p)."""
    w0, w1, w2 = m_parent[0], m_parent[1], m_parent[2]
    # v + w x p
    u0 = m_parent[3] + w1 * p[2] - w2 * p[1]
    u1 = m_parent[4] + w2 * p[0] - w0 * p[2]
    u2 = m_parent[5] + w0 * p[1] - w1 * p[0]
    for r in range(3):
        out[r] = R[0, r] * w0 + R[1, r] * w1 + R[2, r] * w2
        out[3 + r] = R[0, r] * u0 + R[1, r] * u1 + R[2, r] * u2


@njit(cache=True, inline='always')
def motion_to_parent(R, p, m_child, out):
    """out = Ad_T m_child: a child-frame motion vector in the parent frame, T = (R, p)."""
    for r in range(3):
        out[r] = R[r, 0] * m_child[0] + R[r, 1] * m_child[1] + R[r, 2] * m_child[2]
        out[3 + r] = R[r, 0] * m_child[3] + R[r, 1] * m_child[4] + R[r, 2] * m_child[5]
    w0, w1, w2 = out[0], out[1], out[2]
    # v' = R v + p x (R w)
    out[3] += p[1] * w2 - p[2] * w1
    out[4] += p[2] * w0 - p[0] * w2
    out[5] += p[0] * w1 - p[1] * w0


@njit(cache=True, inline='always')
def force_to_parent_add(R, p, f_child, out):
    """out += Ad_{T^-1}^T f_child: a child-frame force added to a parent-frame force."""
    f0 = R[0, 0] * f_child[3] + R[0, 1] * f_child[4] + R[0, 2] * f_child[5]
    f1 = R[1, 0] * f_child[3] + R[1, 1] * f_child[4] + R[1, 2] * f_child[5]
    f2 = R[2, 0] * f_child[3] + R[2, 1] * f_child[4] + R[2, 2] * f_child[5]
    for r in range(3):
        out[r] += R[r, 0] * f_child[0] + R[r, 1] * f_child[1] + R[r, 2] * f_child[2]
    # n' = R n + p x (R f)
    out[0] += p[1] * f2 - p[2] * f1
    out[1] += p[2] * f0 - p[0] * f2
    out[2] += p[0] * f1 - p[1] * f0
    out[3] += f0
    out[4] += f1
    out[5] += f2


@njit(cache=True, inline='always')
def force_to_parent_subtract(R, p, f_child, out, tmp):
    """out -= Ad_{T^-1}^T f_child (tmp: a 6-vector of scratch)."""
    tmp[:] = 0.0
    force_to_parent_add(R, p, f_child, tmp)
    for k in range(6):
        out[k] -= tmp[k]


@njit(cache=True, inline='always')
def cross_motion(V, m, out):
    """out = ad_V m = V x m = [w x mw; w x mv + v x mw]."""
    w0, w1, w2, v0, v1, v2 = V[0], V[1], V[2], V[3], V[4], V[5]
    a0, a1, a2, b0, b1, b2 = m[0], m[1], m[2], m[3], m[4], m[5]
    out[0] = w1 * a2 - w2 * a1
    out[1] = w2 * a0 - w0 * a2
    out[2] = w0 * a1 - w1 * a0
    out[3] = w1 * b2 - w2 * b1 + v1 * a2 - v2 * a1
    out[4] = w2 * b0 - w0 * b2 + v2 * a0 - v0 * a2
    out[5] = w0 * b1 - w1 * b0 + v0 * a1 - v1 * a0


@njit(cache=True, inline='always')
def cross_force(V, f, out):
    """out = -ad_V^T f = V x* f = [w x n + v x f; w x f]."""
    w0, w1, w2, v0, v1, v2 = V[0], V[1], V[2], V[3], V[4], V[5]
    n0, n1, n2, f0, f1, f2 = f[0], f[1], f[2], f[3], f[4], f[5]
    out[0] = w1 * n2 - w2 * n1 + v1 * f2 - v2 * f1
    out[1] = w2 * n0 - w0 * n2 + v2 * f0 - v0 * f2
    out[2] = w0 * n1 - w1 * n0 + v0 * f1 - v1 * f0
    out[3] = w1 * f2 - w2 * f1
    out[4] = w2 * f0 - w0 * f2
    out[5] = w0 * f1 - w1 * f0


@njit(cache=True, inline='always')
def inertia_times(phi, m, out):
    """out = G m for the spatial inertia of phi = [mass, h (3), Ixx, Iyy, Izz, Ixy, Ixz, Iyz]
    (h = mass * com, rotational inertia about the frame origin): n = I w + h x v, f = mass v - h x w."""
    mass, hx, hy, hz = phi[0], phi[1], phi[2], phi[3]
    ixx, iyy, izz, ixy, ixz, iyz = phi[4], phi[5], phi[6], phi[7], phi[8], phi[9]
    w0, w1, w2, v0, v1, v2 = m[0], m[1], m[2], m[3], m[4], m[5]
    out[0] = ixx * w0 + ixy * w1 + ixz * w2 + hy * v2 - hz * v1
    out[1] = ixy * w0 + iyy * w1 + iyz * w2 + hz * v0 - hx * v2
    out[2] = ixz * w0 + iyz * w1 + izz * w2 + hx * v1 - hy * v0
    out[3] = mass * v0 - (hy * w2 - hz * w1)
    out[4] = mass * v1 - (hz * w0 - hx * w2)
    out[5] = mass * v2 - (hx * w1 - hy * w0)


@njit(cache=True, inline='always')
def dot6(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5]


@njit(cache=True)
def motion_transform_into(R, p, X):
    """X (6x6) = Ad_{T^-1}, the matrix of `motion_to_child` for T = (R, p)."""
    # Ad_{T^-1} = [[R^T, 0], [-R^T [p], R^T]]
    for r in range(3):
        for c in range(3):
            X[r, c] = R[c, r]
            X[r, 3 + c] = 0.0
            X[3 + r, 3 + c] = R[c, r]
        # (-R^T [p])[r, c] = -R[:, r] . (p x e_c) = -(R[:, r] x p)[c]
        a0, a1, a2 = R[0, r], R[1, r], R[2, r]
        X[3 + r, 0] = -(a1 * p[2] - a2 * p[1])
        X[3 + r, 1] = -(a2 * p[0] - a0 * p[2])
        X[3 + r, 2] = -(a0 * p[1] - a1 * p[0])


@njit(cache=True)
def spatial_inertia_into(phi, G):
    """G (6x6) = [[I, [h]], [[h]^T, mass 1]] from phi (angular-first, about the frame origin)."""
    mass, hx, hy, hz = phi[0], phi[1], phi[2], phi[3]
    G[0, 0] = phi[4]
    G[1, 1] = phi[5]
    G[2, 2] = phi[6]
    G[0, 1] = G[1, 0] = phi[7]
    G[0, 2] = G[2, 0] = phi[8]
    G[1, 2] = G[2, 1] = phi[9]
    for r in range(3):
        for c in range(3):
            G[3 + r, 3 + c] = mass if r == c else 0.0
    # upper-right [h], lower-left [h]^T = -[h]
    G[0, 3] = 0.0
    G[0, 4] = -hz
    G[0, 5] = hy
    G[1, 3] = hz
    G[1, 4] = 0.0
    G[1, 5] = -hx
    G[2, 3] = -hy
    G[2, 4] = hx
    G[2, 5] = 0.0
    for r in range(3):
        for c in range(3):
            G[3 + r, c] = G[c, 3 + r]


@njit(cache=True, inline="always")
def phi_to_parent_add(R, p, phi, out):
    """out += phi of a body whose frame has pose (R, p) in the parent frame, in parent coordinates.

    h' = R h + m p ;  I'_o = R I R^T - [R h][p] - [p][R h] - m [p][p]   (parallel axis theorem)
    """
    m = phi[0]
    h0 = R[0, 0] * phi[1] + R[0, 1] * phi[2] + R[0, 2] * phi[3]
    h1 = R[1, 0] * phi[1] + R[1, 1] * phi[2] + R[1, 2] * phi[3]
    h2 = R[2, 0] * phi[1] + R[2, 1] * phi[2] + R[2, 2] * phi[3]
    ixx, iyy, izz, ixy, ixz, iyz = phi[4], phi[5], phi[6], phi[7], phi[8], phi[9]
    # R I R^T, entry by entry: (R I)[r, c] then times R^T
    ri00 = R[0, 0] * ixx + R[0, 1] * ixy + R[0, 2] * ixz
    ri01 = R[0, 0] * ixy + R[0, 1] * iyy + R[0, 2] * iyz
    ri02 = R[0, 0] * ixz + R[0, 1] * iyz + R[0, 2] * izz
    ri10 = R[1, 0] * ixx + R[1, 1] * ixy + R[1, 2] * ixz
    ri11 = R[1, 0] * ixy + R[1, 1] * iyy + R[1, 2] * iyz
    ri12 = R[1, 0] * ixz + R[1, 1] * iyz + R[1, 2] * izz
    ri20 = R[2, 0] * ixx + R[2, 1] * ixy + R[2, 2] * ixz
    ri21 = R[2, 0] * ixy + R[2, 1] * iyy + R[2, 2] * iyz
    ri22 = R[2, 0] * ixz + R[2, 1] * iyz + R[2, 2] * izz
    rxx = ri00 * R[0, 0] + ri01 * R[0, 1] + ri02 * R[0, 2]
    ryy = ri10 * R[1, 0] + ri11 * R[1, 1] + ri12 * R[1, 2]
    rzz = ri20 * R[2, 0] + ri21 * R[2, 1] + ri22 * R[2, 2]
    rxy = ri00 * R[1, 0] + ri01 * R[1, 1] + ri02 * R[1, 2]
    rxz = ri00 * R[2, 0] + ri01 * R[2, 1] + ri02 * R[2, 2]
    ryz = ri10 * R[2, 0] + ri11 * R[2, 1] + ri12 * R[2, 2]
    p0, p1, p2 = p[0], p[1], p[2]
    # -[a][b] - [b][a] = 2 (a.b) 1 - a b^T - b a^T with a = R h, b = p ; -m[p][p] = m(|p|^2 1 - p p^T)
    hp = h0 * p0 + h1 * p1 + h2 * p2
    pp = p0 * p0 + p1 * p1 + p2 * p2
    out[0] += m
    out[1] += h0 + m * p0
    out[2] += h1 + m * p1
    out[3] += h2 + m * p2
    out[4] += rxx + 2.0 * hp - 2.0 * h0 * p0 + m * (pp - p0 * p0)
    out[5] += ryy + 2.0 * hp - 2.0 * h1 * p1 + m * (pp - p1 * p1)
    out[6] += rzz + 2.0 * hp - 2.0 * h2 * p2 + m * (pp - p2 * p2)
    out[7] += rxy - h0 * p1 - h1 * p0 - m * p0 * p1
    out[8] += rxz - h0 * p2 - h2 * p0 - m * p0 * p2
    out[9] += ryz - h1 * p2 - h2 * p1 - m * p1 * p2



@njit(cache=True, inline='always')
def subtract_skew(B, r0, c0, x0, x1, x2):
    """B[r0:r0+3, c0:c0+3] -= [x], the cross-product matrix of x = (x0, x1, x2)."""
    B[r0, c0 + 1] += x2
    B[r0, c0 + 2] -= x1
    B[r0 + 1, c0] -= x2
    B[r0 + 1, c0 + 2] += x0
    B[r0 + 2, c0] += x1
    B[r0 + 2, c0 + 1] -= x0


@njit(cache=True)
def body_coriolis(V, I, IV, B):
    """B = 1/2 (V x* I + (I V) xbar - I (V x)) for a 6x6 inertia I and twist V (same frame), where
    (f xbar) m = m x* f: the body-level Coriolis matrix (Echeandia and Wensing), linear in V.
    IV receives I V."""
    w0, w1, w2, v0, v1, v2 = V[0], V[1], V[2], V[3], V[4], V[5]
    for r in range(6):
        IV[r] = I[r, 0] * w0 + I[r, 1] * w1 + I[r, 2] * w2 + I[r, 3] * v0 + I[r, 4] * v1 + I[r, 5] * v2
    n0, n1, n2, f0, f1, f2 = IV[0], IV[1], IV[2], IV[3], IV[4], IV[5]
    for c in range(6):
        # column c of crf(V) I: V x* (I e_c) ; of I crm(V): I (V x e_c)
        a0, a1, a2, b0, b1, b2 = I[0, c], I[1, c], I[2, c], I[3, c], I[4, c], I[5, c]
        x0 = w1 * a2 - w2 * a1 + v1 * b2 - v2 * b1
        x1 = w2 * a0 - w0 * a2 + v2 * b0 - v0 * b2
        x2 = w0 * a1 - w1 * a0 + v0 * b1 - v1 * b0
        x3 = w1 * b2 - w2 * b1
        x4 = w2 * b0 - w0 * b2
        x5 = w0 * b1 - w1 * b0
        B[0, c] = x0
        B[1, c] = x1
        B[2, c] = x2
        B[3, c] = x3
        B[4, c] = x4
        B[5, c] = x5
    for r in range(6):
        # row r of I crm(V), crm(V) = [[ [w], 0], [[v], [w]]]: the row (a, b) of I times it is
        # (a x w + b x v, b x w), since x^T [w] = (x x w)^T
        a0, a1, a2, b0, b1, b2 = I[r, 0], I[r, 1], I[r, 2], I[r, 3], I[r, 4], I[r, 5]
        y0 = a1 * w2 - a2 * w1 + b1 * v2 - b2 * v1
        y1 = a2 * w0 - a0 * w2 + b2 * v0 - b0 * v2
        y2 = a0 * w1 - a1 * w0 + b0 * v1 - b1 * v0
        y3 = b1 * w2 - b2 * w1
        y4 = b2 * w0 - b0 * w2
        y5 = b0 * w1 - b1 * w0
        B[r, 0] -= y0
        B[r, 1] -= y1
        B[r, 2] -= y2
        B[r, 3] -= y3
        B[r, 4] -= y4
        B[r, 5] -= y5
    # (f) xbar = [[-[n], -[f]], [-[f], 0]]
    subtract_skew(B, 0, 0, n0, n1, n2)
    subtract_skew(B, 0, 3, f0, f1, f2)
    subtract_skew(B, 3, 0, f0, f1, f2)
    for r in range(6):
        for c in range(6):
            B[r, c] *= 0.5


# ----------------------------------------------------------------------------------------------
# Allocating matrix forms, for set-up code and tests.


@njit(cache=True)
def Ad(R, p):
    """Ad_T (6x6) for T = (R, p): maps child-frame motion vectors to the parent frame."""
    out = np.zeros((6, 6))
    P = skew(p)
    out[:3, :3] = R
    out[3:, 3:] = R
    out[3:, :3] = P @ R
    return out


@njit(cache=True)
def ad(V):
    """ad_V (6x6): ad_V m = V x m."""
    out = np.zeros((6, 6))
    W = skew(V[:3])
    out[:3, :3] = W
    out[3:, 3:] = W
    out[3:, :3] = skew(V[3:])
    return out


@njit(cache=True)
def ad_star(V):
    """ad*_V = ad_V^T (6x6), so that -ad*_V F = V x* F."""
    return ad(V).T.copy()


@njit(cache=True)
def exp_se3(screw):
    """Homogeneous 4x4 exp([screw]) for any screw [w; v] (the angle is |w|)."""
    norm = np.sqrt(screw[0] ** 2 + screw[1] ** 2 + screw[2] ** 2)
    T = np.eye(4)
    R = np.empty((3, 3))
    p = np.empty(3)
    if norm < _SMALL_ANGLE:
        # first-order series: exp ~ I + [screw] (+ O(|w|^2))
        W = skew(screw[:3])
        R[:, :] = np.eye(3) + W + 0.5 * W @ W
        p[:] = screw[3:] + 0.5 * W @ screw[3:]
    else:
        screw_exp_into(screw / norm, norm, R, p)
    T[:3, :3] = R
    T[:3, 3] = p
    return T


@njit(cache=True)
def log_se3(T):
    """The screw [w; v] (angular-first) with exp_se3([w; v]) = T, for rotation angles below pi."""
    R = T[:3, :3]
    p = T[:3, 3].copy()  # contiguous for the matrix products below
    cos_angle = min(1.0, max(-1.0, 0.5 * (R[0, 0] + R[1, 1] + R[2, 2] - 1.0)))
    angle = np.arccos(cos_angle)
    w_hat = np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
    out = np.zeros(6)
    if angle < _SMALL_ANGLE:
        w = 0.5 * w_hat
        W = skew(w)
        out[:3] = w
        out[3:] = p - 0.5 * W @ p
        return out
    w = angle / (2.0 * np.sin(angle)) * w_hat
    W = skew(w)
    # V^-1 = I - W/2 + (1/a^2)(1 - a sin a / (2 (1 - cos a))) W^2
    coef = (1.0 - angle * np.sin(angle) / (2.0 * (1.0 - np.cos(angle)))) / (angle * angle)
    out[:3] = w
    out[3:] = p - 0.5 * W @ p + coef * W @ (W @ p)
    return out


@njit(cache=True)
def transform_inertia(G, R, p):
    """The spatial inertia G (6x6, child frame) expressed in the parent frame: Ad_T^-T G Ad_T^-1."""
    X = np.empty((6, 6))
    motion_transform_into(R, p, X)
    return X.T @ G @ X


@njit(cache=True)
def congruence_add(X, A, tmp, out):
    """out += X^T A X for 6x6 matrices (a spatial inertia A carried through the motion transform
    X = Ad_{T^-1} into the parent frame); tmp is 6x6 scratch."""
    for r in range(6):
        for c in range(6):
            s = 0.0
            for k in range(6):
                s += A[r, k] * X[k, c]
            tmp[r, c] = s
    for r in range(6):
        for c in range(6):
            s = 0.0
            for k in range(6):
                s += X[k, r] * tmp[k, c]
            out[r, c] += s
