// Fixed-step closed-loop simulation: the C++ engine of robodyn.simulation.simulate.
//
// The plant qdd = FD(q, qd, tau) (aba, crba + Cholesky or Kane, as the Python method) is
// integrated over a time grid t_0 < t_1 < ... < t_N by classical RK4 (four FD calls per
// interval) or semi-implicit Euler (qd += h qdd(q, qd); q += h qd, one call). A joint-space
// control law of robodyn.control runs at the grid points flagged as control instants, its
// torque held until the next one (zero-order hold), or, in continuous mode, at every
// integrator stage. The controller has its own model, which may differ from the plant's.
//
// The step (integrator.hpp), the control laws, the measurement and the saturation (control.hpp)
// are the ones the Python loop of simulation.py calls through the bindings, and the loop visits
// the same grid in the same order, so both engines agree to rounding. Nothing is allocated
// after the Simulator is built.
#pragma once

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "robodyn/algorithms/aba.hpp"
#include "robodyn/algorithms/crba.hpp"
#include "robodyn/algorithms/forces.hpp"
#include "robodyn/algorithms/kane.hpp"
#include "robodyn/algorithms/rnea.hpp"
#include "robodyn/codegen/codegen.hpp"
#include "robodyn/model/data.hpp"
#include "robodyn/model/model.hpp"
#include "robodyn/simulation/control.hpp"
#include "robodyn/simulation/integrator.hpp"

