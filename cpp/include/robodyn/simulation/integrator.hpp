// The fixed-step integrators of robodyn.simulate, written once: classical Runge-Kutta (RK4)
// and semi-implicit Euler for the state y = (q, qd) of qdd = FD(q, qd, tau).
//
// The C++ simulation loop (simulate.hpp) calls them with the plant's algorithms; the Python
// loop and robodyn-ros2-sim call them through _core._fixed_step (robodyn.simulation.FixedStep)
// with the robot's forward_dynamics. Nothing here allocates.
//
// The workspace Z is (4, 3n), row-major: stage s is Z[s] = [q_s | qd_s | qdd_s], so its state
// is Z[s, :2n] and the state's derivative k_s = (qd_s, qdd_s) is Z[s, n:]. Row 0 holds the
// current state, advanced in place. tmp is (2n,) scratch.
#pragma once

namespace robodyn {

// What a step returns: Ok, or which callback failed first (the state is then partly updated).
enum class StepStatus : unsigned char { Ok, ForwardFailed, StageFailed };

// One RK4 step of size h:
//   y_s = y + c_s h k_(s-1) (c = 0, 1/2, 1/2, 1),  k_s = (qd_s, FD(q_s, qd_s)),
//   y  += h (k_0 + 2 k_1 + 2 k_2 + k_3) / 6.
// fd(s, q, qd, qdd) -> bool evaluates the forward dynamics of stage s (false: failed);
// stage(s, c_s h, q, qd) -> bool runs before stages 1-3 (continuous control updates the torque
// there; false: failed).
template <class Fd, class Stage>
StepStatus rk4_step(int n, double* Z, double* tmp, double h, Fd&& fd, Stage&& stage) {
  double* y = Z;
  const double c[4] = {0.0, 0.5 * h, 0.5 * h, h};
  for (int s = 0; s < 4; ++s) {
    double* Zs = Z + s * 3 * n;
    if (s > 0) {
      const double* k_prev = Z + (s - 1) * 3 * n + n;
      for (int j = 0; j < 2 * n; ++j) Zs[j] = y[j] + k_prev[j] * c[s];
      if (!stage(s, c[s], Zs, Zs + n)) return StepStatus::StageFailed;
    }
    if (!fd(s, Zs, Zs + n, Zs + 2 * n)) return StepStatus::ForwardFailed;
  }
  // the weights (1, 2, 2, 1) / 6 times h, summed stage by stage
  const double w[4] = {1.0 / 6.0 * h, 2.0 / 6.0 * h, 2.0 / 6.0 * h, 1.0 / 6.0 * h};
  const double* k0 = Z + n;
  const double* k1 = Z + 4 * n;
  const double* k2 = Z + 7 * n;
  const double* k3 = Z + 10 * n;
  for (int j = 0; j < 2 * n; ++j) tmp[j] = w[0] * k0[j] + w[1] * k1[j] + w[2] * k2[j] + w[3] * k3[j];
  for (int j = 0; j < 2 * n; ++j) y[j] += tmp[j];
  return StepStatus::Ok;
}

// One semi-implicit (symplectic) Euler step: qd += h FD(q, qd); q += h qd (the new qd).
// fd as for rk4_step (stage 0).
template <class Fd>
StepStatus euler_step(int n, double* Z, double h, Fd&& fd) {
  double* q = Z;
  double* qd = Z + n;
  double* qdd = Z + 2 * n;
  if (!fd(0, q, qd, qdd)) return StepStatus::ForwardFailed;
  for (int i = 0; i < n; ++i) qd[i] += qdd[i] * h;
  for (int i = 0; i < n; ++i) q[i] += qd[i] * h;
  return StepStatus::Ok;
}

}  // namespace robodyn
