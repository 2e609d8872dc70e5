"""A robot plus loop constraints: the constrained system (the Robot stays as it is)."""

from __future__ import annotations

import numpy as np

from .loop import LoopConstraint

__all__ = ["ConstrainedRobot"]


class ConstrainedRobot:
    """A robot (its spanning tree) and a list of :class:`LoopConstraint`.

    ``actuated``: the names of the joints that carry actuators (default: every joint but a
    free-floating base). ``rows``: the number m of constraint rows (the sum of the
    constraints' sizes); ``row_slices``: each constraint's rows in the stacked (m,) vectors.
    """

    def __init__(self, robot, constraints, actuated=None):
        from ..robot import Robot

        if not isinstance(robot, Robot):
            raise ValueError(f"robot: expected a robodyn.Robot, got {type(robot).__name__}")
        if isinstance(constraints, LoopConstraint):
            constraints = [constraints]
        constraints = tuple(constraints)
        for k, c in enumerate(constraints):
            if not isinstance(c, LoopConstraint):
                raise ValueError(f"constraints[{k}]: expected a LoopConstraint, got "
                                 f"{type(c).__name__}")
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
