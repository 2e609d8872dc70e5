"""The Robot: an immutable model plus its workspace, with the dynamics as methods."""

from __future__ import annotations

import copy

import numpy as np

from .. import _core
from .forces.elements import BodyForce, RotationalSpring, Spring
from .forces.robot import ForcesMixin
from .spec import ModelSpec, negative_moments

__all__ = ["Robot", "ForcedRobot", "with_forces", "joint_columns", "KERNEL_ALGORITHMS"]

# the algorithms a specialised robot runs in generated code (``op_counts`` names) -> their
# slot in the core's kernel table (``_set_kernels(inverse_dynamics, mass_matrix, gravity,
# forward_dynamics)``)
KERNEL_ALGORITHMS = {"rnea": 0, "crba": 1, "gravity": 2, "aba": 3, "forward_dynamics": 3}


def _shallow(obj):
    """copy.copy of a plain dataclass instance, without copy's reduce protocol (5x faster:
    this runs once per body of every Robot built)."""
    c = object.__new__(type(obj))
    c.__dict__.update(obj.__dict__)
    return c


def _copy_spec(spec):
    """A copy of ``spec`` sharing nothing mutable with it (O(n); copy.deepcopy of a
    10,000-body spec takes seconds)."""
    s = copy.copy(spec)
    s.bodies = []
    array = np.array
    for b in spec.bodies:
        c = _shallow(b)
        c.axis = array(b.axis, dtype=float)
        c.origin = array(b.origin, dtype=float)
        c.com = array(b.com, dtype=float)
        c.inertia = array(b.inertia, dtype=float)
        s.bodies.append(c)
    s.frames = []
    for f in spec.frames:
        c = _shallow(f)
        c.pose = array(f.pose, dtype=float)
        s.frames.append(c)
    if spec.gravity is not None:
        s.gravity = np.array(spec.gravity, dtype=float)
    return s


def _body_dict(b):
    return {
        "parent": int(b.parent), "joint_type": str(b.joint_type), "axis": _vec(b.axis, 3),
        "origin": _mat(b.origin, 4), "mass": float(b.mass), "com": _vec(b.com, 3),
        "inertia": _mat(b.inertia, 3), "armature": float(b.armature),
        "damping": float(b.damping), "friction": float(b.friction),
        "lower": float(b.lower), "upper": float(b.upper), "velocity": float(b.velocity),
        "effort": float(b.effort), "name": str(b.name), "joint_name": str(b.joint_name),
    }


def joint_columns(qd, qdd):
    """[diag(qdd) | diag(qd) | diag(sign(qd))] of (n,) or (N, n) rates: (n, 3n) or (N, n, 3n)."""
    n = qd.shape[-1]
    cols = np.concatenate([qdd, qd, np.sign(qd)], axis=-1)  # (..., 3n)
    eye = np.tile(np.eye(n), 3)  # (n, 3n): row k picks columns k, n + k, 2n + k
    return eye * cols[..., None, :]


def _skew(x):
    """[x] (the matrix of x cross) of (..., 3) vectors: (..., 3, 3)."""
    out = np.zeros(x.shape[:-1] + (3, 3))
    out[..., 0, 1], out[..., 0, 2], out[..., 1, 2] = -x[..., 2], x[..., 1], -x[..., 0]
    out[..., 1, 0], out[..., 2, 0], out[..., 2, 1] = x[..., 2], -x[..., 1], x[..., 0]
    return out


def _vec(x, n):
    a = np.asarray(x, dtype=float).reshape(-1)
    if a.shape != (n,):
        raise ValueError(f"expected {n} numbers, got shape {np.shape(x)}")
    return a


def _mat(x, n):
    a = np.asarray(x, dtype=float)
    if a.shape != (n, n):
        raise ValueError(f"expected a ({n}, {n}) matrix, got shape {a.shape}")
    return a


def _refuse_negative_inertia(bodies):
    """The physical check of every model however it is built (an edited spec, a campaign's
    plant, unpickling): each body's rotational inertia about its centre of mass is positive
    semidefinite, with the model's one tolerance. A negative principal moment is a negative
    kinetic energy for a turn about that axis; ``check_inertia=False`` lets only the triangle
    inequality go, and only a spec with ``accept_indefinite_inertia`` (a URDF that has such a
    link, loaded as written) skips this. ValueError naming the body; non-finite or asymmetric
    tensors are left to the C++ model's checks, which name them."""
    if not bodies:
        return
    bad, moments = negative_moments([b["inertia"] for b in bodies])
    if bad.any():
        i = int(np.argmax(bad))
        m = ", ".join(f"{x:.6g}" for x in moments[i])
        raise ValueError(f"body {i} ('{bodies[i]['name']}'): inertia tensor is not positive "
                         f"semidefinite (principal moments {m} kg m^2): no rigid body has a "
                         "negative moment (only a URDF that has one loads it, with a warning)")


