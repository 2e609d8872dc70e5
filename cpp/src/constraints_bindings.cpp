// Python bindings of the loop constraints: robodyn._core.ConstraintSystem, the C++ side of
// robodyn.ConstrainedRobot (which validates the constraints and resolves names first).
//
// Each call reads the robot's current model (its gravity may have been reassigned), checks
// the inputs once (shapes, finiteness, the base quaternion) and runs a single state or every
// row of an (N, n) batch on the system's own workspace: nothing is allocated per row.
// forward_dynamics, the hot call, is a METH_FASTCALL method (fast_forward_dynamics) like the
// Robot's in fast_calls.cpp; the others go through pybind11.
#include <pybind11/eigen.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <array>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "robodyn/codegen/codegen.hpp"
#include "robodyn/codegen/opcount.hpp"
#include "robodyn/constraints/dynamics.hpp"
#include "robodyn/constraints/loop.hpp"
#include "robodyn/model/model.hpp"
#include "bindings_common.hpp"
#include "numpy_arrays.hpp"

namespace {

using ModelOf = std::shared_ptr<const Model> (*)(py::handle);

// a base quaternion within this of unit norm is used (normalised); farther is an error (the
// robot's own methods use the same bound)
constexpr double kQuaternionTolerance = 1e-6;

const char* const kAxisNames[6] = {"rx", "ry", "rz", "x", "y", "z"};

using P1 = std::array<const double*, 1>;
using P2 = std::array<const double*, 2>;
using P3 = std::array<const double*, 3>;
using O1 = std::array<double*, 1>;
using O2 = std::array<double*, 2>;

class ConstraintSystem {
 public:
  ConstraintSystem(py::object robot, ModelOf model_of, std::vector<LoopModel> loops)
      : robot_(std::move(robot)), model_of_(model_of), model_(model_of_(robot_)),
        core_(&robot_.cast<robodyn_py::RobotCore&>()),
        cm_(make_constraint_model(*model_, std::move(loops))), d_(*model_), cd_(*model_, cm_) {}
  ~ConstraintSystem();

  int rows() const { return cm_.m; }
  const ConstraintData& data() const { return cd_; }

  // Runs kernel(model, row inputs, row outputs) on one state or each row of a batch. K inputs
  // (widths nq for names starting with 'q', else nv); O outputs of per-row shapes `shapes`
  // (new arrays made by NumPy's own constructor, robodyn_py::new_array, or the caller's).
  template <size_t K, size_t O, class Kernel>
  py::object run(const std::array<py::handle, K>& args, const std::array<const char*, K>& names,
                 py::handle out, const std::array<robodyn_py::Shape, O>& shapes, Kernel kernel) {
    refresh_model();
    const Model& m = *model_;
    std::array<Input, K> in;
    for (size_t k = 0; k < K; ++k) {
      const bool is_q = names[k][0] == 'q' && names[k][1] == 0;
      in[k] = get_input(args[k], names[k], is_q ? m.nq : m.nv);
      if (is_q) check_quaternions(m, in[k], names[k]);
      if (in[k].batch != in[0].batch || in[k].rows != in[0].rows)
        bad(names[k], "a single state and a batch, or batches of different lengths, are mixed "
                      "(" + std::string(names[0]) + " has " + std::to_string(in[0].rows) +
                      (in[0].batch ? " rows" : " state, not a batch") + ")");
    }
    const bool batch = in[0].batch;
    const py::ssize_t n_rows = in[0].rows;
    const bool given = !out.is_none();
    if (O > 1 && given &&
        !((PyTuple_Check(out.ptr()) || PyList_Check(out.ptr())) && py::len(out) == O))
      bad("out", "expected a tuple of " + std::to_string(O) + " arrays");
    std::array<py::object, O> res;
    std::array<double*, O> ptr;
    std::array<py::ssize_t, O> size;
    for (size_t o = 0; o < O; ++o) {
      robodyn_py::Shape shape;
      if (batch) shape.dim[shape.nd++] = n_rows;
      for (int k = 0; k < shapes[o].nd; ++k) shape.dim[shape.nd++] = shapes[o].dim[k];
      size[o] = shapes[o].prod();
      py::handle target = O == 1 ? out
                          : given ? py::handle(PySequence_Fast_GET_ITEM(out.ptr(), o))
                                  : py::handle(Py_None);
      res[o] = robodyn_py::get_output(target, shape, &ptr[o]);
    }
    for (py::ssize_t r = 0; r < n_rows; ++r) {
      std::array<const double*, K> x;
      for (size_t k = 0; k < K; ++k)
        x[k] = in[k].p + r * (names[k][0] == 'q' && names[k][1] == 0 ? m.nq : m.nv);
      std::array<double*, O> y;
      for (size_t o = 0; o < O; ++o) y[o] = ptr[o] + r * size[o];
      kernel(m, x, y, batch ? r : -1);
    }
    if (O == 1) return res[0];
    // the caller's tuple comes back as is (nothing allocated with out=)
    if (given && PyTuple_Check(out.ptr())) return py::reinterpret_borrow<py::object>(out);
    PyObject* t = PyTuple_New(O);
    if (!t) throw py::error_already_set();
    for (size_t o = 0; o < O; ++o) PyTuple_SET_ITEM(t, o, res[o].release().ptr());
    return py::reinterpret_steal<py::object>(t);
  }

