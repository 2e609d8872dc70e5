// Small 3-vector operations used by every algorithm, written out so the operation counts of the
// double code are exactly what the counting scalar sees. Spatial vectors are [angular; linear],
// each half a 3-vector; transforms are applied as (constant rotation) then (rotation about z).
#pragma once

#include <Eigen/Core>

#include "robodyn/data.hpp"
#include "robodyn/model.hpp"

// the small helpers below must inline into the sweeps: they are a few flops each
#if defined(__GNUC__)
#define ROBODYN_INLINE inline __attribute__((always_inline))
#else
#define ROBODYN_INLINE inline
#endif

namespace robodyn {

template <class S>
using V3T = Eigen::Matrix<S, 3, 1>;
template <class S>
using M3T = Eigen::Matrix<S, 3, 3>;

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

// x cross p for a constant p, skipping its zero components (decided at model build)
template <class S>
ROBODYN_INLINE V3T<S> cross_const(const V3T<S>& x, const Vec3& p, const std::array<bool, 3>& nz) {
  auto term = [](const S& a, double b, bool on) { return on ? S(a * S(b)) : S(0); };
  auto diff = [](const S& a, const S& b, bool ona, bool onb) {
    if (ona && onb) return S(a - b);
    if (ona) return a;
    if (onb) return S(-b);
    return S(0);
  };
  return V3T<S>(diff(term(x[1], p[2], nz[2]), term(x[2], p[1], nz[1]), nz[2], nz[1]),
                diff(term(x[2], p[0], nz[0]), term(x[0], p[2], nz[2]), nz[0], nz[2]),
                diff(term(x[0], p[1], nz[1]), term(x[1], p[0], nz[0]), nz[1], nz[0]));
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

// Rc^T x: free for a signed permutation, 4 mul 2 add for a rotation about x, else 9 mul 6 add
template <class S>
ROBODYN_INLINE V3T<S> rotcT(const ConstRotation& R, const V3T<S>& x) {
  switch (R.kind) {
    case ConstRotation::Permutation:
      return V3T<S>(R.neg[0] ? S(-x[R.perm[0]]) : x[R.perm[0]],
                    R.neg[1] ? S(-x[R.perm[1]]) : x[R.perm[1]],
                    R.neg[2] ? S(-x[R.perm[2]]) : x[R.perm[2]]);
    case ConstRotation::RotX:
      return V3T<S>(x[0], S(R.cx) * x[1] + S(R.sx) * x[2], S(R.cx) * x[2] - S(R.sx) * x[1]);
    default:
      return R.R.transpose().template cast<S>() * x;
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
      return V3T<S>(x[0], S(R.cx) * x[1] - S(R.sx) * x[2], S(R.sx) * x[1] + S(R.cx) * x[2]);
    default:
      return R.R.template cast<S>() * x;
  }
}

// parent-to-body rotation applied to a body-frame vector: E x = Rc Rz(q) x
template <class S>
ROBODYN_INLINE V3T<S> applyE(const Model& m, const DataTpl<S>& d, int i, const V3T<S>& x) {
  if (m.type[i] == JointType::Revolute) return rotc(m.Rc[i], rotz(d.c[i], d.s[i], x));
  return rotc(m.Rc[i], x);
}

// its transpose applied to a parent-frame vector: E^T x = Rz(q)^T Rc^T x
template <class S>
ROBODYN_INLINE V3T<S> applyET(const Model& m, const DataTpl<S>& d, int i, const V3T<S>& x) {
  if (m.type[i] == JointType::Revolute) return rotzT(d.c[i], d.s[i], rotcT(m.Rc[i], x));
  return rotcT(m.Rc[i], x);
}

// x cross r_i, with r_i the parent-to-body translation (constant for revolute joints)
template <class S>
ROBODYN_INLINE V3T<S> cross_r(const Model& m, const DataTpl<S>& d, int i, const V3T<S>& x) {
  if (m.type[i] == JointType::Revolute) return cross_const(x, m.pc[i], m.pc_nz[i]);
  return cross(x, d.r[i]);
}

// sum of the products a_k * b_k whose flag is on (a sparse dot product with constants)
template <class S>
ROBODYN_INLINE S sparse_dot3(const S& x0, const S& x1, const S& x2, double a0, double a1, double a2,
                     bool on0, bool on1, bool on2) {
  S acc(0);
  bool any = false;
  auto add = [&](const S& x, double a, bool on) {
    if (!on) return;
    const S t = S(a) * x;
    acc = any ? S(acc + t) : t;
    any = true;
  };
  add(x0, a0, on0);
  add(x1, a1, on1);
  add(x2, a2, on2);
  return acc;
}

// rotational inertia (symmetric, constant) times vector, skipping zero entries
// (9 mul, 6 add when full; 3 mul for a diagonal inertia)
template <class S>
ROBODYN_INLINE V3T<S> sym_mul(const Mat3& I, const std::array<bool, 6>& nz, const V3T<S>& x) {
  return V3T<S>(sparse_dot3(x[0], x[1], x[2], I(0, 0), I(0, 1), I(0, 2), nz[0], nz[3], nz[4]),
                sparse_dot3(x[0], x[1], x[2], I(0, 1), I(1, 1), I(1, 2), nz[3], nz[1], nz[5]),
                sparse_dot3(x[0], x[1], x[2], I(0, 2), I(1, 2), I(2, 2), nz[4], nz[5], nz[2]));
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
  K << S(0), -x[2], x[1], x[2], S(0), -x[0], -x[1], x[0], S(0);
  return K;
}

}  // namespace robodyn
