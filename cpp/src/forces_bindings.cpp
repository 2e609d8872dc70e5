// Python bindings of the force elements (robodyn/algorithms/forces.hpp): _core._ForceSet, the C++ half of
// robodyn.forces.ForcedRobot. Registered from bindings.cpp (register_forces), which also asks
// force_set_of() for the elements of a robot the simulation loop runs (robodyn/simulation/simulate.hpp).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cmath>
#include <memory>
#include <string>

#include "instances.hpp"
#include "numpy_boundary.hpp"

// the algorithms are compiled in their own units (instances.hpp)
namespace robodyn {
ROBODYN_ALL_GROUPS(extern, double);
}  // namespace robodyn

#include "robodyn/algorithms/forces.hpp"
#include "robodyn/simulation/simulate.hpp"

namespace py = pybind11;
using namespace robodyn;
using boundary::bad;

namespace {

// The elements of one robot with the model they were built for and a workspace of their own
// (calls hold the GIL; the simulation loop uses its own workspace).
struct PyForceSet {
  ForceSet set;
  std::shared_ptr<const Model> model;
  std::unique_ptr<Data> data;
};

Vec3 vec3(py::handle h, const std::string& name) {
  py::object keep;
  const double* p = boundary::get_fixed(h, name.c_str(), 3, -1, keep);
  return Vec3(p[0], p[1], p[2]);
}

double number(py::handle h, const std::string& name) {
  const double x = h.cast<double>();
  if (!std::isfinite(x)) bad(name, "must be finite, got " + std::to_string(x));
  return x;
}

Coefficient coefficient(py::handle h, int curves, const std::string& name) {
  const py::tuple t = h.cast<py::tuple>();
  Coefficient c;
  c.value = number(t[0], name);
  c.curve = t[1].cast<int>();
  if (c.curve < -1 || c.curve >= curves) bad(name, "curve index out of range");
  return c;
}

// body and internal-frame point of a point given in user frame f (-1: the world)
void frame_point(const Model& m, int f, const Vec3& p, int& body, Vec3& internal,
                 const std::string& name) {
  if (f == -1) {
    body = 0;
    internal = p;
    return;
  }
  if (f < 0 || f >= static_cast<int>(m.frame_body.size())) bad(name, "frame index out of range");
  body = m.frame_body[f];
  internal = m.frame_R[f] * p + m.frame_p[f];
}

// an (size,) float64 input per call (None: nullptr when there are no such external elements)
const double* per_call(py::handle h, const char* name, py::ssize_t size, py::object& keep) {
  if (h.is_none()) return nullptr;
  return boundary::get_fixed(h, name, size, -1, keep);
}

}  // namespace

// the elements of robot object h (its `_force_set` attribute), or null
const ForceSet* force_set_of(py::handle h) {
  py::object fs = py::getattr(h, "_force_set", py::none());
  if (fs.is_none()) return nullptr;
  return &fs.cast<PyForceSet&>().set;
}

