// The C++ simulation loop under the allocation counters.
// Part of test_noalloc.cpp (one translation unit: these definitions are included once, by it).
#pragma once

#include "harness.hpp"

namespace {

using namespace robodyn;

// the C++ simulation loop (computed torque at a zero-order hold, RK4, then semi-implicit Euler,
// with force elements): everything is sized before the counters are armed, Simulator::run
// must allocate nothing
int check_simulation(const char* label, const Model& m) {
  const int n = m.n;
  const long N = 200;
  std::vector<double> t(N + 1), kp(n, 100.0), kd(n, 20.0), q0(n, 0.1), qd0(n, 0.0);
  std::vector<unsigned char> control(N + 1, 0);
  for (long k = 0; k <= N; ++k) {
    t[k] = 1e-3 * k;
    control[k] = k % 2 == 0;
  }
  SimGrid grid;
  grid.t = t.data();
  grid.control = control.data();
  grid.N = N;
  SimRobot robot;
  robot.model = &m;
  // force elements (forces.hpp), in the plant's forward dynamics and the controller's inverse
  // dynamics: a spring-damper from the first body to the last, a rotational spring with a
  // stiffness curve, a wrench in body axes
  ForceSet forces;
  forces.curves.push_back(Curve{{-1.0, 0.0, 2.0}, {3.0, 1.0, 5.0}, {0.0, 0.7, 0.0}});
  TranslationalElement spring;
  spring.body1 = 1;
  spring.body2 = m.n;
  spring.p1 = Vec3(0.1, 0.0, 0.0);
  spring.p2 = Vec3(0.0, 0.05, 0.0);
  spring.k.value = 30.0;
  spring.c.value = 0.5;
  spring.l0 = 0.2;
  forces.springs.push_back(spring);
  RotationalElement rot;
  rot.body = 2;
  rot.k.curve = 0;
  rot.c.value = 0.1;
  forces.rotational.push_back(rot);
  WrenchElement wrench;
  wrench.body = m.n;
  wrench.world_axes = false;
  wrench.moment = Vec3(0.1, 0.0, -0.2);
  wrench.force = Vec3(0.0, 1.0, 0.5);
  forces.wrenches.push_back(wrench);
  robot.forces = &forces;
  SimController ctrl;
  ctrl.law = SimLaw::ComputedTorque;
  ctrl.robot = robot;
  ctrl.kp = kp.data();
  ctrl.kd = kd.data();
  const long rows = sim_control_calls(grid, SimIntegrator::RK4);
  std::vector<double> rq(rows * n, 0.2), rqd(rows * n, 0.0), rqdd(rows * n, 0.0);
  SimReference ref{rq.data(), rqd.data(), rqdd.data(), rows};
  std::vector<double> oq((N + 1) * n), oqd((N + 1) * n), otau((N + 1) * n);
  SimOutput out{oq.data(), oqd.data(), otau.data()};
  // joint stops below the reference (0.2 rad): the joints driven there hit them
  std::vector<double> lower(n, -1e300), upper(n, 0.15), hits(n, 0.0), excess(n, 0.0);
  SimLimits stops;
  stops.lower = lower.data();
  stops.upper = upper.data();
  stops.hits = hits.data();
  stops.excess = excess.data();
  int failures = 0;
  for (int run = 0; run < 4; ++run) {
    const SimIntegrator integrator = run % 2 ? SimIntegrator::SemiImplicitEuler
                                             : SimIntegrator::RK4;
    const bool limited = run >= 2;
    std::fill(hits.begin(), hits.end(), 0.0);
    Simulator sim(robot, SimForward::Aba, integrator, ctrl, limited ? stops : SimLimits());
    const long n0 = g_news, m0 = g_mallocs, e0 = g_eigen_asserts;
    Eigen::internal::set_is_malloc_allowed(false);
    g_armed = true;
    const SimResult res =
        sim.run(grid, ref, q0.data(), qd0.data(), out, 50, [](double) { return true; });
    g_armed = false;
    Eigen::internal::set_is_malloc_allowed(true);
    const long news = g_news - n0, mallocs = g_mallocs - m0, eigen = g_eigen_asserts - e0;
    // with the limits, steps ending at a stop must have been taken
    const double stopped = std::accumulate(hits.begin(), hits.end(), 0.0);
    if (news || mallocs || eigen || res.status != SimStatus::Ok || res.fd_calls == 0 ||
        (limited && !(stopped > 0.0))) {
      std::printf("FAIL %s: simulate (%s%s) allocated %ld new, %ld malloc, %ld Eigen asserts; "
                  "status %d, %ld forward-dynamics calls, %g steps at a stop\n", label,
                  integrator == SimIntegrator::RK4 ? "rk4" : "euler",
                  limited ? ", joint stops" : "", news, mallocs, eigen,
                  static_cast<int>(res.status), res.fd_calls, stopped);
      ++failures;
    }
  }
  // lu_solve (the systems of a floating robot's joint stops): allocates nothing, and solves
  std::mt19937_64 g(7);
  std::normal_distribution<double> N01(0.0, 1.0);
  std::vector<double> A(36), A0(36), B(12), B0(12);
  for (auto* v : {&A0, &B0})
    for (auto& x : *v) x = N01(g);
  A = A0;
  B = B0;
  const long n0 = g_news, m0 = g_mallocs;
  g_armed = true;
  const bool solved = lu_solve(6, A.data(), 2, B.data());
  g_armed = false;
  double residual = 0.0;
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 2; ++j) {
      double x = -B0[i * 2 + j];
      for (int k = 0; k < 6; ++k) x += A0[i * 6 + k] * B[k * 2 + j];
      residual = std::max(residual, std::abs(x));
    }
  if (!solved || g_news != n0 || g_mallocs != m0 || !(residual < 1e-10)) {
    std::printf("FAIL %s: lu_solve (solved %d, %ld new, %ld malloc, residual %g)\n", label,
                solved, g_news - n0, g_mallocs - m0, residual);
    ++failures;
  }
  return failures;
}

}  // namespace