namespace robodyn {

// A robot as the loop calls it: its model and the generated kernels that replace the generic
// algorithms when set (robodyn.codegen), as the Python methods dispatch them.
struct SimRobot {
  const Model* model = nullptr;
  IdKernel id = nullptr;             // replaces rnea()
  GravityKernel gravity = nullptr;   // replaces gravity_torques()
  FdKernel fd = nullptr;             // replaces aba() and forward_dynamics_crba()
  const ForceSet* forces = nullptr;  // force elements (forces.hpp): the plant's FD adds their
                                     // Q(q, qd) to tau, the controller's ID subtracts it
};

// A SimRobot with its model held (shared ownership) for as long as a run uses it: the
// bindings replace a robot's model when its gravity changes, never modify it.
struct SimHeld {
  SimRobot robot;
  std::shared_ptr<const Model> model;
};

enum class SimIntegrator : unsigned char { RK4, SemiImplicitEuler };
enum class SimForward : unsigned char { Aba, Crba, Kane };
using SimLaw = ControlLaw;

// The control law and its measurement model (control.hpp: control_law, measure, saturate),
// with ID and g the controller model's inverse dynamics and gravity torques, then clipped to
// +-limit. The law sees the measurement: q + noise_q[call], qd + noise_qd[call], taken `delay`
// calls earlier (the first one before that).
struct SimController {
  SimLaw law = SimLaw::None;
  SimRobot robot;                     // the controller's own model
  bool kane = false;                  // ID_c by kane() rather than rnea()
  const double* kp = nullptr;         // (n,) position gains
  const double* kd = nullptr;         // (n,) velocity gains
  bool feedback = true;               // Feedforward only: add kp e + kd edot
  const double* limit = nullptr;      // (n,) torque bounds (inf: none); null: no saturation
  const double* noise_q = nullptr;    // (control calls, n) added to the measured q, or null
  const double* noise_qd = nullptr;   // (control calls, n) added to the measured qd, or null
  int delay = 0;                      // measurement delay, in control calls
  double* ring = nullptr;             // (delay + 1, 2, n) last measurements (rows q, qd);
                                      // needed when there is noise or delay
};

// The time grid: N intervals, points t[0..N] (s), control[k] = 1 at a control instant.
struct SimGrid {
  const double* t = nullptr;               // (N + 1,)
  const unsigned char* control = nullptr;  // (N + 1,), ignored in continuous mode
  long N = 0;
  bool continuous = false;                 // control law at every stage instead
};

// The reference, row-major (rows, n), one row per control call in call order: zero-order
// hold: the control instants; continuous RK4: t_k, t_k + h/2, t_k + h for each interval k (the
// two midpoint stages share a row), then t_N; continuous Euler: the grid points.
struct SimReference {
  const double* q = nullptr;
  const double* qd = nullptr;
  const double* qdd = nullptr;
  long rows = 0;
};

// Joint limits of the plant, applied at the end of every integration step (after the state
// update, before the finiteness check). A joint beyond a finite bound `lower[i] <= q[i] <=
// upper[i]` is, with `stops`, put back on the bound and, if it still moves outward, its
// velocity reversed and scaled by `restitution` (0: a plastic stop, the velocity zeroed; 1:
// an elastic bounce): a hard stop. Without `stops` nothing is changed (the violation is only
// recorded). Either way hits[i] counts the steps that ended beyond a bound of joint i and
// excess[i] is the largest distance beyond it (rad or m). Null bounds: no limits.
struct SimLimits {
  const double* lower = nullptr;  // (n,) -inf where none
  const double* upper = nullptr;  // (n,) +inf where none
  bool stops = true;
  double restitution = 0.0;       // in [0, 1]
  double* hits = nullptr;         // (n,) out: steps beyond a bound
  double* excess = nullptr;       // (n,) out: largest distance beyond a bound
};

// The joint limits of SimLimits applied to the state (q, qd) (n,) at the end of a step: the
// one implementation, also run by the Python loop (robodyn.simulation, _core._joint_stops).
inline void joint_stops(int n, double* q, double* qd, const SimLimits& L) {
  for (int i = 0; i < n; ++i) {
    const double over = q[i] > L.upper[i] ? q[i] - L.upper[i]
                        : q[i] < L.lower[i] ? L.lower[i] - q[i] : 0.0;
    if (!(over > 0.0)) continue;
    L.hits[i] += 1.0;
    L.excess[i] = std::max(L.excess[i], over);
    if (!L.stops) continue;
    const bool high = q[i] > L.upper[i];
    q[i] = high ? L.upper[i] : L.lower[i];
    if (high ? qd[i] > 0.0 : qd[i] < 0.0) qd[i] = -L.restitution * qd[i];
  }
}

// Solves A X = B in place for a general (k, k) A and a (k, r) B, both row-major: A is
// overwritten by its LU factors (Gaussian elimination with partial pivoting, Golub & Van Loan
// alg. 3.4.1, then back substitution), B by X. False, A and B partly overwritten, when a pivot
// is zero or not finite (A singular, or not finite). Nothing is allocated: the joint stops of
// a floating robot (robodyn.simulation, through _core._solve) solve their systems with it.
inline bool lu_solve(int k, double* A, int r, double* B) {
  for (int c = 0; c < k; ++c) {
    // the pivot: the largest entry of column c on or below the diagonal
    int p = c;
    for (int i = c + 1; i < k; ++i)
      if (std::abs(A[i * k + c]) > std::abs(A[p * k + c])) p = i;
    const double pivot = A[p * k + c];
    if (!(pivot != 0.0 && std::isfinite(pivot))) return false;
    if (p != c) {
      std::swap_ranges(A + c * k, A + (c + 1) * k, A + p * k);
      std::swap_ranges(B + c * r, B + (c + 1) * r, B + p * r);
    }
    // eliminate column c below the pivot, in A and B alike
    for (int i = c + 1; i < k; ++i) {
      const double l = A[i * k + c] / pivot;
      A[i * k + c] = l;
      for (int j = c + 1; j < k; ++j) A[i * k + j] -= l * A[c * k + j];
      for (int j = 0; j < r; ++j) B[i * r + j] -= l * B[c * r + j];
    }
  }
  // back substitution with the upper factor
  for (int c = k - 1; c >= 0; --c)
    for (int j = 0; j < r; ++j) {
      double s = B[c * r + j];
      for (int i = c + 1; i < k; ++i) s -= A[c * k + i] * B[i * r + j];
      B[c * r + j] = s / A[c * k + c];
    }
  return true;
}

// The record: (N + 1, n) row-major arrays, row k the state at t_k and the torque applied from
// t_k on (the held command, or the first-stage torque in continuous mode).
struct SimOutput {
  double* q = nullptr;
  double* qd = nullptr;
  double* tau = nullptr;
};

enum class SimStatus : unsigned char {
  Ok,
  Diverged,               // non-finite state or torque
  ForwardDynamicsFailed,  // FD failed at a finite state (mass matrix not positive definite)
  Stopped                 // the progress callback asked to stop
};

struct SimResult {
  SimStatus status = SimStatus::Ok;
  double t = 0;              // time of the failure (s)
  long fd_calls = 0;
  long control_calls = 0;
  long saturated_calls = 0;  // control calls in which at least one joint was clipped
};

// Reference rows (= control calls) the loop needs for this grid and integrator.
inline long sim_control_calls(const SimGrid& g, SimIntegrator integrator) {
  if (g.continuous) return integrator == SimIntegrator::RK4 ? 3 * g.N + 1 : g.N + 1;
  long c = 0;
  for (long k = 0; k <= g.N; ++k) c += g.control[k] ? 1 : 0;
  return c;
}

class Simulator {
 public:
  // plant and controller must outlive the Simulator; both models must have the same n.
  Simulator(const SimRobot& plant, SimForward method, SimIntegrator integrator,
            const SimController& controller, const SimLimits& limits = SimLimits())
      : plant_(plant), method_(method), integrator_(integrator), ctrl_(controller),
        limits_(limits),
        n_(plant.model->n), pd_(*plant.model),
        cd_(controller.robot.model ? *controller.robot.model : *plant.model),
        Z_(4 * 3 * n_, 0.0), tmp_(2 * n_, 0.0), tau_(n_, 0.0), v_(n_, 0.0), g_(n_, 0.0),
        Q_(n_, 0.0) {
    ideal_ = ctrl_.noise_q == nullptr && ctrl_.noise_qd == nullptr && ctrl_.delay == 0;
  }

