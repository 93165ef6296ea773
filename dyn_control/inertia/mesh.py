"""Inertial parameters of a closed triangle mesh of uniform density, and their derivatives with
respect to the vertex positions (seed "Differential Dynamics and Mesh-Based Inertia", sec. 4,
eqs. 15-28, after Mirtich 1996).

    phi = [m, hx, hy, hz, Ixx, Iyy, Izz, Ixy, Ixz, Iyz]

h = m c, I about the MESH ORIGIN, products of inertia as tensor entries (Ixy = -int rho x y dV).

Every face F = (v1, v2, v3) is ordered so that its normal n_F = (v2 - v1) x (v3 - v1) points out of
the material. Per face, with s = v1 + v2 + v3, det(F) = det[v1 v2 v3] and

    g(F) = sum_{i <= j} v_i o v_j              (eq. 19, o = element-wise product)
    p(F) = sum_{i <= j} r(v_i) v_j             (eq. 25, p = [xy, xz, yz] sums)

the parameters are sums over faces (divergence theorem / signed tetrahedra from the origin):

    m      =  rho / 18  sum s . n_F                      (eq. 17)
    h      =  rho / 24  sum g(F) o n_F                   (eq. 20)
    I_diag =  rho / 60  sum det(F) (1 1^T - 1) g(F)      (eq. 22)
    I_off  = -rho / 120 sum det(F) p(F)                  (eq. 25)

The per-face loops are @njit kernels on flat arrays (vertices (3 nvert,) float64, faces
(3 nface,) int64) writing into preallocated outputs; the public functions check the mesh once
(shapes, finiteness, indices, degenerate faces, closedness, winding, volume) and raise a
ValueError naming the mesh. They work on the mesh scaled by a power of two to unit size (exact in
floating point) with unit density, so every tolerance is relative to the mesh's size and nothing
under- or overflows before the result is scaled back (m by size^3, h by size^4, I by size^5, each
times the density); a result too large for float64 is a ValueError naming vertices and density.
"""
import numpy as np

from ..jit import njit
from ..model import as_real_array
from .parameters import check_physical_consistency

__all__ = ["mesh_inertia", "mesh_inertia_derivatives", "mesh_inertia_kernel",
           "mesh_inertia_derivatives_kernel"]

# a face whose doubled area |n_F| is below this times its longest edge squared is degenerate
# (collinear vertices up to round-off)
_DEGENERATE_AREA = 64.0 * np.finfo(np.float64).eps
# a mesh whose volume is below this times its bounding-box diagonal cubed encloses no volume
_ZERO_VOLUME = 1e-12
# powers of the length scale in phi = [m, h, I] and in its derivatives with respect to the vertices
_PHI_POWERS = np.array([3, 4, 4, 4, 5, 5, 5, 5, 5, 5])


# ----------------------------------------------------------------------------------------------
# Kernels (no checks: the wrappers below check once).


