// Per-configuration cache, forward kinematics, geometric Jacobian and energies.
#pragma once

#include <algorithm>
#include <cmath>
#include <type_traits>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "robodyn/model/data.hpp"
#include "robodyn/model/model.hpp"
#include "robodyn/scalar/simd.hpp"
#include "robodyn/spatial/joint.hpp"
#include "robodyn/spatial/link.hpp"
#include "robodyn/spatial/spatial.hpp"

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
// The constants of sin_cos's reduction and kernels, shared by the one- and two-angle versions
// (the same constants in the same order of operations: the same bits)
struct SinCosKernel {
  static constexpr double kRound = 6755399441055744.0;  // 1.5 * 2^52: adding it rounds
  static constexpr double kTwoOverPi = 0.63661977236758134308;
  // pi/2 in three parts
  static constexpr double kPio2[3] = {1.57079632673412561417e+00, 6.07710050630396597660e-11,
                                      2.02226624879595063154e-21};
  // sin r = r + r z (kSin[0] + z (kSin[1] + ...)), z = r^2
  static constexpr double kSin[6] = {-1.66666666666666324348e-01, 8.33333333332248946124e-03,
                                     -1.98412698298579493134e-04, 2.75573137070700676789e-06,
                                     -2.50507602534068634195e-08, 1.58969099521155010221e-10};
  // cos r = 1 - z/2 + z cp, cp = z (kCos[0] + z (kCos[1] + ...))
  static constexpr double kCos[6] = {4.16666666666666019037e-02, -1.38888888888741095749e-03,
                                     2.48015872894767294178e-05, -2.75573143513906633035e-07,
                                     2.08757232129817482790e-09, -1.13596475577881948265e-11};
};

// For double: reduction by pi/2 in three parts (Cody & Waite; the first two parts have 33
// bits, so k P1 and k P2 are exact for |k| < 2^20) and fdlibm's minimax kernels on
// [-pi/4, pi/4]: within 2 ulp of libm on |x| <= 1e5 (tests/test_cache.py), about a third of
// the cost of ::sincos. Larger |x|, infinities and NaN go to libm; +-0 returns (+-0, 1). The
// rounding trick below assumes SSE2 double arithmetic (x86-64, aarch64), not x87 extended
// precision.
inline void sin_cos(const double& x, double& s, double& c) {
  using K = SinCosKernel;
  if (!(std::abs(x) <= 1e5)) {
    ::sincos(x, &s, &c);
    return;
  }
  if (x == 0) {
    s = x;
    c = 1;
    return;
  }
  const double k = (x * K::kTwoOverPi + K::kRound) - K::kRound;
  const double r = ((x - k * K::kPio2[0]) - k * K::kPio2[1]) - k * K::kPio2[2];
  const double z = r * r;
  const double sr =
      r + r * z *
              (K::kSin[0] +
               z * (K::kSin[1] +
                    z * (K::kSin[2] + z * (K::kSin[3] + z * (K::kSin[4] + z * K::kSin[5])))));
  const double cp =
      z * (K::kCos[0] +
           z * (K::kCos[1] +
                z * (K::kCos[2] + z * (K::kCos[3] + z * (K::kCos[4] + z * K::kCos[5])))));
  const double hz = 0.5 * z, w = 1.0 - hz;
  const double cr = w + (((1.0 - w) - hz) + z * cp);
  switch (static_cast<long>(k) & 3) {
    case 0: s = sr; c = cr; break;
    case 1: s = cr; c = -sr; break;
    case 2: s = -sr; c = -cr; break;
    default: s = -cr; c = sr; break;
  }
}

