// Operation counts: the algorithms instantiated with the counting scalar (the only place that
// instantiates them with Counted, so the double build is untouched).
#include "robodyn/codegen/opcount.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "robodyn/algorithms/algorithms.hpp"
#include "robodyn/algorithms/momentum.hpp"
#include "robodyn/algorithms/regressor.hpp"
#include "robodyn/algorithms/rnea_derivatives.hpp"
#include "robodyn/constraints/dynamics.hpp"
#include "robodyn/constraints/loop.hpp"
#include "robodyn/model/data.hpp"
#include "robodyn/model/model.hpp"
#include "robodyn/scalar/counting.hpp"
#include "instances.hpp"

namespace robodyn {

// the double algorithms are compiled in their own units (instances.hpp)
ROBODYN_ALL_GROUPS(extern, double);

namespace {

// a fixed general state: every entry non-zero, magnitudes in [0.2, 1.2], mixed signs
// (splitmix64, so the values are the same on every platform)
std::vector<double> fixed_values(int n, std::uint64_t seed) {
  std::vector<double> x(n);
  std::uint64_t s = seed;
  for (int i = 0; i < n; ++i) {
    s += 0x9e3779b97f4a7c15ULL;
    std::uint64_t z = s;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    const double u = static_cast<double>(z >> 11) * 0x1.0p-53;  // [0, 1)
    x[i] = (i % 2 ? -1.0 : 1.0) * (0.2 + u);
  }
  return x;
}

// one call of the algorithm; the result (tau, qdd, the n x n mass matrix, the derivative
// matrices one after the other, the regressor) into out
template <class S>
void run(Algorithm a, const Model& m, DataTpl<S>& d, const S* q, const S* qd, const S* x, S* out) {
  const int nn = m.nv * m.nv;
  switch (a) {
    case Algorithm::RneaDerivatives: rnea_derivatives(m, d, q, qd, x, out, out + nn); return;
    case Algorithm::ForwardDynamicsDerivatives:
      if (!forward_dynamics_derivatives(m, d, q, qd, x, out + 3 * nn, out, out + nn,
                                        out + 2 * nn))
        throw std::invalid_argument("op counts: the algorithm failed at the fixed state");
      return;
    case Algorithm::Regressor: regressor(m, d, q, qd, x, out); return;
    default: break;
  }
  // the straight-line algorithms, on a fixed or a free-floating base alike
  if (!run_algorithm(a, m, d, q, qd, x, out))
    throw std::invalid_argument("op counts: the algorithm failed at the fixed state (an "
                                "inertia is not positive definite)");
}

// The counts are only the textbook ones if Eigen's scalar kernels form exactly k products and
// k - 1 sums per length-k dot product of variables and nothing for zero-filling, and if the
// folding rules (counting.hpp) hold inside them; checked once per process.
void check_eigen_kernels() {
  using C = Counted;
  auto expect = [](const char* what, long mul, long add) {
    const OpTally t = op_tally();
    if (t.mul != mul || t.add != add || t.trig != 0)
      throw std::logic_error(std::string("counting scalar: Eigen's ") + what + " counted " +
                             std::to_string(t.mul) + " mul, " + std::to_string(t.add) +
                             " add; expected " + std::to_string(mul) + ", " +
                             std::to_string(add));
  };
  Eigen::Matrix<C, 3, 3> A;
  Eigen::Matrix<C, 3, 1> x, y;
  Eigen::Matrix<C, 6, 6> B;
  Eigen::Matrix<C, 6, 1> u, v;
  // variables (constants would fold), none of them 0 or +-1
  auto var = [](double v) { return C::variable(v); };
  for (int i = 0; i < 3; ++i) {
    x[i] = var(1.5 + i);
    for (int j = 0; j < 3; ++j) A(i, j) = var(0.75 + i - 2 * j);
  }
  for (int i = 0; i < 6; ++i) {
    u[i] = var(1.5 - i);
    for (int j = 0; j < 6; ++j) B(i, j) = var(0.25 * i + j + 2);
  }
  reset_op_counts();
  A.setZero();
  B.setIdentity();
  v.setZero();
  expect("setZero/setIdentity", 0, 0);
  // the folding rules: the identity's ones and zeros are constants
  v = B * u;
  expect("identity (constant) * 6-vector, folded", 0, 0);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) A(i, j) = var(0.75 + i - 2 * j);
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 6; ++j) B(i, j) = var(0.25 * i + j + 2);
  reset_op_counts();
  y = A * x;
  expect("3x3 * 3-vector", 9, 6);
  reset_op_counts();
  const C s = x.dot(y);
  expect("3-vector dot", 3, 2);
  reset_op_counts();
  Eigen::Matrix<C, 3, 3> P = A * A.transpose();
  expect("3x3 * 3x3", 27, 18);
  reset_op_counts();
  v = B * u;
  expect("6x6 * 6-vector", 36, 30);
  reset_op_counts();
  Eigen::Matrix<C, 6, 6> Q = B - u * v.transpose();
  expect("6x6 - outer product", 36, 36);
  reset_op_counts();
  P += s * A;
  expect("3x3 += scalar * 3x3", 9, 9);
  reset_op_counts();
  Q.topLeftCorner<3, 3>() += A * P;
  expect("block += 3x3 * 3x3", 27, 27);
  reset_op_tape();
}