@njit(cache=True)
def mesh_inertia_kernel(vertices, faces, density, phi):
    """phi (10,) of a closed outward-oriented mesh: vertices (3 nvert,), faces (3 nface,)."""
    # running sums over faces: s . n, g o n, det g, det p
    sum_sn = 0.0
    sum_gn = np.zeros(3)
    sum_dg = np.zeros(3)
    sum_dp = np.zeros(3)
    v1 = np.empty(3)
    v2 = np.empty(3)
    v3 = np.empty(3)
    n = np.empty(3)
    g = np.empty(3)
    nface = faces.shape[0] // 3
    for f in range(nface):
        for a in range(3):
            v1[a] = vertices[3 * faces[3 * f] + a]
            v2[a] = vertices[3 * faces[3 * f + 1] + a]
            v3[a] = vertices[3 * faces[3 * f + 2] + a]
        # n_F = (v2 - v1) x (v3 - v1)  (eq. 15)
        e1x, e1y, e1z = v2[0] - v1[0], v2[1] - v1[1], v2[2] - v1[2]
        e2x, e2y, e2z = v3[0] - v1[0], v3[1] - v1[1], v3[2] - v1[2]
        n[0] = e1y * e2z - e1z * e2y
        n[1] = e1z * e2x - e1x * e2z
        n[2] = e1x * e2y - e1y * e2x
        # det(F) = v1 . (v2 x v3)  (eq. 15)
        det = (v1[0] * (v2[1] * v3[2] - v2[2] * v3[1])
               + v1[1] * (v2[2] * v3[0] - v2[0] * v3[2])
               + v1[2] * (v2[0] * v3[1] - v2[1] * v3[0]))
        for a in range(3):
            # g(F) = sum_{i <= j} v_i o v_j  (eq. 19)
            g[a] = (v1[a] * v1[a] + v2[a] * v2[a] + v3[a] * v3[a]
                    + v1[a] * v2[a] + v1[a] * v3[a] + v2[a] * v3[a])
            sum_sn += (v1[a] + v2[a] + v3[a]) * n[a]   # eq. 17
            sum_gn[a] += g[a] * n[a]                    # eq. 20
            sum_dg[a] += det * g[a]                     # eq. 22
        # p(F) = sum_{i <= j} r(v_i) v_j, r(v) = [[y, x, 0], [z, 0, x], [0, z, y]]  (eqs. 25-26)
        # component (a, b) in {(x, y), (x, z), (y, z)}: sum_{i <= j} (a_i b_j + a_j b_i)
        for k in range(3):
            a = 0 if k < 2 else 1
            b = 1 if k == 0 else 2
            sum_dp[k] += det * (2.0 * (v1[a] * v1[b] + v2[a] * v2[b] + v3[a] * v3[b])
                                + v1[a] * v2[b] + v2[a] * v1[b]
                                + v1[a] * v3[b] + v3[a] * v1[b]
                                + v2[a] * v3[b] + v3[a] * v2[b])
    phi[0] = density / 18.0 * sum_sn
    for a in range(3):
        phi[1 + a] = density / 24.0 * sum_gn[a]
    # (1 1^T - 1) g: Ixx takes y and z, Iyy x and z, Izz x and y
    phi[4] = density / 60.0 * (sum_dg[1] + sum_dg[2])
    phi[5] = density / 60.0 * (sum_dg[0] + sum_dg[2])
    phi[6] = density / 60.0 * (sum_dg[0] + sum_dg[1])
    for k in range(3):
        phi[7 + k] = -density / 120.0 * sum_dp[k]


