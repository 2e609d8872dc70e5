// Force elements: translational and rotational spring-damper-actuators and wrenches on bodies,
// and the generalized force Q(q, qd) they apply, which forward dynamics adds to the joint
// forces: M qdd + h = tau + Q (Haug's "interactive forces", DASC eq. 3.22-3.37).
//
// - A translational spring-damper-actuator joins point P1 on body 1 to point P2 on body 2 (or
//   the world). With d = x2 - x1 (world), l = |d|, u = d / l and l' = u . (v2 - v1), its
//   tension (positive: the points pulled together) is
//       f = k(delta) delta + c(delta) l' + F,   delta = l - l0      (DASC eq. 3.27)
//   and its virtual work -f dl gives Q = f (J1 - J2)^T u, J the points' linear Jacobians.
//   Below kSpringMinLength the direction d / l is undefined; the element then uses the
//   direction of the relative velocity (the limit of d / l as the points separate, DASC eq.
//   3.26) with l' = |v2 - v1|, and when that is zero too it applies no force (u = 0).
// - A rotational spring-damper-actuator acts about one revolute (or along one prismatic)
//   joint: n = k(delta) delta + c(delta) theta' + N, delta = theta - theta0 (DASC eq. 3.35,
//   theta the joint coordinate, which counts whole turns), Q_joint = -n.
// - A wrench [moment; force] on a body at a point fixed to it, in world or body axes:
//   Q = Jw^T moment + Jv^T force (J the point's geometric Jacobian).
// k and c are constants or curves over the deflection delta (Curve); F, N and a wrench may be
// given per call (`external`: robodyn.forces evaluates a Python callable and passes the value).
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "robodyn/algorithms/kinematics.hpp"
#include "robodyn/model/data.hpp"
#include "robodyn/model/model.hpp"
#include "robodyn/spatial/joint.hpp"

namespace robodyn {

// below this distance (m) a translational element's direction is taken from the velocity
constexpr double kSpringMinLength = 1e-12;

// y(s) through knots x_0 < ... < x_m (m >= 1): the natural cubic spline with second
// derivatives M at the knots (all zero: the piecewise linear interpolant); y_0 below x_0 and
// y_m above x_m (held constant).
struct Curve {
  std::vector<double> x, y, M;

  // value and slope dy/ds at s (Press et al., Numerical Recipes 3.3.3 and 3.3.5)
  void eval(double s, double& value, double& slope) const {
    const int last = static_cast<int>(x.size()) - 1;
    if (s <= x[0] || s >= x[last]) {
      value = s <= x[0] ? y[0] : y[last];
      slope = 0.0;
      return;
    }
    const int i = static_cast<int>(std::upper_bound(x.begin(), x.end(), s) - x.begin()) - 1;
    const double h = x[i + 1] - x[i], A = (x[i + 1] - s) / h, B = 1.0 - A;
    value = A * y[i] + B * y[i + 1] + ((A * A * A - A) * M[i] + (B * B * B - B) * M[i + 1]) *
                                          h * h / 6.0;
    slope = (y[i + 1] - y[i]) / h +
            (-(3.0 * A * A - 1.0) * M[i] + (3.0 * B * B - 1.0) * M[i + 1]) * h / 6.0;
  }

