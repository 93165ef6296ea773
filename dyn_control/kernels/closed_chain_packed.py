"""The loop closure of a closed chain on packed buffers (kernels/packed.py): the fields every
compiled closed-chain call shares (the simulator's step, the controller's tick), listed first in their
layouts so the field numbers below hold in both, and `close_packed`, which completes the tree state
from the actuated one (loop_closure.close, completion_jacobian, tree_motion).
"""
from ..jit import njit
from .loop_closure import CLOSED, close, completion_jacobian, tree_motion
from .packed import copy_model, field1, field2, field3, field_indices


def chain_float_fields(nb, na, nc):
    nv = nb
    return [
        # the tree model and the loop's frames (A on one branch, B its copy on the other)
        ("screw_axes", (nb, 6)), ("home_R", (nb, 3, 3)), ("home_p", (nb, 3)), ("phi", (nb, 10)),
        ("base_accel", (6,)), ("frame_a_R", (3, 3)), ("frame_a_p", (3,)), ("frame_b_R", (3, 3)),
        ("frame_b_p", (3,)), ("closure_tolerances", (2,)),     # Newton tolerance, singular tolerance
        # the actuated state and the tree state completing it
        ("theta", (na,)), ("dtheta", (na,)), ("q", (nv,)), ("v", (nv,)), ("a_bias", (nv,)),
        ("G", (nv, na)),
        # loop-closure workspace
        ("K", (nc, nv)), ("K_p", (nc, nc)), ("residual", (nc,)), ("rhs", (nc,)), ("sign", (nv,)),
        ("R", (nb, 3, 3)), ("p", (nb, 3)), ("oR", (nb, 3, 3)), ("op", (nb, 3)), ("oS", (nb, 6)),
        ("oV", (nb, 6)), ("R_A", (3, 3)), ("p_A", (3,)), ("R_B", (3, 3)), ("p_B", (3,)), ("tmp6", (12, 6)),
    ]


def chain_int_fields(nb, na, nc):
    return [("parents", (nb,)), ("active", (na,)), ("passive", (nc,)), ("components", (nc,)),
            ("pivots", (nc,)), ("path", (nb,)),
            ("chain_dims", (6,))]    # nb, na, nc, body of frame A, body of frame B, max Newton iterations


_F = field_indices(chain_float_fields(1, 1, 1))
_I = field_indices(chain_int_fields(1, 1, 1))
(SCREW_AXES, HOME_R, HOME_P, PHI, BASE_ACCEL, FRAME_A_R, FRAME_A_P, FRAME_B_R, FRAME_B_P, CLOSURE_TOLERANCES,
 THETA, DTHETA, Q, V, A_BIAS, G, K, K_P, RESIDUAL, RHS, SIGN, R_, P_, OR, OP, OS, OV, R_A, P_A, R_B, P_B,
 TMP6) = range(len(_F))
PARENTS, ACTIVE, PASSIVE, COMPONENTS, PIVOTS, PATH, CHAIN_DIMS = range(len(_I))


def chain_loop(mapping, model, what):
    """mapping.loop_frames() for the compiled `what`, or a ValueError: these paths take fixed bases of
    1-DoF joints and a mapping whose loop is a pair of frames."""
    if model.nq != model.nv:
        raise ValueError(f"the compiled {what} takes fixed bases of 1-DoF joints; robot {model.name!r} has a "
                         f"free flyer or multi-DoF joints")
    loop = mapping.loop_frames()
    if loop is None:
        raise ValueError(f"mapping {type(mapping).__name__}: its loop_frames() is None; the compiled {what} "
                         f"needs the loop as a pair of frames")
    return loop


def fill_chain(f, i, model, loop):
    """The chain fields of packed buffers (f: floats, i: ints) from the tree `model` and a
    mappings.LoopFrames `loop`."""
    copy_model(model, f)
    i.parents[:] = model.parents
    i.active[:] = loop.active
    i.passive[:] = loop.passive
    i.components[:] = loop.components
    ids = [model.frame_id(name) for name in (loop.frame_a, loop.frame_b)]
    f.frame_a_R[:], f.frame_a_p[:] = model.frame_R[ids[0]], model.frame_p[ids[0]]
    f.frame_b_R[:], f.frame_b_p[:] = model.frame_R[ids[1]], model.frame_p[ids[1]]
    f.closure_tolerances[:] = loop.tolerance, loop.singular_tolerance
    i.chain_dims[:] = (model.nbodies, len(loop.active), len(loop.passive), model.frame_body[ids[0]],
                       model.frame_body[ids[1]], loop.max_iterations)


@njit(cache=True, nogil=True)
def close_packed(f, fo, ints, io):
    """q, v, G and a_bias of the tree from the actuated state theta, dtheta: the active joints of q
    set to theta, the passive ones by Newton from their current values (the warm start). Returns
    loop_closure's status (CLOSED, NOT_CONVERGED, SINGULAR, NOT_FINITE)."""
    dims = field1(ints, io, CHAIN_DIMS, 6)
    nb, na, nc, body_a, body_b, max_iterations = dims[0], dims[1], dims[2], dims[3], dims[4], dims[5]
    active = field1(ints, io, ACTIVE, na)
    passive = field1(ints, io, PASSIVE, nc)
    components = field1(ints, io, COMPONENTS, nc)
    pivots = field1(ints, io, PIVOTS, nc)
    parents = field1(ints, io, PARENTS, nb)
    tolerances = field1(f, fo, CLOSURE_TOLERANCES, 2)
    q = field1(f, fo, Q, nb)
    theta = field1(f, fo, THETA, na)
    for k in range(na):
        q[active[k]] = theta[k]
    K_ = field2(f, fo, K, nc, nb)
    K_p = field2(f, fo, K_P, nc, nc)
    oS = field2(f, fo, OS, nb, 6)
    sign = field1(f, fo, SIGN, nb)
    R_A_ = field2(f, fo, R_A, 3, 3)
    p_A_ = field1(f, fo, P_A, 3)
    rhs = field1(f, fo, RHS, nc)
    tmp6 = field2(f, fo, TMP6, 12, 6)
    status = close(parents, field2(f, fo, SCREW_AXES, nb, 6), field3(f, fo, HOME_R, nb, 3, 3),
                   field2(f, fo, HOME_P, nb, 3), q, active, passive, body_a, field2(f, fo, FRAME_A_R, 3, 3),
                   field1(f, fo, FRAME_A_P, 3), body_b, field2(f, fo, FRAME_B_R, 3, 3), field1(f, fo, FRAME_B_P, 3),
                   components, tolerances[0], tolerances[1], max_iterations, field3(f, fo, R_, nb, 3, 3),
                   field2(f, fo, P_, nb, 3), field3(f, fo, OR, nb, 3, 3), field2(f, fo, OP, nb, 3), oS, sign,
                   R_A_, p_A_, field2(f, fo, R_B, 3, 3), field1(f, fo, P_B, 3), K_, K_p, pivots,
                   field1(f, fo, RESIDUAL, nc), tmp6)
    if status != CLOSED:
        return status
    G_ = field2(f, fo, G, nb, na)
    completion_jacobian(K_, K_p, pivots, active, passive, rhs, G_)
    tree_motion(parents, oS, sign, body_a, R_A_, p_A_, components, K_p, pivots, passive, G_,
                field1(f, fo, DTHETA, na), field1(f, fo, V, nb), field2(f, fo, OV, nb, 6),
                field1(f, fo, A_BIAS, nb), rhs, tmp6)
    return CLOSED

