// Small 3-vector operations used by every algorithm, written out so the operation counts of the
// double code are exactly what the counting scalar sees. Spatial vectors are [angular; linear],
// each half a 3-vector; transforms are applied as (constant rotation) then (rotation about z).
#pragma once

#include <Eigen/Core>
#include <array>

#include "robodyn/model/data.hpp"
#include "robodyn/model/model.hpp"
#include "robodyn/scalar/scalar_traits.hpp"

// the small helpers below must inline into the sweeps: they are a few flops each. A unit whose
// speed does not matter (the counting and tracing instantiations) may define both macros as
// plain `inline` / nothing on the command line: forced inlining is most of its compile time.
#if !defined(ROBODYN_INLINE)
#if defined(__GNUC__)
#define ROBODYN_INLINE inline __attribute__((always_inline))
#define ROBODYN_INLINE_LAMBDA __attribute__((always_inline))
#else
#define ROBODYN_INLINE inline
#define ROBODYN_INLINE_LAMBDA
#endif
#endif

namespace robodyn {

template <class S>
using V3T = Eigen::Matrix<S, 3, 1>;
template <class S>
using M3T = Eigen::Matrix<S, 3, 3>;
template <class S>
using V6T = Eigen::Matrix<S, 6, 1>;

// x cross y: 6 mul, 3 add
template <class S>
ROBODYN_INLINE V3T<S> cross(const V3T<S>& x, const V3T<S>& y) {
  return V3T<S>(x[1] * y[2] - x[2] * y[1], x[2] * y[0] - x[0] * y[2], x[0] * y[1] - x[1] * y[0]);
}

// x cross (0, 0, k) = (x1 k, -x0 k, 0): 2 mul
template <class S>
ROBODYN_INLINE V3T<S> cross_z(const V3T<S>& x, const S& k) {
  return V3T<S>(x[1] * k, -(x[0] * k), S(0));
}

namespace detail {
// a pa - b pb with the terms whose constant is zero (!kA, !kB) left out
template <bool kA, bool kB, class S>
ROBODYN_INLINE S cross_term(const S& a, double pa, const S& b, double pb) {
  if (kA && kB) return a * S(pa) - b * S(pb);
  if (kA) return a * S(pa);
  if (kB) return -(b * S(pb));
  return S(0);
}

// x cross p with the zero pattern of p known at compile time (bit k set: p[k] != 0)
template <int P, class S>
ROBODYN_INLINE V3T<S> cross_pattern(const V3T<S>& x, const Vec3& p) {
  constexpr bool n0 = P & 1, n1 = P & 2, n2 = P & 4;
  return V3T<S>(cross_term<n2, n1, S>(x[1], p[2], x[2], p[1]),
                cross_term<n0, n2, S>(x[2], p[0], x[0], p[2]),
                cross_term<n1, n0, S>(x[0], p[1], x[1], p[0]));
}
}  // namespace detail

// x cross p for a constant p, skipping its zero components (pattern decided at model build):
// 6 mul, 3 add when p is full, 4 mul, 1 add for p = (a, 0, d)
template <class S>
ROBODYN_INLINE V3T<S> cross_const(const V3T<S>& x, const Vec3& p, const std::array<bool, 3>& nz) {
  if (!kSkipZeros<S>) return detail::cross_pattern<7, S>(x, p);
  switch (int(nz[0]) | int(nz[1]) << 1 | int(nz[2]) << 2) {
    case 0: return V3T<S>(S(0), S(0), S(0));
    case 1: return detail::cross_pattern<1, S>(x, p);
    case 2: return detail::cross_pattern<2, S>(x, p);
    case 3: return detail::cross_pattern<3, S>(x, p);
    case 4: return detail::cross_pattern<4, S>(x, p);
    case 5: return detail::cross_pattern<5, S>(x, p);
    case 6: return detail::cross_pattern<6, S>(x, p);
    default: return detail::cross_pattern<7, S>(x, p);
  }
}

namespace detail {
template <int P, class S>
ROBODYN_INLINE S dot_pattern(const S& x0, const S& x1, const S& x2, const Vec3& c) {
  constexpr bool n0 = P & 1, n1 = P & 2, n2 = P & 4;
  if (n0 && n1 && n2) return x0 * S(c[0]) + x1 * S(c[1]) + x2 * S(c[2]);
  if (n0 && n1) return x0 * S(c[0]) + x1 * S(c[1]);
  if (n0 && n2) return x0 * S(c[0]) + x2 * S(c[2]);
  if (n1 && n2) return x1 * S(c[1]) + x2 * S(c[2]);
  if (n0) return x0 * S(c[0]);
  if (n1) return x1 * S(c[1]);
  if (n2) return x2 * S(c[2]);
  return S(0);
}
}  // namespace detail

// (x0, x1, x2) . c for a constant c with known zeros
template <class S>
ROBODYN_INLINE S dot_const(const S& x0, const S& x1, const S& x2, const Vec3& c,
                           const std::array<bool, 3>& nz) {
  if (!kSkipZeros<S>) return detail::dot_pattern<7, S>(x0, x1, x2, c);
  switch (int(nz[0]) | int(nz[1]) << 1 | int(nz[2]) << 2) {
    case 0: return S(0);
    case 1: return detail::dot_pattern<1, S>(x0, x1, x2, c);
    case 2: return detail::dot_pattern<2, S>(x0, x1, x2, c);
    case 3: return detail::dot_pattern<3, S>(x0, x1, x2, c);
    case 4: return detail::dot_pattern<4, S>(x0, x1, x2, c);
    case 5: return detail::dot_pattern<5, S>(x0, x1, x2, c);
    case 6: return detail::dot_pattern<6, S>(x0, x1, x2, c);
    default: return detail::dot_pattern<7, S>(x0, x1, x2, c);
  }
}

// A x and A^T x for a 3x3 A (double or S): written out for double so they inline into the
// sweeps (Eigen's product is not always inlined in a large unit); the counting and tracing
// scalars keep Eigen's product (its order of additions): 9 mul, 6 add
template <class S, class A>
ROBODYN_INLINE V3T<S> mat_mul(const A& R, const V3T<S>& x) {
  if constexpr (kSkipZeros<S>) {
    return R.template cast<S>() * x;
  } else {
    return V3T<S>(R(0, 0) * x[0] + R(0, 1) * x[1] + R(0, 2) * x[2],
                  R(1, 0) * x[0] + R(1, 1) * x[1] + R(1, 2) * x[2],
                  R(2, 0) * x[0] + R(2, 1) * x[1] + R(2, 2) * x[2]);
  }
}
template <class S, class A>
ROBODYN_INLINE V3T<S> mat_mulT(const A& R, const V3T<S>& x) {
  if constexpr (kSkipZeros<S>) {
    return R.transpose().template cast<S>() * x;
  } else {
    return V3T<S>(R(0, 0) * x[0] + R(1, 0) * x[1] + R(2, 0) * x[2],
                  R(0, 1) * x[0] + R(1, 1) * x[1] + R(2, 1) * x[2],
                  R(0, 2) * x[0] + R(1, 2) * x[1] + R(2, 2) * x[2]);
  }
}

// Rz(q)^T x: 4 mul, 2 add
template <class S>
ROBODYN_INLINE V3T<S> rotzT(const S& c, const S& s, const V3T<S>& x) {
  return V3T<S>(c * x[0] + s * x[1], c * x[1] - s * x[0], x[2]);
}

// Rz(q) x: 4 mul, 2 add
template <class S>
ROBODYN_INLINE V3T<S> rotz(const S& c, const S& s, const V3T<S>& x) {
  return V3T<S>(c * x[0] - s * x[1], s * x[0] + c * x[1], x[2]);
}

// Rx(alpha)^T x for a RotX constant rotation: (c y + s z, c z - s y) as t - (c - s) z,
// t - (c + s) y with t = c (y + z): 3 mul, 3 add
template <class S>
ROBODYN_INLINE V3T<S> rotxT(const ConstRotation& R, const V3T<S>& x) {
  const S t = S(R.cx) * (x[1] + x[2]);
  return V3T<S>(x[0], t - S(R.cmsx) * x[2], t - S(R.cpsx) * x[1]);
}

// Rx(alpha) x: (c y - s z, s y + c z) as t - (c + s) z, t - (c - s) y
template <class S>
ROBODYN_INLINE V3T<S> rotx(const ConstRotation& R, const V3T<S>& x) {
  const S t = S(R.cx) * (x[1] + x[2]);
  return V3T<S>(x[0], t - S(R.cpsx) * x[2], t - S(R.cmsx) * x[1]);
}

// Rc^T x: free for a signed permutation, 3 mul 3 add for a rotation about x (its constants
// c + s and c - s are fixed at model build), else 9 mul 6 add
template <class S>
ROBODYN_INLINE V3T<S> rotcT(const ConstRotation& R, const V3T<S>& x) {
  switch (R.kind) {
    case ConstRotation::Permutation:
      return V3T<S>(R.neg[0] ? S(-x[R.perm[0]]) : x[R.perm[0]],
                    R.neg[1] ? S(-x[R.perm[1]]) : x[R.perm[1]],
                    R.neg[2] ? S(-x[R.perm[2]]) : x[R.perm[2]]);
    case ConstRotation::RotX:
      return rotxT(R, x);
    default:
      return mat_mulT<S>(R.R, x);
  }
}

// Rc x, the same costs
template <class S>
ROBODYN_INLINE V3T<S> rotc(const ConstRotation& R, const V3T<S>& x) {
  switch (R.kind) {
    case ConstRotation::Permutation:
      return V3T<S>(R.ineg[0] ? S(-x[R.iperm[0]]) : x[R.iperm[0]],
                    R.ineg[1] ? S(-x[R.iperm[1]]) : x[R.iperm[1]],
                    R.ineg[2] ? S(-x[R.iperm[2]]) : x[R.iperm[2]]);
    case ConstRotation::RotX:
      return rotx(R, x);
    default:
      return mat_mul<S>(R.R, x);
  }
}

// A rotation by an angle in a coordinate plane: cos, sin, sin^2, sin cos, and for a constant
// angle also cos + sin and cos - sin, with which a pair (x, y) turns by 3 multiplications:
// (c x - s y, s x + c y) = (t - (c + s) y, t - (c - s) x), t = c (x + y)
template <class S>
struct PlaneRot {
  S c, s, s2, cs, cps, cms;
  S s22, cs2;  // 2 sin^2, 2 sin cos
  bool three;  // constant angle: use the 3-multiplication form
};

template <class S>
ROBODYN_INLINE void turn_pair(const PlaneRot<S>& R, S& x, S& y) {
  if (R.three) {
    const S t = R.c * (x + y);
    const S xn = t - R.cps * y;
    y = t - R.cms * x;
    x = xn;
  } else {
    const S xn = R.c * x - R.s * y;
    y = R.s * x + R.c * y;
    x = xn;
  }
}

// R A R^T for symmetric A and the rotation R in the (a, b) plane (f: the fixed axis):
// 4 mul for the (a, b) block, 4 (3 for a constant angle) for the (a, f), (b, f) pair, skipped
// when kZeroF says row and column f of A are zero
template <int a, int b, int f, bool kZeroF = false, class S>
ROBODYN_INLINE void rotate_sym_plane(const PlaneRot<S>& R, M3T<S>& A) {
  const S dd = A(a, a) - A(b, b);
  const S Aaa = A(a, a) - R.s2 * dd - R.cs2 * A(a, b);
  const S Abb = A(a, a) + A(b, b) - Aaa;
  const S Aab = R.cs * dd + A(a, b) - R.s22 * A(a, b);
  A(a, a) = Aaa;
  A(b, b) = Abb;
  A(a, b) = A(b, a) = Aab;
  if (kZeroF) return;
  S Aaf = A(a, f), Abf = A(b, f);
  turn_pair(R, Aaf, Abf);
  A(a, f) = A(f, a) = Aaf;
  A(b, f) = A(f, b) = Abf;
}

// R B R^T for a general B, same rotation: 4 mul for the (a, b) block, two pairs;
// kZeroF: row f of B is zero (only the column pair turns)
template <int a, int b, int f, bool kZeroF = false, class S>
ROBODYN_INLINE void rotate_gen_plane(const PlaneRot<S>& R, M3T<S>& B) {
  const S dd = B(a, a) - B(b, b), e = B(a, b) + B(b, a);
  const S t = R.cs * dd, se = R.s2 * e;
  const S Baa = B(a, a) - R.s2 * dd - R.cs * e;
  const S Bbb = B(a, a) + B(b, b) - Baa;
  const S Bab = t + B(a, b) - se, Bba = t + B(b, a) - se;
  B(a, a) = Baa;
  B(b, b) = Bbb;
  B(a, b) = Bab;
  B(b, a) = Bba;
  turn_pair(R, B(a, f), B(b, f));
  if (!kZeroF) turn_pair(R, B(f, a), B(f, b));
}

// the rotation about x of a RotX constant rotation
template <class S>
ROBODYN_INLINE PlaneRot<S> plane_of(const ConstRotation& R) {
  return {S(R.cx), S(R.sx), S(R.s2x), S(R.csx), S(R.cpsx), S(R.cmsx), S(R.s2x2), S(R.csx2), true};
}

// the joint rotation Rz(q_i) (2 mul for sin^2 and sin cos, 2 add for their doubles)
template <class S>
ROBODYN_INLINE PlaneRot<S> plane_z(const DataTpl<S>& d, int i) {
  const S s2 = d.sin_q[i] * d.sin_q[i], cs = d.cos_q[i] * d.sin_q[i];
  return {d.cos_q[i], d.sin_q[i], s2, cs, S(0), S(0), S(s2 + s2), S(cs + cs), false};
}

// The relabelling of a signed permutation (ConstRotation::perm, iperm) as a compile-time
// constant: the six permutations p of (0, 1, 2) numbered 2 p[0] + (p[1] > p[2])
// (ConstRotation::relabel). perm_at<kP>(R, k) is R.perm[k], from the number kP when kP >= 0 (the
// caller knows it: link.hpp's with_step), read from R when kP = -1; iperm_at the same for
// R.iperm.
constexpr int perm_entry(int p, int k) {
  const int a = p / 2, lo = a == 0 ? 1 : 0, hi = a == 2 ? 1 : 2;
  return k == 0 ? a : ((k == 1) == (p % 2 == 0) ? lo : hi);
}
constexpr int iperm_entry(int p, int k) {
  return perm_entry(p, 0) == k ? 0 : (perm_entry(p, 1) == k ? 1 : 2);
}
template <int kP>
ROBODYN_INLINE int perm_at(const ConstRotation& R, int k) {
  if constexpr (kP >= 0) return perm_entry(kP, k);
  return R.perm[k];
}
template <int kP>
ROBODYN_INLINE int iperm_at(const ConstRotation& R, int k) {
  if constexpr (kP >= 0) return iperm_entry(kP, k);
  return R.iperm[k];
}

// R B R^T for the constant rotation Rc: free for a signed permutation. kind: R.kind (a caller
// that knows it at compile time passes it as a constant, and the switch folds); kP: the
// permutation's number when known (perm_at)
// (one named result Y, B copied entry by entry: no Eigen 3x3 copy or move constructor, which
// GCC may leave out of line in a large translation unit)
template <bool kSym, class S, int kP = -1>
ROBODYN_INLINE M3T<S> rotate_const(const ConstRotation& R, const M3T<S>& B,
                                   ConstRotation::Kind kind) {
  M3T<S> Y;
  switch (kind) {
    case ConstRotation::Permutation:
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
          const S& x = B(iperm_at<kP>(R, i), iperm_at<kP>(R, j));
          Y(i, j) = R.ineg[i] != R.ineg[j] ? S(-x) : x;
        }
      break;
    case ConstRotation::RotX:
      for (int k = 0; k < 9; ++k) Y.data()[k] = B.data()[k];
      if (kSym)
        rotate_sym_plane<1, 2, 0>(plane_of<S>(R), Y);
      else
        rotate_gen_plane<1, 2, 0>(plane_of<S>(R), Y);
      break;
    default: {
      const M3T<S> Rs = R.R.template cast<S>();
      Y.noalias() = Rs * B * Rs.transpose();
    }
  }
  return Y;
}