#if defined(__SSE2__)
// sin_cos above on two angles at once (SSE2, part of every x86-64): the same operations in the
// same order, so the same bits, without the quadrant branch (random angles mispredict it).
// Lanes outside |x| <= 1e5 (or NaN) come out wrong: the caller redoes them with libm.
ROBODYN_INLINE void sin_cos2(__m128d x, __m128d& s, __m128d& c) {
  using K = SinCosKernel;
  const __m128d kRound = _mm_set1_pd(K::kRound);
  const __m128d k =
      _mm_sub_pd(_mm_add_pd(_mm_mul_pd(x, _mm_set1_pd(K::kTwoOverPi)), kRound), kRound);
  const __m128d r = _mm_sub_pd(
      _mm_sub_pd(_mm_sub_pd(x, _mm_mul_pd(k, _mm_set1_pd(K::kPio2[0]))),
                 _mm_mul_pd(k, _mm_set1_pd(K::kPio2[1]))),
      _mm_mul_pd(k, _mm_set1_pd(K::kPio2[2])));
  const __m128d z = _mm_mul_pd(r, r);
  // p[0] + z (p[1] + z (... + z p[5])), as the scalar kernels
  auto poly = [z](const double (&p)[6]) ROBODYN_INLINE_LAMBDA {
    __m128d b = _mm_set1_pd(p[5]);
    for (int j = 4; j >= 0; --j) b = _mm_add_pd(_mm_set1_pd(p[j]), _mm_mul_pd(z, b));
    return b;
  };
  const __m128d sr = _mm_add_pd(r, _mm_mul_pd(_mm_mul_pd(r, z), poly(K::kSin)));
  const __m128d cp = _mm_mul_pd(z, poly(K::kCos));
  const __m128d one = _mm_set1_pd(1.0);
  const __m128d hz = _mm_mul_pd(_mm_set1_pd(0.5), z), w = _mm_sub_pd(one, hz);
  const __m128d cr =
      _mm_add_pd(w, _mm_add_pd(_mm_sub_pd(_mm_sub_pd(one, w), hz), _mm_mul_pd(z, cp)));
  // the quadrant k & 3 of each lane as 64-bit masks: odd swaps sin and cos, 2 and 3 negate
  // sin, 1 and 2 negate cos
  const __m128i q = _mm_shuffle_epi32(_mm_cvttpd_epi32(k), _MM_SHUFFLE(1, 1, 0, 0));
  const __m128i i1 = _mm_set1_epi32(1), i2 = _mm_set1_epi32(2);
  const __m128d swap = _mm_castsi128_pd(_mm_cmpeq_epi32(_mm_and_si128(q, i1), i1));
  const __m128d sneg = _mm_castsi128_pd(_mm_cmpeq_epi32(_mm_and_si128(q, i2), i2));
  const __m128d cneg =
      _mm_castsi128_pd(_mm_cmpeq_epi32(_mm_and_si128(_mm_add_epi32(q, i1), i2), i2));
  const __m128d sign = _mm_set1_pd(-0.0);
  const __m128d sv = _mm_or_pd(_mm_and_pd(swap, cr), _mm_andnot_pd(swap, sr));
  const __m128d cv = _mm_or_pd(_mm_and_pd(swap, sr), _mm_andnot_pd(swap, cr));
  s = _mm_xor_pd(sv, _mm_and_pd(sneg, sign));
  c = _mm_xor_pd(cv, _mm_and_pd(cneg, sign));
  // +-0 gives (+-0, 1), as sin_cos (the kernels give cos 1 but sin +0 for -0)
  const __m128d zero = _mm_cmpeq_pd(x, _mm_setzero_pd());
  s = _mm_or_pd(_mm_and_pd(zero, x), _mm_andnot_pd(zero, s));
}

// the lanes sin_cos2 gets wrong, as an all-ones mask: !(|x| <= 1e5), true for NaN too
ROBODYN_INLINE __m128d outside_sin_cos2(__m128d x) {
  return _mm_cmpnle_pd(_mm_andnot_pd(_mm_set1_pd(-0.0), x), _mm_set1_pd(1e5));
}
#endif

#if defined(ROBODYN_HAVE_D2)
// sin_cos of both lanes of a D2 (simd.hpp): the two-lane kernel, libm for a lane outside
// |x| <= 1e5 (or NaN)
inline void sin_cos(const D2& x, D2& s, D2& c) {
  sin_cos2(x.v, s.v, c.v);
  if (_mm_movemask_pd(outside_sin_cos2(x.v)) == 0) return;
  double xs[2], ss[2], cs[2];
  _mm_storeu_pd(xs, x.v);
  _mm_storeu_pd(ss, s.v);
  _mm_storeu_pd(cs, c.v);
  for (int k = 0; k < 2; ++k) sin_cos(xs[k], ss[k], cs[k]);
  s.v = _mm_loadu_pd(ss);
  c.v = _mm_loadu_pd(cs);
}
#endif

