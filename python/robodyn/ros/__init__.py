"""ROS 2 nodes on top of robodyn (the optional ``ros`` extra; see docs/ros.md).

- :mod:`robodyn.ros.node` -- ``robodyn-ros2``: a torque controller (feedforward, computed
  torque or gravity compensation) that reads ``/joint_states`` and ``/robodyn/reference`` and
  publishes ``/effort_controller/commands`` on a wall-clock timer;
- :mod:`robodyn.ros.sim` -- ``robodyn-ros2-sim``: a simulated arm that integrates robodyn's
  forward dynamics under those commands and publishes ``/joint_states``.

Both need ``rclpy`` and the ``sensor_msgs``, ``std_msgs`` and ``trajectory_msgs`` messages
(``pip install 'robodyn[ros]'``). This package depends on robodyn; the core package never
imports ROS. Nothing is imported here, so ``python -m robodyn.ros.node`` runs cleanly.
"""

__all__ = ["node", "sim"]
