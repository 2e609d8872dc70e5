// The constrained algorithms under the allocation counters.
// Part of test_noalloc.cpp (one translation unit: these definitions are included once, by it).
#pragma once

#include "harness.hpp"

namespace {

using namespace robodyn;

// the constrained algorithms (constraints/*.hpp) on a model with a weld between two bodies
// and a point to the world, at new and repeated states, counters armed; J qdd + gamma = 0
// checks that forward dynamics computed something
int check_constraints(const char* label, const Model& m) {
  // a fixed base: a point of the deepest body held to the world (generic axes: 3 independent
  // columns); a floating base: a weld of the last body to the world (the base's six columns)
  std::vector<LoopModel> loops(1);
  LoopModel& c = loops[0];
  int deepest = 1, depth = 0;
  for (int i = 1; i <= m.n; ++i) {
    int k = 0;
    for (int j = i; j > 0; j = m.parent[j]) ++k;
    if (k > depth) depth = k, deepest = i;
  }
  c.body1 = m.floating ? m.n : deepest;
  c.body2 = 0;
  c.p1 = Vec3(0.1, 0.2, 0.0);
  c.p2 = Vec3(0.3, -0.1, 0.2);
  c.nrows = m.floating ? 6 : 3;
  c.rows = m.floating ? std::array<int, 6>{0, 1, 2, 3, 4, 5} : std::array<int, 6>{3, 4, 5};
  c.kp = 10;
  c.kd = 2;
  c.name = "loop";
  const ConstraintModel cm = make_constraint_model(m, loops);
  Data d(m);
  ConstraintData cd(m, cm);
  std::mt19937_64 g(5);
  std::normal_distribution<double> N(0.0, 1.0);
  std::vector<double> q(m.nq), v(m.nv), tau(m.nv), qdd(m.nv), lam(cm.m), phi(cm.m),
      osim(cm.m * cm.m);
  long news = 0, mallocs = 0, eigen = 0;
  int failures = 0;
  for (int s = 0; s < 3; ++s) {
    for (auto& x : q) x = N(g);
    for (auto& x : v) x = N(g);
    for (auto& x : tau) x = N(g);
    if (m.floating) {
      double n2 = 0;
      for (int k = 3; k < 7; ++k) n2 += q[k] * q[k];
      for (int k = 3; k < 7; ++k) q[k] /= std::sqrt(n2);
    }
    for (int repeat = 0; repeat < 2; ++repeat) {
      const long n0 = g_news, m0 = g_mallocs, e0 = g_eigen_asserts;
      Eigen::internal::set_is_malloc_allowed(false);
      g_armed = true;
      constraint_residual(m, cm, d, cd, q.data(), phi.data());
      constraint_jacobian(m, cm, d, cd, q.data());
      constraint_bias(m, cm, d, cd, q.data(), v.data());
      operational_space_inverse_inertia(m, cm, d, cd, q.data(), osim.data());
      const ConstraintStatus st0 = constrained_forward_dynamics(
          m, cm, d, cd, q.data(), v.data(), tau.data(), 1e-6, 20, 1e-12, qdd.data(), lam.data());
      const ConstraintStatus st = constrained_forward_dynamics(
          m, cm, d, cd, q.data(), v.data(), tau.data(), 0.0, 1, 1e-12, qdd.data(), lam.data());
      g_armed = false;
      Eigen::internal::set_is_malloc_allowed(true);
      news += g_news - n0;
      mallocs += g_mallocs - m0;
      eigen += g_eigen_asserts - e0;
      if (st0 != ConstraintStatus::Ok || st != ConstraintStatus::Ok) {
        std::printf("FAIL %s constraints: forward dynamics failed\n", label);
        ++failures;
        continue;
      }
      // J qdd + gamma + kd J v + kp phi = 0
      constraint_jacobian(m, cm, d, cd, q.data());
      constraint_bias(m, cm, d, cd, q.data(), v.data());
      constraint_residual(m, cm, d, cd, q.data(), phi.data());
      double err = 0, scale = 1;
      for (int r = 0; r < cm.m; ++r) {
        double x = cd.gamma[r] + 2 * cd.Jv[r] + 10 * phi[r];
        for (int c = 0; c < m.nv; ++c) x += cd.J(r, c) * qdd[c];
        err = std::max(err, std::abs(x));
        scale = std::max(scale, std::abs(cd.gamma[r]));
      }
      if (err > 1e-9 * scale) {
        std::printf("FAIL %s constraints: |J qdd + gamma + ...| = %g\n", label, err);
        ++failures;
      }
    }
  }
  if (news || mallocs || eigen) {
    std::printf("FAIL %s constraints: %ld new, %ld malloc, %ld Eigen allocations\n", label, news,
                mallocs, eigen);
    ++failures;
  }
  std::printf("%s constraints: %d failure(s)\n", label, failures);
  return failures;
}

}  // namespace
