"""The joint-twist block of the controller's gradients: d loss / d eta over a sliding window.

With the joint screws perturbed as S_i <- Ad_{exp(eta_i)} S_i (Model.with_twist_perturbation; eta_i =
[w; v] in joint i's frame at q_i = 0), the window loss L = 1/2 sum_k ||tau_k - rnea(q_k, v_k, a_k)||^2
has the gradient dL/deta = -sum_k dtau/deta(q_k, v_k, a_k)^T (tau_k - rnea(q_k, v_k, a_k)) at eta = 0,
with dtau/deta from dc.twist_derivatives. Each sample's term is computed when the sample arrives
(about 25 us on a 7-joint arm, every tick) and kept in a ring, so publishing is a sum: evaluating the
whole window at once would stall one tick for milliseconds. A term is evaluated with the model current
when its sample arrived (after an adaptation step the window mixes the last models for a while).
"""
import numpy as np

from ..dynamics import rnea
from ..model_derivatives import twist_derivatives

COMPONENTS = ("wx", "wy", "wz", "vx", "vy", "vz")


class TwistGradient:
    """Ring buffer of (q, v, a, tau) samples and the gradient of the window loss in eta."""

    def __init__(self, model, window):
        self.model = model
        self.data = model.create_data()
        self.window = int(window)
        self.nparams = 6 * model.nbodies
        self._samples = np.zeros((self.window, 4, model.nv))     # q, v, a, tau per slot
        self._terms = np.zeros((self.window, self.nparams))      # each sample's -dtau/deta^T residual
        self._residual = np.zeros(model.nv)
        self.count = 0
        self._next = 0

    @property
    def labels(self):
        """"joint/component" for every entry, in gradient order (joint i's eta_i = [w; v])."""
        return [f"{joint}/{c}" for joint in self.model.joint_names for c in COMPONENTS]

    def set_model(self, model):
        """Evaluate at another model of the same robot (e.g. adapted inertial parameters)."""
        self.model = model
        self.data = model.create_data()

    def clear(self):
        self.count = 0
        self._next = 0

    def add_sample(self, q, v, a, tau):
        model, data, r = self.model, self.data, self._residual
        self._samples[self._next] = q, v, a, tau
        np.subtract(tau, rnea(model, data, q, v, a), out=r)
        np.matmul(twist_derivatives(model, data, q, v, a).T, r, out=self._terms[self._next])
        np.negative(self._terms[self._next], out=self._terms[self._next])
        self._next = (self._next + 1) % self.window
        self.count = min(self.count + 1, self.window)

    def samples(self):
        """The window's samples (count, 4, nv): q, v, a, tau (a copy, order of the ring)."""
        return self._samples[:self.count].copy()

    def gradient(self, out):
        """dL/deta (6 * nbodies,) into out: the sum of the window's terms."""
        return np.sum(self._terms[:self.count], axis=0, out=out)
