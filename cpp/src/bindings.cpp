// Python bindings: robodyn._core.
//
// The hot entry points read numpy buffers directly (no Eigen::Ref casters, no copies when the
// input already is a C-contiguous float64 array), check shape and finiteness once, and
// dispatch single states or (N, n) batches; batches run with the GIL released, optionally on
// several threads, each with its own Data.
#include "bindings_common.hpp"


#include <pybind11/eigen.h>

PYBIND11_MODULE(_core, m) {
  m.doc() = "robodyn C++ core (private; use the robodyn package)";
  // the one inertia tolerance (robodyn.urdf checks files with the same numbers)
  m.attr("INERTIA_RTOL") = kInertiaRtol;
  m.attr("INERTIA_ATOL") = kInertiaAtol;

  m.def("set_num_threads", [](int k) {
    if (k < 1) throw py::value_error("threads: must be >= 1");
    g_threads = k;
  }, "Threads used by batch calls (each thread has its own workspace).");
  m.def("get_num_threads", [] { return g_threads.load(); },
        "Threads used by batch calls (set_num_threads; default 1).");

  py::class_<RobotCore> cls(m, "RobotCore");
  cls
      .def(py::init([](const py::list& bodies, const py::list& frames, const Vec3& gravity,
                       bool check_inertia, bool check_singular) {
             std::vector<BodySpec> bs;
             for (auto b : bodies) bs.push_back(body_from_dict(b.cast<py::dict>(), bs.size()));
             std::vector<FrameSpec> fs;
             for (auto f : frames) {
               auto d = f.cast<py::dict>();
               FrameSpec s;
               s.parent = d["parent"].cast<int>();
               const Eigen::Matrix4d T = d["pose"].cast<Eigen::Matrix4d>();
               s.R = T.topLeftCorner<3, 3>();
               s.p = T.topRightCorner<3, 1>();
               s.name = d["name"].cast<std::string>();
               fs.push_back(s);
             }
             Model model;
             try {
               model = build_model(bs, fs, gravity, check_inertia, check_singular);
             } catch (const std::invalid_argument& e) {
               throw py::value_error(e.what());
             }
             return new RobotCore(std::move(model));
           }),
           py::arg("bodies"), py::arg("frames"), py::arg("gravity"),
           py::arg("check_inertia") = true, py::arg("check_singular") = true)
      .def_property_readonly("n", &RobotCore::n,
                             "Degrees of freedom: the velocity size nv, the length of qd, qdd "
                             "and tau (and of q without a free-floating base).")
      .def_property_readonly("nq", [](const RobotCore& r) { return r.model_->nq; },
                             "configuration size (nv + 1 with a free-floating base)")
      .def_property_readonly("nv", [](const RobotCore& r) { return r.model_->nv; },
                             "velocity size")
      .def_property_readonly("floating_base",
                             [](const RobotCore& r) { return r.model_->floating; },
                             "True when the first body moves on a free-flyer joint")
      .def(
          "momentum",
          [](RobotCore& r, py::handle q, py::handle v, py::handle out) {
            return r.run<2>({q, v}, {"q", "v"}, out, {6}, "",
                            [](const Model& m, Data& d, const Ptrs2& x, double* o) {
                              momentum(m, d, x[0], x[1], o);
                              return true;
                            });
          },
          py::arg("q"), py::arg("v"), py::arg("out") = py::none(),
          R"doc(momentum(q, v, out=None) -> h = [L; p], shape (6,)

The total momentum of the bodies at configuration q (nq,) with velocity v (nv,), in world axes
(the base frame of a fixed-base model): L (entries 0-2, N m s) the angular momentum about the
world origin (not about the centre of mass: centroidal_momentum_matrix gives that one), p
(entries 3-5, N s) the linear momentum, m times the velocity of the centre of mass. With a
free-floating base, v = [base angular; base linear velocity (both in the base frame); joints],
as everywhere. Rigid bodies only: rotor inertia (armature) is not counted. Without external
forces h is constant; gravity changes p by m g per second and L by c x m g
(c = center_of_mass(q)). (N, nq) and (N, nv) batches give (N, 6); out: a C-contiguous float64
array of the result's shape, written in place.)doc")
      .def(
          "center_of_mass",
          [](RobotCore& r, py::handle q, py::handle out) {
            return r.run<1>({q}, {"q"}, out, {3}, "center_of_mass: the model has no mass",
                            [](const Model& m, Data& d, const Ptrs1& x, double* o) {
                              return center_of_mass(m, d, x[0], o);
                            });
          },
          py::arg("q"), py::arg("out") = py::none(),
          R"doc(center_of_mass(q, out=None) -> c, shape (3,)

The centre of mass of all the bodies at configuration q (nq,), in metres in world coordinates
(the base frame of a fixed-base model; a free-floating base's world frame is the one its
position q[0:3] and quaternion q[3:7] are given in). The mass-weighted mean of the bodies'
centres of mass; massless links count for nothing. (N, nq) batches give (N, 3); out: a
C-contiguous float64 array of the result's shape, written in place. ValueError if the bodies
have no mass.)doc")
      .def(
          "centroidal_momentum_matrix",
          [](RobotCore& r, py::handle q, py::handle out) {
            const py::ssize_t nv = r.model_->nv;
            return r.run<1>({q}, {"q"}, out, {6, nv},
                            "centroidal_momentum_matrix: the model has no mass",
                            [](const Model& m, Data& d, const Ptrs1& x, double* o) {
                              return centroidal_momentum_matrix(m, d, x[0], o);
                            });
          },
          py::arg("q"), py::arg("out") = py::none(),
          R"doc(centroidal_momentum_matrix(q, out=None) -> A_G, shape (6, nv)

The centroidal momentum matrix (Orin, Lee & Goswami 2013): A_G(q) v is the spatial momentum of
the bodies [angular about the centre of mass; linear] in world axes (the base frame of a
fixed-base model), for any velocity v. Row block 0-2: N m s per unit of v, rows 3-5: N s.
The same momentum as robot.momentum(q, v), whose angular part is about the world origin:
A_G v = [L - c x p; p] with (L, p) = momentum(q, v), c = center_of_mass(q). Rigid bodies only
(no rotor inertia). A free base's six columns are its angular and linear velocity in its own
frame, like v. q: (nq,); (N, nq) batches give (N, 6, nv). out: a C-contiguous float64 (6, nv)
array written in place. ValueError if the bodies have no mass.)doc")
      .def(
          "integrate",
          [](RobotCore& r, py::handle q, py::handle v, double dt, py::handle out) {
            if (!std::isfinite(dt)) bad("dt", "must be a finite number");
            const py::ssize_t nq = r.model_->nq;
            return r.run<2>({q, v}, {"q", "v"}, out, {nq}, "",
                            [dt](const Model& m, Data&, const Ptrs2& x, double* o) {
                              integrate(m, x[0], x[1], dt, o);
                              return true;
                            });
          },
          py::arg("q"), py::arg("v"), py::arg("dt") = 1.0, py::arg("out") = py::none(),
          R"doc(integrate(q, v, dt=1.0, out=None) -> q1, shape (nq,)

The configuration reached from q (nq,) by moving with the constant velocity v (nv,) for dt
seconds. Each joint: q1 = q + dt v (rad or m). A free-floating base, q[0:7] = [position of
its origin in the world (m); unit quaternion x, y, z, w of its orientation, base to world]
and v[0:6] = [angular velocity; velocity of its origin], both in the base frame (body
twist), moves on SE(3): pose1 = pose0 exp(dt v^) (the twist held constant in the moving
frame; not q + dt v), its quaternion renormalised. The inverse of difference:
integrate(q0, difference(q0, q1)) = q1. (N, nq) and (N, nv) batches give (N, nq); out (may
be q): a C-contiguous float64 array of the result's shape, written in place. ValueError for
a non-finite dt or a base quaternion farther than 1e-6 from unit norm.)doc")
      .def(
          "difference",
          [](RobotCore& r, py::handle q0, py::handle q1, py::handle out) {
            return r.run<2>({q0, q1}, {"q0", "q1"}, out, {r.n()}, "",
                            [](const Model& m, Data&, const Ptrs2& x, double* o) {
                              difference(m, x[0], x[1], o);
                              return true;
                            });
          },
          py::arg("q0"), py::arg("q1"), py::arg("out") = py::none(),
          R"doc(difference(q0, q1, out=None) -> v, shape (nv,)

The velocity v (nv,) that moves q0 to q1 (both (nq,)) in unit time: integrate(q0, v, 1) = q1.
Each joint: q1 - q0. A free-floating base's block (the first six entries) is the body twist
log(pose0^-1 pose1) = [rotation vector; translation] in the frame of pose0 (the rotation the
shorter way, under pi), the layout of v. Divide by a time step for a velocity;
difference(q, q + dq) is the tangent-space displacement used by the floating derivatives.
(N, nq) batches give (N, nv); out: a C-contiguous float64 array of the result's shape,
written in place.)doc")
      .def_property_readonly(
          "joint_names", [](const RobotCore& r) { return r.model_->joint_names; },
          "Names of the moving joints, in q order.")
      .def_property_readonly(
          "link_names", [](const RobotCore& r) { return r.model_->link_names; },
          "Names of the frames forward_kinematics and jacobian know, in their order: the "
          "link moved by each joint (q order), then the links merged into them through fixed "
          "joints (end effectors, tool frames).")
      .def_property(
          "gravity", [](const RobotCore& r) { return Vec3(r.model_->gravity); },
          [](RobotCore& r, py::handle g) {
            Input in = get_input(g, "gravity", 3);
            if (in.batch) bad("gravity", "expected shape (3,)");
            const Vec3 grav = checked_gravity(Vec3(in.p[0], in.p[1], in.p[2]));
            // generated kernels have the gravity they were generated with built in
            if (grav == r.model_->gravity) return;
            // a new model with the new gravity (checked before anything changes); the old
            // one lives on while a batch on another thread still uses it
            auto next = std::make_shared<Model>(*r.model_);
            set_gravity(*next, grav);
            // generated kernels have the gravity they were generated with built in
            r.kernels_ = RobotCore::Kernels();
            r.model_ = std::move(next);
          },
          "Gravity acceleration (3,) in m/s^2, base-frame axes (e.g. (0, 0, -9.81) for a "
          "z-up base). Assignable, also while a batch runs on another thread (which keeps the "
          "model it started with).")
      .def(
          "coriolis_matrix",
          [](RobotCore& r, py::handle q, py::handle qd, py::handle out) {
            const int n = r.n();
            return r.run<2>({q, qd}, {"q", "qd"}, out, {n, n}, "",
                            [](const Model& m, Data& d, const Ptrs2& x, double* o) {
                              coriolis_matrix(m, d, x[0], x[1], o);
                              return true;
                            });
          },
          py::arg("q"), py::arg("qd"), py::arg("out") = py::none(),
          R"doc(coriolis_matrix(q, qd, out=None) -> C, shape (n, n)

The Coriolis/centrifugal matrix C(q, qd) with C(q, qd) qd = bias_torques(q, qd) -
gravity_torques(q) and dM/dt - 2 C skew-symmetric (the Christoffel-symbol choice). Rigid-body
terms only: no armature (it is constant), damping or friction. q, qd: (n,) in rad or m and
rad/s or m/s; (N, n) batches give (N, n, n). out: a C-contiguous float64 (n, n) array written
in place (nothing allocated).)doc")
      .def(
          "slotine_li_regressor",
          [](RobotCore& r, py::handle q, py::handle qd, py::handle v, py::handle a,
             py::handle out) {
            const int n = r.n(), bodies = r.model_->n;
            return r.run<4>({q, qd, v, a}, {"q", "qd", "v", "a"}, out, {n, 10 * bodies}, "",
                            [](const Model& m, Data& d, const Ptrs4& x, double* o) {
                              regressor_slotine_li(m, d, x[0], x[1], x[2], x[3], o);
                              return true;
                            });
          },
          py::arg("q"), py::arg("qd"), py::arg("v"), py::arg("a"), py::arg("out") = py::none(),
          "slotine_li_regressor(q, qd, v, a, out=None) -> Y, shape (n, 10 bodies)\n\n"
          "The Slotine-Li regressor: Y @ robot.dynamic_parameters() = M(q) a + C(q, qd) v + "
          "g(q) (rigid-body terms), for adaptive control.")
      .def(
          "kinetic_energy",
          [](RobotCore& r, py::handle q, py::handle qd) -> py::object {
            py::object res = r.run<2>({q, qd}, {"q", "qd"}, py::none(), {}, "",
                                      [](const Model& m, Data& d, const Ptrs2& x, double* o) {
                                        *o = kinetic_energy(m, d, x[0], x[1]);
                                        return true;
                                      });
            if (boundary::array_of(res.ptr()).ndim() == 0) return py::float_(res);
            return res;
          },
          py::arg("q"), py::arg("qd"),
          R"doc(kinetic_energy(q, qd) -> float (J)

0.5 qd' (M(q) + diag(armature)) qd: the links' kinetic energy plus the rotors' (armature).
q, qd: (n,); (N, n) batches give (N,).)doc")
      .def(
          "potential_energy",
          [](RobotCore& r, py::handle q) -> py::object {
            py::object res = r.run<1>({q}, {"q"}, py::none(), {}, "",
                                      [](const Model& m, Data& d, const Ptrs1& x, double* o) {
                                        *o = potential_energy(m, d, x[0]);
                                        return true;
                                      });
            if (boundary::array_of(res.ptr()).ndim() == 0) return py::float_(res);
            return res;
          },
          py::arg("q"),
          R"doc(potential_energy(q) -> float (J)

Gravity potential energy -sum_i m_i g . c_i of the moving links (c_i the centre of mass in the
base frame, g the robot's gravity), zero with every mass centre at the base origin; so
d/dt (kinetic + potential) is the power of the joint torques in a passive, frictionless
system. q: (n,); (N, n) batches give (N,).)doc")
      .def(
          "forward_kinematics",
          [](RobotCore& r, py::handle q, py::handle out) {
            const py::ssize_t nf = static_cast<py::ssize_t>(r.model_->frame_body.size());
            return r.run<1>({q}, {"q"}, out, {nf, 4, 4}, "",
                            [](const Model& m, Data& d, const Ptrs1& x, double* o) {
                              forward_kinematics(m, d, x[0], o);
                              return true;
                            });
          },
          py::arg("q"), py::arg("out") = py::none(),
          R"doc(forward_kinematics(q, out=None) -> poses, shape (len(link_names), 4, 4)

Base-to-link homogeneous transforms of every frame in link_names order: poses[i] maps
coordinates in frame i to the base frame ([R p; 0 1], p the frame origin in metres). The
frames are the user's link frames (URDF child-link frames or DH frames), not the internal
ones the dynamics use. q: (n,); (N, n) batches give (N, frames, 4, 4). out: a C-contiguous
float64 array of the result's shape, written in place.)doc")
      .def(
          "jacobian",
          [](RobotCore& r, py::handle q, py::handle link, py::handle out) {
            const int f = r.frame_index(link);
            return r.run<1>({q}, {"q"}, out, {6, r.n()}, "",
                            [f](const Model& m, Data& d, const Ptrs1& x, double* o) {
                              jacobian(m, d, x[0], f, o);
                              return true;
                            });
          },
          py::arg("q"), py::arg("link"), py::arg("out") = py::none(),
          R"doc(jacobian(q, link, out=None) -> J, shape (6, n)

Geometric Jacobian of the origin of frame `link` (a name of link_names or an index into it;
negative indices count from the end): [omega; v] = J(q) qd, rows 0-2 the angular velocity of
the frame and rows 3-5 the linear velocity of its origin, both in base-frame axes; column j
belongs to joint j (q order). Row order [angular; linear] is robodyn's spatial convention and
the opposite of Pinocchio's: J = vstack((J_pin[3:], J_pin[:3])) with J_pin =
pin.getFrameJacobian(..., pin.LOCAL_WORLD_ALIGNED) (tests/test_pinocchio.py). q: (n,);
(N, n) batches give (N, 6, n). out: a C-contiguous float64 (6, n) array written in place.)doc")
      .def("_op_counts",
           [](const RobotCore& r, const std::string& algorithm) {
             std::array<long, 3> c;
             try {
               c = count_ops(*r.model_, algorithm);
             } catch (const std::invalid_argument& e) {
               throw py::value_error(e.what());
             }
             py::dict d;
             d["mul"] = c[0];
             d["add"] = c[1];
             d["trig"] = c[2];
             return d;
           })
      .def("_cache_stats",
           [](const RobotCore& r) {
             return py::make_tuple(r.data_.cache_hits, r.data_.cache_misses);
           })
      .def("_model_arrays", [](const RobotCore& r) {
        const Model& m = *r.model_;
        py::dict d;
        // per coordinate: limits of q (nq,), the rest per velocity coordinate (nv,); a
        // free-flyer has no limits (infinite) and no rotor or friction (0)
        auto expand = [&](const std::vector<double>& v, bool config, double free_value) {
          std::vector<double> out;
          for (int i = 1; i <= m.n; ++i) {
            const bool free = m.type[i] == JointType::FreeFlyer;
            const int k = free ? (config ? 7 : 6) : 1;
            out.insert(out.end(), k, free ? free_value : v[i]);
          }
          return out;
        };
        const double inf = std::numeric_limits<double>::infinity();
        d["lower"] = expand(m.lower, true, -inf);
        d["upper"] = expand(m.upper, true, inf);
        d["velocity"] = expand(m.velocity, false, inf);
        d["effort"] = expand(m.effort, false, inf);
        d["armature"] = expand(m.armature, false, 0.0);
        d["damping"] = expand(m.damping, false, 0.0);
        d["friction"] = expand(m.friction, false, 0.0);
        d["mass"] = std::vector<double>(m.mass.begin() + 1, m.mass.end());
        std::vector<int> parent(m.parent.begin() + 1, m.parent.end());
        for (auto& p : parent) p -= 1;
        d["parent"] = parent;
        return d;
      });

  // ---- generated robot-specific kernels (robodyn.codegen) ----
  cls.def("_trace", [](const RobotCore& r, const std::string& algorithm) {
       ExprGraph g;
       try {
         g = trace_algorithm(*r.model_, algorithm);
       } catch (const std::invalid_argument& e) {
         throw py::value_error(e.what());
       }
       return graph_dict(g);
     }, "Expression graph of one algorithm traced on this model (robodyn.codegen).");
  cls.def("_set_kernels", [](RobotCore& r, std::uintptr_t id, std::uintptr_t M, std::uintptr_t g,
                             std::uintptr_t fd) {
       r.kernels_.id = reinterpret_cast<IdKernel>(id);
       r.kernels_.M = reinterpret_cast<MassKernel>(M);
       r.kernels_.g = reinterpret_cast<GravityKernel>(g);
       r.kernels_.fd = reinterpret_cast<FdKernel>(fd);
     }, "Use generated kernels (C function addresses; 0: the generic algorithm).");
  cls.def("_kernels", [](const RobotCore& r) {
    return py::make_tuple(reinterpret_cast<std::uintptr_t>(r.kernels_.id),
                          reinterpret_cast<std::uintptr_t>(r.kernels_.M),
                          reinterpret_cast<std::uintptr_t>(r.kernels_.g),
                          reinterpret_cast<std::uintptr_t>(r.kernels_.fd));
  });
  m.def("_simplify", [](const py::bytes& op, std::vector<std::int32_t> a, std::vector<std::int32_t> b,
                        std::vector<double> c, std::vector<std::int32_t> outputs) {
    ExprGraph g;
    const std::string ops = op;
    g.op.assign(ops.begin(), ops.end());
    g.a = std::move(a);
    g.b = std::move(b);
    g.c = std::move(c);
    g.outputs = std::move(outputs);
    try {
      return graph_dict(simplify(g));
    } catch (const std::invalid_argument& e) {
      throw py::value_error(e.what());
    }
  }, "The expression graph simplified (robodyn.codegen.simplify).");
  m.def("_builtin_kernels", [] {
    py::list l;
    for (const BuiltinKernels& k : builtin_kernels())
      l.append(py::make_tuple(k.name, k.sha256,
                              reinterpret_cast<std::uintptr_t>(k.inverse_dynamics),
                              reinterpret_cast<std::uintptr_t>(k.mass_matrix),
                              reinterpret_cast<std::uintptr_t>(k.gravity),
                              reinterpret_cast<std::uintptr_t>(k.forward_dynamics)));
    return l;
  }, "Kernels compiled into the extension: (name, source sha256, id, M, g, fd addresses).");

  // the hot methods bypass pybind11's dispatcher: METH_FASTCALL descriptors on the class
  for (PyMethodDef* def = kFastMethods; def->ml_name; ++def) {
    PyObject* descr = PyDescr_NewMethod(reinterpret_cast<PyTypeObject*>(cls.ptr()), def);
    if (!descr || PyObject_SetAttrString(cls.ptr(), def->ml_name, descr) < 0)
      throw py::error_already_set();
    Py_DECREF(descr);
  }

  SimHeld (*view)(py::handle) = [](py::handle h) {
    RobotCore& r = h.cast<RobotCore&>();
    return SimHeld{SimRobot{r.model_.get(), r.kernels_.id, r.kernels_.g, r.kernels_.fd,
                            force_set_of(h)},
                   r.model_};
  };
  register_simulation(m, view);
  register_forces(m, view);
  register_constraints(m, [](py::handle h) { return h.cast<RobotCore&>().model_; });
}