def _rebuild(cls, spec, specialized=False):
    """Unpickling: a Robot of class ``cls`` from ``spec`` (a specialised robot pickles with
    the rebuild function its kernels came with, see :meth:`Robot.use_kernels`)."""
    return cls(spec)


class Robot(_core.RobotCore):
    """A rigid-body tree of revolute and prismatic joints, with a C++ dynamics core.

    Joint-space equation of motion used throughout::

        tau = (M(q) + diag(armature)) qdd + C(q, qd) qd + g(q)
              + damping * qd + friction * sign(qd)

    - ``inverse_dynamics`` returns all of these terms (``method="rnea"`` Newton-Euler, or
      ``"kane"`` recursive Kane; both give the same numbers);
    - ``mass_matrix`` includes the rotor inertia (``armature``) on its diagonal;
    - ``bias_torques`` is ``C(q, qd) qd + g(q)`` only (no friction); ``gravity_torques`` is g(q);
    - ``forward_dynamics`` solves the full equation (armature and friction included) for qdd by
      the articulated-body algorithm (``"aba"``), mass matrix + Cholesky (``"crba"``) or Kane's
      equations (``"kane"``).

    Derivatives and identification: ``inverse_dynamics_derivatives(q, qd, qdd)`` ->
    (dtau/dq, dtau/dqd) of the full inverse dynamics (dtau/dqdd is ``mass_matrix``);
    ``forward_dynamics_derivatives(q, qd, tau)`` -> (dqdd/dq, dqdd/dqd, dqdd/dtau = M^-1);
    ``linearize``; ``regressor(q, qd, qdd)`` with ``tau_rigid = Y @ dynamic_parameters()``,
    ``joint_regressor`` / ``joint_parameters`` for armature and friction, and
    ``slotine_li_regressor(q, qd, v, a)`` with ``Y @ pi = M a + C(q, qd) v + g(q)``.

    Every state argument is a float array of shape (n,), or (N, n) for a batch computed in C++
    with the GIL released. Single-state calls accept ``out=`` (a C-contiguous float64 array of
    the result's shape) and then allocate nothing. Wrong shapes, NaN or inf raise ValueError.

    A free-floating base (``floating_base`` True: a URDF ``floating`` root joint or
    ``load_urdf(..., floating_base=True)``) makes configurations longer than velocities:
    q is (nq,) = [base position (3), base quaternion x, y, z, w (4), joints], every other
    state and result (nv,) = [base angular velocity (3), base linear velocity (3), both in the
    base frame, joints], with ``n = nv`` and ``nq = nv + 1``; the base's block of a force is
    the wrench on the base in its frame [moment; force]. ``integrate`` / ``difference`` move
    on that space; a quaternion farther than 1e-6 from unit norm raises ValueError (closer:
    normalised).

    A Robot is immutable: calling ``__init__`` again on a built one is a ``RuntimeError``
    (build a new Robot from an edited ``spec``).

    Robots pickle (and ``copy.deepcopy``) as their model description: the C++ model is rebuilt
    on unpickling, so Dask, joblib and multiprocessing can ship them; a specialised robot
    arrives specialised (compiled or loaded once per process).
    """

    _check_full_mass_matrix = True  # a CoupledRobot checks its reduced mass matrix instead
    _couples_joints = False  # a CoupledRobot reads the spec's mimic couplings
    _kernel_lib = None  # what keeps the generated kernels loaded (use_kernels)
    _kernel_counts = None  # op_counts algorithm -> counts of the generated code
    _kernel_rebuild = None  # unpickles a specialised robot specialised

    def __init__(self, spec: ModelSpec):
        if "_spec" in self.__dict__:
            # pybind11 ignores a second construction of the C++ core: going on would give the
            # robot this spec's description with the old model's dynamics
            raise RuntimeError("Robot.__init__ on a built robot: a Robot is immutable; build a "
                               "new one with robodyn.Robot(spec)")
        if not isinstance(spec, ModelSpec):
            raise TypeError("Robot(spec): expected a robodyn ModelSpec; use robodyn.load_urdf, "
                            "robodyn.from_dh or robodyn.robots.load to build a robot")
        if not self._couples_joints:
            for i, b in enumerate(spec.bodies):
                if getattr(b, "mimic", None) is not None:
                    raise ValueError(f"spec: body {i} ('{b.name}') is a coupled (mimic) joint: "
                                     "build the robot with robodyn.robot(spec) (a "
                                     "robodyn.coupling.CoupledRobot)")
        bodies = []
        for i, b in enumerate(spec.bodies):
            try:
                bodies.append(_body_dict(b))
            except (TypeError, ValueError) as e:
                raise ValueError(f"body {i} ('{b.name}'): {e}") from None
        frames = []
        for i, f in enumerate(spec.frames):
            try:
                frames.append({"parent": int(f.parent), "pose": _mat(f.pose, 4), "name": str(f.name)})
            except (TypeError, ValueError) as e:
                raise ValueError(f"frame {i} ('{f.name}'): {e}") from None
        if not getattr(spec, "accept_indefinite_inertia", False):
            _refuse_negative_inertia(bodies)
        super().__init__(bodies, frames, _vec(spec.gravity, 3),
                         bool(getattr(spec, "check_inertia", True)),
                         self._check_full_mass_matrix
                         and bool(getattr(spec, "check_mass_matrix", True)))
        self._spec = _copy_spec(spec)
        arrays = self._model_arrays()
        self._limits = {k: np.array(v, dtype=float) for k, v in arrays.items() if k != "parent"}
        self._parents = list(arrays["parent"])

    @property
    def spec(self) -> ModelSpec:
        """A copy of the model description (edit it and build a new Robot to change a model)."""
        s = _copy_spec(self._spec)
        s.gravity = np.array(self.gravity)
        return s

    @property
    def name(self) -> str:
        """The robot's name (the URDF's robot name, or the name given to from_dh)."""
        return self._spec.name

    @property
    def parents(self) -> list[int]:
        """Parent body of each joint's body (-1 for the base), in joint order."""
        return list(self._parents)

    @property
    def position_limits(self) -> tuple[np.ndarray, np.ndarray]:
        """(lower, upper): (n,) joint position limits in rad or m (-inf / inf where none).
        :func:`robodyn.simulate` treats them as hard stops by default."""
        return self._limits["lower"].copy(), self._limits["upper"].copy()

    @property
    def velocity_limits(self) -> np.ndarray:
        """(n,) joint speed limits in rad/s or m/s (inf where none); informative only."""
        return self._limits["velocity"].copy()

    @property
    def effort_limits(self) -> np.ndarray:
        """(n,) joint torque (N m) or force (N) limits (inf where none); the controllers of
        :mod:`robodyn.control` clip to them."""
        return self._limits["effort"].copy()

    @property
    def masses(self) -> np.ndarray:
        """(n,) mass of each moving body in kg (links merged through fixed joints included)."""
        return self._limits["mass"].copy()

    def dynamic_parameters(self) -> np.ndarray:
        """The rigid-body parameters pi with ``tau_rigid = regressor(q, qd, qdd) @ pi``:
        shape (10 * n,), per moving body in joint order, in the frame of the joint's child link
        as the URDF (or DH table) writes it (links welded by fixed joints merged in), about that
        frame's origin: ``[m, m cx, m cy, m cz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]`` (Pinocchio's
        order; I is the rotational inertia about the frame origin)."""
        out = []
        for b in self._spec.bodies:
            m = float(b.mass)
            c = np.asarray(b.com, dtype=float).reshape(3)
            Io = np.asarray(b.inertia, dtype=float) + m * (c @ c * np.eye(3) - np.outer(c, c))
            out.append([m, *(m * c), Io[0, 0], Io[0, 1], Io[1, 1], Io[0, 2], Io[1, 2], Io[2, 2]])
        return np.asarray(out, dtype=float).reshape(-1)

    def joint_parameters(self) -> np.ndarray:
        """The joint parameters, shape (3 n,): ``[armature (n), damping (n), friction (n)]``,
        with ``tau = regressor(q, qd, qdd) @ dynamic_parameters()
        + joint_regressor(q, qd, qdd) @ joint_parameters()`` the full inverse dynamics."""
        bodies = self._spec.bodies
        return np.array([[float(getattr(b, k)) for b in bodies]
                         for k in ("armature", "damping", "friction")]).reshape(-1)

    def joint_regressor(self, q, qd, qdd) -> np.ndarray:
        """The columns of the joint terms, shape (n, 3 n) (or (N, n, 3 n) for a batch): three
        diagonal blocks ``[diag(qdd) | diag(qd) | diag(sign(qd))]`` for rotor inertia
        (armature), viscous and Coulomb friction (see :meth:`joint_parameters`). With a
        free-floating base it is (nv, 3 bodies): the base body's columns and rows are zero
        (a free-flyer has no joint terms)."""
        args = [np.asarray(x, dtype=float) for x in (q, qd, qdd)]
        for name, a, n in zip(("q", "qd", "qdd"), args, (self.nq, self.nv, self.nv)):
            if a.shape[-1:] != (n,) or a.ndim not in (1, 2) or not np.all(np.isfinite(a)):
                raise ValueError(f"{name}: expected finite values of shape ({n},) or (N, {n}), "
                                 f"got shape {a.shape}")
            if a.shape[:-1] != args[0].shape[:-1]:
                raise ValueError(f"{name}: must have the same number of rows as q")
        if not self.floating_base:
            return joint_columns(args[1], args[2])
        # body 0 is the free-flyer (v[:6]); body k > 0 is joint v[5 + k]
        nj = self.nv - 6
        cols = joint_columns(args[1][..., 6:], args[2][..., 6:])  # (..., nj, 3 nj)
        out = np.zeros(cols.shape[:-2] + (self.nv, 3 * (nj + 1)))
        for kind in range(3):
            out[..., 6:, kind * (nj + 1) + 1:(kind + 1) * (nj + 1)] = \
                cols[..., kind * nj:(kind + 1) * nj]
        return out

    def linearize(self, q, qd, tau):
        """The first-order state-space system of the full dynamics at (q, qd, tau), x = [q; qd]:
        ``d(dx)/dt = A dx + B dtau`` with ``A = [[0, 1], [dqdd/dq, dqdd/dqd]]``,
        ``B = [[0], [M^-1]]`` (A: (2n, 2n), B: (2n, n); a batch gives (N, 2n, 2n), (N, 2n, n)).
        The derivatives are those of :meth:`forward_dynamics_derivatives` (armature, damping
        included; Coulomb friction is piecewise constant in qd).

        With a free-floating base dq is a tangent vector (``q = integrate(q0, dq)``, n = nv):
        the base block of d(dq)/dt is ``dv - ad(v) dq`` for the base twist v = (w, l) of the
        state, ``ad(v) = [[w x, 0], [l x, w x]]`` (zero at rest)."""
        dq, dqd, dtau = self.forward_dynamics_derivatives(q, qd, tau)
        n = self.n
        lead = dq.shape[:-2]
        A = np.zeros(lead + (2 * n, 2 * n))
        A[..., :n, n:] = np.eye(n)
        if self.floating_base:
            v = np.asarray(qd, dtype=float)
            w, lin = v[..., 0:3], v[..., 3:6]
            A[..., 0:3, 0:3] = -_skew(w)
            A[..., 3:6, 0:3] = -_skew(lin)
            A[..., 3:6, 3:6] = -_skew(w)
        A[..., n:, :n] = dq
        A[..., n:, n:] = dqd
        B = np.zeros(lead + (2 * n, n))
        B[..., n:, :] = dtau
        return A, B

    def with_forces(self, forces) -> "ForcedRobot":
        """A new robot (:class:`ForcedRobot`) with this model, the force elements this robot
        already has (first) and ``forces`` (robodyn.Spring, RotationalSpring, BodyForce;
        docs/forces.md)."""
        return with_forces(self, forces)

    def to_urdf(self) -> str:
        """The model as URDF text; loading it gives identical dynamics
        (:func:`robodyn.io.urdf_write.spec_to_urdf`)."""
        from ..io.urdf_write import spec_to_urdf

        return spec_to_urdf(self.spec)

    def show(self, q=None, **kwargs):
        """The robot at ``q`` in the browser until Ctrl-C (robodyn.view.show; docs/view.md)."""
        from ..view import show
        return show(self, q, **kwargs)

    def op_counts(self, algorithm: str = "rnea") -> dict:
        """Arithmetic operations of one call, counted by running the C++ code with a counting
        scalar at a general state: {"mul": multiplications + divisions, "add": additions +
        subtractions (negation free), "trig": sin/cos/sqrt}. The count is that of a
        build-time-specialised evaluation of the code for this robot: operations on model
        constants only are folded, and so are multiplications by a constant 0 or +-1 and
        additions of a constant 0; what depends on q, qd, qdd or tau is counted if the result
        (or the sin/cos cache) needs it. Algorithms: "rnea", "kane",
        "crba" (mass matrix), "aba" (forward dynamics by the articulated-body algorithm, what
        ``forward_dynamics()`` runs by default), "forward_dynamics" (forward dynamics by mass
        matrix + Cholesky, ``method="crba"``), "kane_forward" (``method="kane"``), "gravity".
        docs/opcounts.md gives the counting rules and the published figures;
        "rnea_derivatives", "forward_dynamics_derivatives", "regressor".
        On a specialised Robot (:meth:`specialized`) "rnea", "crba", "gravity", "aba" and
        "forward_dynamics" report the operations of the generated code that runs instead."""
        slot = KERNEL_ALGORITHMS.get(str(algorithm))
        if self._kernel_counts and slot is not None and self._kernels()[slot]:
            return dict(self._kernel_counts[str(algorithm)])
        return self._op_counts(str(algorithm))

    def specialized(self) -> "Robot":
        """A new Robot (same model) running generated, robot-specific code for
        ``inverse_dynamics`` ("rnea"), ``mass_matrix``, ``gravity_torques`` and
        ``forward_dynamics`` ("aba"/"crba"); see robodyn.codegen. Bundled robots use kernels
        compiled into the package, others are compiled on first use (cached); without a C++
        compiler this warns and returns a Robot running the generic code. Changing the gravity
        of the result switches the generated code off (its gravity is built in)."""
        from ..codegen.compiled import specialize

        return specialize(self)

    def use_kernels(self, addresses, op_counts, library=None, rebuild=None) -> None:
        """Run generated code (robodyn.codegen) for the algorithms of ``KERNEL_ALGORITHMS``:
        ``addresses`` the four C function addresses (inverse dynamics, mass matrix, gravity,
        forward dynamics; 0 keeps the generic algorithm), ``op_counts`` the counts of the
        generated code per ``op_counts`` algorithm name, ``library`` the object that keeps
        the code loaded while the robot lives, ``rebuild(cls, spec, True)`` the module-level
        function that unpickles the robot specialised again."""
        self._set_kernels(*[int(a) for a in addresses])
        self._kernel_lib = library
        self._kernel_counts = {k: dict(v) for k, v in op_counts.items()}
        self._kernel_rebuild = rebuild

    def is_specialized(self) -> bool:
        """True while generated, robot-specific code runs (see :meth:`specialized`; setting
        another gravity switches it off)."""
        return any(self._kernels())

    def __reduce__(self):
        # pickle/copy: the model description travels (a few kB), the C++ model is rebuilt on
        # arrival; a specialised robot is specialised again there, from a per-process cache
        # of loaded kernels (robodyn.codegen.specialize), so workers compile or load it once
        if self._kernel_rebuild is not None and self.is_specialized():
            return (self._kernel_rebuild, (type(self), self.spec, True))
        return (_rebuild, (type(self), self.spec, False))

    def cache_stats(self) -> dict:
        """How often the per-configuration cache was reused (hits) or recomputed (misses)."""
        hits, misses = self._cache_stats()
        return {"hits": hits, "misses": misses}

    def __repr__(self) -> str:
        if self.floating_base:
            return f"<robodyn.Robot '{self.name}' floating base, nq={self.nq} nv={self.nv}>"
        return f"<robodyn.Robot '{self.name}' n={self.n}>"


class ForcedRobot(ForcesMixin, Robot):
    __doc__ = ForcesMixin.__doc__.replace("The methods of a", "A", 1)


def with_forces(robot, forces):
    """A :class:`ForcedRobot`: ``robot``'s model with the force elements ``forces`` (and the
    elements ``robot`` already has, first)."""
    if not isinstance(robot, Robot):
        raise ValueError(f"robot: expected a robodyn.Robot, got {type(robot).__name__}")
    if hasattr(robot, "coupling"):
        raise ValueError("with_forces: a robot with coupled (mimic) joints cannot carry force "
                         "elements yet")
    if isinstance(forces, (Spring, RotationalSpring, BodyForce)):
        forces = [forces]
    return ForcedRobot(robot.spec, list(getattr(robot, "forces", ())) + list(forces))
