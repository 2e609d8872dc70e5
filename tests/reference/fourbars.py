"""Four-bar spanning trees as URDF strings (tests of the loop constraints)."""


def _link(name, mass, com, inertia):
    ix, iy, iz = inertia
    return (f'<link name="{name}"><inertial><origin xyz="{com}"/><mass value="{mass}"/>'
            f'<inertia ixx="{ix}" iyy="{iy}" izz="{iz}" ixy="0" ixz="0" iyz="0"/></inertial>'
            f'</link>')


def _joint(name, parent, child, xyz, axis, rpy="0 0 0"):
    return (f'<joint name="{name}" type="revolute"><parent link="{parent}"/>'
            f'<child link="{child}"/><origin xyz="{xyz}" rpy="{rpy}"/><axis xyz="{axis}"/>'
            f'<limit lower="-10" upper="10" effort="100" velocity="100"/></joint>')


# planar four-bar: crank a = 0.2 at the origin, coupler b = 0.5, rocker c = 0.4 pivoted at
# d = 0.6 on the x axis, all about z; the loop closes the coupler's end (0.5, 0, 0) on the
# rocker's end (0.4, 0, 0)
PLANAR = ('<robot name="planar_fourbar"><link name="ground"/>'
          + _link("crank", 1.0, "0.1 0 0", (0.001, 0.004, 0.004))
          + _link("coupler", 1.5, "0.25 0 0", (0.001, 0.03, 0.03))
          + _link("rocker", 1.2, "0.2 0 0", (0.001, 0.016, 0.016))
          + _joint("crank_joint", "ground", "crank", "0 0 0", "0 0 1")
          + _joint("coupler_joint", "crank", "coupler", "0.2 0 0", "0 0 1")
          + _joint("rocker_joint", "ground", "rocker", "0.6 0 0", "0 0 1")
          + "</robot>")

# spatial four-bar (RUSR): crank about z at the origin (0.15 long on x), a universal joint
# (x then y) to the coupler (0.6 long on x), the rocker about x pivoted at (0.5, 0, 0.2)
# (0.3 long on z); a ball joint (point constraint) closes the coupler's end on the rocker's
SPATIAL = ('<robot name="spatial_fourbar"><link name="ground"/>'
           + _link("crank", 0.8, "0.075 0 0", (0.001, 0.002, 0.002))
           + _link("cross", 0.05, "0 0 0", (1e-5, 1e-5, 1e-5))
           + _link("coupler", 1.5, "0.3 0.01 0", (0.002, 0.045, 0.046))
           + _link("rocker", 1.0, "0 0 0.15", (0.008, 0.008, 0.001))
           + _joint("crank_joint", "ground", "crank", "0 0 0", "0 0 1")
           + _joint("u1", "crank", "cross", "0.15 0 0", "1 0 0")
           + _joint("u2", "cross", "coupler", "0 0 0", "0 1 0")
           + _joint("rocker_joint", "ground", "rocker", "0.5 0 0.2", "1 0 0")
           + "</robot>")