  // (qdd, lam) of constrained_forward_dynamics, one state or a batch (arguments as the
  // Python method's)
  py::object forward_dynamics(py::handle q, py::handle v, py::handle tau, double mu,
                              int max_iter, double tol, py::handle out) {
    if (!(std::isfinite(mu) && mu >= 0)) bad("mu", "must be a finite number >= 0");
    if (max_iter < 1) bad("max_iter", "must be >= 1");
    if (!(std::isfinite(tol) && tol >= 0)) bad("tol", "must be a finite number >= 0");
    refresh_model();
    const robodyn_py::Shape s_qdd{model_->nv}, s_lam{cm_.m};
    return run<3, 2>({q, v, tau}, {"q", "v", "tau"}, out, {s_qdd, s_lam},
                     [this, mu, max_iter, tol](const Model& m, const P3& x, const O2& y,
                                              py::ssize_t row) {
                       const ConstraintStatus st = constrained_forward_dynamics(
                           m, cm_, d_, cd_, x[0], x[1], x[2], mu, max_iter, tol, y[0], y[1]);
                       if (st != ConstraintStatus::Ok) fail(st, row);
                     });
  }

  // the robot's current model (a new one when its gravity was reassigned)
  void refresh_model() {
    if (model_.get() != core_->model_.get()) model_ = core_->model_;
  }

  // the failure of a forward-dynamics row
  [[noreturn]] void fail(ConstraintStatus s, py::ssize_t row) const {
    const std::string where = row >= 0 ? " (batch row " + std::to_string(row) + ")" : "";
    if (s == ConstraintStatus::MassNotPositive)
      throw py::value_error("forward_dynamics: the mass matrix is not positive definite" + where);
    size_t l = 0;
    while (cm_.start[l + 1] <= cd_.bad_row) ++l;
    const LoopModel& c = cm_.loops[l];
    throw py::value_error(
        "forward_dynamics: constraint '" + c.name + "': its row '" +
        kAxisNames[c.rows[cd_.bad_row - cm_.start[l]]] +
        "' depends on the rows before it (redundant or singular constraints: J is rank "
        "deficient)" + where + "; use mu > 0 for the minimum-norm constraint forces");
  }

  py::object robot_;
  ModelOf model_of_;
  std::shared_ptr<const Model> model_;
  const robodyn_py::RobotCore* core_;  // robot_'s C++ object (alive while robot_ is held)
  ConstraintModel cm_;
  Data d_;
  ConstraintData cd_;

