"""A free-flyer root as six 1-DoF bodies (floating_base.py explains the construction): the tree's
inputs from a configuration q = [p (3); quaternion (x, y, z, w)], and the velocity-product
acceleration b(nu) of the six-body chain with its Jacobian.

The chain's joints k = 0..5 have the unit screws e_k ([w; v], angular first) at the root link's frame
and zero positions, so that its twist is nu = v[:6] and its acceleration sum_k e_k a_k + b(nu) with

    b(nu) = sum_{k < i} (e_k nu_k) x (e_i nu_i),       (the motion cross product of each pair)

the Coriolis term of the chain's forward pass; the floating base's acceleration a[:6] is the chain's
a_tree[:6] + b(nu).
"""
from ..jit import njit

FREE_FLYER_DOFS = 6


@njit(cache=True, inline="always")
def _unit_cross(k, i, scale, out):
    """out += scale e_k x e_i (motion cross product of unit screws, angular first)."""
    # [w1; v1] x [w2; v2] = [w1 x w2; w1 x v2 + v1 x w2]: unit axes a, b give a x b in the row block
    # of the result that the pair selects
    if k < 3 and i < 3:
        block, a, b = 0, k, i
    elif k < 3:
        block, a, b = 3, k, i - 3
    elif i < 3:
        block, a, b = 3, k - 3, i
    else:
        return
    c = 3 - a - b
    if a == b:
        return
    sign = 1.0 if (b - a) % 3 == 1 else -1.0  # x cross y = z, y cross z = x, z cross x = y
    out[block + c] += sign * scale


@njit(cache=True)
def bias_acceleration(nu, out):
    """out = b(nu) (6,), the chain's velocity-product acceleration (module docstring)."""
    for r in range(6):
        out[r] = 0.0
    for i in range(FREE_FLYER_DOFS):
        for k in range(i):
            _unit_cross(k, i, nu[k] * nu[i], out)


@njit(cache=True)
def bias_jacobian(nu, out):
    """out = d b / d nu (6, 6): column j = e_j x sum_{i > j} e_i nu_i + sum_{k < j} e_k nu_k x e_j."""
    for r in range(6):
        for c in range(6):
            out[r, c] = 0.0
    for j in range(FREE_FLYER_DOFS):
        column = out[:, j]
        for i in range(j + 1, FREE_FLYER_DOFS):
            _unit_cross(j, i, nu[i], column)
        for k in range(j):
            _unit_cross(k, j, nu[k], column)


@njit(cache=True)
def base_state(q, gravity, R, p, base_accel, q_tree):
    """From q (nq,) of a free-flyer model: the root link's rotation R (3, 3) from its quaternion
    q[3:7] (x, y, z, w) and position p = q[:3] in the world, the base acceleration
    base_accel = [0; -R^T g] (gravity in the root link's frame) and the tree's joint positions
    q_tree = [0 (6); q[7:]]."""
    x, y, z, w = q[3], q[4], q[5], q[6]
    s = 2.0 / (x * x + y * y + z * z + w * w)
    R[0, 0] = 1.0 - s * (y * y + z * z)
    R[0, 1] = s * (x * y - z * w)
    R[0, 2] = s * (x * z + y * w)
    R[1, 0] = s * (x * y + z * w)
    R[1, 1] = 1.0 - s * (x * x + z * z)
    R[1, 2] = s * (y * z - x * w)
    R[2, 0] = s * (x * z - y * w)
    R[2, 1] = s * (y * z + x * w)
    R[2, 2] = 1.0 - s * (x * x + y * y)
    for r in range(3):
        p[r] = q[r]
        base_accel[r] = 0.0
        base_accel[3 + r] = -(R[0, r] * gravity[0] + R[1, r] * gravity[1] + R[2, r] * gravity[2])
    for k in range(FREE_FLYER_DOFS):
        q_tree[k] = 0.0
    for k in range(FREE_FLYER_DOFS, q_tree.shape[0]):
        q_tree[k] = q[k + 1]
