// Every algorithm of a model under the allocation counters (check_model), the identities that
// show the guarded calls computed something, and the reuse of crba's output pattern.
// Part of test_noalloc.cpp (one translation unit: these definitions are included once, by it).
#pragma once

#include "harness.hpp"
#include "simulation_check.hpp"

namespace {

using namespace robodyn;

struct Buffers {
  std::vector<double> tau, qdd, qdd2, bias, grav, M, C, fk, J, tmp, D1, D2, D3, Y;
  double energy = 0;
  explicit Buffers(const Model& m)
      : tau(m.n), qdd(m.n), qdd2(m.n), bias(m.n), grav(m.n), M(m.n * m.n), C(m.n * m.n),
        fk(16 * m.frame_body.size()), J(6 * m.n), tmp(m.n), D1(m.n * m.n), D2(m.n * m.n),
        D3(m.n * m.n), Y(10 * m.n * m.n) {}
};

// the guarded calls; the last entry is the deliberate allocation of the self-check modes
constexpr int kAlgorithms = 23;
const char* const kNames[kAlgorithms] = {
    "rnea", "kane", "crba", "aba", "forward_dynamics_crba", "kane_forward", "bias_torques",
    "gravity_torques", "coriolis_matrix", "forward_kinematics", "jacobian", "kinetic_energy",
    "potential_energy", "kane_inertia", "rnea_derivatives", "forward_dynamics_derivatives",
    "regressor", "regressor_slotine_li", "rnea (two rows)", "aba (two rows)",
    "bias_torques (two rows)", "gravity_torques (two rows)", "self-check"};

#if defined(ROBODYN_HAVE_D2)
// the two-row sweeps of the bindings' batches (simd.hpp's D2): lane 0 the state, lane 1 the
// state shifted by 0.25 (another configuration: the configuration cache sees a new q)
struct PairBuffers {
  explicit PairBuffers(const Model& m)
      : d(m), q(m.nq), qd(m.nv), qdd(m.nv), tau(m.nv), out(m.nv) {}
  DataTpl<D2> d;
  AVec<D2> q, qd, qdd, tau, out;
  void fill(const Model& m, const double* q0, const double* qd0, const double* qdd0,
            const double* tau0) {
    for (int k = 0; k < m.nq; ++k) q[k] = D2::lanes(q0[k], q0[k] + 0.25);
    for (int k = 0; k < m.nv; ++k) {
      qd[k] = D2::lanes(qd0[k], qd0[k] + 0.25);
      qdd[k] = D2::lanes(qdd0[k], qdd0[k] + 0.25);
      tau[k] = D2::lanes(tau0[k], tau0[k] + 0.25);
    }
  }
};
PairBuffers* g_pairs = nullptr;  // check_model's, made before the counters are armed
#endif

struct Tally {
  long calls = 0;
  long news[kAlgorithms] = {};
  long mallocs[kAlgorithms] = {};
  long eigen[kAlgorithms] = {};
};

// runs algorithm k once at (q, qd, qdd, tau), attributing any allocation to it
void run_one(int k, const Model& m, Data& d, const double* q, const double* qd,
             const double* qdd, const double* tau, Buffers& b, Tally& t,
             const std::string& mode) {
  const long n0 = g_news, m0 = g_mallocs, e0 = g_eigen_asserts;
  switch (k) {
    case 0: rnea(m, d, q, qd, qdd, b.tau.data()); break;
    case 1: kane(m, d, q, qd, qdd, b.tmp.data()); break;
    case 2:
      crba(m, d, q);
      for (int i = 0; i < m.n; ++i)
        for (int j = 0; j < m.n; ++j) b.M[i * m.n + j] = d.H(i, j);
      break;
    case 3: aba(m, d, q, qd, tau, b.qdd.data()); break;
    case 4: forward_dynamics_crba(m, d, q, qd, tau, b.qdd2.data()); break;
    case 5: kane_forward(m, d, q, qd, tau, b.tmp.data()); break;
    case 6: bias_torques(m, d, q, qd, b.bias.data()); break;
    case 7: gravity_torques(m, d, q, b.grav.data()); break;
    case 8: coriolis_matrix(m, d, q, qd, b.C.data()); break;
    case 9: forward_kinematics(m, d, q, b.fk.data()); break;
    case 10:
      for (int f = 0; f < static_cast<int>(m.frame_body.size()); ++f)
        jacobian(m, d, q, f, b.J.data());
      break;
    case 11: b.energy += kinetic_energy(m, d, q, qd); break;
    case 12: b.energy += potential_energy(m, d, q); break;
    case 13: update_kinematics(m, d, q, 2); detail::kane_inertia(m, d); break;
    case 14: rnea_derivatives(m, d, q, qd, qdd, b.D1.data(), b.D2.data()); break;
    case 15:
      forward_dynamics_derivatives(m, d, q, qd, tau, b.qdd2.data(), b.D1.data(), b.D2.data(),
                                   b.D3.data());
      break;
    case 16: regressor(m, d, q, qd, qdd, b.Y.data()); break;
    case 17: regressor_slotine_li(m, d, q, qd, qdd, tau, b.Y.data()); break;
#if defined(ROBODYN_HAVE_D2)
    case 18:
      g_pairs->fill(m, q, qd, qdd, tau);
      rnea(m, g_pairs->d, g_pairs->q.data(), g_pairs->qd.data(), g_pairs->qdd.data(),
           g_pairs->out.data());
      break;
    case 19:
      g_pairs->fill(m, q, qd, qdd, tau);
      aba(m, g_pairs->d, g_pairs->q.data(), g_pairs->qd.data(), g_pairs->tau.data(),
          g_pairs->out.data());
      break;
    case 20:
      g_pairs->fill(m, q, qd, qdd, tau);
      bias_torques(m, g_pairs->d, g_pairs->q.data(), g_pairs->qd.data(), g_pairs->out.data());
      break;
    case 21:
      g_pairs->fill(m, q, qd, qdd, tau);
      gravity_torques(m, g_pairs->d, g_pairs->q.data(), g_pairs->out.data());
      break;
#endif
    case 22:
      // the deliberate allocations of the self-check modes (the previous one is freed)
      if (mode == "--self-check-new") {
        delete[] static_cast<double*>(g_sink);
        g_sink = new double[64];
      }
      if (mode == "--self-check-malloc") {
        std::free(g_sink);
        g_sink = std::malloc(64);
      }
      if (mode == "--self-check-eigen") {
        Eigen::VectorXd v(64);
        g_sink = v.data();
      }
      break;
    default: break;
  }
  ++t.calls;
  t.news[k] += g_news - n0;
  t.mallocs[k] += g_mallocs - m0;
  t.eigen[k] += g_eigen_asserts - e0;
}

// the identities that show the guarded calls computed real results; "" when they hold
std::string check_results(const Model& m, Data& d, const double* q, const double* qd,
                          const double* qdd) {
  const int n = m.n;
  std::vector<double> tau(n), tau2(n), back(n), back2(n), back3(n), bias(n);
  rnea(m, d, q, qd, qdd, tau.data());
  kane(m, d, q, qd, qdd, tau2.data());
  aba(m, d, q, qd, tau.data(), back.data());
  forward_dynamics_crba(m, d, q, qd, tau.data(), back2.data());
  kane_forward(m, d, q, qd, tau.data(), back3.data());
  bias_torques(m, d, q, qd, bias.data());
  crba(m, d, q);
  double scale = 1, err = 0;
  for (int i = 0; i < n; ++i) scale = std::max(scale, std::abs(tau[i]));
  for (int i = 0; i < n; ++i) {
    double mq = bias[i] + m.damping[i + 1] * qd[i] +
                m.friction[i + 1] * (qd[i] > 0 ? 1.0 : qd[i] < 0 ? -1.0 : 0.0);
    for (int j = 0; j < n; ++j) mq += d.H(i, j) * qdd[j];
    err = std::max(err, std::abs(mq - tau[i]) / scale);
    err = std::max(err, std::abs(tau2[i] - tau[i]) / scale);
    for (const auto* x : {&back, &back2, &back3})
      err = std::max(err, std::abs((*x)[i] - qdd[i]) / std::max(1.0, std::abs(qdd[i])));
  }
  // dqdd/dtau = M^-1: its product with M is the identity
  std::vector<double> D1(n * n), D2(n * n), D3(n * n), qdd3(n);
  forward_dynamics_derivatives(m, d, q, qd, tau.data(), qdd3.data(), D1.data(), D2.data(),
                               D3.data());
  crba(m, d, q);
  for (int i = 0; i < n; ++i) {
    err = std::max(err, std::abs(qdd3[i] - qdd[i]) / std::max(1.0, std::abs(qdd[i])));
    for (int j = 0; j < n; ++j) {
      double x = 0;
      for (int k = 0; k < n; ++k) x += D3[i * n + k] * d.H(k, j);
      err = std::max(err, std::abs(x - (i == j ? 1.0 : 0.0)));
    }
  }
  if (!(err < 1e-8)) return "identity check failed (max relative error " + std::to_string(err) + ")";
  return "";
}

// warms up, then runs every algorithm at new and repeated states with the counters armed
int check_model(const char* label, const Model& m, const std::string& mode) {
  std::mt19937_64 g(1234);
  std::normal_distribution<double> N(0.0, 1.0);
  const int n = m.n, states = 4;
  std::vector<std::vector<double>> Q(states), QD(states), QDD(states), TAU(states);
  for (int s = 0; s < states; ++s) {
    for (auto* v : {&Q[s], &QD[s], &QDD[s], &TAU[s]}) {
      v->resize(n);
      for (auto& x : *v) x = N(g);
    }
  }
  Data d(m);
  Buffers b(m);
#if defined(ROBODYN_HAVE_D2)
  PairBuffers pairs(m);
  g_pairs = &pairs;
#endif
  Tally t;
  // warm-up: everything once, unguarded
  for (int k = 0; k < kAlgorithms; ++k)
    run_one(k, m, d, Q[0].data(), QD[0].data(), QDD[0].data(), TAU[0].data(), b, t, "");
  t = Tally();
  const long hits0 = d.cache_hits, misses0 = d.cache_misses;

  Eigen::internal::set_is_malloc_allowed(false);
  g_armed = true;
  for (int rep = 0; rep < 2; ++rep) {
    for (int s = 0; s < states; ++s) {
      // a new q first (a cache miss), then every algorithm twice at the same q (hits)
      for (int twice = 0; twice < 2; ++twice)
        for (int k = 0; k < kAlgorithms; ++k)
          run_one(k, m, d, Q[s].data(), QD[s].data(), QDD[s].data(), TAU[s].data(), b, t, mode);
      // the same algorithm alone at alternating q: a miss on every call
      for (int k = 0; k < kAlgorithms; ++k)
        for (int s2 = 0; s2 < states; ++s2)
          run_one(k, m, d, Q[s2].data(), QD[s2].data(), QDD[s2].data(), TAU[s2].data(), b, t,
                  mode);
    }
  }
  g_armed = false;
  Eigen::internal::set_is_malloc_allowed(true);
  if (g_sink) {
    // free the self-check allocation (with the function that made it)
    if (mode == "--self-check-new") delete[] static_cast<double*>(g_sink);
    if (mode == "--self-check-malloc") std::free(g_sink);
    g_sink = nullptr;
  }

  int failures = 0;
  for (int k = 0; k < kAlgorithms; ++k) {
    if (t.news[k] || t.mallocs[k] || t.eigen[k]) {
      std::printf("FAIL %s: %s allocated: %ld operator new, %ld malloc, %ld Eigen malloc "
                  "asserts\n", label, kNames[k], t.news[k], t.mallocs[k], t.eigen[k]);
      ++failures;
    }
  }
  if (g_eigen_asserts)
    std::printf("  last failed eigen_assert: %s (%s:%d)\n", g_eigen_what, g_eigen_file,
                g_eigen_line);
  const long hits = d.cache_hits - hits0, misses = d.cache_misses - misses0;
  if (hits == 0 || misses == 0) {
    std::printf("FAIL %s: the guarded calls did not exercise both cache paths "
                "(%ld hits, %ld misses)\n", label, hits, misses);
    ++failures;
  }
  for (int s = 0; s < states; ++s) {
    const std::string why = check_results(m, d, Q[s].data(), QD[s].data(), QDD[s].data());
    if (!why.empty()) {
      std::printf("FAIL %s: %s\n", label, why.c_str());
      ++failures;
    }
  }
  failures += check_simulation(label, m);
  std::printf("%s: n=%d, %ld guarded calls (%ld cache hits, %ld misses), %d failure(s)\n", label,
              n, t.calls, hits, misses, failures);
  return failures;
}

// crba into d.H writes only H's pattern when d.H holds zeros off it (DataTpl::M_pattern): after
// every other algorithm that writes d.H on the same Data (the Cholesky factor fills in, Kane
// writes one triangle, the L'L factor), crba's d.H must equal a fresh Data's, entry for entry
// (both triangles); crba_lower's lower triangle too. "" when it holds
std::string check_pattern_reuse(const Model& m) {
  const int nq = m.nq, nv = m.nv;
  std::mt19937 g(5);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> q(nq), qd(nv), tau(nv), out(nv), D1(nv * nv), D2(nv * nv), D3(nv * nv);
  Data d(m);
  auto fresh = [&](bool lower) {
    Data f(m);
    if (lower)
      detail::crba_lower(m, f, q.data());
    else
      crba(m, f, q.data());
    return Eigen::MatrixXd(f.H);
  };
  auto differs = [&](bool lower, const char* after) -> std::string {
    const Eigen::MatrixXd want = fresh(lower);
    for (int i = 0; i < nv; ++i)
      for (int j = 0; j <= (lower ? i : nv - 1); ++j)
        if (d.H(i, j) != want(i, j))
          return std::string(lower ? "crba_lower" : "crba") + " after " + after +
                 ": entry (" + std::to_string(i) + ", " + std::to_string(j) + ") differs";
    return "";
  };
  // each step: a new state, the writer under test, then crba (or crba_lower) on the same Data
  const char* steps[] = {"crba", "forward_dynamics_crba", "kane_forward",
                         "forward_dynamics_derivatives", "crba_lower"};
  for (int round = 0; round < 2; ++round)
    for (const char* step : steps) {
      for (auto& x : q) x = u(g);
      for (auto& x : qd) x = u(g);
      for (auto& x : tau) x = u(g);
      const std::string s = step;
      if (s == "crba") crba(m, d, q.data());
      if (s == "forward_dynamics_crba")
        forward_dynamics_crba(m, d, q.data(), qd.data(), tau.data(), out.data());
      if (s == "kane_forward") kane_forward(m, d, q.data(), qd.data(), tau.data(), out.data());
      if (s == "forward_dynamics_derivatives")
        forward_dynamics_derivatives(m, d, q.data(), qd.data(), tau.data(), out.data(),
                                     D1.data(), D2.data(), D3.data());
      if (s == "crba_lower") detail::crba_lower(m, d, q.data());
      for (auto& x : q) x = u(g);  // crba at another state than the writer's
      const bool lower = round == 1;
      if (lower)
        detail::crba_lower(m, d, q.data());
      else
        crba(m, d, q.data());
      const std::string e = differs(lower, step);
      if (!e.empty()) return e;
    }
  return "";
}

}  // namespace
