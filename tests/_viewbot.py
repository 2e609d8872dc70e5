"""A small red robot for the view tests: a base box, a cylinder on a vertical revolute joint,
then on a horizontal one an STL box (written by trimesh, named package://viewbot/...) topped by
a sphere. ``write(folder)`` returns (urdf path, package folder)."""

from __future__ import annotations

from pathlib import Path

RED = (0.9, 0.1, 0.1)

URDF = """<robot name="viewbot">
 <material name="red"><color rgba="0.9 0.1 0.1 1"/></material>
 <link name="base"><visual><geometry><box size="0.3 0.3 0.1"/></geometry>
  <material name="red"/></visual></link>
 <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/>
  <origin xyz="0 0 0.05"/><axis xyz="0 0 1"/>
  <limit lower="-3" upper="3" effort="50" velocity="5"/></joint>
 <link name="l1"><inertial><mass value="1"/><origin xyz="0 0 0.2"/>
  <inertia ixx="0.01" iyy="0.01" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial>
  <visual><origin xyz="0 0 0.2"/><geometry><cylinder radius="0.04" length="0.4"/></geometry>
  <material name="red"/></visual></link>
 <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/>
  <origin xyz="0 0 0.4"/><axis xyz="0 1 0"/>
  <limit lower="-3" upper="3" effort="50" velocity="5"/></joint>
 <link name="l2"><inertial><mass value="1"/><origin xyz="0 0 0.15"/>
  <inertia ixx="0.01" iyy="0.01" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial>
  <visual><origin xyz="0 0 0.15"/><geometry><mesh filename="package://viewbot/meshes/arm.stl"/>
  </geometry><material><color rgba="0.9 0.1 0.1 1"/></material></visual>
  <visual><origin xyz="0 0 0.3"/><geometry><sphere radius="0.05"/></geometry>
  <material name="red"/></visual></link>
</robot>
"""


def write(folder):
    import trimesh

    folder = Path(folder)
    meshes = folder / "packages" / "viewbot" / "meshes"
    meshes.mkdir(parents=True, exist_ok=True)
    trimesh.creation.box((0.08, 0.08, 0.3)).export(meshes / "arm.stl")
    urdf = folder / "viewbot.urdf"
    urdf.write_text(URDF)
    return urdf, folder / "packages"


def red_fraction(img, box):
    """The fraction of the pixels of ``img`` (H, W, 3) in ``box`` (x0, y0, x1, y1) that are
    red (the robot's colour, shaded): r well above g and b."""
    x0, y0, x1, y1 = box
    patch = img[y0:y1, x0:x1].astype(int)
    if patch.size == 0:
        return 0.0
    red = (patch[..., 0] - patch[..., 1] > 60) & (patch[..., 0] - patch[..., 2] > 60)
    return float(red.mean())
