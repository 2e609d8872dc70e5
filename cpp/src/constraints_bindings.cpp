// Python bindings of the loop constraints: robodyn._core.ConstraintSystem, the C++ side of
// robodyn.ConstrainedRobot (which validates the constraints and resolves names first).
//
// Each call reads the robot's current model (its gravity may have been reassigned), checks
// the inputs once (shapes, finiteness, the base quaternion) and runs a single state or every
// row of an (N, n) batch on the system's own workspace: nothing is allocated per row.
#include <pybind11/eigen.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <array>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "robodyn/constraints/dynamics.hpp"
#include "robodyn/constraints/loop.hpp"
#include "robodyn/codegen.hpp"
#include "robodyn/model.hpp"
#include "robodyn/opcount.hpp"
#include "instances.hpp"
#include "numpy_boundary.hpp"

// the algorithms the constrained ones call are compiled in their own units (instances.hpp)
namespace robodyn {
ROBODYN_ALL_GROUPS(extern, double);
}  // namespace robodyn

namespace py = pybind11;
using namespace robodyn;
using boundary::bad;
using boundary::get_input;
using boundary::Input;

namespace {

using ModelOf = std::shared_ptr<const Model> (*)(py::handle);

// a base quaternion within this of unit norm is used (normalised); farther is an error (the
// robot's own methods use the same bound)
constexpr double kQuaternionTolerance = 1e-6;

const char* const kAxisNames[6] = {"rx", "ry", "rz", "x", "y", "z"};

class ConstraintSystem {
 public:
  ConstraintSystem(py::object robot, ModelOf model_of, std::vector<LoopModel> loops)
      : robot_(std::move(robot)), model_of_(model_of), model_(model_of_(robot_)),
        cm_(make_constraint_model(*model_, std::move(loops))), d_(*model_), cd_(*model_, cm_) {}

  int rows() const { return cm_.m; }
  const ConstraintData& data() const { return cd_; }

  // Runs kernel(model, row inputs, row outputs) on one state or each row of a batch. K inputs
  // (widths nq for names starting with 'q', else nv); O outputs of per-row shapes `shapes`.
  template <size_t K, size_t O, class Kernel>
  py::object run(const std::array<py::handle, K>& args, const std::array<const char*, K>& names,
                 py::handle out, const std::array<std::vector<py::ssize_t>, O>& shapes,
                 Kernel kernel) {
    model_ = model_of_(robot_);
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
    std::array<py::object, O> res;
    std::array<double*, O> ptr;
    std::array<py::ssize_t, O> size;
    for (size_t o = 0; o < O; ++o) {
      std::vector<py::ssize_t> shape;
      if (batch) shape.push_back(n_rows);
      size[o] = 1;
      for (py::ssize_t s : shapes[o]) {
        shape.push_back(s);
        size[o] *= s;
      }
      py::handle target = py::none();
      if (!out.is_none()) {
        if (O == 1) {
          target = out;
        } else {
          if (!py::isinstance<py::tuple>(out) && !py::isinstance<py::list>(out))
            bad("out", "expected a tuple of " + std::to_string(O) + " arrays");
          py::sequence seq = py::reinterpret_borrow<py::sequence>(out);
          if (seq.size() != O) bad("out", "expected a tuple of " + std::to_string(O) + " arrays");
          target = seq[o];
        }
      }
      if (target.is_none()) {
        py::array_t<double> a(shape);
        ptr[o] = a.mutable_data();
        res[o] = std::move(a);
      } else {
        std::vector<Py_intptr_t> dims(shape.begin(), shape.end());
        ptr[o] = boundary::get_writeable(target, "out", static_cast<int>(dims.size()),
                                         dims.data());
        res[o] = py::reinterpret_borrow<py::object>(target);
      }
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
    py::tuple t(O);
    for (size_t o = 0; o < O; ++o) t[o] = res[o];
    return std::move(t);
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

using P1 = std::array<const double*, 1>;
using P2 = std::array<const double*, 2>;
using P3 = std::array<const double*, 3>;
using O1 = std::array<double*, 1>;
using O2 = std::array<double*, 2>;

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
        return s.data().error;
      }, "max |constraint acceleration error| after the last forward_dynamics row")
      .def(
          "residual",
          [](ConstraintSystem& s, py::handle q, py::handle out) {
            return s.run<1, 1>({q}, {"q"}, out, {{{s.rows()}}},
                               [&s](const Model& m, const P1& x, const O1& y, py::ssize_t) {
                                 constraint_residual(m, s.cm_, s.d_, s.cd_, x[0], y[0]);
                               });
          },
          py::arg("q"), py::arg("out") = py::none())
      .def(
          "jacobian",
          [](ConstraintSystem& s, py::handle q, py::handle out) {
            const py::ssize_t nv = s.model_->nv;
            return s.run<1, 1>({q}, {"q"}, out, {{{s.rows(), nv}}},
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
            return s.run<2, 1>({q, v}, {"q", "v"}, out, {{{s.rows()}}},
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
                {q}, {"q"}, out, {{{s.rows(), s.rows()}}},
                [&s](const Model& m, const P1& x, const O1& y, py::ssize_t row) {
                  if (!operational_space_inverse_inertia(m, s.cm_, s.d_, s.cd_, x[0], y[0]))
                    s.fail(ConstraintStatus::MassNotPositive, row);
                });
          },
          py::arg("q"), py::arg("out") = py::none())
      .def(
          "forward_dynamics",
          [](ConstraintSystem& s, py::handle q, py::handle v, py::handle tau, double mu,
             int max_iter, double tol, py::handle out) {
            if (!(std::isfinite(mu) && mu >= 0)) bad("mu", "must be a finite number >= 0");
            if (max_iter < 1) bad("max_iter", "must be >= 1");
            if (!(std::isfinite(tol) && tol >= 0)) bad("tol", "must be a finite number >= 0");
            const py::ssize_t nv = s.model_->nv;
            return s.run<3, 2>(
                {q, v, tau}, {"q", "v", "tau"}, out, {{{nv}, {s.rows()}}},
                [&s, mu, max_iter, tol](const Model& m, const P3& x, const O2& y,
                                        py::ssize_t row) {
                  const ConstraintStatus st = constrained_forward_dynamics(
                      m, s.cm_, s.d_, s.cd_, x[0], x[1], x[2], mu, max_iter, tol, y[0], y[1]);
                  if (st != ConstraintStatus::Ok) s.fail(st, row);
                });
          },
          py::arg("q"), py::arg("v"), py::arg("tau"), py::arg("mu") = 0.0,
          py::arg("max_iter") = 1, py::arg("tol") = 1e-12, py::arg("out") = py::none())
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
        py::dict d;
        d["op"] = py::bytes(reinterpret_cast<const char*>(g.op.data()), g.op.size());
        d["a"] = g.a;
        d["b"] = g.b;
        d["c"] = g.c;
        d["outputs"] = g.outputs;
        d["assumptions"] = g.assumptions;
        return d;
      }, py::arg("mu"), py::arg("iterations"));
}
