// Per-configuration cache, forward kinematics, geometric Jacobian and energies.
#pragma once

#include <cmath>

#include "robodyn/data.hpp"
#include "robodyn/joint.hpp"
#include "robodyn/link.hpp"
#include "robodyn/model.hpp"
#include "robodyn/spatial.hpp"

namespace robodyn {

namespace detail {
using std::cos;
using std::sin;

// sin and cos of one angle (one libm call for double)
template <class S>
inline void sin_cos(const S& x, S& s, S& c) {
  s = sin(x);
  c = cos(x);
}
// For double: reduction by pi/2 in three parts (Cody & Waite; the first two parts have 33
// bits, so k P1 and k P2 are exact for |k| < 2^20) and fdlibm's minimax kernels on
// [-pi/4, pi/4]: within 2 ulp of libm on |x| <= 1e5 (tests/test_cache.py), about a third of
// the cost of ::sincos. Larger |x|, infinities and NaN go to libm; +-0 returns (+-0, 1). The
// rounding trick below assumes SSE2 double arithmetic (x86-64, aarch64), not x87 extended
// precision.
inline void sin_cos(const double& x, double& s, double& c) {
  if (!(std::abs(x) <= 1e5)) {
    ::sincos(x, &s, &c);
    return;
  }
  if (x == 0) {
    s = x;
    c = 1;
    return;
  }
  constexpr double kRound = 6755399441055744.0;  // 1.5 * 2^52: adding it rounds to integer
  const double k = (x * 0.63661977236758134308 + kRound) - kRound;
  const double r = ((x - k * 1.57079632673412561417e+00) - k * 6.07710050630396597660e-11) -
                   k * 2.02226624879595063154e-21;
  const double z = r * r;
  const double sr =
      r + r * z *
              (-1.66666666666666324348e-01 +
               z * (8.33333333332248946124e-03 +
                    z * (-1.98412698298579493134e-04 +
                         z * (2.75573137070700676789e-06 +
                              z * (-2.50507602534068634195e-08 + z * 1.58969099521155010221e-10)))));
  const double cp =
      z * (4.16666666666666019037e-02 +
           z * (-1.38888888888741095749e-03 +
                z * (2.48015872894767294178e-05 +
                     z * (-2.75573143513906633035e-07 +
                          z * (2.08757232129817482790e-09 + z * -1.13596475577881948265e-11)))));
  const double hz = 0.5 * z, w = 1.0 - hz;
  const double cr = w + (((1.0 - w) - hz) + z * cp);
  switch (static_cast<long>(k) & 3) {
    case 0: s = sr; c = cr; break;
    case 1: s = cr; c = -sr; break;
    case 2: s = -sr; c = -cr; break;
    default: s = -cr; c = sr; break;
  }
}

// true when the cache holds exactly this q (bitwise equal values)
template <class S>
inline bool same_q(const DataTpl<S>& d, const S* q) {
  for (int i = 0; i < d.nq; ++i)
    if (!(d.q_key[i] == q[i])) return false;
  return true;
}
}  // namespace detail

// Makes sin/cos and translations (level 1), rotations (level 2) or base-to-body poses (level 3)
// valid for q, reusing what Data already holds for the same q. d.r[i] is valid for every joint
// kind at level >= 1 (a revolute joint's r = pc is written when the Data is made).
template <class S>
void update_kinematics(const Model& m, DataTpl<S>& d, const S* q, int level) {
  if (d.level > 0 && detail::same_q(d, q)) {
    if (d.level >= level) {
      ++d.cache_hits;
      return;
    }
  } else {
    ++d.cache_misses;
    for (int i = 0; i < m.nq; ++i) d.q_key[i] = q[i];
    // level 1: sin/cos of revolute angles, translations of prismatic joints (3 mul each), a
    // free-flyer's whole transform
    for (int i = 1; i <= m.n; ++i) {
      const S* qi = q + m.iq[i];
      if (m.type[i] == JointType::Revolute) {
        if (m.qoff[i] != 0)
          detail::sin_cos(S(qi[0] + S(m.qoff[i])), d.s[i], d.c[i]);
        else
          detail::sin_cos(qi[0], d.s[i], d.c[i]);
      } else if (m.type[i] == JointType::Prismatic) {
        V3T<S> z(S(0), S(0), qi[0]);
        d.r[i] = m.pc[i].template cast<S>() + rotc(m.Rc[i], z);
      } else {
        // (Rc, pc) (R(quat), p): E = Rc R, r = pc + Rc p
        const M3T<S> Rc = m.Rc[i].R.template cast<S>();
        d.E[i] = Rc * quaternion_matrix<S>(qi + 3);
        d.r[i] = m.pc[i].template cast<S>() + Rc * V3T<S>(qi[0], qi[1], qi[2]);
      }
    }
    d.level = 1;
  }
  if (level >= 2 && d.level < 2) {
    // level 2: E_i = Rc Rz(q)
    for (int i = 1; i <= m.n; ++i) {
      const M3T<S> Rc = m.Rc[i].R.template cast<S>();
      if (m.type[i] == JointType::Revolute) {
        d.E[i].col(0) = Rc.col(0) * d.c[i] + Rc.col(1) * d.s[i];
        d.E[i].col(1) = Rc.col(1) * d.c[i] - Rc.col(0) * d.s[i];
        d.E[i].col(2) = Rc.col(2);
      } else if (m.type[i] == JointType::Prismatic) {
        d.E[i] = Rc;
      }
    }
    d.level = 2;
  }
  if (level >= 3 && d.level < 3) {
    // level 3: base-to-body poses
    for (int i = 1; i <= m.n; ++i) {
      const int p = m.parent[i];
      d.oR[i] = d.oR[p] * d.E[i];
      d.op[i] = d.op[p] + d.oR[p] * d.r[i];
    }
    d.level = 3;
  }
}

// Poses of the user frames (bodies, then extra frames) in the base frame.
// out: (n_frames, 4, 4) row-major homogeneous transforms.
template <class S>
void forward_kinematics(const Model& m, DataTpl<S>& d, const S* q, S* out) {
  update_kinematics(m, d, q, 3);
  const int nf = static_cast<int>(m.frame_body.size());
  for (int f = 0; f < nf; ++f) {
    const int b = m.frame_body[f];
    const M3T<S> R = d.oR[b] * m.frame_R[f].template cast<S>();
    const V3T<S> p = d.op[b] + d.oR[b] * m.frame_p[f].template cast<S>();
    S* T = out + 16 * f;
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) T[4 * i + j] = R(i, j);
      T[4 * i + 3] = p[i];
    }
    T[12] = S(0);
    T[13] = S(0);
    T[14] = S(0);
    T[15] = S(1);
  }
}