@njit(cache=True)
def mesh_inertia_derivatives_kernel(vertices, faces, density, dphi):
    """dphi (10 * 3 nvert,) = d phi / d vertices, flat: dphi[r * 3 nvert + 3 vertex + axis].

    Per face and per corner i with (i, j, k) cyclic (seed eqs. 16, 18, 21, 23-24, 27-28):
        d n_F / d v_i = [v_k - v_j],  d det(F) / d v_i = (v_j x v_k)^T,  d g / d v_i = diag(s + v_i),
        d p / d v_i = r(s + v_i).
    """
    nv3 = vertices.shape[0]
    for r in range(dphi.shape[0]):
        dphi[r] = 0.0
    V = np.empty((3, 3))       # V[i] = i-th corner of the face
    s = np.empty(3)            # v1 + v2 + v3
    n = np.empty(3)            # face normal n_F
    g = np.empty(3)            # g(F), eq. 19
    p = np.empty(3)            # p(F) = sum r(v_i) v_j, eq. 25
    dn = np.empty((3, 3))      # d n_F / d v_i = [v_k - v_j]
    ddet = np.empty(3)         # d det(F) / d v_i = v_j x v_k
    dg = np.empty(3)           # diagonal of d g / d v_i = s + v_i
    cm = density / 18.0
    ch = density / 24.0
    cd = density / 60.0
    co = -density / 120.0
    nface = faces.shape[0] // 3
    for f in range(nface):
        for i in range(3):
            for a in range(3):
                V[i, a] = vertices[3 * faces[3 * f + i] + a]
        for a in range(3):
            s[a] = V[0, a] + V[1, a] + V[2, a]
            g[a] = (V[0, a] * V[0, a] + V[1, a] * V[1, a] + V[2, a] * V[2, a]
                    + V[0, a] * V[1, a] + V[0, a] * V[2, a] + V[1, a] * V[2, a])
        e1x, e1y, e1z = V[1, 0] - V[0, 0], V[1, 1] - V[0, 1], V[1, 2] - V[0, 2]
        e2x, e2y, e2z = V[2, 0] - V[0, 0], V[2, 1] - V[0, 1], V[2, 2] - V[0, 2]
        n[0] = e1y * e2z - e1z * e2y
        n[1] = e1z * e2x - e1x * e2z
        n[2] = e1x * e2y - e1y * e2x
        det = (V[0, 0] * (V[1, 1] * V[2, 2] - V[1, 2] * V[2, 1])
               + V[0, 1] * (V[1, 2] * V[2, 0] - V[1, 0] * V[2, 2])
               + V[0, 2] * (V[1, 0] * V[2, 1] - V[1, 1] * V[2, 0]))
        for k in range(3):
            a = 0 if k < 2 else 1
            b = 1 if k == 0 else 2
            p[k] = (2.0 * (V[0, a] * V[0, b] + V[1, a] * V[1, b] + V[2, a] * V[2, b])
                    + V[0, a] * V[1, b] + V[1, a] * V[0, b]
                    + V[0, a] * V[2, b] + V[2, a] * V[0, b]
                    + V[1, a] * V[2, b] + V[2, a] * V[1, b])
        for i in range(3):
            j = (i + 1) % 3
            k = (i + 2) % 3
            col = 3 * faces[3 * f + i]   # first column of this vertex in dphi's rows
            # d n_F / d v_i = [d], d = v_k - v_j  (eq. 16)
            dx, dy, dz = V[k, 0] - V[j, 0], V[k, 1] - V[j, 1], V[k, 2] - V[j, 2]
            dn[0, 0], dn[0, 1], dn[0, 2] = 0.0, -dz, dy
            dn[1, 0], dn[1, 1], dn[1, 2] = dz, 0.0, -dx
            dn[2, 0], dn[2, 1], dn[2, 2] = -dy, dx, 0.0
            # d det(F) / d v_i = v_j^T [v_k] = (v_j x v_k)^T  (eq. 16)
            ddet[0] = V[j, 1] * V[k, 2] - V[j, 2] * V[k, 1]
            ddet[1] = V[j, 2] * V[k, 0] - V[j, 0] * V[k, 2]
            ddet[2] = V[j, 0] * V[k, 1] - V[j, 1] * V[k, 0]
            for a in range(3):
                dg[a] = s[a] + V[i, a]
            for b in range(3):
                # mass, eq. 18: n_F^T + s^T d n_F / d v_i
                dphi[col + b] += cm * (n[b] + s[0] * dn[0, b] + s[1] * dn[1, b] + s[2] * dn[2, b])
                for a in range(3):
                    # first moment, eq. 21: n_F o d g / d v_i + g o d n_F / d v_i (row-wise)
                    dh = g[a] * dn[a, b]
                    if a == b:
                        dh += n[a] * dg[a]
                    dphi[(1 + a) * nv3 + col + b] += ch * dh
                # diagonal inertia, eqs. 23-24: (1 1^T - 1)(g d det / d v_i + det d g / d v_i)
                dx0 = g[0] * ddet[b] + (det * dg[0] if b == 0 else 0.0)
                dy0 = g[1] * ddet[b] + (det * dg[1] if b == 1 else 0.0)
                dz0 = g[2] * ddet[b] + (det * dg[2] if b == 2 else 0.0)
                dphi[4 * nv3 + col + b] += cd * (dy0 + dz0)
                dphi[5 * nv3 + col + b] += cd * (dx0 + dz0)
                dphi[6 * nv3 + col + b] += cd * (dx0 + dy0)
            # off-diagonal inertia, eqs. 27-28: p d det / d v_i + det r(s + v_i),
            # r(w) = [[wy, wx, 0], [wz, 0, wx], [0, wz, wy]]
            wx, wy, wz = dg[0], dg[1], dg[2]
            for b in range(3):
                r0 = wy if b == 0 else (wx if b == 1 else 0.0)
                r1 = wz if b == 0 else (wx if b == 2 else 0.0)
                r2 = wz if b == 1 else (wy if b == 2 else 0.0)
                dphi[7 * nv3 + col + b] += co * (p[0] * ddet[b] + det * r0)
                dphi[8 * nv3 + col + b] += co * (p[1] * ddet[b] + det * r1)
                dphi[9 * nv3 + col + b] += co * (p[2] * ddet[b] + det * r2)


# ----------------------------------------------------------------------------------------------
# Checked Python API.


def _fail(name, message):
    where = "mesh" if name is None else f"mesh {name!r}"
    raise ValueError(f"{where}: {message}")


