// Every algorithm of a free-floating model under the allocation counters.
// Part of test_noalloc.cpp (one translation unit: these definitions are included once, by it).
#pragma once

#include "harness.hpp"

namespace {

using namespace robodyn;

// every algorithm of a free-floating model at new and repeated states, counters armed; then
// FD(ID(a)) = a by the three forward dynamics, kane = rnea and difference(q, integrate(q, v))
// = v
int check_floating(const char* label, const Model& m, const std::string& mode) {
  std::mt19937_64 g(99);
  std::normal_distribution<double> N(0.0, 1.0);
  const int nq = m.nq, nv = m.nv, states = 3;
  std::vector<std::vector<double>> Q(states), V(states), A(states);
  for (int s = 0; s < states; ++s) {
    Q[s].resize(nq);
    V[s].resize(nv);
    A[s].resize(nv);
    for (auto& x : Q[s]) x = N(g);
    for (auto& x : V[s]) x = N(g);
    for (auto& x : A[s]) x = N(g);
    double n2 = 0;
    for (int k = 3; k < 7; ++k) n2 += Q[s][k] * Q[s][k];
    for (int k = 3; k < 7; ++k) Q[s][k] /= std::sqrt(n2);
  }
  Data d(m);
  std::vector<double> tau(nv), a1(nv), a2(nv), bias(nv), grav(nv), h(6), c(3), q1(nq), dv(nv),
      fk(16 * m.frame_body.size()), J(6 * nv), M(nv * nv), AG(6 * nv), tauk(nv), a3(nv),
      a4(nv), D1(nv * nv), D2(nv * nv), D3(nv * nv), Y(10 * m.n * nv);
  double energy = 0;
  const int kCalls = 23;
  const char* names[kCalls] = {"rnea", "crba", "aba", "forward_dynamics_crba", "bias_torques",
                               "gravity_torques", "forward_kinematics", "jacobian",
                               "kinetic_energy", "potential_energy", "momentum",
                               "center_of_mass", "integrate", "difference",
                               "centroidal_momentum_matrix", "kane", "kane_forward",
                               "kane_inertia", "rnea_derivatives",
                               "forward_dynamics_derivatives", "regressor",
                               "regressor_slotine_li", "self-check"};
  long news[kCalls] = {}, mallocs[kCalls] = {}, eigen[kCalls] = {};
  auto run = [&](int k, int s, bool armed) {
    const double *q = Q[s].data(), *v = V[s].data(), *a = A[s].data();
    const long n0 = g_news, m0 = g_mallocs, e0 = g_eigen_asserts;
    switch (k) {
      case 0: rnea(m, d, q, v, a, tau.data()); break;
      case 1:
        crba(m, d, q);
        for (int i = 0; i < nv; ++i)
          for (int j = 0; j < nv; ++j) M[i * nv + j] = d.H(i, j);
        break;
      case 2: aba(m, d, q, v, tau.data(), a1.data()); break;
      case 3: forward_dynamics_crba(m, d, q, v, tau.data(), a2.data()); break;
      case 4: bias_torques(m, d, q, v, bias.data()); break;
      case 5: gravity_torques(m, d, q, grav.data()); break;
      case 6: forward_kinematics(m, d, q, fk.data()); break;
      case 7:
        for (int f = 0; f < static_cast<int>(m.frame_body.size()); ++f)
          jacobian(m, d, q, f, J.data());
        break;
      case 8: energy += kinetic_energy(m, d, q, v); break;
      case 9: energy += potential_energy(m, d, q); break;
      case 10: momentum(m, d, q, v, h.data()); break;
      case 11: center_of_mass(m, d, q, c.data()); break;
      case 12: integrate(m, q, v, 0.01, q1.data()); break;
      case 13: difference(m, q, q1.data(), dv.data()); break;
      case 14: centroidal_momentum_matrix(m, d, q, AG.data()); break;
      case 15: kane(m, d, q, v, a, tauk.data()); break;
      case 16: kane_forward(m, d, q, v, tau.data(), a3.data()); break;
      case 17: update_kinematics(m, d, q, 1); detail::kane_inertia(m, d); break;
      case 18: rnea_derivatives(m, d, q, v, a, D1.data(), D2.data()); break;
      case 19:
        forward_dynamics_derivatives(m, d, q, v, tau.data(), a4.data(), D1.data(), D2.data(),
                                     D3.data());
        break;
      case 20: regressor(m, d, q, v, a, Y.data()); break;
      case 21: regressor_slotine_li(m, d, q, v, a, tau.data(), Y.data()); break;
      case 22:
        if (armed && mode == "--self-check-new") {
          delete[] static_cast<double*>(g_sink);
          g_sink = new double[64];
        }
        if (armed && mode == "--self-check-malloc") {
          std::free(g_sink);
          g_sink = std::malloc(64);
        }
        if (armed && mode == "--self-check-eigen") {
          Eigen::VectorXd x(64);
          g_sink = x.data();
        }
        break;
      default: break;
    }
    news[k] += g_news - n0;
    mallocs[k] += g_mallocs - m0;
    eigen[k] += g_eigen_asserts - e0;
  };
  for (int k = 0; k < kCalls; ++k) run(k, 0, false);  // warm-up
  for (int k = 0; k < kCalls; ++k) news[k] = mallocs[k] = eigen[k] = 0;
  const long hits0 = d.cache_hits, misses0 = d.cache_misses;
  Eigen::internal::set_is_malloc_allowed(false);
  g_armed = true;
  for (int s = 0; s < states; ++s) {
    for (int twice = 0; twice < 2; ++twice)
      for (int k = 0; k < kCalls; ++k) run(k, s, true);
    for (int k = 0; k < kCalls; ++k)
      for (int s2 = 0; s2 < states; ++s2) run(k, s2, true);
  }
  g_armed = false;
  Eigen::internal::set_is_malloc_allowed(true);
  if (g_sink) {
    if (mode == "--self-check-new") delete[] static_cast<double*>(g_sink);
    if (mode == "--self-check-malloc") std::free(g_sink);
    g_sink = nullptr;
  }
  int failures = 0;
  for (int k = 0; k < kCalls; ++k)
    if (news[k] || mallocs[k] || eigen[k]) {
      std::printf("FAIL %s: %s allocated: %ld operator new, %ld malloc, %ld Eigen malloc "
                  "asserts\n", label, names[k], news[k], mallocs[k], eigen[k]);
      ++failures;
    }
  const long hits = d.cache_hits - hits0, misses = d.cache_misses - misses0;
  if (hits == 0 || misses == 0) {
    std::printf("FAIL %s: both cache paths not exercised (%ld hits, %ld misses)\n", label,
                hits, misses);
    ++failures;
  }
  // the results are real: FD(ID(a)) = a by ABA, by CRBA + Cholesky and by Kane, Kane's ID
  // = rnea's; difference inverts integrate
  double err = 0;
  for (int s = 0; s < states; ++s) {
    rnea(m, d, Q[s].data(), V[s].data(), A[s].data(), tau.data());
    aba(m, d, Q[s].data(), V[s].data(), tau.data(), a1.data());
    forward_dynamics_crba(m, d, Q[s].data(), V[s].data(), tau.data(), a2.data());
    kane_forward(m, d, Q[s].data(), V[s].data(), tau.data(), a3.data());
    kane(m, d, Q[s].data(), V[s].data(), A[s].data(), tauk.data());
    integrate(m, Q[s].data(), V[s].data(), 0.3, q1.data());
    difference(m, Q[s].data(), q1.data(), dv.data());
    for (int i = 0; i < nv; ++i) {
      err = std::max(err, std::abs(a1[i] - A[s][i]) / std::max(1.0, std::abs(A[s][i])));
      err = std::max(err, std::abs(a2[i] - A[s][i]) / std::max(1.0, std::abs(A[s][i])));
      err = std::max(err, std::abs(a3[i] - A[s][i]) / std::max(1.0, std::abs(A[s][i])));
      err = std::max(err, std::abs(tauk[i] - tau[i]) / std::max(1.0, std::abs(tau[i])));
      err = std::max(err, std::abs(dv[i] - 0.3 * V[s][i]));
    }
    // dqdd/dtau M = 1 (the derivatives ran on the floating model)
    forward_dynamics_derivatives(m, d, Q[s].data(), V[s].data(), tau.data(), a4.data(),
                                 D1.data(), D2.data(), D3.data());
    crba(m, d, Q[s].data());
    for (int i = 0; i < nv; ++i)
      for (int j = 0; j < nv; ++j) {
        double x = 0;
        for (int k = 0; k < nv; ++k) x += D3[i * nv + k] * d.H(k, j);
        err = std::max(err, std::abs(x - (i == j ? 1.0 : 0.0)));
      }
  }
  if (!(err < 1e-8)) {
    std::printf("FAIL %s: identity check failed (max error %g)\n", label, err);
    ++failures;
  }
  std::printf("%s: nq=%d nv=%d, %ld cache hits, %ld misses, %d failure(s)\n", label, nq, nv,
              hits, misses, failures);
  return failures;
}

}  // namespace
