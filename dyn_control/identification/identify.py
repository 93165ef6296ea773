"""`identify`: from recorded joint states to an identified, physically consistent Model, validated on
a held-out part of the recording.

1. filtering (filtering.py): the states low-passed at `cutoff` and differentiated, the regressor
   of those states and the efforts filtered alike (parallel filtering); the last `validation`
   fraction of the recording is held out, and both parts are kept at DECIMATION samples per
   cut-off period (the filtered signals hold nothing faster);
2. the stacked regressor W (rows: sample by sample, joint by joint) and the base parameters
   (base_parameters.py): an error when the motion leaves some unexcited;
   (only the rows filtering.Regression finds usable: not near a joint moving slowly);
3. per-joint weights 1 / sigma_j, sigma_j the RMS residual of joint j's torque under an ordinary
   least-squares fit of the base parameters (at least SIGMA_FLOOR of that torque's RMS); the base
   parameters by weighted least squares, with their relative standard deviations;
4. the physically consistent standard parameters (consistent.py), regularised toward the prior;
5. validation: per-joint RMS torque error on the held-out part, prior and identified model.
"""
import numpy as np

import dyn_control as dc

from .base_parameters import (check_identifiable, estimate_base_parameters, structural_base_parameters,
                              weighted_normal_form)
from .consistent import REGULARIZATION, consistent_parameters
from .filtering import Regression, filtered_samples
from .validation import TorqueErrors, predicted_torques

DECIMATION = 25      # samples kept per cut-off period for the fit
SIGMA_FLOOR = 1e-4   # relative to the joint's torque RMS: a lower bound of its residual's RMS


class Identification:
    """The result of `identify`: model (the identified Model), prior (the Model it started from),
    base (BaseParameters) and base_estimate (BaseEstimate: weighted least squares); on the held-out
    part (when there is one, else t is None): t (N,), measured (N, nv), predicted {"prior",
    "identified"} (N, nv), usable (N, nv): the samples of a joint moving fast enough for the
    friction model (filtering.Regression) and errors {"prior", "identified"} (TorqueErrors) on those."""

    def __init__(self, model, prior, base, base_estimate):
        self.model, self.prior, self.base, self.base_estimate = model, prior, base, base_estimate
        self.t = self.measured = None
        self.predicted, self.errors = {}, {}

    def validate(self, regression, index, joint_terms):
        """Fill the held-out figures from the samples `index` (a slice) of a filtering.Regression."""
        W, tau, _ = regression.rows(index, usable_only=False)
        self.t, self.usable = regression.t[index], regression.usable[index]
        self.measured = tau.reshape(-1, self.model.nv)
        for name, model in (("prior", self.prior), ("identified", self.model)):
            self.predicted[name] = predicted_torques(model, W, joint_terms)
            self.errors[name] = TorqueErrors(self.measured, self.predicted[name], self.usable)


def identify(model, states, cutoff=10.0, validation=0.3, prior=None, joint_terms=True,
             gamma=REGULARIZATION, effort_delay=0.0, progress=None):
    """The Identification of `model`'s parameters from JointStates `states` (bag.read_joint_states,
    in model.joint_names order): module docstring. prior: the Model whose parameters regularise
    the fit (default: model, i.e. the URDF's); effort_delay [s]: how late the efforts are
    (filtering.filtered_samples); progress(text) hears of each step."""
    say = progress or (lambda text: None)
    if not 0.0 <= validation < 1.0:
        raise ValueError(f"validation must be a fraction in [0, 1), got {validation}")
    prior = model if prior is None else prior
    say(f"filtering {states.t.size} samples at {cutoff:g} Hz")
    samples, low_pass = filtered_samples(states.t, states.q, states.effort, cutoff, states.v, effort_delay)
    say("regressor")
    regression = Regression(samples, low_pass,
                            lambda q, v, a: dc.regressor_batch(model, q, v, a, joint_terms=joint_terms))
    count = regression.t.size
    split = int(round((1.0 - validation) * count))
    step = max(1, int(1.0 / (DECIMATION * cutoff * low_pass.dt)))
    W, tau, joint = regression.rows(slice(0, split, step))
    base = structural_base_parameters(model, joint_terms)
    check_identifiable(base, W)

    say(f"base parameters from {W.shape[0]} torque rows")
    weights = _joint_weights(W[:, base.independent], tau, joint, model.nv)[joint]
    R, y, rest = weighted_normal_form(W, tau, weights)
    base_estimate = estimate_base_parameters(base, R, y, rest, W.shape[0])

    say("physically consistent parameters (cvxpy + Clarabel)")
    prior_joint = prior.joint_parameters() if joint_terms else None
    phi, terms = consistent_parameters(R, y, W.shape[0], prior.phi, prior_joint, gamma)
    identified = model.with_inertial_parameters(phi)
    if joint_terms:
        identified = identified.with_joint_dynamics(armature=terms[:, 0], viscous=terms[:, 1], coulomb=terms[:, 2])
    result = Identification(identified, prior, base, base_estimate)
    if split < count:
        say("validation")
        result.validate(regression, slice(split, None, step), joint_terms)
    return result


def _joint_weights(Wb, tau, joint, nv):
    """1 / sigma_j per joint j: sigma_j the RMS residual of joint j's rows (joint == j) under an
    ordinary least-squares fit of the base parameters (columns Wb), at least SIGMA_FLOOR of the
    RMS of its torques (1 for a joint without rows or torque)."""
    beta, *_ = np.linalg.lstsq(Wb, tau, rcond=None)
    residual = tau - Wb @ beta
    sigma = np.ones(nv)
    for j in range(nv):
        rows = joint == j
        if np.any(rows):
            sigma[j] = max(np.sqrt(np.mean(residual[rows] ** 2)), SIGMA_FLOOR * np.sqrt(np.mean(tau[rows] ** 2)))
    sigma[sigma == 0.0] = 1.0
    return 1.0 / sigma


def mesh_prior(model, density, progress=None):
    """The model with each body's inertial parameters from its links' meshes (the body's own link and
    the fixed links merged into it) as solids of uniform `density` [kg/m^3]
    (dc.inertia_from_link_meshes); a body none of whose links has a mesh keeps the URDF's values
    (progress hears which)."""
    from ..inertia.parameters import transform_phi
    phi = model.phi.copy()
    for i, body in enumerate(model.body_names):
        links = [(k, f) for k, f in enumerate(model.frame_names)
                 if model.frame_body[k] == i and any(s["type"] == "mesh" for s in model.link_geometry.get(f, ()))]
        if not links:
            if progress is not None:
                progress(f"prior: {body} has no mesh, its URDF inertial stays")
            continue
        phi[i] = sum(transform_phi(dc.inertia_from_link_meshes(model, f, density), model.frame_R[k], model.frame_p[k])
                     for k, f in links)
    return model.with_inertial_parameters(phi)