template <bool kSym, class S>
ROBODYN_INLINE M3T<S> rotate_const(const ConstRotation& R, const M3T<S>& B) {
  return rotate_const<kSym, S>(R, B, R.kind);
}

// rotational inertia (symmetric, constant) times vector, skipping zero entries
// (9 mul, 6 add when full; 3 mul for a diagonal inertia)
template <class S>
ROBODYN_INLINE V3T<S> sym_mul(const Mat3& I, const std::array<bool, 6>& nz, const V3T<S>& x) {
  const bool offdiag = nz[3] || nz[4] || nz[5];
  if (!offdiag && nz[0] && nz[1] && nz[2])
    return V3T<S>(S(I(0, 0)) * x[0], S(I(1, 1)) * x[1], S(I(2, 2)) * x[2]);
  if (nz[0] && nz[1] && nz[2] && nz[3] && nz[4] && nz[5])
    return V3T<S>(S(I(0, 0)) * x[0] + S(I(0, 1)) * x[1] + S(I(0, 2)) * x[2],
                  S(I(0, 1)) * x[0] + S(I(1, 1)) * x[1] + S(I(1, 2)) * x[2],
                  S(I(0, 2)) * x[0] + S(I(1, 2)) * x[1] + S(I(2, 2)) * x[2]);
  // any other pattern: sum the non-zero products of each row
  const int idx[3][3] = {{0, 3, 4}, {3, 1, 5}, {4, 5, 2}};
  V3T<S> y;
  for (int r = 0; r < 3; ++r) {
    S acc(0);
    bool any = false;
    for (int c = 0; c < 3; ++c) {
      if (!nz[idx[r][c]]) continue;
      const S t = S(I(r, c)) * x[c];
      acc = any ? S(acc + t) : t;
      any = true;
    }
    y[r] = acc;
  }
  return y;
}

