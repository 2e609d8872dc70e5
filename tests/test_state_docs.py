"""The docstrings of the configuration-space and momentum functions say what a user needs:
shapes, frames and conventions (the free base's quaternion order, the body-frame twist, the
point the angular momentum is taken about). Robot's live in the C++ bindings (a rebuilt _core
carries them); a coupled robot's in robodyn/coupling.py."""

import inspect

import pytest

import robodyn
from robodyn.model.coupling import CoupledRobot

# for each function, phrases its docstring must contain
FACTS = {
    "integrate": ["(nq,)", "(nv,)", "quaternion x, y, z, w", "base frame", "exp(dt v^)",
                  "renormalised", "difference"],
    "difference": ["(nv,)", "(nq,)", "integrate(q0, v, 1) = q1", "log(pose0^-1 pose1)",
                   "frame of pose0"],
    "momentum": ["(6,)", "world axes", "about the world origin", "N m s", "N s",
                 "centroidal_momentum_matrix", "armature", "m g"],
    "center_of_mass": ["(3,)", "world coordinates", "metres", "(N, 3)", "no mass"],
}


def _doc(obj):
    return " ".join((inspect.getdoc(obj) or "").split())


@pytest.mark.parametrize("name", sorted(FACTS))
def test_robot_state_functions_document_shapes_and_frames(name):
    doc = _doc(getattr(robodyn.Robot, name))
    missing = [fact for fact in FACTS[name] if fact not in doc]
    assert not missing, f"Robot.{name} docstring lacks {missing}: {doc!r}"


@pytest.mark.parametrize("name", sorted(FACTS))
def test_coupled_robot_state_functions_say_their_convention(name):
    doc = _doc(getattr(CoupledRobot, name))
    assert f"see Robot.{name}" in doc and "independent joints" in doc
    assert "(n,)" in doc or "shape of q" in doc