// The tape entries of what a counted call leaves behind: its result and the configuration
// cache in Data (reused by the next algorithm at the same q), at the level the call reached
std::vector<int> outputs(const Model& m, const DataTpl<Counted>& d,
                         const std::vector<Counted>& res) {
  std::vector<int> ids;
  for (const Counted& x : res) ids.push_back(x.tape_id());
  auto add = [&](const auto& block) {
    for (int k = 0; k < block.size(); ++k) ids.push_back(block.data()[k].tape_id());
  };
  for (int i = 1; i <= m.n; ++i) {
    ids.push_back(d.sin_q[i].tape_id());
    ids.push_back(d.cos_q[i].tape_id());
    add(d.Xup_r[i]);
    if (d.cache_level >= 2 || m.type[i] == JointType::FreeFlyer) add(d.Xup_E[i]);
    if (d.cache_level >= 3) {
      add(d.world_R[i]);
      add(d.world_p[i]);
    }
  }
  return ids;
}

// the fixed general state of count_ops: q (a unit base quaternion on a floating base), qd, x
struct FixedState {
  std::vector<double> q, qd, x;
};

FixedState fixed_state(const Model& m) {
  FixedState s{fixed_values(m.nq, 1), fixed_values(m.nv, 2), fixed_values(m.nv, 3)};
  if (m.floating) {
    double n2 = 0;
    for (int k = 3; k < 7; ++k) n2 += s.q[k] * s.q[k];
    for (int k = 3; k < 7; ++k) s.q[k] /= std::sqrt(n2);
  }
  return s;
}

std::vector<Counted> variables(const std::vector<double>& v) {
  std::vector<Counted> c;
  c.reserve(v.size());
  for (double e : v) c.push_back(Counted::variable(e));
  return c;
}

// the counted values equal the double ones (up to the summation order of vectorised double
// kernels)
void check_same(const std::vector<Counted>& counted, const std::vector<double>& ref,
                const std::string& algorithm) {
  double scale = 1.0;
  for (double v : ref) scale = std::max(scale, std::abs(v));
  for (size_t k = 0; k < ref.size(); ++k)
    if (!(std::abs(counted[k].value() - ref[k]) <= 1e-9 * scale))
      throw std::logic_error("op counts: the counted evaluation of '" + algorithm +
                             "' differs from the double one at entry " + std::to_string(k) +
                             ": " + std::to_string(counted[k].value()) + " vs " +
                             std::to_string(ref[k]));
}

}  // namespace