  // Runs the loop from (q0, qd0) at t_0. progress(t) -> bool is called after every
  // `every`-th interval (0: never) with t = t_k; false stops the run (status Stopped).
  template <class Progress>
  SimResult run(const SimGrid& grid, const SimReference& ref, const double* q0,
                const double* qd0, const SimOutput& out, long every, Progress&& progress);

 private:
  bool forward(const double* q, const double* qd, double* qdd);
  void inverse(const double* q, const double* qd, const double* qdd, double* tau);
  bool control(const double* q, const double* qd, const SimReference& ref, long row);
  bool finite(const double* x, long size) const {
    for (long i = 0; i < size; ++i)
      if (!std::isfinite(x[i])) return false;
    return true;
  }

  SimRobot plant_;
  SimForward method_;
  SimIntegrator integrator_;
  SimController ctrl_;
  SimLimits limits_;
  int n_;
  bool ideal_;
  Data pd_;                  // plant workspace (private: the loop runs without the GIL)
  Data cd_;                  // controller workspace
  std::vector<double> Z_;    // (4, 3n): stage s is [q_s | qd_s | qdd_s]; stage 0 the state
  std::vector<double> tmp_;  // (2n,) RK4 increment
  std::vector<double> tau_;  // (n,) applied (held) torque
  std::vector<double> v_;    // (n,) commanded acceleration / feedback torque
  std::vector<double> g_;    // (n,) gravity torques
  std::vector<double> Q_;    // (n,) force elements' generalized force (plus tau_ in forward)
  long calls_ = 0, saturated_ = 0, fd_calls_ = 0;
};

// qdd = FD(q, qd, tau_) of the plant; false on failure (as the Python method, a generated
// kernel fails when its result is not finite)
inline bool Simulator::forward(const double* q, const double* qd, double* qdd) {
  const Model& m = *plant_.model;
  ++fd_calls_;
  // the applied force: tau_, plus the force elements' Q(q, qd)
  const double* tau = tau_.data();
  if (plant_.forces) {
    generalized_forces(m, *plant_.forces, pd_, q, qd, nullptr, nullptr, nullptr, Q_.data());
    for (int i = 0; i < n_; ++i) Q_[i] += tau_[i];
    tau = Q_.data();
  }
  if (plant_.fd && method_ != SimForward::Kane) {
    plant_.fd(q, qd, tau, qdd);
    return finite(qdd, n_);
  }
  switch (method_) {
    case SimForward::Aba: return aba(m, pd_, q, qd, tau, qdd);
    case SimForward::Crba: return forward_dynamics_crba(m, pd_, q, qd, tau, qdd);
    case SimForward::Kane: return kane_forward(m, pd_, q, qd, tau, qdd);
  }
  return false;
}

// tau = ID_c(q, qd, qdd) of the controller's model
inline void Simulator::inverse(const double* q, const double* qd, const double* qdd,
                               double* tau) {
  const Model& m = *ctrl_.robot.model;
  if (ctrl_.kane)
    kane(m, cd_, q, qd, qdd, tau);
  else if (ctrl_.robot.id)
    ctrl_.robot.id(q, qd, qdd, tau);
  else
    rnea(m, cd_, q, qd, qdd, tau);
  // a controller model with force elements: the torque that adds to their Q
  if (ctrl_.robot.forces) {
    generalized_forces(m, *ctrl_.robot.forces, cd_, q, qd, nullptr, nullptr, nullptr, Q_.data());
    for (int i = 0; i < n_; ++i) tau[i] -= Q_[i];
  }
}

// tau_ from the control law at the measured state, reference row `row`; false if the torque
// is not finite
inline bool Simulator::control(const double* q, const double* qd, const SimReference& ref,
                               long row) {
  const int n = n_;
  if (!ideal_) {
    const double* nq = ctrl_.noise_q ? ctrl_.noise_q + calls_ * n : nullptr;
    const double* nqd = ctrl_.noise_qd ? ctrl_.noise_qd + calls_ * n : nullptr;
    const double* seen =
        ctrl_.ring + measure(n, ctrl_.ring, ctrl_.delay, calls_, q, qd, nq, nqd) * 2 * n;
    q = seen;
    qd = seen + n;
  }
  const ControlGains gains{ctrl_.kp, ctrl_.kd, ctrl_.feedback};
  double* tau = tau_.data();
  control_law(
      ctrl_.law, n, gains, q, qd, ref.q + row * n, ref.qd + row * n, ref.qdd + row * n, tau,
      v_.data(), g_.data(),
      [this](const double* a, const double* b, const double* c, double* out) {
        inverse(a, b, c, out);
      },
      [this](const double* a, double* out) {
        if (ctrl_.robot.gravity)
          ctrl_.robot.gravity(a, out);
        else
          gravity_torques(*ctrl_.robot.model, cd_, a, out);
      });
  if (ctrl_.limit && saturate(n, tau, ctrl_.limit)) ++saturated_;
  ++calls_;
  return finite(tau, n);
}

template <class Progress>
SimResult Simulator::run(const SimGrid& grid, const SimReference& ref, const double* q0,
                         const double* qd0, const SimOutput& out, long every,
                         Progress&& progress) {
  const int n = n_;
  const long N = grid.N;
  const bool cont = grid.continuous;
  const bool ctrl = ctrl_.law != SimLaw::None;
  const bool rk4 = integrator_ == SimIntegrator::RK4;
  calls_ = saturated_ = fd_calls_ = 0;
  std::fill(tau_.begin(), tau_.end(), 0.0);
  std::fill(Z_.begin(), Z_.end(), 0.0);
  // the state y = (q, qd) is row 0 of the stage workspace (integrator.hpp)
  double* y = Z_.data();
  double* tmp = tmp_.data();
  std::copy(q0, q0 + n, y);
  std::copy(qd0, qd0 + n, y + n);
  long row = 0;  // next reference row (zero-order hold)
  SimResult res;
  auto finish = [&](SimStatus status, double t) {
    res.status = status;
    res.t = t;
    res.fd_calls = fd_calls_;
    res.control_calls = calls_;
    res.saturated_calls = saturated_;
    return res;
  };
  // a failed FD: divergence if anything is non-finite, else a numerical failure
  auto fd_failed = [&](double t) {
    const bool ok = finite(Z_.data(), 12L * n) && finite(tau_.data(), n);
    return finish(ok ? SimStatus::ForwardDynamicsFailed : SimStatus::Diverged, t);
  };
  for (long k = 0; k < N; ++k) {
    const double t = grid.t[k];
    const double h = grid.t[k + 1] - t;
    // control update at t_k, then record the state and the torque applied from t_k on
    if (ctrl && (cont || grid.control[k]) &&
        !control(y, y + n, ref, cont ? (rk4 ? 3 * k : k) : row++))
      return finish(SimStatus::Diverged, t);
    std::copy(y, y + n, out.q + k * n);
    std::copy(y + n, y + 2 * n, out.qd + k * n);
    std::copy(tau_.data(), tau_.data() + n, out.tau + k * n);
    // one step; continuous control updates the torque before RK4 stages 1-3
    auto fd = [this](int, const double* q, const double* qd, double* qdd) {
      return forward(q, qd, qdd);
    };
    auto stage = [&](int s, double, const double* q, const double* qd) {
      return !(ctrl && cont) || control(q, qd, ref, 3 * k + (s + 1) / 2);
    };
    const StepStatus st = rk4 ? rk4_step(n, Z_.data(), tmp, h, fd, stage)
                              : euler_step(n, Z_.data(), h, fd);
    if (st == StepStatus::StageFailed) return finish(SimStatus::Diverged, t);
    if (st == StepStatus::ForwardFailed) return fd_failed(t);
    if (limits_.lower) joint_stops(n, y, y + n, limits_);
    if (!finite(y, 2 * n)) return finish(SimStatus::Diverged, grid.t[k + 1]);
    if (every > 0 && k % every == 0 && !progress(t)) return finish(SimStatus::Stopped, t);
  }
  // the last point: control update (if due) and record
  if (ctrl && (cont || grid.control[N]) &&
      !control(y, y + n, ref, cont ? (rk4 ? 3 * N : N) : row++))
    return finish(SimStatus::Diverged, grid.t[N]);
  std::copy(y, y + n, out.q + N * n);
  std::copy(y + n, y + 2 * n, out.qd + N * n);
  std::copy(tau_.data(), tau_.data() + n, out.tau + N * n);
  return finish(SimStatus::Ok, grid.t[N]);
}

}  // namespace robodyn