// Geometric Jacobian of the origin of user frame f, [angular; linear] in base-frame (world)
// axes. out: (6, nv) row-major. A free-flyer's six columns: its angular velocity turns the
// frame about the body origin, its linear velocity moves it (both in body axes).
template <class S>
void jacobian(const Model& m, DataTpl<S>& d, const S* q, int f, S* out) {
  update_kinematics(m, d, q, 3);
  const int nv = m.nv;
  for (int k = 0; k < 6 * nv; ++k) out[k] = S(0);
  const int b = m.frame_body[f];
  const V3T<S> p = d.op[b] + d.oR[b] * m.frame_p[f].template cast<S>();
  auto column = [&](int c, const V3T<S>& ang, const V3T<S>& lin) {
    for (int k = 0; k < 3; ++k) {
      out[k * nv + c] = ang[k];
      out[(k + 3) * nv + c] = lin[k];
    }
  };
  const V3T<S> zero(S(0), S(0), S(0));
  for (int j = b; j > 0; j = m.parent[j]) {
    const int c = m.iv[j];
    switch (m.type[j]) {
      case JointType::Revolute: {
        const V3T<S> z = d.oR[j].col(2);
        column(c, z, cross<S>(z, V3T<S>(p - d.op[j])));
        break;
      }
      case JointType::Prismatic: column(c, zero, d.oR[j].col(2)); break;
      case JointType::FreeFlyer:
        for (int k = 0; k < 3; ++k) {
          const V3T<S> e = d.oR[j].col(k);
          column(c + k, e, cross<S>(e, V3T<S>(p - d.op[j])));
          column(c + 3 + k, zero, e);
        }
        break;
    }
  }
}

// Kinetic energy 0.5 qd' M(q) qd, rotor inertia (armature) included.
template <class S>
S kinetic_energy(const Model& m, DataTpl<S>& d, const S* q, const S* qd) {
  update_kinematics(m, d, q, 1);
  S T(0);
  for (int i = 1; i <= m.n; ++i) {
    // body velocity from the parent's
    V3T<S> w, v;
    Xup<S>(m, d, i).apply(d.w[m.parent[i]], d.vl[m.parent[i]], w, v);
    add_joint_motion(m.type[i], qd + m.iv[i], w, v);
    d.w[i] = w;
    d.vl[i] = v;
    // 0.5 v' I v with I = (m, h, Ibar)
    const V3T<S> hv = m.h[i].template cast<S>();
    T += S(0.5) * (w.dot(sym_mul<S>(m.Ibar[i], w)) + S(m.mass[i]) * v.dot(v)) +
         w.dot(cross<S>(hv, v));
    if (m.armature[i] != 0) {
      const S u = qd[m.iv[i]];
      T += S(0.5 * m.armature[i]) * u * u;
    }
  }
  return T;
}

// Gravity potential energy -sum_i m_i g . c_i (zero at the base origin).
template <class S>
S potential_energy(const Model& m, DataTpl<S>& d, const S* q) {
  update_kinematics(m, d, q, 3);
  const V3T<S> g = m.gravity.template cast<S>();
  S V(0);
  for (int i = 1; i <= m.n; ++i) {
    const V3T<S> mc = S(m.mass[i]) * d.op[i] + d.oR[i] * m.h[i].template cast<S>();
    V -= g.dot(mc);
  }
  return V;
}

}  // namespace robodyn