std::array<long, 3> count_constrained_ops(const Model& m, const ConstraintModel& cm, double mu,
                                          int iterations) {
  if (!(std::isfinite(mu) && mu >= 0))
    throw std::invalid_argument("mu: must be a finite number >= 0");
  if (iterations < 1) throw std::invalid_argument("iterations: must be >= 1");
  if (mu == 0 && iterations != 1)
    throw std::invalid_argument("iterations: mu = 0 solves once (iterations = 1); proximal "
                                "iterations need mu > 0");
  static const bool kernels_ok = (check_eigen_kernels(), true);
  (void)kernels_ok;
  const int nv = m.nv, nc = cm.m;
  const FixedState s = fixed_state(m);
  // tol = 0: every one of the iterations runs, in the double and the counted evaluation alike
  Data dd(m);
  ConstraintData cdd(m, cm);
  std::vector<double> out(static_cast<size_t>(nv + nc));
  const ConstraintStatus st = constrained_forward_dynamics(
      m, cm, dd, cdd, s.q.data(), s.qd.data(), s.x.data(), mu, iterations, 0.0, out.data(),
      out.data() + nv);
  if (st == ConstraintStatus::MassNotPositive)
    throw std::invalid_argument("op counts: the mass matrix is not positive definite");
  if (st == ConstraintStatus::RankDeficient)
    throw std::invalid_argument(
        "op counts: the constraints are rank deficient (row " + std::to_string(cdd.bad_row) +
        " depends on the rows before it) at a general state: count with mu > 0 and a fixed "
        "number of proximal iterations (robodyn opcount --mu MU --iterations K)");

  reset_op_tape();
  {
    DataTpl<Counted> dc(m);
    ConstraintDataTpl<Counted> cdc(m, cm);
    const std::vector<Counted> cq = variables(s.q), cqd = variables(s.qd), cx = variables(s.x);
    std::vector<Counted> cres(static_cast<size_t>(nv + nc));
    reset_op_counts();
    constrained_forward_dynamics(m, cm, dc, cdc, cq.data(), cqd.data(), cx.data(), mu,
                                 iterations, 0.0, cres.data(), cres.data() + nv);
    const OpTally t = live_counts(outputs(m, dc, cres));
    check_same(cres, out, "constrained_forward_dynamics");
    reset_op_tape();
    return {{t.mul, t.add, t.trig}};
  }
}

std::array<long, 3> count_ops(const Model& m, const std::string& algorithm) {
  const Algorithm a = algorithm_from_name(algorithm);
  static const bool kernels_ok = (check_eigen_kernels(), true);
  (void)kernels_ok;
  const int n = m.nv;
  std::vector<double> q = fixed_values(m.nq, 1);
  const std::vector<double> qd = fixed_values(n, 2), x = fixed_values(n, 3);
  if (m.floating) {
    // a unit base quaternion
    double n2 = 0;
    for (int k = 3; k < 7; ++k) n2 += q[k] * q[k];
    for (int k = 3; k < 7; ++k) q[k] /= std::sqrt(n2);
  }
  // the regressor has 10 columns per body (n bodies, nv rows)
  const int nout = a == Algorithm::Regressor ? 10 * m.n * n : output_size(a, n);

  // the double evaluation, for the comparison below
  Data dd(m);
  std::vector<double> out(nout, 0.0);
  run(a, m, dd, q.data(), qd.data(), x.data(), out.data());

  // the counted evaluation: only the algorithm call is counted. The inputs are the variables
  // (counting.hpp): what the model and the literals give is folded as at build time
  reset_op_tape();
  DataTpl<Counted> dc(m);
  auto variables = [](const std::vector<double>& v) {
    std::vector<Counted> c;
    c.reserve(v.size());
    for (double e : v) c.push_back(Counted::variable(e));
    return c;
  };
  const std::vector<Counted> cq = variables(q), cqd = variables(qd), cx = variables(x);
  std::vector<Counted> cres(nout);
  reset_op_counts();
  run(a, m, dc, cq.data(), cqd.data(), cx.data(), cres.data());
  const OpTally t = live_counts(outputs(m, dc, cres));
  reset_op_tape();

  // same operations, same values (up to the summation order of vectorised double kernels)
  double scale = 1.0;
  for (double v : out) scale = std::max(scale, std::abs(v));
  for (int k = 0; k < nout; ++k)
    if (!(std::abs(cres[k].value() - out[k]) <= 1e-9 * scale))
      throw std::logic_error("op counts: the counted evaluation of '" + algorithm +
                             "' differs from the double one at entry " + std::to_string(k) +
                             ": " + std::to_string(cres[k].value()) + " vs " +
                             std::to_string(out[k]));
  return {{t.mul, t.add, t.trig}};
}

}  // namespace robodyn
