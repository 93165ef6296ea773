"""Closed-chain mappings: a parallel mechanism as its equivalent tree plus a loop-closure mapping.

URDF (and so a Model) cannot describe a closed loop. A closed chain is loaded as its equivalent
tree, one loop joint cut, and a ClosedChainMapping from the tree to the actuated joints (seed
"Differential Dynamics and Mesh-Based Inertia", sec. 3): the actuated (active) joints theta_a are
the closed chain's coordinates, the passive joints follow from the loop closure, and tree torques
map to actuator torques by virtual work.

Mappings are plugins: a package adds a mechanism by declaring an entry point in the group
`dyn_control.mappings` whose object is a ClosedChainMapping subclass, e.g. in setup.py

    entry_points={"dyn_control.mappings": ["my_linkage = my_pkg.linkage:MyLinkage"]}

and users get it with `dc.load_mapping("my_linkage", model, **parameters)`.
"""
import abc
import inspect
import numbers
from dataclasses import dataclass
from importlib.metadata import entry_points

import numpy as np

from ..configuration import integrate
from ..derivatives import regressor
from ..dynamics import as_finite_array, crba, jacobian, rnea
from ..model import FREE_FLYER_DOFS

ENTRY_POINT_GROUP = "dyn_control.mappings"


class MappingPluginError(RuntimeError):
    """A closed-chain mapping plugin could not be loaded; the message names the plugin."""


