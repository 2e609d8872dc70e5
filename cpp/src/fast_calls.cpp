// The fast-call entry points of robodyn._core: the hot RobotCore methods (inverse and forward
// dynamics, mass matrix, bias and gravity torques, derivatives, regressor) read their
// arguments straight from METH_FASTCALL vectors and dispatch single states or batches.
//
// Why by hand: the same rnea behind ordinary bindings costs more per Python call. Measured with
// `python bench/bench_call_layer.py ur5 talos --callgrind` (2026-11-29, pybind11 3.1.0,
// nanobind 3.1.0, NumPy 2.4.6; docs/performance.md has the table): instructions per call on
// UR5, robodyn 5,425 (the layer 1,937 of them, the rest rnea), nanobind with nb::ndarray
// arguments 11,610 (2.1x), pybind11 with Eigen::Ref 13,283 (2.4x); on Talos 22,563, 28,596
// (1.27x), 30,316 (1.34x); in time 2.6x (UR5) and 1.5x (Talos) for either. nanobind imports
// each array through NumPy's DLPack export, and even its bare dispatch (494 instructions)
// costs more than a METH_FASTCALL descriptor's (187), so nanobind is not taken.
#include "bindings_common.hpp"

namespace robodyn_py {
namespace {

// the hot methods, called through the fast-call entry points below
py::object inverse_dynamics_impl(RobotCore& r, py::handle q, py::handle qd, py::handle qdd,
                                 py::handle method, py::handle out) {
  const py::ssize_t n = r.n();
  if (r.kernels_.id && (method.is_none() || str_is(method, "rnea")))
    return r.run<3>({q, qd, qdd}, {"q", "qd", "qdd"}, out, {n}, "",
                    [k = r.kernels_.id](const Model&, Data&, const Ptrs3& x, double* o) {
                      k(x[0], x[1], x[2], o);
                      return true;
                    });
  if (method.is_none() || str_is(method, "rnea"))
    return r.run<3>({q, qd, qdd}, {"q", "qd", "qdd"}, out, {n}, "",
                    [](const Model& m, Data& d, const Ptrs3& x, double* o) {
                      rnea(m, d, x[0], x[1], x[2], o);
                      return true;
                    }, 64, ROBODYN_PAIR([](const Model& m, DataTpl<D2>& d, const Pairs3& x, D2* o) {
                      rnea(m, d, x[0], x[1], x[2], o);
                      return true;
                    }));
  if (str_is(method, "kane"))
    return r.run<3>({q, qd, qdd}, {"q", "qd", "qdd"}, out, {n}, "",
                    [](const Model& m, Data& d, const Ptrs3& x, double* o) {
                      kane(m, d, x[0], x[1], x[2], o);
                      return true;
                    });
  bad("method", "expected 'rnea' or 'kane'");
}

py::object forward_dynamics_impl(RobotCore& r, py::handle q, py::handle qd, py::handle tau,
                                 py::handle method, py::handle out) {
  const py::ssize_t n = r.n();
  if (r.kernels_.fd && (method.is_none() || str_is(method, "aba") || str_is(method, "crba")))
    return r.run<3>({q, qd, tau}, {"q", "qd", "tau"}, out, {n}, kFDFail,
                    [k = r.kernels_.fd, crba = str_is(method, "crba")](
                        const Model& m, Data& d, const Ptrs3& x, double* o) {
                      k(x[0], x[1], x[2], o);
                      // a non-finite result (overflow, or M not positive definite): the
                      // generic algorithm decides, so both give the same answer or error
                      for (int i = 0; i < m.nv; ++i)
                        if (!std::isfinite(o[i]))
                          return crba ? forward_dynamics_crba(m, d, x[0], x[1], x[2], o)
                                      : aba(m, d, x[0], x[1], x[2], o);
                      return true;
                    });
  if (method.is_none() || str_is(method, "aba"))
    return r.run<3>({q, qd, tau}, {"q", "qd", "tau"}, out, {n}, kFDFail,
                    [](const Model& m, Data& d, const Ptrs3& x, double* o) {
                      return aba(m, d, x[0], x[1], x[2], o);
                    }, 64, ROBODYN_PAIR([](const Model& m, DataTpl<D2>& d, const Pairs3& x, D2* o) {
                      return aba(m, d, x[0], x[1], x[2], o);
                    }));
  if (str_is(method, "crba"))
    return r.run<3>({q, qd, tau}, {"q", "qd", "tau"}, out, {n}, kFDFail,
                    [](const Model& m, Data& d, const Ptrs3& x, double* o) {
                      return forward_dynamics_crba(m, d, x[0], x[1], x[2], o);
                    });
  if (str_is(method, "kane"))
    return r.run<3>({q, qd, tau}, {"q", "qd", "tau"}, out, {n}, kFDFail,
                    [](const Model& m, Data& d, const Ptrs3& x, double* o) {
                      return kane_forward(m, d, x[0], x[1], x[2], o);
                    });
  bad("method", "expected 'aba', 'crba' or 'kane'");
}

py::object mass_matrix_impl(RobotCore& r, py::handle q, py::handle out) {
  const py::ssize_t n = r.n();
  if (r.kernels_.M)
    return r.run<1>({q}, {"q"}, out, {n, n}, "",
                    [k = r.kernels_.M](const Model&, Data&, const Ptrs1& x, double* o) {
                      k(x[0], o);
                      return true;
                    });
  return r.run<1>({q}, {"q"}, out, {n, n}, "",
                  [](const Model& m, Data& d, const Ptrs1& x, double* o) {
                    crba(m, d, x[0], o);  // both triangles straight into the result
                    return true;
                  });
}

py::object bias_torques_impl(RobotCore& r, py::handle q, py::handle qd, py::handle out) {
  return r.run<2>({q, qd}, {"q", "qd"}, out, {r.n()}, "",
                  [](const Model& m, Data& d, const Ptrs2& x, double* o) {
                    bias_torques(m, d, x[0], x[1], o);
                    return true;
                  }, 64, ROBODYN_PAIR([](const Model& m, DataTpl<D2>& d, const Pairs2& x, D2* o) {
                    bias_torques(m, d, x[0], x[1], o);
                    return true;
                  }));
}

py::object gravity_torques_impl(RobotCore& r, py::handle q, py::handle out) {
  if (r.kernels_.g)
    return r.run<1>({q}, {"q"}, out, {r.n()}, "",
                    [k = r.kernels_.g](const Model&, Data&, const Ptrs1& x, double* o) {
                      k(x[0], o);
                      return true;
                    });
  return r.run<1>({q}, {"q"}, out, {r.n()}, "",
                  [](const Model& m, Data& d, const Ptrs1& x, double* o) {
                    gravity_torques(m, d, x[0], o);
                    return true;
                  }, 64, ROBODYN_PAIR([](const Model& m, DataTpl<D2>& d, const Pairs1& x, D2* o) {
                    gravity_torques(m, d, x[0], o);
                    return true;
                  }));
}


py::object inverse_dynamics_derivatives_impl(RobotCore& r, py::handle q, py::handle qd,
                                             py::handle qdd, py::handle out) {
  const py::ssize_t n = r.n();
  return r.run<3, 2>({q, qd, qdd}, {"q", "qd", "qdd"}, out, {n, n}, "",
                     [](const Model& m, Data& d, const Ptrs3& x, const Outs2& o) {
                       rnea_derivatives(m, d, x[0], x[1], x[2], o[0], o[1]);
                       return true;
                     }, 16);
}

py::object forward_dynamics_derivatives_impl(RobotCore& r, py::handle q, py::handle qd,
                                             py::handle tau, py::handle out) {
  const py::ssize_t n = r.n();
  return r.run<3, 3>({q, qd, tau}, {"q", "qd", "tau"}, out, {n, n}, kFDFail,
                     [](const Model& m, Data& d, const Ptrs3& x, const Outs3& o) {
                       // qdd lands in d.scratch (nv)
                       return forward_dynamics_derivatives(m, d, x[0], x[1], x[2],
                                                           d.scratch.data(), o[0], o[1], o[2]);
                     }, 16);
}

py::object regressor_impl(RobotCore& r, py::handle q, py::handle qd, py::handle qdd,
                          py::handle out) {
  const py::ssize_t n = r.n(), bodies = r.model_->n;
  return r.run<3>({q, qd, qdd}, {"q", "qd", "qdd"}, out, {n, 10 * bodies}, "",
                  [](const Model& m, Data& d, const Ptrs3& x, double* o) {
                    regressor(m, d, x[0], x[1], x[2], o);
                    return true;
                  });
}

// METH_FASTCALL | METH_KEYWORDS argument parsing: positional or keyword, defaults None
template <size_t N>
std::array<py::handle, N> parse_args(const char* fname, const std::array<const char*, N>& names,
                                     size_t required, PyObject* const* args, Py_ssize_t nargs,
                                     PyObject* kwnames) {
  std::array<py::handle, N> v;
  if (nargs > static_cast<Py_ssize_t>(N))
    throw py::type_error(std::string(fname) + "() takes at most " + std::to_string(N) +
                         " arguments");
  for (Py_ssize_t k = 0; k < nargs; ++k) v[k] = args[k];
  const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t j = 0; j < nkw; ++j) {
    PyObject* key = PyTuple_GET_ITEM(kwnames, j);
    size_t k = 0;
    while (k < N && PyUnicode_CompareWithASCIIString(key, names[k]) != 0) ++k;
    if (k == N)
      throw py::type_error(std::string(fname) + "() got an unexpected keyword argument '" +
                           py::str(key).cast<std::string>() + "'");
    if (v[k]) throw py::type_error(std::string(fname) + "() got multiple values for '" +
                                   names[k] + "'");
    v[k] = args[nargs + j];
  }
  for (size_t k = 0; k < N; ++k) {
    if (v[k]) continue;
    if (k < required)
      throw py::type_error(std::string(fname) + "() missing required argument '" + names[k] +
                           "'");
    v[k] = Py_None;
  }
  return v;
}


// the C++ object of a Robot (the method descriptors guarantee self is a RobotCore instance):
// the last one found, else from robots_by_object(), else by pybind11's cast
RobotCore& self_of(PyObject* self) {
  if (self == last_robot.self) return *last_robot.core;
  auto& table = robots_by_object();
  auto it = table.find(self);
  RobotCore* r = it != table.end() ? it->second : nullptr;
  if (!r) {
    r = py::handle(self).cast<RobotCore*>();
    if (r == nullptr)
      throw py::type_error("Robot is not initialised (a subclass must call Robot.__init__)");
    table.emplace(self, r);
    r->self_ = self;
  }
  last_robot = {self, r};
  return *r;
}

PyObject* fast_inverse_dynamics(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                                PyObject* kw) {
  return guarded([&] {
    auto v = parse_args<5>("inverse_dynamics", {"q", "qd", "qdd", "method", "out"}, 3, args,
                           nargs, kw);
    return inverse_dynamics_impl(self_of(self), v[0], v[1], v[2], v[3], v[4]);
  });
}

PyObject* fast_forward_dynamics(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                                PyObject* kw) {
  return guarded([&] {
    auto v = parse_args<5>("forward_dynamics", {"q", "qd", "tau", "method", "out"}, 3, args,
                           nargs, kw);
    return forward_dynamics_impl(self_of(self), v[0], v[1], v[2], v[3], v[4]);
  });
}

PyObject* fast_mass_matrix(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                           PyObject* kw) {
  return guarded([&] {
    auto v = parse_args<2>("mass_matrix", {"q", "out"}, 1, args, nargs, kw);
    return mass_matrix_impl(self_of(self), v[0], v[1]);
  });
}

PyObject* fast_bias_torques(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                            PyObject* kw) {
  return guarded([&] {
    auto v = parse_args<3>("bias_torques", {"q", "qd", "out"}, 2, args, nargs, kw);
    return bias_torques_impl(self_of(self), v[0], v[1], v[2]);
  });
}

PyObject* fast_gravity_torques(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                               PyObject* kw) {
  return guarded([&] {
    auto v = parse_args<2>("gravity_torques", {"q", "out"}, 1, args, nargs, kw);
    return gravity_torques_impl(self_of(self), v[0], v[1]);
  });
}

PyObject* fast_inverse_dynamics_derivatives(PyObject* self, PyObject* const* args,
                                            Py_ssize_t nargs, PyObject* kw) {
  return guarded([&] {
    auto v = parse_args<4>("inverse_dynamics_derivatives", {"q", "qd", "qdd", "out"}, 3, args,
                           nargs, kw);
    return inverse_dynamics_derivatives_impl(self_of(self), v[0], v[1], v[2], v[3]);
  });
}

PyObject* fast_forward_dynamics_derivatives(PyObject* self, PyObject* const* args,
                                            Py_ssize_t nargs, PyObject* kw) {
  return guarded([&] {
    auto v = parse_args<4>("forward_dynamics_derivatives", {"q", "qd", "tau", "out"}, 3, args,
                           nargs, kw);
    return forward_dynamics_derivatives_impl(self_of(self), v[0], v[1], v[2], v[3]);
  });
}

PyObject* fast_regressor(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                         PyObject* kw) {
  return guarded([&] {
    auto v = parse_args<4>("regressor", {"q", "qd", "qdd", "out"}, 3, args, nargs, kw);
    return regressor_impl(self_of(self), v[0], v[1], v[2], v[3]);
  });
}

#define ROBODYN_FAST(name, doc) \
  {#name, reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(fast_##name)), \
   METH_FASTCALL | METH_KEYWORDS, doc}

}  // namespace

