"""`identify`: from recorded joint states to an identified, physically consistent Model, validated on
a held-out part of the recording.

1. filtering: zero-phase low-pass at `cutoff` and differentiation (filtering.py); the last
   `validation` fraction of the recording is held out, the rest is kept at DECIMATION samples per
   cut-off period (the filtered signals hold nothing faster);
2. the stacked regressor W (rows: sample by sample, joint by joint) and the base parameters
   (base_parameters.py): an error when the motion leaves some unexcited;
3. per-joint weights 1 / sigma_j, sigma_j the RMS residual of joint j's torque under an ordinary
   least-squares fit of the base parameters (at least SIGMA_FLOOR of that torque's RMS); the base
   parameters by weighted least squares, with their relative standard deviations;
4. the physically consistent standard parameters (consistent.py), regularised toward the prior;
5. validation: per-joint RMS torque error on the held-out part, prior and identified model.
"""
import numpy as np

from .base_parameters import (IdentificationError, check_identifiable, estimate_base_parameters, regressor_rows,
                              structural_base_parameters, weighted_normal_form)
from .consistent import REGULARIZATION, consistent_parameters
from .filtering import filtered_samples
from .validation import TorqueErrors, predicted_torques

DECIMATION = 25      # samples kept per cut-off period for the fit
SIGMA_FLOOR = 1e-4   # relative to the joint's torque RMS: a lower bound of its residual's RMS


class Identification:
    """The result of `identify`: model (identified), prior (the model it started from), base
    (BaseParameters), base_estimate (BaseEstimate), the held-out samples `held_out` (or None) and
    on them measured (N, nv), predicted {"prior", "identified"} (N, nv) and errors {same: TorqueErrors}."""


def _decimated(samples, cutoff):
    dt = samples.t[1] - samples.t[0]
    return samples.part(slice(None, None, max(1, int(1.0 / (DECIMATION * cutoff * dt)))))


def identify(model, states, cutoff=10.0, validation=0.3, prior=None, joint_terms=True,
             gamma=REGULARIZATION, progress=None):
    """The Identification of `model`'s parameters from JointStates `states` (bag.read_joint_states,
    in model.joint_names order): module docstring. prior: the Model whose parameters regularise
    the fit (default: model, i.e. the URDF's); progress(text) hears of each step."""
    say = progress or (lambda text: None)
    if not 0.0 <= validation < 1.0:
        raise ValueError(f"validation must be a fraction in [0, 1), got {validation}")
    prior = model if prior is None else prior
    say("filtering")
    samples = filtered_samples(states.t, states.q, states.effort, cutoff, states.v)
    split = int(round((1.0 - validation) * len(samples)))
    if split < 2:
        raise IdentificationError(f"too few samples: {len(samples)} after filtering")
    fit = _decimated(samples.part(slice(0, split)), cutoff)
    nv = model.nv
    say(f"regressor of {len(fit)} samples")
    W = regressor_rows(model, fit.q, fit.v, fit.a, joint_terms)
    tau = fit.effort.reshape(-1)
    base = structural_base_parameters(model, joint_terms)
    check_identifiable(base, W)

    say("base parameters")
    Wb = W[:, base.independent]
    beta, *_ = np.linalg.lstsq(Wb, tau, rcond=None)
    residual = (tau - Wb @ beta).reshape(-1, nv)
    torque_rms = np.sqrt(np.mean(fit.effort ** 2, axis=0))
    sigma = np.maximum(np.sqrt(np.mean(residual ** 2, axis=0)), SIGMA_FLOOR * torque_rms)
    sigma[sigma == 0.0] = 1.0
    weights = np.tile(1.0 / sigma, len(fit))
    R, y, rest = weighted_normal_form(W, tau, weights)
    Rb = R[:, base.independent]
    beta_w, *_ = np.linalg.lstsq(Rb, y, rcond=None)
    dof = max(W.shape[0] - base.count, 1)
    variance = (float(np.sum((Rb @ beta_w - y) ** 2)) + rest) / dof
    base_estimate = estimate_base_parameters(base, R, y, variance)

    say("physically consistent parameters (cvxpy + Clarabel)")
    prior_joint = _joint_terms(prior) if joint_terms else None
    phi, joint = consistent_parameters(R, y, W.shape[0], prior.phi, prior_joint, gamma)
    identified = model.with_inertial_parameters(phi)
    if joint_terms:
        identified = identified.with_joint_dynamics(armature=joint[:, 0], viscous=joint[:, 1], coulomb=joint[:, 2])

    result = Identification()
    result.model, result.prior, result.base, result.base_estimate = identified, prior, base, base_estimate
    result.held_out = None
    if split < len(samples):
        say("validation")
        held = _decimated(samples.part(slice(split, None)), cutoff)
        result.held_out = held
        result.measured = held.effort
        result.predicted = {"prior": predicted_torques(prior, held, joint_terms),
                            "identified": predicted_torques(identified, held, joint_terms)}
        result.errors = {k: TorqueErrors(held.effort, p) for k, p in result.predicted.items()}
    return result


def _joint_terms(model):
    return np.column_stack([model.armature, model.viscous_friction, model.coulomb_friction])
