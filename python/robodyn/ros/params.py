"""The nodes' parameters: the robot they name (``robot``, ``robot_description``), numbers,
choices and the real-time priority, each checked (:class:`ConfigError` names the parameter)."""

from __future__ import annotations

import math
import os

import numpy as np
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.node import Node

from robodyn import control
from robodyn.io import load_urdf, robots

class ConfigError(ValueError):
    """A parameter the node cannot start with."""


def load_robot(robot: str = "", robot_description: str = "", xacro_env: bool = False):
    """The robodyn.Robot named by exactly one of ``robot`` (a bundled name or a URDF path) and
    ``robot_description`` (URDF text). Raises ConfigError otherwise. ``xacro_env``: a
    ``.xacro`` path may read environment variables and ROS package paths."""
    robot, text = robot.strip(), robot_description.strip()
    if bool(robot) == bool(text):
        raise ConfigError("set exactly one of the parameters 'robot' (bundled name or URDF "
                          f"path; bundled: {', '.join(robots.available())}) and "
                          "'robot_description' (URDF text), or neither to take the URDF from "
                          "the robot_description topic")
    try:
        if text:
            loaded = load_urdf(text)
        elif robot in robots.available():
            loaded = robots.load(robot)
        elif os.path.isfile(robot):
            loaded = load_urdf(robot, xacro_env=bool(xacro_env)
                                       and robot.endswith(".xacro"))
        else:
            loaded = None
    except Exception as exc:  # any loader error is a configuration error here
        raise ConfigError(f"cannot load the robot: {type(exc).__name__}: {exc}") from None
    if loaded is None:
        raise ConfigError(f"robot: {robot!r} is neither a bundled robot "
                          f"({', '.join(robots.available())}) nor a URDF file")
    if getattr(loaded, "nq", loaded.n) != loaded.n:
        raise ConfigError(f"robot: {loaded.name} has a floating base; the nodes command joint "
                          "torques of fixed-base arms")
    return loaded




def descriptor(text, dynamic=False, read_only=True):
    return ParameterDescriptor(description=text, read_only=read_only, dynamic_typing=dynamic)


def declare_robot_parameters(node: Node):
    """Declare ``robot`` and ``robot_description``; the robot they name, or None if both are
    empty (the URDF then comes from the robot_description topic). Raises ConfigError."""
    node.declare_parameter("robot", "", descriptor(
        "bundled robot name (intelledex_605, stanford_arm) or URDF path"))
    node.declare_parameter("robot_description", "", descriptor(
        "URDF text; with neither parameter, the URDF comes from the robot_description topic"))
    node.declare_parameter("xacro_allow_env", False, descriptor(
        "let a .xacro robot file read environment variables and ROS package paths"))
    name = node.get_parameter("robot").value
    text = node.get_parameter("robot_description").value
    allow_env = node.get_parameter("xacro_allow_env").value
    for key, value in (("robot", name), ("robot_description", text)):
        if not isinstance(value, str):
            raise ConfigError(f"{key}: expected a string, got {value!r}")
    if not isinstance(allow_env, bool):
        raise ConfigError(f"xacro_allow_env: expected true or false, got {allow_env!r}")
    if not name.strip() and not text.strip():
        return None
    return load_robot(name, text, allow_env)


def check_number(name, value, *, positive=False):
    """A float parameter value (an integer is accepted); ConfigError otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(f"{name}: expected a number, got {value!r}")
    if value < 0.0 or (positive and value == 0.0):
        raise ConfigError(f"{name}: expected a {'positive' if positive else 'non-negative'} "
                          f"number, got {value!r}")
    return float(value)


def number_parameter(node: Node, name: str, default: float, text: str, *, positive=False,
                     read_only=True):
    """Declare a float parameter that also accepts an integer; return it checked."""
    node.declare_parameter(name, default, descriptor(text, dynamic=True, read_only=read_only))
    return check_number(name, node.get_parameter(name).value, positive=positive)


def choice_parameter(node: Node, name: str, default: str, choices, text: str, *,
                     read_only=True):
    """Declare a string parameter with a fixed set of values; return it checked."""
    node.declare_parameter(name, default, descriptor(f"{text}: {' | '.join(choices)}",
                                                      read_only=read_only))
    value = node.get_parameter(name).value
    if value not in choices:
        raise ConfigError(f"{name}: expected one of {', '.join(choices)}, got {value!r}")
    return value


def priority_parameter(node: Node) -> int:
    """Declare ``realtime_priority`` (0: normal scheduling; 1-99: SCHED_FIFO at that priority
    for the thread that spins the executor, set by :func:`run`); return it checked."""
    node.declare_parameter("realtime_priority", 0, descriptor(
        "0: normal scheduling; 1-99: SCHED_FIFO priority of the executor thread (needs root, "
        "CAP_SYS_NICE or an rtprio limit)"))
    value = node.get_parameter("realtime_priority").value
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 99:
        raise ConfigError(f"realtime_priority: expected an integer in 0..99, got {value!r}")
    return value


def effort_bounds(robot):
    """The (n,) torque bounds of the robot's effort limits as the controllers take them
    (:func:`control.effort_bounds`), or None if no joint has a limit."""
    lim = control.effort_bounds(robot.effort_limits, robot.n)
    return lim if np.any(np.isfinite(lim)) else None