PyMethodDef kFastMethods[] = {
    ROBODYN_FAST(inverse_dynamics,
                 "inverse_dynamics(q, qd, qdd, method='rnea', out=None) -> tau, shape (n,)\n\n"
                 "Joint torques (N m; N for prismatic joints) that give acceleration qdd at "
                 "(q, qd): (M(q) + diag(armature)) qdd + C(q, qd) qd + g(q) + damping qd + "
                 "friction sign(qd). method: 'rnea' (recursive Newton-Euler) or 'kane' "
                 "(recursive Kane); the same numbers. q, qd, qdd: (n,) or (N, n) batches "
                 "(C++ loop, GIL released). out: a C-contiguous float64 array of the result's "
                 "shape, written in place."),
    ROBODYN_FAST(forward_dynamics,
                 "forward_dynamics(q, qd, tau, method='aba', out=None) -> qdd, shape (n,)\n\n"
                 "Joint accelerations under torques tau: solves the inverse_dynamics equation "
                 "(armature, damping and friction included) for qdd. method: 'aba' "
                 "(articulated-body), 'crba' (mass matrix + Cholesky) or 'kane' (Kane's "
                 "equations + Cholesky). ValueError if the mass matrix is not positive "
                 "definite. Shapes and out= as inverse_dynamics."),
    ROBODYN_FAST(mass_matrix,
                 "mass_matrix(q, out=None) -> M, shape (n, n)\n\n"
                 "Joint-space inertia matrix M(q) + diag(armature) (composite rigid bodies), "
                 "symmetric positive definite. (N, n) batches give (N, n, n)."),
    ROBODYN_FAST(bias_torques,
                 "bias_torques(q, qd, out=None) -> C(q, qd) qd + g(q), shape (n,)\n\n"
                 "Coriolis, centrifugal and gravity torques: inverse_dynamics at qdd = 0 "
                 "without damping and friction."),
    ROBODYN_FAST(gravity_torques,
                 "gravity_torques(q, out=None) -> g(q), shape (n,)\n\n"
                 "Torques that hold the robot still against gravity at q."),
    ROBODYN_FAST(inverse_dynamics_derivatives,
                 "inverse_dynamics_derivatives(q, qd, qdd, out=None) -> (dtau_dq, dtau_dqd)\n\n"
                 "Partial derivatives of inverse_dynamics with respect to q and qd, each (n, n) "
                 "(n = nv). With a free-floating base the q derivative is taken in the tangent "
                 "space: along integrate(q, dv) at dv = 0, one column per entry of v."),
    ROBODYN_FAST(forward_dynamics_derivatives,
                 "forward_dynamics_derivatives(q, qd, tau, out=None) -> "
                 "(dqdd_dq, dqdd_dqd, dqdd_dtau)\n\n"
                 "Partial derivatives of forward_dynamics with respect to q, qd and tau, each "
                 "(n, n) (n = nv; q in the tangent space with a free-floating base, as for "
                 "inverse_dynamics_derivatives)."),
    ROBODYN_FAST(regressor, "regressor(q, qd, qdd, out=None) -> Y, shape (n, 10 bodies)\n\n"
                 "The torque regressor: tau_rigid = Y @ robot.dynamic_parameters()."),
    {nullptr, nullptr, 0, nullptr}};

}  // namespace robodyn_py
