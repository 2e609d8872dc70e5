"""Coupled joints (URDF ``<mimic>``): a Robot whose coordinates are the independent joints.

A coupled joint ``f`` follows its leader ``l``: ``q_f = multiplier * q_l + offset``. With
``q`` the independent coordinates (the joints without ``<mimic>``, in model order) the full
configuration is ``q_full = G q + b``, where ``G`` (n_full, n) has one entry per row (1 on an
independent joint's own column, the multiplier on its leader's column) and ``b`` holds the
offsets. ``G`` is constant, so ``qd_full = G qd`` and ``qdd_full = G qdd``, and by virtual work
the generalized forces of the independent coordinates are ``G^T`` times the full ones::

    tau       = G^T tau_full(q_full, G qd, G qdd)         inverse dynamics (both methods)
    M         = G^T M_full(q_full) G                      mass matrix (armature included)
    h, g      = G^T h_full(q_full, G qd), G^T g_full(q_full)
    C         = G^T C_full(q_full, G qd) G                (Mdot - 2 C stays skew-symmetric)
    qdd       = M^-1 (tau - G^T tau_full(q_full, G qd, 0))   forward dynamics
    poses     = fk_full(q_full),  J = J_full(q_full) G
    energies  = T_full(q_full, G qd), V_full(q_full)

Joint damping and Coulomb friction act on every joint of the full model (the follower's as
well, through ``G^T``). The layer runs around the full model's C++ core (one Robot of the full
model is this object's core): each call expands its inputs with one small matrix product,
calls the C++ algorithm on the full model and reduces with ``G^T``. Forward dynamics solves the
reduced system (n x n) with NumPy whatever ``method`` says (``"kane"`` takes the bias from
Kane's equations, the others from Newton-Euler).
"""

from __future__ import annotations

import numpy as np

from .robot import Robot, joint_columns
from .spec import ModelSpec

__all__ = ["CoupledRobot", "coupling_matrix"]

_FD_METHODS = ("aba", "crba", "kane")


def coupling_matrix(spec: ModelSpec):
    """(G, b, independent) of a spec whose bodies may carry ``mimic``: ``q_full = G q + b``,
    ``independent`` the body indices of the independent joints (in order). Raises ValueError
    for a leader that is not an independent joint of the spec."""
    names = [b.joint_name for b in spec.bodies]
    independent = [i for i, b in enumerate(spec.bodies) if getattr(b, "mimic", None) is None]
    column = {names[i]: k for k, i in enumerate(independent)}
    G = np.zeros((len(names), len(independent)))
    b = np.zeros(len(names))
    for i, body in enumerate(spec.bodies):
        if body.mimic is None:
            G[i, column[names[i]]] = 1.0
            continue
        try:
            leader, multiplier, offset = body.mimic
            multiplier, offset = float(multiplier), float(offset)
        except (TypeError, ValueError):
            raise ValueError(f"body {i} ('{body.name}'): mimic must be (leader joint name, "
                             f"multiplier, offset), got {body.mimic!r}") from None
        if leader not in column:
            why = "is a coupled joint itself" if leader in names else "is not a joint"
            raise ValueError(f"body {i} ('{body.name}', joint '{body.joint_name}'): mimic "
                             f"leader {leader!r} {why} (couple to an independent joint)")
        if not (np.isfinite(multiplier) and np.isfinite(offset)):
            raise ValueError(f"body {i} ('{body.name}'): mimic multiplier and offset must be "
                             "finite")
        G[i, column[leader]] = multiplier
        b[i] = offset
    if not independent:
        raise ValueError("model: every joint is coupled; needs at least one independent joint")
    return G, b, independent


