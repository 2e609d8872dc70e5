"""A robot-like plant over the NumPy reference, for the simulator's own tests.

``simulate`` accepts any object with the Robot methods it calls; this one answers them from
tests/reference/featherstone.py, so the integrators can be checked against dynamics that share
nothing with cpp/ (and before or without the compiled floating base).
"""

import numpy as np

from . import featherstone as F

__all__ = ["ReferencePlant"]


class ReferencePlant:
    def __init__(self, spec):
        self.spec = spec
        self.name = spec.name
        _, _, self.nq, self.nv = F.layout(spec)
        self.n = self.nv
        self.joint_names = [b.joint_name for b in spec.bodies
                            if b.joint_type not in F.FREE_JOINTS]
        self.link_names = [b.name for b in spec.bodies]
        self.fd_calls = 0

    def forward_dynamics(self, q, v, tau, method="aba"):
        self.fd_calls += 1
        return F.aba(self.spec, q, v, tau)

    def integrate(self, q, v, dt=1.0):
        return F.integrate(self.spec, q, v, dt)

    def difference(self, q0, q1):
        return F.difference(self.spec, q0, q1)

    def momentum(self, q, v):
        return F.momentum(self.spec, q, v)

    def center_of_mass(self, q):
        return F.center_of_mass(self.spec, q)

    def kinetic_energy(self, q, v):
        return F.kinetic_energy(self.spec, q, v)

    def potential_energy(self, q):
        return F.potential_energy(self.spec, q)

    def forward_kinematics(self, q):
        return np.array(F.fk(self.spec, q)[:len(self.spec.bodies)])

    def jacobian(self, q, link):
        return F.jacobian(self.spec, q, self.link_names.index(link))

    def mass_matrix(self, q):
        return F.crba(self.spec, q)

    def bias_torques(self, q, v):
        return F.bias(self.spec, q, v)