// s[k], c[k] = sin, cos of the angle in c[k] on entry, for k in [k0, k1): sin_cos, two angles
// at a time where SSE2 is there. Returns false when an angle is outside |x| <= 1e5 (or NaN):
// then the results are wrong and the caller redoes them with sin_cos (rare: libm's range).
inline bool sin_cos_in_place(double* s, double* c, int k0, int k1) {
  int k = k0;
#if defined(__SSE2__)
  __m128d out = _mm_setzero_pd();
  for (; k + 2 <= k1; k += 2) {
    const __m128d x = _mm_loadu_pd(c + k);
    out = _mm_or_pd(out, outside_sin_cos2(x));
    __m128d sv, cv;
    sin_cos2(x, sv, cv);
    _mm_storeu_pd(s + k, sv);
    _mm_storeu_pd(c + k, cv);
  }
  if (_mm_movemask_pd(out) != 0) return false;
#endif
  for (; k < k1; ++k) {
    const double x = c[k];
    sin_cos(x, s[k], c[k]);
  }
  return true;
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
// valid for q, reusing what Data already holds for the same q. d.Xup_r[i] is valid for every joint
// kind at level >= 1 (a revolute joint's r = pc is written when the Data is made).
template <class S>
void update_kinematics(const Model& m, DataTpl<S>& d, const S* q, int level) {
  if (d.cache_level > 0 && detail::same_q(d, q)) {
    if (d.cache_level >= level) {
      ++d.cache_hits;
      return;
    }
  } else {
    ++d.cache_misses;
    std::copy(q, q + m.nq, d.q_key.data());
    // level 1: translations of prismatic joints (3 mul each), a free-flyer's whole transform
    for (const int i : m.nonrevolute) {
      const S* qi = q + m.iq[i];
      if (m.type[i] == JointType::Prismatic) {
        V3T<S> z(S(0), S(0), qi[0]);
        d.Xup_r[i] = m.pc[i].template cast<S>() + rotc(m.Rc[i], z);
      } else if constexpr (!kSkipZeros<S>) {
        // (Rc, pc) (R(quat), p): E = Rc R, r = pc + Rc p. double (and D2): Rc by its kind (a
        // signed permutation, usually the identity, is free); the counting and tracing
        // scalars keep the product (their traces unchanged)
        const M3T<S> R = quaternion_matrix<S>(qi + 3);
        for (int k = 0; k < 3; ++k) d.Xup_E[i].col(k) = rotc(m.Rc[i], V3T<S>(R.col(k)));
        d.Xup_r[i] = m.pc[i].template cast<S>() + rotc(m.Rc[i], V3T<S>(qi[0], qi[1], qi[2]));
      } else {
        const M3T<S> Rc = m.Rc[i].R.template cast<S>();
        d.Xup_E[i] = Rc * quaternion_matrix<S>(qi + 3);
        d.Xup_r[i] = m.pc[i].template cast<S>() + Rc * V3T<S>(qi[0], qi[1], qi[2]);
      }
    }
    // and the sin and cos of every revolute angle q_i + qoff_i
    if constexpr (std::is_same<S, double>::value) {
      // the angles of bodies k0..n (a free-flyer's body 1 keeps the sin 0, cos 1 its Data was
      // made with) gathered from q_key (Model::angle_src: a prismatic joint, and the padding
      // entry n+1, read its last entry, 0: sin 0, cos 1), then all their sines and cosines in
      // one pass, two at a time (padded to pairs)
      const int k0 = m.floating ? 2 : 1, k1 = k0 + ((m.n - k0 + 2) & ~1);
      const double* qk = d.q_key.data();
      for (int i = k0; i < k1; ++i) d.cos_q[i] = qk[m.angle_src[i]];
      for (const int i : m.angle_offset) d.cos_q[i] += m.qoff[i];
      if (!detail::sin_cos_in_place(d.sin_q.data(), d.cos_q.data(), k0, k1))
        for (int i = k0; i <= m.n; ++i) {
          const double x = qk[m.angle_src[i]];
          detail::sin_cos(m.qoff[i] != 0 ? x + m.qoff[i] : x, d.sin_q[i], d.cos_q[i]);
        }
    } else {
      for (int i = 1; i <= m.n; ++i)
        if (m.type[i] == JointType::Revolute) {
          const S* qi = q + m.iq[i];
          detail::sin_cos(m.qoff[i] != 0 ? S(qi[0] + S(m.qoff[i])) : qi[0], d.sin_q[i], d.cos_q[i]);
        }
    }
    d.cache_level = 1;
  }
  if (level >= 2 && d.cache_level < 2) {
    // level 2: E_i = Rc Rz(q)
    for (int i = 1; i <= m.n; ++i) {
      const M3T<S> Rc = m.Rc[i].R.template cast<S>();
      if (m.type[i] == JointType::Revolute) {
        d.Xup_E[i].col(0) = Rc.col(0) * d.cos_q[i] + Rc.col(1) * d.sin_q[i];
        d.Xup_E[i].col(1) = Rc.col(1) * d.cos_q[i] - Rc.col(0) * d.sin_q[i];
        d.Xup_E[i].col(2) = Rc.col(2);
      } else if (m.type[i] == JointType::Prismatic) {
        d.Xup_E[i] = Rc;
      }
    }
    d.cache_level = 2;
  }
  if (level >= 3 && d.cache_level < 3) {
    // level 3: base-to-body poses
    for (int i = 1; i <= m.n; ++i) {
      const int p = m.parent[i];
      d.world_R[i] = d.world_R[p] * d.Xup_E[i];
      d.world_p[i] = d.world_p[p] + d.world_R[p] * d.Xup_r[i];
    }
    d.cache_level = 3;
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
    const M3T<S> R = d.world_R[b] * m.frame_R[f].template cast<S>();
    const V3T<S> p = d.world_p[b] + d.world_R[b] * m.frame_p[f].template cast<S>();
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
  const V3T<S> p = d.world_p[b] + d.world_R[b] * m.frame_p[f].template cast<S>();
  auto column = [&](int c, const V3T<S>& ang, const V3T<S>& lin) {
    for (int k = 0; k < 3; ++k) {
      out[k * nv + c] = ang[k];
      out[(k + 3) * nv + c] = lin[k];
    }
  };
  for (int j = b; j > 0; j = m.parent[j]) {
    const int c = m.iv[j];
    joint_axes_at<S>(m.type[j], d.world_R[j], d.world_p[j], p,
                     [&](int k, const V3T<S>& ang, const V3T<S>& lin) { column(c + k, ang, lin); });
  }
}

namespace detail {

// base-frame inertia of body i (cache level 3): mass, first moment c = m o + R h, Ib about the
// base origin, R Ibar R' - [o][y] - [y][o] - m [o][o] (y = R h)
template <class S>
ROBODYN_INLINE void world_inertia(const Model& m, const DataTpl<S>& d, int i, V3T<S>& c,
                                  M3T<S>& Ib) {
  const M3T<S>& R = d.world_R[i];
  const V3T<S>& o = d.world_p[i];
  const S mass(m.mass[i]);
  const V3T<S> y = R * m.h[i].template cast<S>();
  c = y + mass * o;
  // R Ibar R' - [o][y] - [y][o] - m [o][o] = R Ibar R' - ([o][c] + [y][o])
  const M3T<S> ox = skew<S>(o), yx = skew<S>(y);
  Ib = R * m.Ibar[i].template cast<S>() * R.transpose() - ox * skew<S>(c) - yx * ox;
}

}  // namespace detail

// Subtree sums of base-frame quantities, tip to base: x[p] += x[i] for each array x (indexed
// by body) and each moving body i with parent p; into body 0 too when kIntoWorld (then body 0
// must hold zero first and ends with the whole tree's sum). In base coordinates composites add
// without transforms.
template <bool kIntoWorld, class... Arrays>
ROBODYN_INLINE void sum_subtrees(const Model& m, Arrays&... xs) {
  for (int i = m.n; i >= 1; --i) {
    const int p = m.parent[i];
    if (kIntoWorld || p > 0) ((xs[p] += xs[i]), ...);
  }
}

// v_i = X_i v_p + S_i qd_i, body i's velocity in body axes, into (d.v_ang[i], d.v_lin[i]) from its
// parent's (v_0 = 0); qd (nv,)
template <class S>
ROBODYN_INLINE void body_velocity(const Model& m, DataTpl<S>& d, int i, const S* qd) {
  const int p = m.parent[i];
  V3T<S> w, v;
  Xup<S>(m, d, i).apply(d.v_ang[p], d.v_lin[p], w, v);
  add_joint_motion(m.type[i], qd + m.iv[i], w, v);
  d.v_ang[i] = w;
  d.v_lin[i] = v;
}

// body i's rigid inertia (mass, first moment, rotational inertia about its origin; body axes)
// times its velocity (d.v_ang[i], d.v_lin[i]): its momentum [moment about the origin; force]
template <class S>
ROBODYN_INLINE V6T<S> body_momentum(const Model& m, const DataTpl<S>& d, int i) {
  V6T<S> x;
  x << d.v_ang[i], d.v_lin[i];
  return detail::inertia_mul<S>(S(m.mass[i]), V3T<S>(m.h[i].template cast<S>()),
                                M3T<S>(m.Ibar[i].template cast<S>()), x);
}

// Kinetic energy 0.5 qd' M(q) qd, rotor inertia (armature) included.
template <class S>
S kinetic_energy(const Model& m, DataTpl<S>& d, const S* q, const S* qd) {
  update_kinematics(m, d, q, 1);
  S T(0);
  for (int i = 1; i <= m.n; ++i) {
    body_velocity(m, d, i, qd);
    // 0.5 v' I v, and the rotor's
    V6T<S> x;
    x << d.v_ang[i], d.v_lin[i];
    T += S(0.5) * x.dot(body_momentum(m, d, i));
    T += armature_energy(m, i, qd[m.iv[i]]);
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
    const V3T<S> mc = S(m.mass[i]) * d.world_p[i] + d.world_R[i] * m.h[i].template cast<S>();
    V -= g.dot(mc);
  }
  return V;
}

}  // namespace robodyn