 private:
  static void check_quaternions(const Model& m, const Input& in, const char* name) {
    if (!m.floating) return;
    const int k0 = m.iq[1] + 3;
    for (py::ssize_t r = 0; r < in.rows; ++r) {
      const double* x = in.p + r * m.nq + k0;
      const double norm = std::sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2] + x[3] * x[3]);
      if (!(std::abs(norm - 1) <= kQuaternionTolerance))
        bad(name, "the base quaternion (x, y, z, w) at entries " + std::to_string(k0) + ".." +
                      std::to_string(k0 + 3) + (in.batch ? " of row " + std::to_string(r) : "") +
                      " has norm " + std::to_string(norm) +
                      "; expected a unit quaternion (within 1e-6)");
    }
  }
};

LoopModel loop_from_dict(const Model& m, const py::dict& c) {
  LoopModel l;
  l.name = c["name"].cast<std::string>();
  const int nf = static_cast<int>(m.frame_body.size());
  // a user frame (or -1, the world) and the constraint frame's pose in it -> the body and the
  // pose in the body's internal frame
  auto place = [&](const char* frame, const char* pose, int& body, Mat3& R, Vec3& p) {
    const int f = c[frame].cast<int>();
    const Eigen::Matrix4d T = c[pose].cast<Eigen::Matrix4d>();
    const Mat3 Rt = T.topLeftCorner<3, 3>();
    const Vec3 pt = T.topRightCorner<3, 1>();
    if (f < -1 || f >= nf) throw py::value_error("constraint " + l.name + ": frame out of range");
    if (f < 0) {
      body = 0;
      R = Rt;
      p = pt;
    } else {
      body = m.frame_body[f];
      R = m.frame_R[f] * Rt;
      p = m.frame_p[f] + m.frame_R[f] * pt;
    }
  };
  place("frame1", "pose1", l.body1, l.R1, l.p1);
  place("frame2", "pose2", l.body2, l.R2, l.p2);
  const auto rows = c["rows"].cast<std::vector<int>>();
  if (rows.empty() || rows.size() > 6) throw py::value_error("constraint " + l.name + ": rows");
  l.nrows = static_cast<int>(rows.size());
  for (int k = 0; k < l.nrows; ++k) {
    if (rows[k] < 0 || rows[k] > 5 || (k > 0 && rows[k] <= rows[k - 1]))
      throw py::value_error("constraint " + l.name + ": rows must increase within 0..5");
    l.rows[k] = rows[k];
  }
  l.kp = c["kp"].cast<double>();
  l.kd = c["kd"].cast<double>();
  if (l.body1 == l.body2)
    throw py::value_error("constraint '" + l.name +
                          "': body1 and body2 are the same rigid body (links joined by fixed "
                          "joints move as one): the constraint would hold nothing");
  return l;
}

// The ConstraintSystem a fast call found last (system_of): pybind11's public cast finds an
// instance's C++ object through its type registry, a few hundred instructions per call. Set
// by the first call on an object, cleared by ~ConstraintSystem (which pybind11 runs before
// the object's memory is freed, so an address is never found after it was reused). Used with
// the GIL held.
struct LastSystem {
  PyObject* self = nullptr;
  ConstraintSystem* system = nullptr;
};
LastSystem last_system;

ConstraintSystem::~ConstraintSystem() {
  if (last_system.system == this) last_system = {};
}

// the C++ object of self (the method descriptor guarantees a ConstraintSystem instance)
ConstraintSystem& system_of(PyObject* self) {
  if (self != last_system.self) {
    auto* s = py::handle(self).cast<ConstraintSystem*>();
    if (s == nullptr) throw py::type_error("ConstraintSystem is not initialised");
    last_system = {self, s};
  }
  return *last_system.system;
}

// a float argument (a float, or anything with __float__ or __index__), as pybind11 converts it
double float_arg(py::handle h, double fallback) {
  if (!h) return fallback;
  if (PyFloat_CheckExact(h.ptr())) return PyFloat_AS_DOUBLE(h.ptr());
  const double x = PyFloat_AsDouble(h.ptr());
  if (x == -1.0 && PyErr_Occurred()) throw py::error_already_set();
  return x;
}