  // the integral of y(s) s ds from 0 to a: the potential of a spring of stiffness y over its
  // deflection. Exact: 3-point Gauss-Legendre (exact to degree 5) on each piece between knots.
  double moment_integral(double a) const {
    const double lo = std::min(0.0, a), hi = std::max(0.0, a);
    double sum = 0.0, from = lo;
    auto piece = [&](double p, double q) {
      const double mid = 0.5 * (p + q), half = 0.5 * (q - p), r = std::sqrt(0.6) * half;
      const double nodes[3] = {mid - r, mid, mid + r}, weights[3] = {5.0, 8.0, 5.0};
      double v, dv;
      for (int k = 0; k < 3; ++k) {
        eval(nodes[k], v, dv);
        sum += weights[k] / 9.0 * half * v * nodes[k];
      }
    };
    for (const double knot : x)
      if (knot > from && knot < hi) {
        piece(from, knot);
        from = knot;
      }
    piece(from, hi);
    return a >= 0.0 ? sum : -sum;
  }
};

// a constant coefficient, or curve `curve` of the set over the deflection
struct Coefficient {
  double value = 0.0;
  int curve = -1;
};

struct TranslationalElement {
  int body1 = 0, body2 = 0;   // model bodies (0: the world)
  Vec3 p1, p2;                // the points in their bodies' internal frames (m)
  Coefficient k, c;           // stiffness (N/m) and damping (N s/m)
  double l0 = 0.0;            // rest length (m)
  double F = 0.0;             // constant actuator force (N), unless external
  bool external = false;      // F given per call
};

struct RotationalElement {
  int body = 1;               // the joint's body
  Coefficient k, c;           // stiffness (N m/rad or N/m) and damping
  double rest = 0.0;          // theta0 (rad or m)
  double N = 0.0;             // constant actuator torque (N m or N), unless external
  bool external = false;      // N given per call
};

struct WrenchElement {
  int body = 1;               // model body (not the world)
  Vec3 point;                 // where the force acts, body internal frame (m)
  bool world_axes = true;     // components in world axes (else the body's user frame: R_user)
  Mat3 R_user = Mat3::Identity();  // the user frame's axes in the body's internal frame
  Vec3 moment, force;         // constant wrench (N m, N), unless external
  bool external = false;      // the wrench given per call
};

struct ForceSet {
  std::vector<TranslationalElement> springs;
  std::vector<RotationalElement> rotational;
  std::vector<WrenchElement> wrenches;
  std::vector<Curve> curves;

