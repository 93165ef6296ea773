"""Validation of identified parameters on held-out data: joint torques predicted by a model (tau =
Y(q, v, a) theta) against the measured ones, per joint RMS error absolute and relative to the
measured torque's RMS; the table and the plot of `dyn-control identify`.
"""
import numpy as np

from .base_parameters import standard_parameters


class TorqueErrors:
    """Per joint: rms (RMS prediction error [N m]), torque_rms (RMS of the measured torque) and
    relative (rms / torque_rms), over the samples where `usable` (N, nv) is True (default all)."""

    def __init__(self, measured, predicted, usable=None):
        usable = np.ones(measured.shape, dtype=bool) if usable is None else usable
        count = np.maximum(usable.sum(axis=0), 1)
        self.rms = np.sqrt(np.sum(np.where(usable, predicted - measured, 0.0) ** 2, axis=0) / count)
        self.torque_rms = np.sqrt(np.sum(np.where(usable, measured, 0.0) ** 2, axis=0) / count)
        with np.errstate(divide="ignore", invalid="ignore"):
            self.relative = np.where(self.torque_rms > 0.0, self.rms / self.torque_rms, np.inf)


def predicted_torques(model, W, joint_terms):
    """(N, nv): the model's joint torques of the stacked regressor W (N nv, P) (tau = W theta)."""
    return (W @ standard_parameters(model, joint_terms)).reshape(-1, model.nv)


def table(joints, prior, identified):
    """The validation table: per joint the torque RMS, the prior's and the identified model's error."""
    lines = [f"{'joint':24s} {'torque RMS':>11s} {'prior error':>19s} {'identified error':>19s}"]
    for k, joint in enumerate(joints):
        lines.append(f"{joint:24s} {prior.torque_rms[k]:9.4g} Nm "
                     f"{prior.rms[k]:9.4g} ({100 * prior.relative[k]:5.1f} %) "
                     f"{identified.rms[k]:9.4g} ({100 * identified.relative[k]:5.2f} %)")
    return "\n".join(lines)


def plot(path, t, measured, prior, identified, joints, usable=None):
    """A PNG: per joint, the measured torque and the prior's and the identified model's predictions;
    grey where `usable` (N, nv) is False (a slow joint: left out of the fit and the errors)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    n = len(joints)
    figure, axes = plt.subplots(n, 1, figsize=(10, 1.8 * n + 1), sharex=True, squeeze=False)
    for k, ax in enumerate(axes[:, 0]):
        ax.plot(t, measured[:, k], "k", lw=1.5, label="measured")
        ax.plot(t, prior[:, k], "tab:orange", lw=1, label="prior")
        ax.plot(t, identified[:, k], "tab:blue", lw=1, ls="--", label="identified")
        if usable is not None:
            ax.fill_between(t, 0, 1, where=~usable[:, k], color="0.85", transform=ax.get_xaxis_transform(),
                            label="slow joint (not used)")
        ax.set_ylabel(f"{joints[k]}\n[N m]", fontsize=8)
        ax.grid(alpha=0.3)
    axes[0, 0].legend(loc="upper right", fontsize=8, ncol=4)
    axes[0, 0].set_title("joint torques on the held-out data")
    axes[-1, 0].set_xlabel("time [s]")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