class ClosedChainMapping(abc.ABC):
    """The loop closure of a closed chain on its equivalent tree `model`.

    Tree vectors are the model's: q (nq,), v, a, tau_tree (nv,) in model.joint_names order. Subclasses
    set `active_indices` and `passive_indices` (int arrays of indices into v) in __init__ and take
    their parameters as keyword arguments. Passive joints are 1-DoF joints of the loop; everything else
    is active, a free flyer's or a multi-DoF joint's velocities as one block in their own order.
    Closed-chain vectors follow active_indices: dtheta_a, ddtheta_a, tau_a (n_active,) one entry per
    active velocity; theta_a the matching entries of q, active_configuration_indices (a free flyer's
    or multi-DoF joint's whole configuration, its quaternion included, at its block's place), so that
    on a fixed base of 1-DoF joints theta_a = q[active_indices].
    """

    def __init__(self, model):
        self.model = model
        self.active_indices = np.zeros(0, dtype=np.int64)
        self.passive_indices = np.zeros(0, dtype=np.int64)

    @property
    def active_joints(self):
        """Names of the actuated joints, in theta_a order."""
        return tuple(self.model.joint_names[i] for i in self.active_indices)

    @property
    def passive_joints(self):
        return tuple(self.model.joint_names[i] for i in self.passive_indices)

    @property
    def active_configuration_indices(self):
        """The entries of a tree configuration q that make theta_a, in active_indices order."""
        return configuration_entries(self.model, self.active_indices)

    def active_configuration(self, q):
        """theta_a of a tree configuration q (nq,): its active entries."""
        return as_finite_array("q", q, (self.model.nq,))[self.active_configuration_indices]

    @abc.abstractmethod
    def complete(self, theta_a, guess=None):
        """The tree configuration q (nq,) closing the loop with active joints theta_a; `guess` (a
        tree configuration) selects the solution near it. ValueError when there is none."""

    @abc.abstractmethod
    def closure_residual(self, q):
        """The loop-closure error of tree configuration q, one entry per passive joint."""

    @abc.abstractmethod
    def passive_jacobian(self, q):
        """J_p with dtheta_p = J_p dtheta_a at a closed configuration q, (n_passive, n_active)."""

    def map_torque(self, q, tau_tree):
        """Actuator torques of the closed chain from tree torques at a closed configuration q:
        tau_a + J_p^T tau_p (virtual work, eq. 13 of the seed)."""
        tau_tree = as_finite_array("tau_tree", tau_tree, (self.model.nv,))
        return tau_tree[self.active_indices] + self.passive_jacobian(q).T @ tau_tree[self.passive_indices]

    @abc.abstractmethod
    def map_torque_derivative(self, q, tau_tree, dtau_tree):
        """d(map_torque)/d theta_a along the closed chain, given tau_tree and its derivative
        dtau_tree = d tau_tree / d theta_a (nv, n_active)."""

    @abc.abstractmethod
    def inverse_dynamics(self, model, data, theta_a, dtheta_a, ddtheta_a, guess=None):
        """Actuator torques (n_active,) that move the closed chain with theta_a, dtheta_a, ddtheta_a."""

    @abc.abstractmethod
    def inverse_dynamics_derivatives(self, model, data, theta_a, dtheta_a, ddtheta_a, guess=None):
        """(d tau_a / d theta_a, d tau_a / d dtheta_a, M_a) of inverse_dynamics."""

    @abc.abstractmethod
    def forward_dynamics(self, model, data, theta_a, dtheta_a, tau_a, guess=None):
        """Accelerations ddtheta_a (n_active,) of the closed chain under actuator torques tau_a."""

    # ------------------------------------------------------------------------------------------
    # defaults built on the abstract methods above (a plugin may override them with faster ones)

    def loop_frames(self):
        """The loop as a pair of frames that coincide when it is closed (a LoopFrames), which the
        compiled closed-chain step and controller tick need; None (the default) when the mapping is
        not of that kind: the nodes then refuse the mapping with a message naming it."""
        return None

    def completion_jacobian(self, q):
        """G = dq/dtheta_a (nv, n_active) at a closed configuration q: identity rows for the active
        joints, passive_jacobian(q) for the passive ones (so v = G dtheta_a, tau_a = G^T tau_tree)."""
        G = np.zeros((self.model.nv, self.active_indices.size))
        G[self.active_indices] = np.eye(self.active_indices.size)
        G[self.passive_indices] = self.passive_jacobian(q)
        return G

    def tree_state(self, theta_a, dtheta_a, ddtheta_a, guess=None):
        """(q, v, a) of the equivalent tree moving with the closed chain: q = complete(theta_a),
        v = G dtheta_a, a = G ddtheta_a + Gdot dtheta_a, Gdot dtheta_a here by a central difference
        of G along dtheta_a (step 1e-6 / |dtheta_a|, taken on the tree's configuration space: the
        closed configurations at theta_a moved by +-h dtheta_a)."""
        na = self.active_indices.size
        dtheta_a = as_finite_array("dtheta_a", dtheta_a, (na,))
        ddtheta_a = as_finite_array("ddtheta_a", ddtheta_a, (na,))
        q = self.complete(theta_a, guess)
        G = self.completion_jacobian(q)
        speed = np.linalg.norm(dtheta_a)
        a = G @ ddtheta_a
        if speed > 0.0:
            step = (1e-6 / speed) * (G @ dtheta_a)
            G_plus, G_minus = (self.completion_jacobian(self.complete(
                self.active_configuration(integrate(self.model, q, sign * step)), q)) for sign in (1.0, -1.0))
            a += (G_plus - G_minus) @ dtheta_a * (speed / 2e-6)
        return q, G @ dtheta_a, a

    def reduced_dynamics(self, model, data, theta_a, dtheta_a, guess=None):
        """(M_a, h_a, q): M_a = G^T M(q) G and h_a = G^T rnea(q, v, Gdot dtheta_a), so that
        M_a ddtheta_a + h_a = tau_a (kernels/reduced_dynamics.py), and the tree configuration q."""
        q, v, a_bias = self.tree_state(theta_a, dtheta_a, np.zeros(self.active_indices.size), guess)
        G = self.completion_jacobian(q)
        return G.T @ crba(model, data, q) @ G, G.T @ rnea(model, data, q, v, a_bias), q

    def reduced_regressor(self, model, data, theta_a, dtheta_a, ddtheta_a, guess=None):
        """Y_a (n_active, 10 nbodies) with inverse_dynamics(...) = Y_a phi: G^T Y(q, v, a) at the tree
        state of the closed chain, phi = model.inertial_parameters() (every body of the tree)."""
        q, v, a = self.tree_state(theta_a, dtheta_a, ddtheta_a, guess)
        return self.completion_jacobian(q).T @ regressor(model, data, q, v, a)

    def frame_jacobian(self, q, frame, reference="local_world_aligned"):
        """Jacobian (6, n_active) of `frame` (a frame of the tree) with respect to the actuated
        joints at a closed configuration q: the tree's frame Jacobian times G."""
        if not hasattr(self, "_jacobian_data"):
            self._jacobian_data = self.model.create_data()
        return jacobian(self.model, self._jacobian_data, q, frame, reference) @ self.completion_jacobian(q)