class CoupledRobot(Robot):
    """A :class:`Robot` with coupled (mimic) joints; its coordinates (``q``, ``joint_names``,
    ``n``) are the independent joints. ``robodyn.robot(spec)`` and ``load_urdf`` build one
    when a body of the spec has ``mimic``. See the module documentation for the equations.

    ``coupling`` is ``(G, b)``; ``full_configuration(q)`` is ``G q + b``; ``full_joint_names``
    the joints of the full model (the order of ``G``'s rows)."""

    _check_full_mass_matrix = False  # the reduced one is checked (a follower may be massless)
    _couples_joints = True

    def __init__(self, spec: ModelSpec):
        if not isinstance(spec, ModelSpec):
            raise TypeError("CoupledRobot(spec): expected a robodyn ModelSpec")
        if any(body.joint_type == "floating" for body in spec.bodies):
            raise NotImplementedError(
                "mimic couplings on a free-floating base are not supported (the coupling maps "
                "joint coordinates only); load the file with mimic='independent'")
        G, b, independent = coupling_matrix(spec)
        super().__init__(spec)  # the C++ core: the full model
        self._G = G
        self._GT = np.ascontiguousarray(G.T)
        self._b = b
        self._has_offset = bool(np.any(b != 0.0))
        self._independent = independent
        self._nr = len(independent)
        full_names = list(super().joint_names)
        self._names = [full_names[i] for i in independent]
        # the limits of a coordinate are its independent joint's
        self._limits = {k: v[independent] for k, v in self._limits.items()}
        # which full rows are not the identity of their column (for op counts)
        self._followers = [i for i, body in enumerate(spec.bodies) if body.mimic is not None]
        if getattr(spec, "check_mass_matrix", True):
            # the reduced mass matrix must be positive definite (the full one may not be: a
            # massless follower); tested at a few configurations, like the C++ build
            for trial in range(3):
                q = (np.zeros(self._nr) if trial == 0
                     else np.sin(1.3 * np.arange(1, self._nr + 1) * trial + 0.4))
                try:
                    np.linalg.cholesky(self.mass_matrix(q))
                except np.linalg.LinAlgError:
                    raise ValueError(
                        "model: the mass matrix is singular (a joint moves no mass or "
                        "inertia; give the links beyond it mass, inertia or armature)") from None

    # ---------------------------------------------------------------- shape of the model

    @property
    def n(self) -> int:
        """Degrees of freedom: the independent joints."""
        return self._nr

    @property
    def nq(self) -> int:
        """Configuration size: the independent joints (no free base: nq = nv = n)."""
        return self._nr

    @property
    def nv(self) -> int:
        """Velocity size: the independent joints."""
        return self._nr

    @property
    def joint_names(self) -> list:
        return list(self._names)

    @property
    def full_joint_names(self) -> list:
        return list(super().joint_names)

    @property
    def coupling(self):
        """(G, b): q_full = G q + b (copies)."""
        return self._G.copy(), self._b.copy()

    @property
    def parents(self) -> list:
        """Parent body of each body of the full model (-1 for the base), in full order."""
        return list(self._parents)

    def full_configuration(self, q):
        """q_full = G q + b, (n_full,) or (N, n_full)."""
        q = self._state(q, "q")
        self._finite((q,), ("q",))
        return self._expand(q, True)

    # ---------------------------------------------------------------- helpers

    def _state(self, x, name):
        """x as a float array of shape (n,) or (N, n); finiteness is checked by the C++ core on
        the expanded arrays (a failure is re-diagnosed by _finite, naming the argument)."""
        try:
            a = np.asarray(x, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"{name}: expected a float array of shape ({self._nr},) or "
                             f"(N, {self._nr})") from None
        if a.ndim not in (1, 2) or a.shape[-1] != self._nr:
            raise ValueError(f"{name}: expected shape ({self._nr},) or (N, {self._nr}), got "
                             f"{a.shape}")
        return a

    def _finite(self, arrays, names):
        """After the core refused an expanded input: name the argument that is not finite."""
        for a, name in zip(arrays, names):
            bad = np.argwhere(~np.isfinite(a))
            if len(bad):
                # the first non-finite value, as the core names it
                where = (f"row {bad[0][0]}, entry {bad[0][1]}" if a.ndim == 2
                         else f"index {bad[0][0]}")
                raise ValueError(f"{name}: contains NaN or inf at {where} (expected finite "
                                 f"values, shape ({self._nr},) or (N, {self._nr}))") from None

    def _states(self, names, values):
        arrays = [self._state(x, name) for name, x in zip(names, values)]
        for name, a in zip(names[1:], arrays[1:]):
            if a.shape != arrays[0].shape:
                raise ValueError(f"{name}: must have the same shape as {names[0]}: expected "
                                 f"{arrays[0].shape}, got {a.shape}")
        return arrays

    def _expand(self, x, offset):
        """G x (+ b): (n,) -> (n_full,), (N, n) -> (N, n_full)."""
        y = x @ self._GT
        if offset and self._has_offset:
            y += self._b
        return y

    def _full(self, function, arrays, names, **kwargs):
        """The full model's ``function`` (a RobotCore method) at the expanded arrays (the
        first is a configuration, the others rates)."""
        expanded = [self._expand(a, k == 0) for k, a in enumerate(arrays)]
        try:
            return function(self, *expanded, **kwargs)
        except ValueError:
            self._finite(arrays, names)
            raise

    @staticmethod
    def _out(out, shape):
        if out is None:
            return None
        if not (isinstance(out, np.ndarray) and out.dtype == np.float64
                and out.flags.c_contiguous):
            raise ValueError("out: must be a C-contiguous float64 numpy array")
        if not out.flags.writeable:
            raise ValueError("out: is not writeable")
        if out.shape != shape:
            raise ValueError(f"out: expected shape {shape}, got {out.shape}")
        return out

    def _reduce(self, full, out, batch):
        """G^T f: (n_full,) -> (n,), (N, n_full) -> (N, n)."""
        shape = (full.shape[0], self._nr) if batch else (self._nr,)
        out = self._out(out, shape)
        return np.matmul(full, self._G, out=out)

    def _reduce2(self, full, out, batch):
        """G^T A G for (n_full, n_full) or (N, n_full, n_full)."""
        shape = (full.shape[0], self._nr, self._nr) if batch else (self._nr, self._nr)
        out = self._out(out, shape)
        return np.matmul(self._GT, full @ self._G, out=out)

    # ---------------------------------------------------------------- dynamics

    def inverse_dynamics(self, q, qd, qdd, method="rnea", out=None):
        """tau = G^T tau_full(G q + b, G qd, G qdd); see Robot.inverse_dynamics."""
        names = ("q", "qd", "qdd")
        q, qd, qdd = self._states(names, (q, qd, qdd))
        full = self._full(Robot.inverse_dynamics, (q, qd, qdd), names, method=method)
        return self._reduce(full, out, q.ndim == 2)

    def mass_matrix(self, q, out=None):
        """M = G^T M_full(G q + b) G (armature included)."""
        q = self._state(q, "q")
        full = self._full(Robot.mass_matrix, (q,), ("q",))
        return self._reduce2(full, out, q.ndim == 2)

    def bias_torques(self, q, qd, out=None):
        """G^T (C_full qd_full + g_full) at q_full = G q + b, qd_full = G qd."""
        q, qd = self._states(("q", "qd"), (q, qd))
        full = self._full(Robot.bias_torques, (q, qd), ("q", "qd"))
        return self._reduce(full, out, q.ndim == 2)

    def gravity_torques(self, q, out=None):
        """G^T g_full(G q + b)."""
        q = self._state(q, "q")
        full = self._full(Robot.gravity_torques, (q,), ("q",))
        return self._reduce(full, out, q.ndim == 2)

    def coriolis_matrix(self, q, qd, out=None):
        """G^T C_full(q_full, G qd) G."""
        q, qd = self._states(("q", "qd"), (q, qd))
        full = self._full(Robot.coriolis_matrix, (q, qd), ("q", "qd"))
        return self._reduce2(full, out, q.ndim == 2)

    def forward_dynamics(self, q, qd, tau, method="aba", out=None):
        """qdd of the reduced system: (G^T M_full G) qdd = tau - G^T tau_full(q_full, G qd, 0)
        (bias, damping and friction of every joint of the full model)."""
        if not isinstance(method, str) or method not in _FD_METHODS:
            raise ValueError("method: expected 'aba', 'crba' or 'kane'")
        q, qd, tau = self._states(("q", "qd", "tau"), (q, qd, tau))
        self._finite((tau,), ("tau",))
        batch = q.ndim == 2
        M = self._reduce2(self._full(Robot.mass_matrix, (q,), ("q",)), None, batch)
        bias = self._full(Robot.inverse_dynamics, (q, qd, np.zeros_like(qd)), ("q", "qd", "qd"),
                          method="kane" if method == "kane" else "rnea")
        rhs = tau - self._reduce(bias, None, batch)
        out = self._out(out, tau.shape)
        try:
            np.linalg.cholesky(M)  # the positive-definiteness test of the C++ solvers
        except np.linalg.LinAlgError:
            raise ValueError("forward dynamics failed: the mass matrix is not positive "
                             "definite at this state") from None
        x = np.linalg.solve(M, rhs[..., None])[..., 0]  # one LAPACK call (NumPy has no
        # triangular solve; two of them cost more in call overhead than LU at these sizes)
        if out is None:
            return x
        out[...] = x
        return out

    # ---------------------------------------------------------------- derivatives, regressor

    def inverse_dynamics_derivatives(self, q, qd, qdd, out=None):
        """(G^T dtau_full/dq_full G, G^T dtau_full/dqd_full G) at the expanded state."""
        names = ("q", "qd", "qdd")
        q, qd, qdd = self._states(names, (q, qd, qdd))
        dq, dqd = self._full(Robot.inverse_dynamics_derivatives, (q, qd, qdd), names)
        outs = (None, None) if out is None else tuple(out)
        if len(outs) != 2:
            raise ValueError("out: expected a tuple of 2 arrays")
        res = tuple(self._reduce2(d, o, q.ndim == 2) for d, o in zip((dq, dqd), outs))
        return out if isinstance(out, tuple) else res

    def forward_dynamics_derivatives(self, q, qd, tau, out=None):
        """-M^-1 dtau/dq, -M^-1 dtau/dqd, M^-1 of the reduced system at qdd = FD(q, qd, tau)."""
        q, qd, tau = self._states(("q", "qd", "tau"), (q, qd, tau))
        qdd = self.forward_dynamics(q, qd, tau)
        dq, dqd = self.inverse_dynamics_derivatives(q, qd, qdd)
        Minv = np.linalg.inv(self.mass_matrix(q))
        res = (-(Minv @ dq), -(Minv @ dqd), Minv)
        if out is None:
            return res
        if len(out) != 3:
            raise ValueError("out: expected a tuple of 3 arrays")
        for o, r in zip(out, res):
            self._out(o, r.shape)[...] = r
        return out

    def regressor(self, q, qd, qdd, out=None):
        """G^T Y_full(G q + b, G qd, G qdd): (n, 10 n_full), columns per body of the full
        model (``dynamic_parameters`` lists every body)."""
        names = ("q", "qd", "qdd")
        q, qd, qdd = self._states(names, (q, qd, qdd))
        full = self._full(Robot.regressor, (q, qd, qdd), names)
        shape = full.shape[:-2] + (self._nr, full.shape[-1])
        return np.matmul(self._GT, full, out=self._out(out, shape))

    def slotine_li_regressor(self, q, qd, v, a, out=None):
        """G^T Y_full(G q + b, G qd, G v, G a): Y @ pi = M a + C(q, qd) v + g (reduced)."""
        names = ("q", "qd", "v", "a")
        q, qd, v, a = self._states(names, (q, qd, v, a))
        full = self._full(Robot.slotine_li_regressor, (q, qd, v, a), names)
        shape = full.shape[:-2] + (self._nr, full.shape[-1])
        return np.matmul(self._GT, full, out=self._out(out, shape))

    def joint_regressor(self, q, qd, qdd):
        """G^T [diag(G qdd) | diag(G qd) | diag(sign(G qd))]: (n, 3 n_full), the joint
        terms of every joint of the full model (``joint_parameters`` lists them all)."""
        names = ("q", "qd", "qdd")
        q, qd, qdd = self._states(names, (q, qd, qdd))
        self._finite((q, qd, qdd), names)
        full = joint_columns(self._expand(qd, False), self._expand(qdd, False))
        return np.matmul(self._GT, full)

    def kinetic_energy(self, q, qd):
        q, qd = self._states(("q", "qd"), (q, qd))
        return self._full(Robot.kinetic_energy, (q, qd), ("q", "qd"))

    def potential_energy(self, q):
        q = self._state(q, "q")
        return self._full(Robot.potential_energy, (q,), ("q",))

    # ---------------------------------------------------------------- kinematics

    def forward_kinematics(self, q, out=None):
        """Poses of every link of the full model (``link_names``) at q_full = G q + b."""
        q = self._state(q, "q")
        return self._full(Robot.forward_kinematics, (q,), ("q",), out=out)

    def jacobian(self, q, link, out=None):
        """J = J_full(q_full, link) G: (6, n) [angular; linear] in the base frame."""
        q = self._state(q, "q")
        full = self._full(lambda r, x: Robot.jacobian(r, x, link), (q,), ("q",))
        shape = (q.shape[0], 6, self._nr) if q.ndim == 2 else (6, self._nr)
        return np.matmul(full, self._G, out=self._out(out, shape))

    def momentum(self, q, v, out=None):
        """Total momentum (6,) [angular about the world origin, N m s; linear, N s] in world
        axes, of the full model at q_full = G q + b, qd_full = G v (q, v: the independent
        joints, (n,) or (N, n)); see Robot.momentum."""
        q, v = self._states(("q", "v"), (q, v))
        return Robot.momentum(self, self._expand(q, True), self._expand(v, False), out=out)

    def center_of_mass(self, q, out=None):
        """Centre of mass (3,) in world coordinates (m) of the full model at q_full = G q + b
        (q: the independent joints, (n,) or (N, n)); see Robot.center_of_mass."""
        q = self._state(q, "q")
        return Robot.center_of_mass(self, self._expand(q, True), out=out)

    def centroidal_momentum_matrix(self, q, out=None):
        """A_G = A_G_full(q_full) G: (6, n), with A_G v the momentum about the centre of mass;
        see Robot.centroidal_momentum_matrix."""
        q = self._state(q, "q")
        full = self._full(Robot.centroidal_momentum_matrix, (q,), ("q",))
        shape = (q.shape[0], 6, self._nr) if q.ndim == 2 else (6, self._nr)
        return np.matmul(full, self._G, out=self._out(out, shape))

    def integrate(self, q, v, dt=1.0, out=None):
        """q + dt v, shape of q (the independent joints, rad or m; a coupled robot has no
        free base, so every coordinate moves on the line); see Robot.integrate."""
        q, v = self._states(("q", "v"), (q, v))
        dt = float(dt)
        if not np.isfinite(dt):
            raise ValueError("dt: must be a finite number")
        out = self._out(out, q.shape)
        return np.add(q, dt * v, out=out) if out is not None else q + dt * v

    def difference(self, q0, q1, out=None):
        """q1 - q0, shape of q0 (the independent joints): the v with integrate(q0, v, 1) = q1;
        see Robot.difference."""
        q0, q1 = self._states(("q0", "q1"), (q0, q1))
        out = self._out(out, q0.shape)
        return np.subtract(q1, q0, out=out) if out is not None else q1 - q0

    # ---------------------------------------------------------------- the rest

    def op_counts(self, algorithm: str = "rnea") -> dict:
        """Operations of one call: the full model's algorithms that run (generic or generated
        code) plus the coupling's, counted as a sparse implementation runs them (NumPy's
        dense products cost more): expanding the followers' q, qd, qdd (a multiplication
        where the multiplier is not +-1, an addition where the offset is not 0) and folding
        each follower's torque, or mass-matrix row and column, into its leader's. Forward
        dynamics ("aba", "forward_dynamics", "kane_forward") runs the full mass matrix, the
        full inverse dynamics at qdd = 0 and a Cholesky solve of the reduced system."""
        algorithm = str(algorithm)
        fd = algorithm in ("aba", "forward_dynamics", "kane_forward")
        if fd:
            parts = ["crba", "kane" if algorithm == "kane_forward" else "rnea"]
        else:
            parts = [algorithm]
        counts = {"mul": 0, "add": 0, "trig": 0}
        for part in parts:
            for k, v in Robot.op_counts(self, part).items():
                counts[k] = counts.get(k, 0) + v
        G, b = self._G, self._b
        mult = {i: float(G[i].sum()) for i in self._followers}
        scaled = [i for i in self._followers if mult[i] not in (1.0, -1.0)]
        vectors = {"rnea": 3, "kane": 3, "gravity": 1, "crba": 1}.get(algorithm, 2 if fd else 0)
        mul = vectors * len(scaled)
        add = sum(b[i] != 0.0 for i in self._followers)
        if algorithm != "crba":  # tau_leader += m tau_follower
            mul += len(scaled)
            add += len(self._followers)
        if algorithm == "crba" or fd:  # M_ac = sum_{i in a, j in c} m_i m_j M_ij, c <= a
            groups = [np.flatnonzero(G[:, k]) for k in range(self._nr)]
            for a in range(self._nr):
                for c in range(a + 1):
                    add += len(groups[a]) * len(groups[c]) - 1
                    mul += sum(G[i, a] * G[j, c] not in (1.0, -1.0)
                               for i in groups[a] for j in groups[c])
        if fd:  # Cholesky factorisation and two triangular solves of the reduced system
            n = self._nr
            mul += n * (n + 1) * (n + 2) // 6 + n * (n + 1)
            add += (n - 1) * n * (n + 1) // 6 + n * (n - 1)
            counts["trig"] += n  # square roots
        counts["mul"] += int(mul)
        counts["add"] += int(add)
        return counts

    def full_robot(self) -> Robot:
        """The full model (every joint independent) as a plain Robot."""
        full = self.spec
        for body in full.bodies:
            body.mimic = None
        return Robot(full)

    def __repr__(self) -> str:
        return (f"<robodyn.Robot '{self.name}' n={self.n} "
                f"({len(self._followers)} coupled joints)>")