def _check_mesh(vertices, faces, density, name):
    """Checked, contiguous float64 vertices (nvert, 3) scaled to unit size, int64 faces (nface, 3),
    float density and the exponent e of the scale: the given vertices are 2^e times the returned."""
    try:
        V = as_real_array("vertices", vertices, "an (nvert, 3) array of numbers")
    except ValueError as exc:
        _fail(name, str(exc))
    if V.ndim != 2 or V.shape[1] != 3 or V.shape[0] == 0:
        _fail(name, f"vertices must have shape (nvert, 3) with nvert > 0, got {V.shape}")
    if not np.all(np.isfinite(V)):
        bad = np.flatnonzero(~np.all(np.isfinite(V), axis=1))
        _fail(name, f"vertices must be finite: {bad.size} vertices hold NaN or inf "
                    f"(first: vertex {bad[0]} = {V[bad[0]]})")
    try:
        F_in = np.asarray(faces)
        if F_in.dtype.kind == "O":  # Python objects (e.g. a list of numpy integers): their values
            F_in = np.asarray(F_in.tolist())
    except ValueError:  # ragged
        _fail(name, f"faces must be an (nface, 3) array of vertex indices, got {type(faces).__name__}")
    if F_in.ndim != 2 or F_in.shape[1] != 3 or F_in.shape[0] == 0:
        _fail(name, f"faces must have shape (nface, 3) with nface > 0 (triangles), got {F_in.shape}")
    if F_in.dtype.kind in "iu":
        F = F_in.astype(np.int64, order="C")
    elif F_in.dtype.kind == "f" and np.all(np.isfinite(F_in)) and np.all(F_in == np.round(F_in)):
        F = F_in.astype(np.int64, order="C")
    else:
        _fail(name, f"faces must hold integer vertex indices, got dtype {F_in.dtype}")
    nvert = V.shape[0]
    if F.min() < 0 or F.max() >= nvert:
        bad = np.flatnonzero(np.any((F < 0) | (F >= nvert), axis=1))
        _fail(name, f"face indices must be in [0, {nvert}) for the {nvert} vertices: {bad.size} faces are "
                    f"out of range (first: face {bad[0]} = {F[bad[0]].tolist()})")
    try:
        rho = float(density)
    except (TypeError, ValueError, OverflowError):
        _fail(name, f"density must be a number, got {density!r}")
    if not (np.isfinite(rho) and rho > 0.0):
        _fail(name, f"density must be finite and positive, got {rho}")
    exponent = int(np.frexp(np.max(np.abs(V)))[1])  # max |V| < 2^exponent (0 for a point at 0)
    V = np.ldexp(V, -exponent)

    # degenerate faces: a repeated vertex, or (numerically) collinear corners
    repeated = (F[:, 0] == F[:, 1]) | (F[:, 1] == F[:, 2]) | (F[:, 2] == F[:, 0])
    A, B, C = V[F[:, 0]], V[F[:, 1]], V[F[:, 2]]
    area2 = np.linalg.norm(np.cross(B - A, C - A), axis=1)
    longest2 = np.max([np.sum((B - A) ** 2, axis=1), np.sum((C - B) ** 2, axis=1),
                       np.sum((A - C) ** 2, axis=1)], axis=0)
    degenerate = repeated | (area2 <= _DEGENERATE_AREA * longest2)
    if np.any(degenerate):
        bad = np.flatnonzero(degenerate)
        _fail(name, f"{bad.size} degenerate faces (zero area: coincident or collinear vertices), first: "
                    f"face {bad[0]} = {F[bad[0]].tolist()}; remove them before computing inertia")

    # closed and consistently wound: every edge in exactly two faces, once in each direction
    tail = F.reshape(-1)
    head = F[:, [1, 2, 0]].reshape(-1)
    undirected = np.minimum(tail, head) * nvert + np.maximum(tail, head)
    keys, counts = np.unique(undirected, return_counts=True)
    if np.any(counts == 1):
        bad = keys[counts == 1]
        _fail(name, f"mesh is not closed: {bad.size} edges belong to only one face, first: edge "
                    f"({bad[0] // nvert}, {bad[0] % nvert}); inertia needs a watertight mesh")
    if np.any(counts > 2):
        k = np.flatnonzero(counts > 2)[0]
        _fail(name, f"mesh is not manifold: edge ({keys[k] // nvert}, {keys[k] % nvert}) belongs to "
                    f"{counts[k]} faces (each edge must belong to exactly two)")
    directed = tail * nvert + head
    dkeys, dcounts = np.unique(directed, return_counts=True)
    if np.any(dcounts > 1):
        key = dkeys[dcounts > 1][0]
        a, b = key // nvert, key % nvert
        owners = np.flatnonzero(directed == key) // 3
        _fail(name, f"inconsistent winding: edge ({a}, {b}) is traversed in the same direction by "
                    f"faces {owners[0]} and {owners[1]} ({int(np.sum(dcounts > 1))} such edges); "
                    f"neighbouring faces must run their shared edge in opposite directions")
    return V, F, rho, exponent