def configuration_entries(model, v_indices):
    """The entries of q (nq,) that the velocities v_indices move, in their order: one per 1-DoF joint,
    a free flyer's or multi-DoF joint's whole configuration at its first velocity (its others bring
    none)."""
    blocks = {0: (FREE_FLYER_DOFS, FREE_FLYER_DOFS + 1)} if model.root_joint is not None else {}
    blocks.update({joint.body: (joint.nv, joint.nq) for joint in model.multi_dof_joints})
    entries, i, extra = {}, 0, 0
    while i < model.nv:
        nv, nq = blocks.get(i, (1, 1))
        entries.update({i + k: [] for k in range(nv)})
        entries[i] = list(range(i + extra, i + extra + nq))
        i, extra = i + nv, extra + nq - nv
    return np.array([e for i in v_indices for e in entries[int(i)]], dtype=np.int64)


@dataclass(frozen=True)
class LoopFrames:
    """A loop closed where frame_a (on one branch of the tree) and frame_b (its copy at the end of the
    other) coincide in the `components` of log(T_b^-1 T_a) = [w; v] (kernels/loop_closure.py).
    active, passive: tree joint indices; Newton stops below `tolerance` within max_iterations;
    the passive joints count as singular where the smallest pivot of g_p is below singular_tolerance."""
    frame_a: str
    frame_b: str
    components: tuple
    active: tuple
    passive: tuple
    tolerance: float
    singular_tolerance: float
    max_iterations: int


def _mapping_entry_points():
    return entry_points(group=ENTRY_POINT_GROUP)


def available_mappings():
    """Names of the installed closed-chain mappings (nothing is imported)."""
    return sorted({ep.name for ep in _mapping_entry_points()})


def load_mapping(name, model, config=None, **params):
    """The closed-chain mapping plugin `name` (an entry point of group dyn_control.mappings) built on
    the equivalent-tree `model` with its parameters, given as a dict `config` (e.g. the `parameters`
    of config/five_bar.yaml), as keywords, or both (keywords win).

    ValueError when no plugin has that name or its __init__ does not take a parameter given (named in
    the message; the plugin checks the values); MappingPluginError, naming the plugin, when it fails
    to import or is not a ClosedChainMapping."""
    if not isinstance(name, str):
        raise ValueError(f"the name of a closed-chain mapping must be a string, got {name!r}")
    matches = [ep for ep in _mapping_entry_points() if ep.name == name]
    if not matches:
        installed = ", ".join(available_mappings()) or "none"
        raise ValueError(f"no closed-chain mapping named {name!r} (entry-point group "
                         f"{ENTRY_POINT_GROUP!r}); installed: {installed}")
    entry_point = matches[0]
    try:
        mapping_class = entry_point.load()
    except Exception as exc:  # any error of a third-party module is reported under its plugin name
        raise MappingPluginError(f"closed-chain mapping plugin {name!r} ({entry_point.value}) failed "
                                 f"to load: {type(exc).__name__}: {exc}") from exc
    if not (isinstance(mapping_class, type) and issubclass(mapping_class, ClosedChainMapping)):
        raise MappingPluginError(f"closed-chain mapping plugin {name!r} ({entry_point.value}) is not a "
                                 f"dyn_control.mappings.ClosedChainMapping subclass")
    if config is not None and not isinstance(config, dict):
        raise ValueError(f"config of mapping {name!r} must be a dict of parameters, got {type(config).__name__}")
    params = {**(config or {}), **params}
    not_names = [key for key in params if not isinstance(key, str)]
    if not_names:
        raise ValueError(f"parameters of mapping {name!r} must be named by strings, got {not_names!r}")
    signature = inspect.signature(mapping_class)
    try:
        signature.bind(model, **params)
    except TypeError as exc:
        takes = ", ".join(list(signature.parameters)[1:])
        raise ValueError(f"mapping {name!r}: {exc} (it takes {takes})") from None
    return mapping_class(model, **params)


@dataclass
class ClosedChainRun:
    """Samples of a closed-chain simulation, one row per control step."""
    time: np.ndarray               # (n,)
    q: np.ndarray                  # (n, nv) tree configurations closing the loop
    theta_a: np.ndarray            # (n, n_active) actuated joint positions
    dtheta_a: np.ndarray           # (n, n_active) actuated joint velocities
    theta_a_desired: np.ndarray    # (n, n_active)
    tau_a: np.ndarray              # (n, n_active) actuator torques applied over the following step
    closure_residual: np.ndarray   # (n,) norm of the loop-closure residual of the tree configuration