// an int argument (an int or anything with __index__; not a float), as pybind11 converts it
int int_arg(py::handle h, const char* name, int fallback) {
  if (!h) return fallback;
  if (PyFloat_Check(h.ptr()))
    throw py::type_error(std::string(name) + ": expected an int, got a float");
  const long x = PyLong_AsLong(h.ptr());
  if (x == -1 && PyErr_Occurred()) throw py::error_already_set();
  if (x < std::numeric_limits<int>::min() || x > std::numeric_limits<int>::max())
    throw py::type_error(std::string(name) + ": out of the range of a C int");
  return static_cast<int>(x);
}

// ConstraintSystem.forward_dynamics(q, v, tau, mu=0.0, max_iter=1, tol=1e-12, out=None) as a
// METH_FASTCALL method: the arguments read straight from the call's vector (pybind11's
// dispatcher, its argument loaders and its keyword defaults cost more than a four-bar's
// dynamics)
PyObject* fast_forward_dynamics(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                                PyObject* kwnames) {
  static constexpr const char* kNames[7] = {"q", "v", "tau", "mu", "max_iter", "tol", "out"};
  return guarded([&]() -> py::object {
    py::handle a[7];
    if (nargs > 7) throw py::type_error("forward_dynamics() takes at most 7 arguments");
    for (Py_ssize_t k = 0; k < nargs; ++k) a[k] = args[k];
    const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t j = 0; j < nkw; ++j) {
      PyObject* key = PyTuple_GET_ITEM(kwnames, j);
      int k = 0;
      while (k < 7 && PyUnicode_CompareWithASCIIString(key, kNames[k]) != 0) ++k;
      if (k == 7)
        throw py::type_error("forward_dynamics() got an unexpected keyword argument '" +
                             py::str(key).cast<std::string>() + "'");
      if (a[k]) throw py::type_error(std::string("forward_dynamics() got multiple values for '") +
                                     kNames[k] + "'");
      a[k] = args[nargs + j];
    }
    for (int k = 0; k < 3; ++k)
      if (!a[k])
        throw py::type_error(std::string("forward_dynamics() missing required argument '") +
                             kNames[k] + "'");
    ConstraintSystem& s = system_of(self);
    return s.forward_dynamics(a[0], a[1], a[2], float_arg(a[3], 0.0),
                              int_arg(a[4], "max_iter", 1), float_arg(a[5], 1e-12),
                              a[6] ? a[6] : py::handle(Py_None));
  });
}

PyMethodDef kFastForwardDynamics = {
    "forward_dynamics",
    reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(fast_forward_dynamics)),
    METH_FASTCALL | METH_KEYWORDS,
    "forward_dynamics(q, v, tau, mu=0.0, max_iter=1, tol=1e-12, out=None) -> (qdd, lam)\n\n"
    "The constrained forward dynamics (robodyn.ConstrainedRobot.forward_dynamics): (n,) or "
    "(N, n) inputs; out a tuple of two arrays written in place."};

}  // namespace