void register_forces(py::module_& m, SimHeld (*view)(py::handle)) {
  py::class_<PyForceSet>(m, "_ForceSet")
      .def(py::init([view](py::handle robot, const py::list& curves, const py::list& springs,
                           const py::list& rotational, const py::list& wrenches) {
             auto fs = std::make_unique<PyForceSet>();
             fs->model = view(robot).model;
             const Model& md = *fs->model;
             fs->data = std::make_unique<Data>(md);
             ForceSet& s = fs->set;
             const int nc = static_cast<int>(curves.size());
             for (int i = 0; i < nc; ++i) {
               const py::tuple t = curves[i].cast<py::tuple>();
               Curve c;
               for (int k = 0; k < 3; ++k) {
                 const std::string name = "curve " + std::to_string(i);
                 py::object keep;
                 const py::ssize_t len = py::len(t[k]);
                 const double* p = boundary::get_fixed(t[k], name.c_str(), len, -1, keep);
                 std::vector<double>& v = k == 0 ? c.x : k == 1 ? c.y : c.M;
                 v.assign(p, p + len);
               }
               if (c.x.size() < 2 || c.y.size() != c.x.size() || c.M.size() != c.x.size())
                 bad("curve " + std::to_string(i), "expected x, y, M of one length >= 2");
               for (size_t k = 0; k + 1 < c.x.size(); ++k)
                 if (!(c.x[k + 1] > c.x[k]))
                   bad("curve " + std::to_string(i), "knots must be strictly increasing");
               s.curves.push_back(std::move(c));
             }
             for (size_t i = 0; i < springs.size(); ++i) {
               const std::string name = "spring " + std::to_string(i);
               const py::tuple t = springs[i].cast<py::tuple>();
               TranslationalElement e;
               frame_point(md, t[0].cast<int>(), vec3(t[1], name + " point1"), e.body1, e.p1,
                           name);
               frame_point(md, t[2].cast<int>(), vec3(t[3], name + " point2"), e.body2, e.p2,
                           name);
               e.k = coefficient(t[4], nc, name + " k");
               e.c = coefficient(t[5], nc, name + " c");
               e.l0 = t[6].cast<double>();
               e.F = number(t[7], name + " force");
               e.external = t[8].cast<bool>();
               s.springs.push_back(e);
             }
             for (size_t i = 0; i < rotational.size(); ++i) {
               const std::string name = "rotational spring " + std::to_string(i);
               const py::tuple t = rotational[i].cast<py::tuple>();
               RotationalElement e;
               e.body = t[0].cast<int>();
               if (e.body < 1 || e.body > md.n) bad(name, "joint index out of range");
               if (md.type[e.body] == JointType::FreeFlyer)
                 bad(name, "acts on a revolute or prismatic joint, not the free-flyer");
               e.k = coefficient(t[1], nc, name + " k");
               e.c = coefficient(t[2], nc, name + " c");
               e.rest = number(t[3], name + " rest");
               e.N = number(t[4], name + " torque");
               e.external = t[5].cast<bool>();
               s.rotational.push_back(e);
             }
             for (size_t i = 0; i < wrenches.size(); ++i) {
               const std::string name = "body force " + std::to_string(i);
               const py::tuple t = wrenches[i].cast<py::tuple>();
               WrenchElement e;
               const int f = t[0].cast<int>();
               if (f < 0) bad(name, "acts on a link, not the world");
               frame_point(md, f, vec3(t[1], name + " point"), e.body, e.point, name);
               if (e.body == 0) bad(name, "acts on a link fixed to the world: no effect");
               e.R_user = md.frame_R[f];
               e.world_axes = t[2].cast<bool>();
               e.moment = vec3(t[3], name + " moment");
               e.force = vec3(t[4], name + " force");
               e.external = t[5].cast<bool>();
               s.wrenches.push_back(e);
             }
             // rest lengths not given (NaN): the distance at the neutral configuration
             std::vector<double> q0(md.nq, 0.0);
             if (md.floating) q0[md.iq[1] + 6] = 1.0;
             update_kinematics(md, *fs->data, q0.data(), 3);
             const Data& d = *fs->data;
             for (TranslationalElement& e : s.springs)
               if (std::isnan(e.l0))
                 e.l0 = (d.world_p[e.body2] + d.world_R[e.body2] * e.p2 - d.world_p[e.body1] -
                         d.world_R[e.body1] * e.p1).norm();
               else if (!(e.l0 >= 0.0 && std::isfinite(e.l0)))
                 bad("rest_length", "must be a finite length >= 0");
             return fs;
           }),
           py::arg("robot"), py::arg("curves"), py::arg("springs"), py::arg("rotational"),
           py::arg("wrenches"),
           "The C++ force elements of a robot (robodyn.forces builds it): curves (x, y, M); "
           "springs (frame1, point1, frame2, point2, (k, curve), (c, curve), rest length or "
           "NaN, force, external); rotational (body, (k, curve), (c, curve), rest, torque, "
           "external); "
           "wrenches (frame, point, world axes, moment, force, external).")
      .def_property_readonly("rest_lengths",
                             [](const PyForceSet& fs) {
                               py::list out;
                               for (const auto& e : fs.set.springs) out.append(e.l0);
                               return out;
                             })
      .def(
          "generalized_forces",
          [](PyForceSet& fs, py::handle q, py::handle qd, py::handle F, py::handle N,
             py::handle W) {
            const Model& m = *fs.model;
            const boundary::Input iq = boundary::get_input(q, "q", m.nq);
            const boundary::Input iv = boundary::get_input(qd, "qd", m.nv);
            if (iq.batch != iv.batch || iq.rows != iv.rows)
              bad("qd", "must have the same number of rows as q");
            py::object kf, kn, kw;
            const py::ssize_t ns = fs.set.springs.size(), nr = fs.set.rotational.size(),
                              nw = fs.set.wrenches.size();
            const py::ssize_t rows = iq.rows;
            auto rows_of = [&](py::handle h, const char* name, py::ssize_t size,
                               py::object& keep) -> const double* {
              if (h.is_none()) return nullptr;
              return boundary::get_fixed(h, name, rows * size, -1, keep);
            };
            const double* pF = rows_of(F, "F", ns, kf);
            const double* pN = rows_of(N, "N", nr, kn);
            const double* pW = rows_of(W, "W", 6 * nw, kw);
            py::array_t<double> out = iq.batch ? py::array_t<double>({rows, py::ssize_t(m.nv)})
                                               : py::array_t<double>(m.nv);
            double* o = out.mutable_data();
            for (py::ssize_t r = 0; r < rows; ++r)
              generalized_forces(m, fs.set, *fs.data, iq.p + r * m.nq, iv.p + r * m.nv,
                                 pF ? pF + r * ns : nullptr, pN ? pN + r * nr : nullptr,
                                 pW ? pW + r * 6 * nw : nullptr, o + r * m.nv);
            return out;
          },
          py::arg("q"), py::arg("qd"), py::arg("F") = py::none(), py::arg("N") = py::none(),
          py::arg("W") = py::none(),
          "Q (nv,) or (rows, nv): the elements' generalized force at (q, qd); F, N, W the "
          "per-call values of the external elements, flattened per row (springs, rotational, "
          "6 per wrench).")
      .def(
          "potential",
          [](PyForceSet& fs, py::handle q) -> py::object {
            const Model& m = *fs.model;
            const boundary::Input iq = boundary::get_input(q, "q", m.nq);
            if (!iq.batch) return py::float_(force_potential(m, fs.set, *fs.data, iq.p));
            py::array_t<double> out(iq.rows);
            for (py::ssize_t r = 0; r < iq.rows; ++r)
              out.mutable_data()[r] = force_potential(m, fs.set, *fs.data, iq.p + r * m.nq);
            return out;
          },
          py::arg("q"), "The stiffness potential (J) at q (nq,), or (rows,) for (rows, nq).")
      .def(
          "states",
          [](PyForceSet& fs, py::handle q, py::handle qd, py::handle F, py::handle N) {
            const Model& m = *fs.model;
            py::object k1, k2, kf, kn;
            const double* pq = boundary::get_fixed(q, "q", m.nq, -1, k1);
            const double* pv = boundary::get_fixed(qd, "qd", m.nv, -1, k2);
            const ForceSet& s = fs.set;
            const double* pF = per_call(F, "F", s.springs.size(), kf);
            const double* pN = per_call(N, "N", s.rotational.size(), kn);
            update_kinematics(m, *fs.data, pq, 3);
            const py::ssize_t rows = s.springs.size() + s.rotational.size();
            py::array_t<double> out({rows, py::ssize_t(7)});
            double* o = out.mutable_data();
            for (size_t i = 0; i < s.springs.size(); ++i, o += 7) {
              const TranslationalElement& e = s.springs[i];
              const SpringState st = spring_state(m, *fs.data, e, pv);
              const double f = element_force(s, e.k, e.c, st.l - e.l0, st.ldot,
                                             e.external && pF ? pF[i] : e.F, o + 5, o + 6);
              o[0] = st.l;
              o[1] = st.ldot;
              o[2] = f;
              o[3] = s.potential(e.k, st.l - e.l0);
              o[4] = -f * st.ldot;
            }
            for (size_t i = 0; i < s.rotational.size(); ++i, o += 7) {
              const RotationalElement& e = s.rotational[i];
              const double th = pq[m.iq[e.body]], thd = pv[m.iv[e.body]];
              const double n = element_force(s, e.k, e.c, th - e.rest, thd,
                                             e.external && pN ? pN[i] : e.N, o + 5, o + 6);
              o[0] = th;
              o[1] = thd;
              o[2] = n;
              o[3] = s.potential(e.k, th - e.rest);
              o[4] = -n * thd;
            }
            return out;
          },
          py::arg("q"), py::arg("qd"), py::arg("F") = py::none(), py::arg("N") = py::none(),
          "(springs + rotational, 7): per element [l or theta, its rate, tension f or torque "
          "n, stiffness potential, power delivered to the robot (-f l' or -n theta'), "
          "df/d(l or theta), df/d(rate)] (the actuator held).");
}
