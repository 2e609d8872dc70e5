// The joint-space control laws of robodyn.control, their measurement model and torque
// saturation, written once.
//
// Every layer runs these functions: the C++ simulation loop (simulate.hpp) with the controller
// model's algorithms, and the Python controllers (robodyn.control, hence the Python loop of
// robodyn.simulate and the ROS 2 node) through _core._control_law, _core._measure and
// _core._saturate with the robot's methods as the inverse-dynamics and gravity callables. So
// the Python and C++ loops perform the same floating-point operations in the same order.
//
// With e = q_ref - q and edot = qd_ref - qd (all (n,) arrays):
//   ComputedTorque  tau = ID(q, qd, qdd_ref + kp e + kd edot)
//   PDGravity       tau = kp e + kd edot + g(q)
//   Feedforward     tau = ID(q_ref, qd_ref, qdd_ref) [+ kp e + kd edot]
// kp e + kd edot is evaluated as (kp e) + (kd edot). Nothing here allocates. The inputs are
// finite: the boundaries check them (the bindings _control_law and _measure, and
// _simulate_fixed for the whole reference; a ValueError naming the argument), not the laws.
#pragma once

#include <algorithm>
#include <cmath>

namespace robodyn {

enum class ControlLaw : unsigned char { None, ComputedTorque, PDGravity, Feedforward };

// The gains of a law: (n,) arrays, kp in 1/s^2 and kd in 1/s for ComputedTorque, torque per
// rad (m) and per rad/s (m/s) for the others.
struct ControlGains {
  const double* kp = nullptr;
  const double* kd = nullptr;
  bool feedback = true;  // Feedforward only: add kp e + kd edot
};

// out = kp (q_ref - q) + kd (qd_ref - qd)
inline void pd_terms(int n, const ControlGains& k, const double* q, const double* qd,
                     const double* q_ref, const double* qd_ref, double* out) {
  for (int i = 0; i < n; ++i)
    out[i] = k.kp[i] * (q_ref[i] - q[i]) + k.kd[i] * (qd_ref[i] - qd[i]);
}

// tau = law(q, qd; q_ref, qd_ref, qdd_ref), with the controller model's inverse dynamics
// id(q, qd, qdd, tau) and gravity torques gravity(q, g). v and g are (n,) scratch: v holds the
// commanded acceleration (ComputedTorque) or the feedback torque (Feedforward), g the gravity
// torques (PDGravity). id and gravity are called only with these pointers (a caller may map
// them back to its own arrays).
template <class Id, class Gravity>
void control_law(ControlLaw law, int n, const ControlGains& k, const double* q,
                 const double* qd, const double* q_ref, const double* qd_ref,
                 const double* qdd_ref, double* tau, double* v, double* g, Id&& id,
                 Gravity&& gravity) {
  switch (law) {
    case ControlLaw::ComputedTorque:
      // commanded acceleration, then one inverse-dynamics call
      pd_terms(n, k, q, qd, q_ref, qd_ref, v);
      for (int i = 0; i < n; ++i) v[i] += qdd_ref[i];
      id(q, qd, v, tau);
      break;
    case ControlLaw::PDGravity:
      pd_terms(n, k, q, qd, q_ref, qd_ref, tau);
      gravity(q, g);
      for (int i = 0; i < n; ++i) tau[i] += g[i];
      break;
    case ControlLaw::Feedforward:
      // the model's torque along the reference, plus the optional feedback
      id(q_ref, qd_ref, qdd_ref, tau);
      if (k.feedback) {
        pd_terms(n, k, q, qd, q_ref, qd_ref, v);
        for (int i = 0; i < n; ++i) tau[i] += v[i];
      }
      break;
    case ControlLaw::None:
      break;
  }
}

// The measurement the law sees at control call number `call`: this call's sample (q +
// noise_q, qd + noise_qd; a null noise pointer adds nothing) goes into slot call % (delay + 1)
// of `ring` ((delay + 1, 2, n): rows q, qd), and the slot of the call `delay` calls earlier
// (the first call's before that) is returned: its q at [0, n), its qd at [n, 2n).
inline long measure(int n, double* ring, int delay, long call, const double* q,
                    const double* qd, const double* noise_q, const double* noise_qd) {
  const long slots = static_cast<long>(delay) + 1;
  double* slot = ring + (call % slots) * 2 * n;
  for (int i = 0; i < n; ++i) {
    slot[i] = q[i];
    slot[n + i] = qd[i];
  }
  if (noise_q)
    for (int i = 0; i < n; ++i) slot[i] += noise_q[i];
  if (noise_qd)
    for (int i = 0; i < n; ++i) slot[n + i] += noise_qd[i];
  return std::max(call - delay, 0L) % slots;
}

// Clips tau to [-limit, limit] (limit (n,), +inf: no bound); true if any joint was beyond its
// bound. A NaN torque stays NaN.
inline bool saturate(int n, double* tau, const double* limit) {
  bool over = false;
  for (int i = 0; i < n; ++i) over = over || std::abs(tau[i]) > limit[i];
  if (over)
    for (int i = 0; i < n; ++i) tau[i] = std::max(std::min(tau[i], limit[i]), -limit[i]);
  return over;
}

}  // namespace robodyn