// dense form: 9 mul, 6 add
template <class S>
ROBODYN_INLINE V3T<S> sym_mul(const Mat3& I, const V3T<S>& x) {
  return sym_mul<S>(I, {{true, true, true, true, true, true}}, x);
}

// p cross x for a constant p with known zeros: -(x cross p)
template <class S>
ROBODYN_INLINE V3T<S> const_cross(const Vec3& p, const std::array<bool, 3>& nz, const V3T<S>& x) {
  const V3T<S> y = cross_const(x, p, nz);
  return V3T<S>(-y[0], -y[1], -y[2]);
}

// skew-symmetric matrix [x]
template <class S>
ROBODYN_INLINE M3T<S> skew(const V3T<S>& x) {
  M3T<S> K;
  K(0, 0) = S(0);
  K(0, 1) = -x[2];
  K(0, 2) = x[1];
  K(1, 0) = x[2];
  K(1, 1) = S(0);
  K(1, 2) = -x[0];
  K(2, 0) = -x[1];
  K(2, 1) = x[0];
  K(2, 2) = S(0);
  return K;
}

namespace detail {

// motion cross product (x, y: [angular; linear]): 12 mul (18 with the linear part full)
template <class S>
ROBODYN_INLINE V6T<S> crm(const V6T<S>& x, const V6T<S>& y) {
  const V3T<S> xw = x.template head<3>(), xl = x.template tail<3>();
  const V3T<S> yw = y.template head<3>(), yl = y.template tail<3>();
  V6T<S> r;
  r << cross<S>(xw, yw), V3T<S>(cross<S>(xw, yl) + cross<S>(xl, yw));
  return r;
}

// the motion cross product as a 6x6 matrix, crm(x) y = x x y (the force one is -crm(x)')
template <class S>
ROBODYN_INLINE Eigen::Matrix<S, 6, 6> crm_matrix(const V6T<S>& x) {
  Eigen::Matrix<S, 6, 6> X = Eigen::Matrix<S, 6, 6>::Zero();
  const M3T<S> w = skew<S>(V3T<S>(x.template head<3>()));
  X.template topLeftCorner<3, 3>() = w;
  X.template bottomLeftCorner<3, 3>() = skew<S>(V3T<S>(x.template tail<3>()));
  X.template bottomRightCorner<3, 3>() = w;
  return X;
}

// force cross product x x* f
template <class S>
ROBODYN_INLINE V6T<S> crf(const V6T<S>& x, const V6T<S>& f) {
  const V3T<S> xw = x.template head<3>(), xl = x.template tail<3>();
  const V3T<S> fn = f.template head<3>(), ff = f.template tail<3>();
  V6T<S> r;
  r << V3T<S>(cross<S>(xw, fn) + cross<S>(xl, ff)), cross<S>(xw, ff);
  return r;
}

// a rigid inertia (mass, first moment c, rotational inertia Ib about the origin, all in one
// frame) times a motion y in that frame: the momentum (Ib y_w + c x y_l, mass y_l - c x y_w)
template <class S>
ROBODYN_INLINE V6T<S> inertia_mul(const S& mass, const V3T<S>& c, const M3T<S>& Ib,
                                  const V6T<S>& y) {
  const V3T<S> yw = y.template head<3>(), yl = y.template tail<3>();
  V6T<S> r;
  r << V3T<S>(Ib * yw + cross<S>(c, yl)), V3T<S>(mass * yl - cross<S>(c, yw));
  return r;
}

}  // namespace detail

}  // namespace robodyn
