"""The simulation plot shows a tracking-error column only when there is a reference to track."""

import numpy as np
import pytest

import robodyn

pytest.importorskip("matplotlib")


def _texts(fig):
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def _titles(fig):
    return [ax.get_title() for ax in fig.axes]


def test_a_passive_floating_run_has_no_error_column(tmp_path):
    robot = robodyn.robots.lynch_satellite()
    q0, v0 = robodyn.robots.initial_state("lynch_satellite", robot)
    res = robodyn.simulate(robot, q0=q0, qd0=v0, duration=0.2)
    assert res.q_ref is None
    fig = res.plot(str(tmp_path / "sat.png"))
    assert "no reference" not in _texts(fig)
    assert "tracking error q_ref - q" not in _titles(fig)
    rows = len({ax.get_subplotspec().rowspan.start for ax in fig.axes})
    # two panels (position, applied force or torque) per row of coordinates, then energy and
    # momentum spanning the width
    assert len(fig.axes) == 2 * (rows - 2) + 2
    assert (tmp_path / "sat.png").stat().st_size > 0


def test_a_tracked_run_keeps_its_error_column(tmp_path):
    robot = robodyn.robots.stanford_arm()
    ref = robodyn.trajectories.smooth(np.full(6, 0.5), np.full(6, 0.6), T=0.2)
    res = robodyn.simulate(robot, controller=robodyn.control.ComputedTorque(robot),
                           reference=ref, duration=0.2)
    fig = res.plot(str(tmp_path / "arm.png"))
    assert "tracking error q_ref - q" in _titles(fig)
    assert len(fig.axes) == 3 * robot.n + 1