  // k(delta) and its slope
  void coefficient(const Coefficient& k, double delta, double& value, double& slope) const {
    if (k.curve < 0) {
      value = k.value;
      slope = 0.0;
    } else {
      curves[k.curve].eval(delta, value, slope);
    }
  }
  // the potential of stiffness k at deflection delta: k delta^2 / 2 or the curve's integral
  double potential(const Coefficient& k, double delta) const {
    return k.curve < 0 ? 0.5 * k.value * delta * delta : curves[k.curve].moment_integral(delta);
  }
  bool empty() const { return springs.empty() && rotational.empty() && wrenches.empty(); }
};

// fn(c, ang, lin) for each velocity coordinate c moving body b: the body's angular velocity
// and the velocity of world point x fixed to it are the sums of ang qd[c] and lin qd[c].
// Needs the poses (update_kinematics level 3).
template <class Fn>
inline void for_point_columns(const Model& m, const Data& d, int b, const Vec3& x, Fn&& fn) {
  for (int j = b; j > 0; j = m.parent[j]) {
    const int c = m.iv[j];
    joint_axes_at<double>(m.type[j], d.world_R[j], d.world_p[j], x,
                          [&](int k, const Vec3& ang, const Vec3& lin) { fn(c + k, ang, lin); });
  }
}

// world position and velocity of point p (internal frame of body b; b = 0: the world)
inline void point_motion(const Model& m, const Data& d, int b, const Vec3& p, const double* qd,
                         Vec3& x, Vec3& v) {
  x = d.world_p[b] + d.world_R[b] * p;
  v.setZero();
  for_point_columns(m, d, b, x, [&](int c, const Vec3&, const Vec3& lin) { v += lin * qd[c]; });
}

// The state of a translational element: the points x1, x2, the unit vector u from x1 to x2
// (the fallback of the header when l < kSpringMinLength), l and l'.
struct SpringState {
  Vec3 x1, x2, u;
  double l = 0.0, ldot = 0.0;
};

inline SpringState spring_state(const Model& m, const Data& d, const TranslationalElement& e,
                                const double* qd) {
  SpringState s;
  Vec3 v1, v2;
  point_motion(m, d, e.body1, e.p1, qd, s.x1, v1);
  point_motion(m, d, e.body2, e.p2, qd, s.x2, v2);
  const Vec3 dx = s.x2 - s.x1, dv = v2 - v1;
  s.l = dx.norm();
  if (s.l >= kSpringMinLength) {
    s.u = dx / s.l;
    s.ldot = s.u.dot(dv);
  } else {
    const double w = dv.norm();
    s.u = w > 0.0 ? Vec3(dv / w) : Vec3::Zero();
    s.ldot = w;
  }
  return s;
}

// f = k(delta) delta + c(delta) rate + F at deflection delta; with dx and drate, also
// df/ddelta and df/drate (the actuator held)
inline double element_force(const ForceSet& set, const Coefficient& kc, const Coefficient& cc,
                            double delta, double rate, double F, double* dx = nullptr,
                            double* drate = nullptr) {
  double k, dk, c, dc;
  set.coefficient(kc, delta, k, dk);
  set.coefficient(cc, delta, c, dc);
  if (dx) *dx = dk * delta + k + dc * rate;
  if (drate) *drate = c;
  return k * delta + c * rate + F;
}

// tension f (N) of translational element e in state s, with actuator force F
inline double spring_tension(const ForceSet& set, const TranslationalElement& e,
                             const SpringState& s, double F) {
  return element_force(set, e.k, e.c, s.l - e.l0, s.ldot, F);
}

// torque n of rotational element e at joint coordinate theta and rate thetad, actuator N
inline double rotational_torque(const ForceSet& set, const RotationalElement& e, double theta,
                                double thetad, double N) {
  return element_force(set, e.k, e.c, theta - e.rest, thetad, N);
}

// Q (nv,) = the generalized force of every element at (q, qd), written (not added).
// F (springs,), N (rotational,), W (wrenches, 6): the per-call values of the external
// elements (read only for them; null when there is none). Uses d's pose cache.
inline void generalized_forces(const Model& m, const ForceSet& set, Data& d, const double* q,
                               const double* qd, const double* F, const double* N,
                               const double* W, double* Q) {
  std::fill(Q, Q + m.nv, 0.0);
  if (set.empty()) return;
  update_kinematics(m, d, q, 3);
  // translational: Q += f (J1 - J2)^T u
  for (size_t i = 0; i < set.springs.size(); ++i) {
    const TranslationalElement& e = set.springs[i];
    const SpringState s = spring_state(m, d, e, qd);
    const Vec3 fu = spring_tension(set, e, s, e.external && F ? F[i] : e.F) * s.u;
    for_point_columns(m, d, e.body1, s.x1,
                      [&](int c, const Vec3&, const Vec3& lin) { Q[c] += lin.dot(fu); });
    for_point_columns(m, d, e.body2, s.x2,
                      [&](int c, const Vec3&, const Vec3& lin) { Q[c] -= lin.dot(fu); });
  }
  // rotational: Q_joint -= n
  for (size_t i = 0; i < set.rotational.size(); ++i) {
    const RotationalElement& e = set.rotational[i];
    const int c = m.iv[e.body];
    Q[c] -= rotational_torque(set, e, q[m.iq[e.body]], qd[c], e.external && N ? N[i] : e.N);
  }
  // wrenches: Q += Jw^T moment + Jv^T force (world axes)
  for (size_t i = 0; i < set.wrenches.size(); ++i) {
    const WrenchElement& e = set.wrenches[i];
    const bool w = e.external && W;
    Vec3 mo = w ? Vec3(W[6 * i], W[6 * i + 1], W[6 * i + 2]) : e.moment;
    Vec3 fo = w ? Vec3(W[6 * i + 3], W[6 * i + 4], W[6 * i + 5]) : e.force;
    if (!e.world_axes) {
      const Mat3 R = d.world_R[e.body] * e.R_user;
      mo = R * mo;
      fo = R * fo;
    }
    const Vec3 x = d.world_p[e.body] + d.world_R[e.body] * e.point;
    for_point_columns(m, d, e.body, x, [&](int c, const Vec3& ang, const Vec3& lin) {
      Q[c] += ang.dot(mo) + lin.dot(fo);
    });
  }
}

// The potential energy of the elements' stiffness at q (J): sum of k delta^2 / 2 (or the
// curve's integral of k(s) s ds); dampers, actuators and wrenches have none.
inline double force_potential(const Model& m, const ForceSet& set, Data& d, const double* q) {
  if (set.springs.empty() && set.rotational.empty()) return 0.0;
  update_kinematics(m, d, q, 3);
  double V = 0.0;
  for (const TranslationalElement& e : set.springs) {
    const Vec3 x1 = d.world_p[e.body1] + d.world_R[e.body1] * e.p1;
    const Vec3 x2 = d.world_p[e.body2] + d.world_R[e.body2] * e.p2;
    V += set.potential(e.k, (x2 - x1).norm() - e.l0);
  }
  for (const RotationalElement& e : set.rotational)
    V += set.potential(e.k, q[m.iq[e.body]] - e.rest);
  return V;
}

}  // namespace robodyn
