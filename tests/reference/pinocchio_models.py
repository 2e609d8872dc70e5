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
    return floating_pinocchio_model(pin, spec, order)


def floating_pinocchio_model(pin, spec, order):
    """pinocchio_model for a spec whose body 0 may be ``floating`` (a JointModelFreeFlyer);
    ``order`` must start with body 0 then."""
    rank = {int(i): k for k, i in enumerate(order)}
    model = pin.Model()
    model.gravity = pin.Motion(np.asarray(spec.gravity, dtype=float), np.zeros(3))
    armature = []
    for i in order:
        b = spec.bodies[i]
        if b.joint_type == "floating":
            joint = pin.JointModelFreeFlyer()
            armature += [0.0] * 6
        else:
            joint = (pin.JointModelRevoluteUnaligned if b.joint_type == "revolute"
                     else pin.JointModelPrismaticUnaligned)(np.asarray(b.axis, dtype=float))
            armature.append(b.armature)
        placement = pin.SE3(np.array(b.origin[:3, :3]), np.array(b.origin[:3, 3]))
        parent = 0 if b.parent == -1 else rank[b.parent] + 1
        jid = model.addJoint(parent, joint, placement, b.joint_name)
        model.appendBodyToJoint(jid, pin.Inertia(float(b.mass), np.asarray(b.com, dtype=float),
                                                 np.asarray(b.inertia, dtype=float)),
                                pin.SE3.Identity())
    model.armature = np.array(armature, dtype=float)
    return model


class Coordinates:
    """robodyn <-> Pinocchio coordinates of one model, joints matched by name.

    robodyn: q = [base position, quaternion (x, y, z, w), joints], v = [base angular, base
    linear (both base frame), joints], the base's generalized force [moment; force].
    Pinocchio's free-flyer: q the same (position, quaternion x, y, z, w), v = [linear;
    angular], force [force; moment]; a continuous joint has q = (cos, sin). ``v`` maps any
    velocity-like vector (v, a, tau) and ``vv`` a (nv, nv) matrix.
    """

    def __init__(self, pin_model, joint_names, joint_types):
        self.nq, self.nv = pin_model.nq, pin_model.nv
        self.q_parts = []  # (robodyn q index, pin q index, kind)
        self._v_of_q = {}  # robodyn q index of a 1-dof joint -> its v index
        vmap = np.full(pin_model.nv, -1)
        iq = iv = 0
        for name, kind in zip(joint_names, joint_types):
            j = pin_model.joints[pin_model.getJointId(name)]
            if kind == "floating":
                assert j.nq == 7 and j.nv == 6, name
                self.q_parts += [(iq + k, j.idx_q + k, "copy") for k in range(7)]
                vmap[j.idx_v:j.idx_v + 6] = [iv + 3, iv + 4, iv + 5, iv, iv + 1, iv + 2]
                iq, iv = iq + 7, iv + 6
            else:
                assert j.nv == 1 and j.nq in (1, 2), name
                self.q_parts.append((iq, j.idx_q, "copy" if j.nq == 1 else "cos_sin"))
                self._v_of_q[iq] = iv
                vmap[j.idx_v] = iv
                iq, iv = iq + 1, iv + 1
        assert iv == pin_model.nv and np.all(vmap >= 0)
        self.vmap = vmap  # pin v = robodyn v[vmap]
        self.vinv = np.argsort(vmap)  # robodyn v = pin v[vinv]

    def q(self, q):
        """robodyn q -> Pinocchio q."""
        out = np.zeros(self.nq)
        for a, b, kind in self.q_parts:
            if kind == "copy":
                out[b] = q[a]
            else:
                out[b], out[b + 1] = np.cos(q[a]), np.sin(q[a])
        return out

    def v(self, v):
        """robodyn velocity-like vector -> Pinocchio."""
        return np.asarray(v)[self.vmap]

    def wrap(self, v):
        """v with the entries of continuous (cos, sin) joints wrapped to [-pi, pi): the
        difference of two angles of a joint that Pinocchio keeps on the circle."""
        v = np.array(v, dtype=float)
        for a, _, kind in self.q_parts:
            if kind == "cos_sin":
                k = self._v_of_q[a]
                v[k] = (v[k] + np.pi) % (2 * np.pi) - np.pi
        return v

    def v_back(self, pv):
        """Pinocchio velocity-like vector -> robodyn."""
        return np.asarray(pv)[self.vinv]

    def vv_back(self, M):
        """Pinocchio (nv, nv) matrix -> robodyn order."""
        return np.asarray(M)[np.ix_(self.vinv, self.vinv)]

    def jacobian_back(self, J):
        """Pinocchio (6, nv) [linear; angular] Jacobian -> robodyn [angular; linear] columns
        in robodyn order."""
        J = np.asarray(J)
        return np.vstack([J[3:], J[:3]])[:, self.vinv]
