// Code generation: the algorithms instantiated with the tracing scalar (the only place that
// instantiates them with Traced, so the double build is untouched). robodyn.codegen turns the
// graphs into C++ source.
#include "robodyn/codegen/codegen.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "robodyn/algorithms/algorithms.hpp"
#include "robodyn/constraints/dynamics.hpp"
#include "robodyn/constraints/loop.hpp"
#include "robodyn/model/data.hpp"
#include "robodyn/model/model.hpp"
#include "robodyn/scalar/tracing.hpp"

namespace robodyn {

namespace detail {
// Coulomb friction's sign(qd) becomes a Sign node (a comparison cannot be decided by tracing)
template <>
inline Traced signum<Traced>(const Traced& x) {
  return sign(x);
}
}  // namespace detail

namespace {

// the model with rounding residue in its inertias set to exact zeros (a rotation by pi/2 of an
// inertia leaves products of inertia of 1e-17): relative 1e-14 of the largest entry. The
// constants derived from them (J, Kane's central inertias) are derived again from the cleaned
// ones and cleaned at the same scale: a moment that is zero, or two principal moments that are
// equal, before the round trip Ibar - mass (c.c 1 - c c^T) come out of it a few ulps of Ibar
// apart (the Stanford arm's link 3: Ixx - Iyy = 4.4e-16), which would cost multiplications
// by that residue.
// the entries of the symmetric A at most tol set to exact zeros (both triangles); nz, if
// given, its non-zero entries (xx yy zz xy xz yz) afterwards
void zero_residue(Mat3& A, double tol, std::array<bool, 6>* nz = nullptr) {
  const int rr[6] = {0, 1, 2, 0, 0, 1}, cc[6] = {0, 1, 2, 1, 2, 2};
  for (int k = 0; k < 6; ++k) {
    if (std::abs(A(rr[k], cc[k])) <= tol) {
      A(rr[k], cc[k]) = 0;
      A(cc[k], rr[k]) = 0;
    }
    if (nz) (*nz)[k] = A(rr[k], cc[k]) != 0;
  }
}

Model cleaned(const Model& m) {
  Model c = m;
  std::vector<double> scale(static_cast<size_t>(m.n) + 1, 0.0);
  for (int i = 1; i <= m.n; ++i) {
    scale[i] = c.Ibar[i].cwiseAbs().maxCoeff();
    const double tol = 1e-14 * scale[i];
    zero_residue(c.Ibar[i], tol, &c.I_nz[i]);
    Vec3& h = c.h[i];
    const double htol = 1e-14 * h.cwiseAbs().maxCoeff();
    for (int k = 0; k < 3; ++k) {
      if (std::abs(h[k]) <= htol) h[k] = 0;
      c.h_nz[i][k] = h[k] != 0;
    }
    c.J[i] = second_moment(c.Ibar[i]);
    zero_residue(c.J[i], tol, &c.J_nz[i]);
  }
  c.kane = kane_constants(c);
  for (int i = 1; i <= m.n; ++i) {
    Mat3& I = c.kane.I[i];
    const double tol = 1e-14 * scale[i];
    zero_residue(I, tol);
    for (int a = 0; a < 3; ++a)
      for (int b = a + 1; b < 3; ++b)
        if (std::abs(I(a, a) - I(b, b)) <= tol) I(b, b) = I(a, a);
    c.kane.principal[i] = I(0, 1) == 0 && I(0, 2) == 0 && I(1, 2) == 0 ? 1 : 0;
  }
  return c;
}

// the graph of `g` with the outputs `out` (tape order is topological)
ExprGraph to_expr_graph(const tracing::Graph& g, const std::vector<Traced>& out) {
  ExprGraph r;
  const size_t size = g.nodes.size();
  r.op.reserve(size);
  r.a.reserve(size);
  r.b.reserve(size);
  r.c.reserve(size);
  for (const tracing::Node& node : g.nodes) {
    r.op.push_back(static_cast<std::uint8_t>(node.op));
    r.a.push_back(node.a);
    r.b.push_back(node.b);
    r.c.push_back(node.c);
  }
  for (const Traced& t : out) r.outputs.push_back(t.id());
  r.assumptions = g.assumptions;
  return r;
}

}  // namespace

ExprGraph trace_constrained(const Model& model, const ConstraintModel& cm, double mu,
                            int iterations) {
  if (!(std::isfinite(mu) && mu >= 0))
    throw std::invalid_argument("mu: must be a finite number >= 0");
  if (iterations < 1) throw std::invalid_argument("iterations: must be >= 1");
  if (mu == 0 && iterations != 1)
    throw std::invalid_argument("iterations: mu = 0 solves once (iterations = 1); proximal "
                                "iterations need mu > 0");
  // the rotation vector's t / sin(t) has its series branch at t = 0, which a traced graph
  // cannot take: a closed loop would give 0 / 0
  for (const LoopModel& c : cm.loops)
    if (c.kp != 0 && c.rows[0] < 3)
      throw std::invalid_argument("constraint '" + c.name + "': generated code does not cover a "
                                  "Baumgarte position gain kp on rotation rows; set kp = 0 there "
                                  "(kd is covered)");
  const Model m = cleaned(model);
  const int nq = m.nq, nv = m.nv;
  tracing::TraceScope scope;
  std::vector<Traced> q(nq), v(nv), tau(nv);
  for (int k = 0; k < nq; ++k) q[k] = Traced::input(k);
  for (int k = 0; k < nv; ++k) {
    v[k] = Traced::input(nq + k);
    tau[k] = Traced::input(nq + nv + k);
  }
  DataTpl<Traced> d(m);
  ConstraintDataTpl<Traced> cd(m, cm);
  std::vector<Traced> out(static_cast<size_t>(nv + cm.m));
  // tol = 0: no comparison of a traced error stops the iterations early (tracing.hpp)
  const ConstraintStatus st = constrained_forward_dynamics(
      m, cm, d, cd, q.data(), v.data(), tau.data(), mu, iterations, 0.0, out.data(),
      out.data() + nv);
  if (st == ConstraintStatus::RankDeficient)
    throw std::invalid_argument("the constraints are rank deficient whatever the state (row " +
                                std::to_string(cd.bad_row) +
                                " of J M^-1 J' is zero): use mu > 0 and proximal iterations");
  if (st != ConstraintStatus::Ok)
    throw std::invalid_argument("the mass matrix is not positive definite");
  return to_expr_graph(scope.graph(), out);
}

ExprGraph trace_algorithm(const Model& model, const std::string& algorithm) {
  const Algorithm a = algorithm_from_name(algorithm);
  if (!is_straight_line(a))
    throw std::invalid_argument("'" + algorithm + "' cannot be traced into generated code");
  const Model m = cleaned(model);
  const int nq = m.nq, nv = m.nv;
  tracing::TraceScope scope;
  // inputs: q (nq: a free-flyer's position and quaternion are symbols like joint angles, its
  // rotation traced through quaternion_matrix), then qd and x (nv each)
  std::vector<Traced> q(nq), qd(nv), x(nv);
  for (int k = 0; k < nq; ++k) q[k] = Traced::input(k);
  for (int k = 0; k < nv; ++k) {
    qd[k] = Traced::input(nq + k);
    x[k] = Traced::input(nq + nv + k);
  }
  DataTpl<Traced> d(m);
  std::vector<Traced> out(static_cast<size_t>(output_size(a, nv)));
  run_algorithm(a, m, d, q.data(), qd.data(), x.data(), out.data());
  return to_expr_graph(scope.graph(), out);
}

}  // namespace robodyn
