// The algorithms by name: the one table the operation counts (opcount.cpp, Robot.op_counts)
// and the generated code (codegen.cpp, robodyn.codegen) share, and one call of each on a
// model (fixed or free-floating base) for any scalar (double, Counted, Traced).
#pragma once

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "robodyn/algorithms/aba.hpp"
#include "robodyn/algorithms/crba.hpp"
#include "robodyn/algorithms/kane.hpp"
#include "robodyn/algorithms/kinematics.hpp"
#include "robodyn/algorithms/rnea.hpp"
#include "robodyn/model/data.hpp"
#include "robodyn/model/model.hpp"

namespace robodyn {

enum class Algorithm {
  Rnea, Kane, Gravity, GravityKane, Bias, Crba, KaneInertia, Aba, ForwardDynamics, KaneForward,
  RneaDerivatives, ForwardDynamicsDerivatives, Regressor
};

struct AlgorithmEntry {
  Algorithm algorithm;
  const char* name;
  bool straight_line;  // run by run_algorithm (and so traceable into generated code)
};

// name, and what the call computes (the result, as run_algorithm writes it to `out`)
inline constexpr AlgorithmEntry kAlgorithms[] = {
    {Algorithm::Rnea, "rnea", true},                  // tau by Newton-Euler
    {Algorithm::Kane, "kane", true},                  // tau by Kane's equations
    {Algorithm::Gravity, "gravity", true},            // g(q) by Newton-Euler
    {Algorithm::GravityKane, "gravity_kane", true},   // g(q) = kane(q, 0, 0)
    {Algorithm::Bias, "bias", true},                  // C(q, qd) qd + g(q) + joint terms
    {Algorithm::Crba, "crba", true},                  // M, row-major n x n
    {Algorithm::KaneInertia, "kane_inertia", true},   // M by Kane's generalized inertia
    {Algorithm::Aba, "aba", true},                    // qdd, articulated-body
    {Algorithm::ForwardDynamics, "forward_dynamics", true},  // qdd, bias + crba + Cholesky
    {Algorithm::KaneForward, "kane_forward", true},   // qdd, Kane + LDL^T
    {Algorithm::RneaDerivatives, "rnea_derivatives", false},  // dtau/dq, dtau/dqd
    {Algorithm::ForwardDynamicsDerivatives, "forward_dynamics_derivatives", false},
    {Algorithm::Regressor, "regressor", false},       // Y, n x 10 n
};

inline const char* algorithm_name(Algorithm a) {
  for (const AlgorithmEntry& e : kAlgorithms)
    if (e.algorithm == a) return e.name;
  return "?";
}

// the algorithm called `name`; std::invalid_argument listing the known names otherwise
inline Algorithm algorithm_from_name(const std::string& name) {
  for (const AlgorithmEntry& e : kAlgorithms)
    if (name == e.name) return e.algorithm;
  std::string known;
  for (const AlgorithmEntry& e : kAlgorithms) known += std::string(known.empty() ? "" : ", ") + e.name;
  throw std::invalid_argument("unknown algorithm '" + name + "'; expected one of: " + known);
}

inline bool is_straight_line(Algorithm a) {
  for (const AlgorithmEntry& e : kAlgorithms)
    if (e.algorithm == a) return e.straight_line;
  return false;
}

// entries of the algorithm's result for n velocity coordinates (nv)
inline int output_size(Algorithm a, int n) {
  switch (a) {
    case Algorithm::Crba:
    case Algorithm::KaneInertia: return n * n;
    case Algorithm::RneaDerivatives: return 2 * n * n;
    case Algorithm::ForwardDynamicsDerivatives: return 3 * n * n + n;
    case Algorithm::Regressor: return 10 * n * n;
    default: return n;
  }
}

// One call of a straight-line algorithm, its result into `out` (output_size(a, nv) entries;
// inputs q (nq), qd and x = qdd or tau (nv each)). Returns false when a factorisation met a
// matrix that is not positive definite.
template <class S>
bool run_algorithm(Algorithm a, const Model& m, DataTpl<S>& d, const S* q, const S* qd,
                   const S* x, S* out) {
  const int n = m.nv;
  switch (a) {
    case Algorithm::Rnea: rnea(m, d, q, qd, x, out); return true;
    case Algorithm::Kane: kane(m, d, q, qd, x, out); return true;
    case Algorithm::Gravity: gravity_torques(m, d, q, out); return true;
    case Algorithm::GravityKane: {
      // g(q) = kane(q, 0, 0): the joint terms vanish with qd = qdd = 0
      const std::vector<S> zero(static_cast<size_t>(n), S(0.0));
      kane(m, d, q, zero.data(), zero.data(), out);
      return true;
    }
    case Algorithm::Bias: bias_torques(m, d, q, qd, out); return true;
    case Algorithm::Crba:
      crba(m, d, q);
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) out[i * n + j] = d.H(i, j);
      return true;
    case Algorithm::KaneInertia:
      // the lower triangle, mirrored
      update_kinematics(m, d, q, 1);
      detail::kane_inertia(m, d);
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) out[i * n + j] = d.H(std::max(i, j), std::min(i, j));
      return true;
    case Algorithm::Aba: return aba(m, d, q, qd, x, out);
    case Algorithm::ForwardDynamics: return forward_dynamics_crba(m, d, q, qd, x, out);
    case Algorithm::KaneForward: return kane_forward(m, d, q, qd, x, out);
    default:
      throw std::invalid_argument(std::string("'") + algorithm_name(a) +
                                  "' is not a straight-line algorithm");
  }
}

}  // namespace robodyn