void register_constraints(py::module_& mod, ModelOf model_of) {
  py::class_<ConstraintSystem>(mod, "ConstraintSystem")
      .def(py::init([model_of](py::object robot, const py::list& loops) {
             const std::shared_ptr<const Model> m = model_of(robot);
             std::vector<LoopModel> ls;
             for (auto c : loops) ls.push_back(loop_from_dict(*m, c.cast<py::dict>()));
             try {
               return new ConstraintSystem(robot, model_of, std::move(ls));
             } catch (const std::invalid_argument& e) {
               throw py::value_error(e.what());
             }
           }),
           py::arg("robot"), py::arg("loops"),
           "The constraints of robodyn.ConstrainedRobot: loops = [dict(name, frame1, pose1, "
           "frame2, pose2, rows, kp, kd)], frame a link index (-1: the world), pose 4x4.")
      .def_property_readonly("rows", &ConstraintSystem::rows)
      .def_property_readonly("bodies", [](const ConstraintSystem& s) {
        std::vector<std::pair<int, int>> b;
        for (const LoopModel& l : s.cm_.loops) b.emplace_back(l.body1, l.body2);
        return b;
      }, "(body1, body2) model body indices of each loop (0: the world)")
      .def_property_readonly("iterations", [](const ConstraintSystem& s) {
        return s.data().iterations;
      }, "proximal iterations of the last forward_dynamics row")
      .def_property_readonly("error", [](const ConstraintSystem& s) {
        return constraint_acceleration_error(s.cm_, s.data());
      }, "max |constraint acceleration error| after the last forward_dynamics row")
      .def(
          "residual",
          [](ConstraintSystem& s, py::handle q, py::handle out) {
            return s.run<1, 1>({q}, {"q"}, out, {robodyn_py::Shape{s.rows()}},
                               [&s](const Model& m, const P1& x, const O1& y, py::ssize_t) {
                                 constraint_residual(m, s.cm_, s.d_, s.cd_, x[0], y[0]);
                               });
          },
          py::arg("q"), py::arg("out") = py::none())
      .def(
          "jacobian",
          [](ConstraintSystem& s, py::handle q, py::handle out) {
            const py::ssize_t nv = s.model_->nv;
            return s.run<1, 1>({q}, {"q"}, out, {robodyn_py::Shape{s.rows(), nv}},
                               [&s](const Model& m, const P1& x, const O1& y, py::ssize_t) {
                                 constraint_jacobian(m, s.cm_, s.d_, s.cd_, x[0]);
                                 std::copy(s.cd_.J.data(), s.cd_.J.data() + s.cd_.J.size(),
                                           y[0]);
                               });
          },
          py::arg("q"), py::arg("out") = py::none())
      .def(
          "bias_acceleration",
          [](ConstraintSystem& s, py::handle q, py::handle v, py::handle out) {
            return s.run<2, 1>({q, v}, {"q", "v"}, out, {robodyn_py::Shape{s.rows()}},
                               [&s](const Model& m, const P2& x, const O1& y, py::ssize_t) {
                                 constraint_bias(m, s.cm_, s.d_, s.cd_, x[0], x[1]);
                                 std::copy(s.cd_.gamma.data(),
                                           s.cd_.gamma.data() + s.cd_.gamma.size(), y[0]);
                               });
          },
          py::arg("q"), py::arg("v"), py::arg("out") = py::none())
      .def(
          "operational_space_inverse_inertia",
          [](ConstraintSystem& s, py::handle q, py::handle out) {
            return s.run<1, 1>(
                {q}, {"q"}, out, {robodyn_py::Shape{s.rows(), s.rows()}},
                [&s](const Model& m, const P1& x, const O1& y, py::ssize_t row) {
                  if (!operational_space_inverse_inertia(m, s.cm_, s.d_, s.cd_, x[0], y[0]))
                    s.fail(ConstraintStatus::MassNotPositive, row);
                });
          },
          py::arg("q"), py::arg("out") = py::none())
      // operation counts and the traced graph of forward_dynamics (robodyn.codegen.constrained)
      .def("_op_counts", [](ConstraintSystem& s, double mu, int iterations) {
        s.model_ = s.model_of_(s.robot_);
        std::array<long, 3> c;
        try {
          c = count_constrained_ops(*s.model_, s.cm_, mu, iterations);
        } catch (const std::invalid_argument& e) {
          throw py::value_error(e.what());
        }
        py::dict d;
        d["mul"] = c[0];
        d["add"] = c[1];
        d["trig"] = c[2];
        return d;
      }, py::arg("mu"), py::arg("iterations"))
      .def("_trace", [](ConstraintSystem& s, double mu, int iterations) {
        s.model_ = s.model_of_(s.robot_);
        ExprGraph g;
        try {
          g = trace_constrained(*s.model_, s.cm_, mu, iterations);
        } catch (const std::invalid_argument& e) {
          throw py::value_error(e.what());
        }
        return graph_dict(g);
      }, py::arg("mu"), py::arg("iterations"));
  // forward_dynamics, the hot call: a fast-call method (fast_forward_dynamics)
  PyObject* cls = mod.attr("ConstraintSystem").ptr();
  PyObject* descr = PyDescr_NewMethod(reinterpret_cast<PyTypeObject*>(cls), &kFastForwardDynamics);
  if (!descr || PyObject_SetAttrString(cls, "forward_dynamics", descr) < 0)
    throw py::error_already_set();
  Py_DECREF(descr);
}
