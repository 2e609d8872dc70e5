"""The same ModelSpec as a Pinocchio model, for in-process cross-checks (Pinocchio is optional)."""

import numpy as np


def depth_first_order(spec):
    """Body indices in depth-first preorder (Pinocchio needs every subtree contiguous)."""
    children = {i: [] for i in range(-1, len(spec.bodies))}
    for i, b in enumerate(spec.bodies):
        children[b.parent].append(i)
    order, stack = [], list(reversed(children[-1]))
    while stack:
        i = stack.pop()
        order.append(i)
        stack.extend(reversed(children[i]))
    return np.array(order, dtype=int)


def pinocchio_model(pin, spec, order):
    """The spec as a Pinocchio model (``pin`` the pinocchio module); its joint k + 1 is body
    order[k]. Armature is carried over; joint friction is not."""
    rank = {int(i): k for k, i in enumerate(order)}
    model = pin.Model()
    model.gravity = pin.Motion(np.asarray(spec.gravity, dtype=float), np.zeros(3))
    for i in order:
        b = spec.bodies[i]
        joint = (pin.JointModelRevoluteUnaligned if b.joint_type == "revolute"
                 else pin.JointModelPrismaticUnaligned)(np.asarray(b.axis, dtype=float))
        placement = pin.SE3(np.array(b.origin[:3, :3]), np.array(b.origin[:3, 3]))
        parent = 0 if b.parent == -1 else rank[b.parent] + 1
        jid = model.addJoint(parent, joint, placement, b.joint_name)
        model.appendBodyToJoint(jid, pin.Inertia(float(b.mass), np.asarray(b.com, dtype=float),
                                                 np.asarray(b.inertia, dtype=float)),
                                pin.SE3.Identity())
    model.armature = np.array([spec.bodies[i].armature for i in order], dtype=float)
    return model