def _scaled(name, x, rho, exponent, shift):
    """x (rows of phi first) of the unit mesh at unit density, for the mesh 2^exponent times larger
    of density rho: row r times rho 2^((_PHI_POWERS[r] - shift) exponent); ValueError on overflow."""
    powers = (_PHI_POWERS - shift).reshape((10,) + (1,) * (x.ndim - 1))
    mantissa, rho_exponent = np.frexp(rho)  # rho = mantissa 2^rho_exponent: one rounding below
    with np.errstate(over="ignore"):  # an overflow is the ValueError below
        out = np.ldexp(mantissa * x, powers * exponent + rho_exponent)
    if not np.all(np.isfinite(out)):
        _fail(name, f"the inertia overflows float64: vertices up to {2.0 ** min(exponent, 1023):.3g} "
                    f"in size with density {rho:.3g} (m grows as size^3, I as size^5)")
    return out


def _checked_phi(V, F, exponent, name):
    """phi of a checked unit mesh at unit density, itself checked: positive volume, physically
    consistent (the volume quoted in errors is the given mesh's, 2^(3 exponent) times larger)."""
    phi = np.empty(10)
    mesh_inertia_kernel(V.reshape(-1), F.reshape(-1), 1.0, phi)
    volume = phi[0]
    extent = float(np.linalg.norm(V.max(axis=0) - V.min(axis=0)))
    if abs(volume) <= _ZERO_VOLUME * extent ** 3:
        _fail(name, f"mesh encloses zero volume ({np.ldexp(volume, 3 * exponent):.3e}); its vertices "
                    f"must bound a solid")
    if volume < 0.0:
        _fail(name, f"negative volume ({np.ldexp(volume, 3 * exponent):.6g}): the faces are oriented "
                    f"inwards; reverse every face's vertex order so normals point outwards")
    try:
        check_physical_consistency(phi)
    except ValueError as exc:
        _fail(name, f"the computed inertia is not physically consistent, is the mesh "
                    f"self-intersecting? ({str(exc).split(': ', 1)[-1]})")
    return phi


def mesh_inertia(vertices, faces, density, name=None):
    """Inertial parameters phi (10,) = [m, hx, hy, hz, Ixx, Iyy, Izz, Ixy, Ixz, Iyz] of a closed,
    outward-oriented triangle mesh of uniform `density`, h = m c and I about the MESH ORIGIN
    (seed sec. 4, eqs. 17, 20, 22, 25).

    vertices: (nvert, 3) positions, faces: (nface, 3) vertex indices, counter-clockwise seen from
    outside. `name` (e.g. the file name) is quoted in errors. Raises ValueError for wrong shapes,
    non-finite vertices, indices out of range, degenerate faces, open or non-manifold meshes,
    inconsistent winding, zero or negative volume, or a physically inconsistent result
    (e.g. a self-intersecting mesh).

    The sums integrate signed tetrahedra from the origin, so round-off grows with the mesh's
    distance from the origin relative to its size: ~1e-14 relative at one size away, ~1e-12 at a
    thousand sizes away. Express meshes near their link frame (as URDF meshes are).
    """
    V, F, rho, exponent = _check_mesh(vertices, faces, density, name)
    return _scaled(name, _checked_phi(V, F, exponent, name), rho, exponent, 0)


def mesh_inertia_derivatives(vertices, faces, density, name=None):
    """d phi / d vertices, shape (10, nvert, 3): dphi[r, v, a] = d phi_r / d vertices[v, a], computed
    analytically (seed sec. 4, eqs. 18, 21, 23-24, 27-28). Vertices used by no face get zeros.
    Checks the mesh exactly as `mesh_inertia` does."""
    V, F, rho, exponent = _check_mesh(vertices, faces, density, name)
    _checked_phi(V, F, exponent, name)
    flat_v, flat_f = V.reshape(-1), F.reshape(-1)
    dphi = np.empty(10 * flat_v.shape[0])
    mesh_inertia_derivatives_kernel(flat_v, flat_f, 1.0, dphi)
    return _scaled(name, dphi.reshape(10, V.shape[0], 3), rho, exponent, 1)
