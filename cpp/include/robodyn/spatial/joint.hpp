// The joint kinds (revolute, prismatic, free-flyer), written once: the motion subspace S (S qd
// and S' f), the joint terms (armature, damping, friction), and the configuration space of each
// kind (integrate, difference: the free-flyer on SE(3), the others on the line).
//
// Free-flyer coordinates: q = (p, quat) with p the body origin in the parent frame and quat =
// (x, y, z, w) a unit quaternion, the body's orientation; v = (w, v) the body's angular
// velocity and the velocity of its origin, both in body axes; its S is the 6x6 identity.
#pragma once

#include <Eigen/Geometry>
#include <cmath>

#include "robodyn/model/model.hpp"
#include "robodyn/scalar/simd.hpp"
#include "robodyn/spatial/spatial.hpp"

namespace robodyn {

// The rotation matrix of the quaternion (x, y, z, w) = xyzw[0..3], normalised first.
template <class S>
inline M3T<S> quaternion_matrix(const S* xyzw) {
  using std::sqrt;
  const S n2 = xyzw[0] * xyzw[0] + xyzw[1] * xyzw[1] + xyzw[2] * xyzw[2] + xyzw[3] * xyzw[3];
  const S k = S(1) / sqrt(n2);
  const S x = xyzw[0] * k, y = xyzw[1] * k, z = xyzw[2] * k, w = xyzw[3] * k;
  const S xx = x * x, yy = y * y, zz = z * z, xy = x * y, xz = x * z, yz = y * z;
  const S wx = w * x, wy = w * y, wz = w * z;
  M3T<S> R;
  R << S(1) - S(2) * (yy + zz), S(2) * (xy - wz), S(2) * (xz + wy),
       S(2) * (xy + wz), S(1) - S(2) * (xx + zz), S(2) * (yz - wx),
       S(2) * (xz - wy), S(2) * (yz + wx), S(1) - S(2) * (xx + yy);
  return R;
}

namespace detail {
// sign(x) as -1, 0, +1 (Coulomb friction is zero at rest)
template <class S>
inline S signum(const S& x) {
  return x > S(0) ? S(1) : (x < S(0) ? S(-1) : S(0));
}
}  // namespace detail

// The joint terms of body i's 1-DOF joint, written once here: the rotor inertia (armature), its
// viscous damping and Coulomb friction, tau_J = armature qdd + damping qd + friction sign(qd)
// (a free-flyer's are 0). The algorithms call these and nothing else for them.

// t += sign * (damping qd + friction sign(qd)), one term at a time (kSign +1 or -1): the
// velocity-dependent joint force (double multiplies a zero damping: cheaper than the branch,
// the same value)
template <int kSign, class S>
ROBODYN_INLINE void add_joint_friction(const Model& m, int i, const S& qd, S& t) {
  if (!kSkipZeros<S> || m.damping[i] != 0) {
    if (kSign > 0)
      t += S(m.damping[i]) * qd;
    else
      t -= S(m.damping[i]) * qd;
  }
  if (m.friction[i] != 0) {
    if (kSign > 0)
      t += S(m.friction[i]) * detail::signum(qd);
    else
      t -= S(m.friction[i]) * detail::signum(qd);
  }
}

// x += d(damping qd + friction sign(qd))/dqd = damping (away from qd = 0)
template <class S>
ROBODYN_INLINE void add_joint_friction_rate(const Model& m, int i, S& x) {
  if (m.damping[i] != 0) x += S(m.damping[i]);
}

// x += armature: the joint's rotor inertia on its diagonal entry of the joint-space inertia
template <class S>
ROBODYN_INLINE void add_armature(const Model& m, int i, S& x) {
  if (m.armature[i] != 0) x += S(m.armature[i]);
}

// the rotor's kinetic energy armature qd^2 / 2 (0 without armature)
template <class S>
ROBODYN_INLINE S armature_energy(const Model& m, int i, const S& qd) {
  if (m.armature[i] == 0) return S(0);
  return S(0.5 * m.armature[i]) * qd * qd;
}

// t += tau_J of body i's 1-DOF joint: armature qdd (kAcc) + damping qd + friction sign(qd);
// qd, qdd (nv,)
template <bool kAcc, class S>
ROBODYN_INLINE void add_joint_terms(const Model& m, int i, const S* qd, const S* qdd, S& t) {
  const int k = m.iv[i];
  // (double multiplies a zero armature: cheaper than the branch, the same value)
  if (kAcc && (!kSkipZeros<S> || m.armature[i] != 0)) t += S(m.armature[i]) * qdd[k];
  add_joint_friction<+1, S>(m, i, qd[k], t);
}

// The right-hand side of forward dynamics, in place: rhs = tau - rhs - damping qd - friction
// sign(qd), with the bias torques in rhs on entry (armature belongs to the inertia, not here).
// qd, tau, rhs (nv,); rhs may be neither qd nor tau.
template <class S>
ROBODYN_INLINE void forward_dynamics_rhs(const Model& m, const S* qd, const S* tau, S* rhs) {
  for (int i = 1; i <= m.n; ++i)
    for (int k = m.iv[i]; k < m.iv[i] + joint_nv(m.type[i]); ++k) {
      S r = tau[k] - rhs[k];
      add_joint_friction<-1, S>(m, i, qd[k], r);
      rhs[k] = r;
    }
}

// The joint's part of Newton-Euler's classical accelerations (rnea.hpp): with (w, wd, a) the
// parent's angular velocity, angular acceleration and classical origin acceleration seen from
// body i (E^T w_p, E^T wd_p, E^T (a'_p + W_p r)), the joint velocity (wJ, vJ) = S qd and
// acceleration (wJd, vJd) = S qdd (kAcc; else 0):
//   wd += w x wJ + wJd,  a += 2 w x vJ + wJ x vJ + vJd,  w += wJ
// moving_parent = false: the parent is the world (w = 0), its terms skipped.
template <bool kAcc, class S>
ROBODYN_INLINE void add_joint_classical(JointType t, bool moving_parent, const S* qd,
                                        const S* qdd, V3T<S>& w, V3T<S>& wd, V3T<S>& a) {
  switch (t) {
    case JointType::Revolute:
      if (moving_parent) {
        // w x z u: 2 mul, 2 add
        wd[0] += w[1] * qd[0];
        wd[1] -= w[0] * qd[0];
      }
      w[2] += qd[0];
      if (kAcc) wd[2] += qdd[0];
      break;
    case JointType::Prismatic:
      if (moving_parent) {
        // Coriolis term 2 w x z u of a sliding joint
        const S u2 = qd[0] + qd[0];
        a[0] += w[1] * u2;
        a[1] -= w[0] * u2;
      }
      if (kAcc) a[2] += qdd[0];
      break;
    case JointType::FreeFlyer: {
      const V3T<S> wJ(qd[0], qd[1], qd[2]), vJ(qd[3], qd[4], qd[5]);
      if (moving_parent) {
        wd += cross<S>(w, wJ);
        a += S(2) * cross<S>(w, vJ);
      }
      a += cross<S>(wJ, vJ);
      if (kAcc) {
        wd += V3T<S>(qdd[0], qdd[1], qdd[2]);
        a += V3T<S>(qdd[3], qdd[4], qdd[5]);
      }
      w += wJ;
      break;
    }
  }
}

// (w, v) += S x for body i's joint velocity (or acceleration) x = qd + iv[i]
template <class S>
ROBODYN_INLINE void add_joint_motion(JointType t, const S* x, V3T<S>& w, V3T<S>& v) {
  switch (t) {
    case JointType::Revolute: w[2] += x[0]; break;
    case JointType::Prismatic: v[2] += x[0]; break;
    case JointType::FreeFlyer:
      w += V3T<S>(x[0], x[1], x[2]);
      v += V3T<S>(x[3], x[4], x[5]);
      break;
  }
}

// out = S^T (n, f): the generalized force of a body force on body i's joint
template <class S>
ROBODYN_INLINE void joint_force(JointType t, const V3T<S>& n, const V3T<S>& f, S* out) {
  switch (t) {
    case JointType::Revolute: out[0] = n[2]; break;
    case JointType::Prismatic: out[0] = f[2]; break;
    case JointType::FreeFlyer:
      for (int k = 0; k < 3; ++k) {
        out[k] = n[k];
        out[3 + k] = f[k];
      }
      break;
  }
}

// The columns of body i's motion subspace S in base coordinates (spatial [angular; linear]
// about the base origin) for the body pose (R, o) in the base frame: joint_nv(t) of them into
// s. A revolute joint turns about the body's z axis through o, a prismatic one slides along
// it; a free-flyer's six are the body's axes (three turning about them through o, then three
// sliding along them).
template <class S>
ROBODYN_INLINE void joint_axes_world(JointType t, const M3T<S>& R, const V3T<S>& o,
                                     Eigen::Matrix<S, 6, 1>* s) {
  switch (t) {
    case JointType::Revolute: {
      const V3T<S> z = R.col(2);
      s[0] << z, cross<S>(o, z);
      break;
    }
    case JointType::Prismatic: s[0] << V3T<S>::Zero(), V3T<S>(R.col(2)); break;
    case JointType::FreeFlyer:
      for (int k = 0; k < 3; ++k) {
        const V3T<S> e = R.col(k);
        s[k] << e, cross<S>(o, e);
        s[3 + k] << V3T<S>::Zero(), e;
      }
      break;
  }
}

// The same columns with the linear half taken at the base-frame point x instead of the base
// origin (the velocity of the body's point at x): fn(k, ang, lin) for k < joint_nv(t). The
// one conversion of S to a point of the world: a frame's Jacobian (kinematics.hpp) and the
// force elements' points (forces.hpp).
template <class S, class Fn>
ROBODYN_INLINE void joint_axes_at(JointType t, const M3T<S>& R, const V3T<S>& o,
                                  const V3T<S>& x, Fn&& fn) {
  const V3T<S> zero(S(0), S(0), S(0));
  switch (t) {
    case JointType::Revolute: {
      const V3T<S> z = R.col(2);
      fn(0, z, cross<S>(z, V3T<S>(x - o)));
      break;
    }
    case JointType::Prismatic: fn(0, zero, V3T<S>(R.col(2))); break;
    case JointType::FreeFlyer: {
      const V3T<S> r = x - o;
      for (int k = 0; k < 3; ++k) {
        const V3T<S> e = R.col(k);
        fn(k, e, cross<S>(e, r));
        fn(3 + k, zero, e);
      }
      break;
    }
  }
}

namespace detail {

// exp of the rotation vector phi as a unit quaternion (x, y, z, w)
inline Eigen::Vector4d quat_exp(const Vec3& phi) {
  const double t = phi.norm(), h = 0.5 * t;
  // sin(t/2)/t: series below 1e-4 (error < 1e-18)
  const double k = t < 1e-4 ? 0.5 - t * t / 48.0 : std::sin(h) / t;
  return Eigen::Vector4d(k * phi[0], k * phi[1], k * phi[2], std::cos(h));
}

// Hamilton product a b of quaternions (x, y, z, w)
inline Eigen::Vector4d quat_mul(const Eigen::Vector4d& a, const Eigen::Vector4d& b) {
  const Vec3 va = a.head<3>(), vb = b.head<3>();
  Eigen::Vector4d r;
  r.head<3>() = a[3] * vb + b[3] * va + va.cross(vb);
  r[3] = a[3] * b[3] - va.dot(vb);
  return r;
}

// the rotation vector of a unit quaternion (the shorter of q and -q)
inline Vec3 quat_log(Eigen::Vector4d q) {
  if (q[3] < 0) q = -q;
  const Vec3 u = q.head<3>();
  const double s = u.norm();
  const double t = 2 * std::atan2(s, q[3]);
  // t / sin(t/2): series below 1e-4
  const double k = s < 1e-4 ? 2.0 / q[3] * (1 - s * s / (3 * q[3] * q[3])) : t / s;
  return k * u;
}

// V(phi): the left Jacobian of SO(3), the translation part of exp on SE(3): exp(rho, phi) has
// translation V rho. V = 1 + b [phi] + c [phi]^2, b = (1 - cos t)/t^2, c = (t - sin t)/t^3.
inline Mat3 se3_V(const Vec3& phi) {
  const double t2 = phi.squaredNorm(), t = std::sqrt(t2);
  double b, c;
  if (t < 1e-3) {
    b = 0.5 - t2 / 24.0 + t2 * t2 / 720.0;
    c = 1.0 / 6.0 - t2 / 120.0 + t2 * t2 / 5040.0;
  } else {
    b = (1 - std::cos(t)) / t2;
    c = (t - std::sin(t)) / (t2 * t);
  }
  Mat3 K;
  K << 0, -phi[2], phi[1], phi[2], 0, -phi[0], -phi[1], phi[0], 0;
  return Mat3::Identity() + b * K + c * K * K;
}

// V(phi)^-1 = 1 - [phi]/2 + e [phi]^2, e = (1 - t sin t / (2 (1 - cos t))) / t^2
inline Mat3 se3_Vinv(const Vec3& phi) {
  const double t2 = phi.squaredNorm(), t = std::sqrt(t2);
  const double e = t < 1e-3 ? 1.0 / 12.0 + t2 / 720.0 + t2 * t2 / 30240.0
                            : (1 - t * std::sin(t) / (2 * (1 - std::cos(t)))) / t2;
  Mat3 K;
  K << 0, -phi[2], phi[1], phi[2], 0, -phi[0], -phi[1], phi[0], 0;
  return Mat3::Identity() - 0.5 * K + e * K * K;
}

}  // namespace detail

// q1 = q0 moved with the constant velocity v for dt: q0 (nq,), v (nv,), q1 (nq,) (may alias
// q0). A free-flyer moves on SE(3) with its body twist: pose1 = pose0 exp(dt (w, v)), the
// quaternion renormalised; the other joints q + dt v.
inline void integrate(const Model& m, const double* q0, const double* v, double dt,
                      double* q1) {
  for (int i = 1; i <= m.n; ++i) {
    const double* qi = q0 + m.iq[i];
    const double* vi = v + m.iv[i];
    double* qo = q1 + m.iq[i];
    if (m.type[i] != JointType::FreeFlyer) {
      qo[0] = qi[0] + dt * vi[0];
      continue;
    }
    Eigen::Vector4d quat(qi[3], qi[4], qi[5], qi[6]);
    quat /= quat.norm();
    const Vec3 phi = dt * Vec3(vi[0], vi[1], vi[2]);
    const Vec3 rho = dt * Vec3(vi[3], vi[4], vi[5]);
    const double* pq = quat.data();
    const Vec3 dp = quaternion_matrix<double>(pq) * (detail::se3_V(phi) * rho);
    Eigen::Vector4d out = detail::quat_mul(quat, detail::quat_exp(phi));
    out /= out.norm();
    for (int k = 0; k < 3; ++k) qo[k] = qi[k] + dp[k];
    for (int k = 0; k < 4; ++k) qo[3 + k] = out[k];
  }
}

// v (nv,) with integrate(q0, v, 1) = q1: q0, q1 (nq,). A free-flyer's block is the body twist
// log(pose0^-1 pose1) (rotation by less than pi: the shorter of the two quaternion signs).
inline void difference(const Model& m, const double* q0, const double* q1, double* v) {
  for (int i = 1; i <= m.n; ++i) {
    const double* a = q0 + m.iq[i];
    const double* b = q1 + m.iq[i];
    double* vo = v + m.iv[i];
    if (m.type[i] != JointType::FreeFlyer) {
      vo[0] = b[0] - a[0];
      continue;
    }
    Eigen::Vector4d qa(a[3], a[4], a[5], a[6]), qb(b[3], b[4], b[5], b[6]);
    qa /= qa.norm();
    qb /= qb.norm();
    const Eigen::Vector4d qa_inv(-qa[0], -qa[1], -qa[2], qa[3]);
    const Vec3 phi = detail::quat_log(detail::quat_mul(qa_inv, qb));
    const Vec3 dp = quaternion_matrix<double>(qa.data()).transpose() *
                    Vec3(b[0] - a[0], b[1] - a[1], b[2] - a[2]);
    const Vec3 rho = detail::se3_Vinv(phi) * dp;
    for (int k = 0; k < 3; ++k) {
      vo[k] = phi[k];
      vo[3 + k] = rho[k];
    }
  }
}

}  // namespace robodyn