def simulate_closed_chain(mapping, model, reference, duration, dt, kp, kd, theta_a0=None,
                          dtheta_a0=None):
    """Computed-torque control of a closed chain, integrated in reduced coordinates (theta_a).

    reference(t) -> (theta_d, dtheta_d, ddtheta_d). Each control step of length dt applies
        tau_a = inverse_dynamics(theta_a, dtheta_a, a_cmd),
        a_cmd = ddtheta_d + kd (dtheta_d - dtheta_a) + kp (theta_d - theta_a),
    held constant while a classical Runge-Kutta step integrates the plant
    ddtheta_a = forward_dynamics(theta_a, dtheta_a, tau_a), i.e. M_a^-1 (tau_a - mapped bias).
    The tree configuration closing the loop is recomputed at every evaluation (warm-started from the
    previous one), so the passive joints never drift. Starts on the reference unless theta_a0,
    dtheta_a0 are given. Returns a ClosedChainRun. Fixed bases of 1-DoF joints only (theta_a a
    vector), as the controllers.
    """
    if mapping.model.nq != mapping.model.nv:
        raise ValueError(f"simulate_closed_chain: robot {mapping.model.name!r} has a free flyer or multi-DoF "
                         f"joints; this simulation integrates theta_a as a vector (fixed bases of 1-DoF joints)")
    if not (isinstance(duration, numbers.Real) and 0.0 <= duration < np.inf):
        raise ValueError(f"duration must be a finite number >= 0, got {duration!r}")
    if not (isinstance(dt, numbers.Real) and 0.0 < dt < np.inf):
        raise ValueError(f"dt must be a finite number > 0, got {dt!r}")
    data = model.create_data()
    steps = int(round(duration / dt))
    theta_d, dtheta_d, _ = reference(0.0)
    theta = np.array(theta_d if theta_a0 is None else theta_a0, dtype=np.float64)
    dtheta = np.array(dtheta_d if dtheta_a0 is None else dtheta_a0, dtype=np.float64)
    q = mapping.complete(theta)
    n = steps + 1
    run = ClosedChainRun(np.arange(n) * dt, np.zeros((n, q.size)), np.zeros((n, theta.size)),
                         np.zeros((n, theta.size)), np.zeros((n, theta.size)), np.zeros((n, theta.size)),
                         np.zeros(n))

    for k in range(n):
        t = k * dt
        theta_d, dtheta_d, ddtheta_d = reference(t)
        a_cmd = ddtheta_d + kd * (dtheta_d - dtheta) + kp * (theta_d - theta)
        tau = mapping.inverse_dynamics(model, data, theta, dtheta, a_cmd, guess=q)
        run.q[k], run.theta_a[k], run.dtheta_a[k], run.theta_a_desired[k], run.tau_a[k] = (
            q, theta, dtheta, theta_d, tau)
        run.closure_residual[k] = np.linalg.norm(mapping.closure_residual(q))
        if k == steps:
            break

        def acceleration(theta_k, dtheta_k):
            return mapping.forward_dynamics(model, data, theta_k, dtheta_k, tau, guess=q)

        k1_x, k1_v = dtheta, acceleration(theta, dtheta)
        k2_x, k2_v = dtheta + 0.5 * dt * k1_v, acceleration(theta + 0.5 * dt * k1_x, dtheta + 0.5 * dt * k1_v)
        k3_x, k3_v = dtheta + 0.5 * dt * k2_v, acceleration(theta + 0.5 * dt * k2_x, dtheta + 0.5 * dt * k2_v)
        k4_x, k4_v = dtheta + dt * k3_v, acceleration(theta + dt * k3_x, dtheta + dt * k3_v)
        theta = theta + dt / 6.0 * (k1_x + 2.0 * k2_x + 2.0 * k3_x + k4_x)
        dtheta = dtheta + dt / 6.0 * (k1_v + 2.0 * k2_v + 2.0 * k3_v + k4_v)
        q = mapping.complete(theta, guess=q)
    return run


__all__ = ["ENTRY_POINT_GROUP", "ClosedChainMapping", "ClosedChainRun", "LoopFrames", "MappingPluginError",
           "available_mappings", "load_mapping", "simulate_closed_chain"]
