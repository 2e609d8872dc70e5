"""A robot plus loop constraints: the constrained system (the Robot stays as it is)."""

from __future__ import annotations

import numpy as np

from .. import _core
from .loop import LoopConstraint

__all__ = ["ConstrainedRobot"]


class ConstrainedRobot:
    """A robot (its spanning tree) and a list of :class:`LoopConstraint`.

    ``actuated``: the names of the joints that carry actuators (default: every joint but a
    free-floating base). ``rows``: the number m of constraint rows (the sum of the
    constraints' sizes); ``row_slices``: each constraint's rows in the stacked (m,) vectors.
    """

    def __init__(self, robot, constraints, actuated=None):
        from ..model.robot import Robot

        if not isinstance(robot, Robot):
            raise ValueError(f"robot: expected a robodyn.Robot, got {type(robot).__name__}")
        if isinstance(constraints, LoopConstraint):
            constraints = [constraints]
        constraints = tuple(constraints)
        for k, c in enumerate(constraints):
            if not isinstance(c, LoopConstraint):
                raise ValueError(f"constraints[{k}]: expected a LoopConstraint, got "
                                 f"{type(c).__name__}")
        names = [c.name for c in constraints]
        for name in names:
            if names.count(name) > 1:
                raise ValueError(f"constraints: the name {name!r} is repeated (names identify "
                                 "the constraints' rows and forces)")
        links = list(robot.link_names)
        for c in constraints:
            for which, body in (("body1", c.body1), ("body2", c.body2)):
                if body is not None and body not in links:
                    raise ValueError(f"constraint {c.name!r}: {which}: no link named {body!r}; "
                                     f"the links: {', '.join(links)}")
        self.robot = robot
        self.constraints = constraints
        sizes = [c.size for c in constraints]
        starts = np.concatenate(([0], np.cumsum(sizes))).astype(int)
        self.rows = int(starts[-1])
        self.row_slices = tuple(slice(int(a), int(b)) for a, b in zip(starts[:-1], starts[1:]))
        self.actuated, self.actuated_dofs = self._actuation(robot, actuated)
        loops = [dict(name=c.name, frame1=-1 if c.body1 is None else links.index(c.body1),
                      pose1=c.frame1, frame2=-1 if c.body2 is None else links.index(c.body2),
                      pose2=c.frame2, rows=list(c.rows), kp=c.baumgarte[0], kd=c.baumgarte[1])
                 for c in constraints]
        self._core = _core.ConstraintSystem(robot, loops)
        # the hot call goes straight to the C++ method (the method below documents it), unless
        # a subclass adds to it (the force elements' generalized forces)
        if type(self).forward_dynamics is ConstrainedRobot.forward_dynamics:
            self.forward_dynamics = self._core.forward_dynamics

    def residual(self, q, out=None) -> np.ndarray:
        """phi(q), shape (rows,): per constraint its rows of the pose of frame 1 relative to
        frame 2 in frame 1's axes, [rotation vector; origin 1 minus origin 2]; zero when every
        loop is closed. (N, nq) batches give (N, rows); ``out`` is written in place."""
        return self._core.residual(q, out)

    def jacobian(self, q, out=None) -> np.ndarray:
        """J(q), shape (rows, nv): J v is the constraint velocity, the velocity of frame 1
        relative to frame 2 in frame 1's axes ([angular; linear], the constraints' rows): the
        rate of :meth:`residual` (of its angular rows where the loop is closed)."""
        return self._core.jacobian(q, out)

    def bias_acceleration(self, q, v, out=None) -> np.ndarray:
        """gamma(q, v), shape (rows,): the constraint acceleration is J qdd + gamma (the rate
        of J v at qdd = 0, the turning of frame 1 included)."""
        return self._core.bias_acceleration(q, v, out)

    def operational_space_inverse_inertia(self, q, out=None) -> np.ndarray:
        """J M^-1 J', shape (rows, rows), through M's tree-sparse factor."""
        return self._core.operational_space_inverse_inertia(q, out)

    def forward_dynamics(self, q, v, tau, mu=0.0, max_iter=1, tol=1e-12, out=None):
        """(qdd, lam) of ``M qdd + h = tau + J' lam``, ``J qdd = -gamma - kd J v - kp phi``.

        ``lam`` (rows,): per constraint the wrench it applies to body 1, in frame 1's axes,
        its rows of [moment; force] (body 2 receives the opposite). ``mu = 0`` solves the KKT
        system once and raises ValueError naming the constraint whose row depends on the
        others (rank-deficient J); ``mu > 0`` runs proximal iterations until the constraint
        acceleration error is below ``tol`` or ``max_iter`` iterations: redundant constraints
        get the minimum-norm forces. (N, n) batches give (N, nv) and (N, rows); ``out`` a
        tuple of two arrays written in place."""
        return self._core.forward_dynamics(q, v, tau, mu, max_iter, tol, out)

    def split(self, x) -> dict:
        """The rows of a stacked (rows,) or (N, rows) vector (residual, lam, ...) by
        constraint name."""
        x = np.asarray(x)
        return {c.name: x[..., s] for c, s in zip(self.constraints, self.row_slices)}

    @staticmethod
    def _actuation(robot, actuated):
        """(names, velocity indices) of the actuated joints."""
        names = list(robot.joint_names)
        widths = [1] * len(names)
        if robot.floating_base:
            widths[0] = 6
        first = np.concatenate(([0], np.cumsum(widths)))[:-1]
        if actuated is None:
            actuated = names[1:] if robot.floating_base else names
        elif isinstance(actuated, str):
            raise ValueError("actuated: expected a sequence of joint names, got a str")
        actuated = tuple(actuated)
        for a in actuated:
            if a not in names:
                raise ValueError(f"actuated: no joint named {a!r}; the joints: "
                                 f"{', '.join(names)}")
        if len(set(actuated)) != len(actuated):
            raise ValueError("actuated: a joint is named twice")
        dofs = [int(first[names.index(a)]) + k for a in actuated
                for k in range(widths[names.index(a)])]
        dofs = np.array(sorted(dofs), dtype=np.intp)
        dofs.setflags(write=False)
        actuated = tuple(n for n in names if n in actuated)
        return actuated, dofs

    def __repr__(self) -> str:
        return (f"ConstrainedRobot({self.robot.name!r}, {len(self.constraints)} constraints, "
                f"{self.rows} rows)")

    # assembly, inverse dynamics and URDF output: thin methods over
    # robodyn.constraints.assembly, robodyn.constraints.inverse and robodyn.io.loop_urdf

    def assemble(self, q_guess, hold=(), tol=1e-12, max_iter=50) -> np.ndarray:
        """q near ``q_guess`` closing every loop, the joints in ``hold`` kept
        (:func:`robodyn.constraints.assembly.assemble`)."""
        from .assembly import assemble

        return assemble(self, q_guess, hold, tol, max_iter)

    def project_velocity(self, q, v, hold=()) -> np.ndarray:
        """The v nearest the given one with J v = 0, the held joints' rates kept
        (:func:`robodyn.constraints.assembly.project_velocity`)."""
        from .assembly import project_velocity

        return project_velocity(self, q, v, hold)

    def kinematic_analysis(self, driven, q_driven, qd_driven, qdd_driven, q_guess, tol=1e-12):
        """(Q, QD, QDD) when the ``driven`` joints follow the given motion
        (:func:`robodyn.constraints.assembly.kinematic_analysis`)."""
        from .assembly import kinematic_analysis

        return kinematic_analysis(self, driven, q_driven, qd_driven, qdd_driven, q_guess, tol)

    def inverse_dynamics(self, q, v, qdd):
        """(tau, lam): the actuated joints' torques and the constraint forces
        (:func:`robodyn.constraints.inverse.inverse_dynamics`)."""
        from .inverse import inverse_dynamics

        return inverse_dynamics(self, q, v, qdd)

    def gravity_compensation(self, q):
        """(tau, lam) holding the mechanism at rest at q."""
        from .inverse import gravity_compensation

        return gravity_compensation(self, q)

    def with_forces(self, forces):
        """This system with force elements (robodyn.Spring, RotationalSpring, BodyForce) on its
        tree: a :class:`robodyn.constraints.forces.ForcedConstrainedRobot`."""
        from .forces import with_forces

        return with_forces(self, forces)

    def linearize(self, q, v=None, tau=None, **kwargs):
        """The motion near (q, v) on the constraint manifold in independent coordinates
        (:func:`robodyn.constraints.linearize.linearize`)."""
        from .linearize import linearize

        return linearize(self, q, v, tau, **kwargs)

    def to_urdf(self) -> str:
        """The robot's URDF with one ``<loop_joint>`` per constraint (robodyn.io.loop_urdf)."""
        from ..io.loop_urdf import write

        return write(self)

    def show(self, q=None, **kwargs):
        """The robot and its loop constraints at ``q`` in the browser (robodyn.view.show)."""
        from ..view import show
        return show(self, q, **kwargs)

