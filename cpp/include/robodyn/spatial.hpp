// Small 3-vector operations used by every algorithm, written out so the operation counts of the
// double code are exactly what the counting scalar sees. Spatial vectors are [angular; linear],
// each half a 3-vector; transforms are applied as (constant rotation) then (rotation about z).
#pragma once

#include <Eigen/Core>

#include "robodyn/data.hpp"
#include "robodyn/model.hpp"

namespace robodyn {

template <class S>
using V3T = Eigen::Matrix<S, 3, 1>;
template <class S>
using M3T = Eigen::Matrix<S, 3, 3>;

// x cross y: 6 mul, 3 add
template <class S>
inline V3T<S> cross(const V3T<S>& x, const V3T<S>& y) {
  return V3T<S>(x[1] * y[2] - x[2] * y[1], x[2] * y[0] - x[0] * y[2], x[0] * y[1] - x[1] * y[0]);
}

// x cross (0, 0, k) = (x1 k, -x0 k, 0): 2 mul
template <class S>
inline V3T<S> cross_z(const V3T<S>& x, const S& k) {
  return V3T<S>(x[1] * k, -(x[0] * k), S(0));
}

// x cross p for a constant p, skipping its zero components (decided at model build)
template <class S>
inline V3T<S> cross_const(const V3T<S>& x, const Vec3& p, const std::array<bool, 3>& nz) {
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
inline V3T<S> rotzT(const S& c, const S& s, const V3T<S>& x) {
  return V3T<S>(c * x[0] + s * x[1], c * x[1] - s * x[0], x[2]);
}

// Rz(q) x: 4 mul, 2 add
template <class S>
inline V3T<S> rotz(const S& c, const S& s, const V3T<S>& x) {
  return V3T<S>(c * x[0] - s * x[1], s * x[0] + c * x[1], x[2]);
}

// Rc^T x, free for a signed permutation
template <class S>
inline V3T<S> rotcT(const ConstRotation& R, const V3T<S>& x) {
  if (R.is_permutation) {
    V3T<S> y;
    for (int k = 0; k < 3; ++k) y[k] = R.neg[k] ? S(-x[R.perm[k]]) : x[R.perm[k]];
    return y;
  }
  return R.R.transpose().template cast<S>() * x;
}

// Rc x, free for a signed permutation
template <class S>
inline V3T<S> rotc(const ConstRotation& R, const V3T<S>& x) {
  if (R.is_permutation) {
    V3T<S> y;
    for (int k = 0; k < 3; ++k) y[k] = R.ineg[k] ? S(-x[R.iperm[k]]) : x[R.iperm[k]];
    return y;
  }
  return R.R.template cast<S>() * x;
}

// parent-to-body rotation applied to a body-frame vector: E x = Rc Rz(q) x
template <class S>
inline V3T<S> applyE(const Model& m, const DataTpl<S>& d, int i, const V3T<S>& x) {
  if (m.type[i] == JointType::Revolute) return rotc(m.Rc[i], rotz(d.c[i], d.s[i], x));
  return rotc(m.Rc[i], x);
}

// its transpose applied to a parent-frame vector: E^T x = Rz(q)^T Rc^T x
template <class S>
inline V3T<S> applyET(const Model& m, const DataTpl<S>& d, int i, const V3T<S>& x) {
  if (m.type[i] == JointType::Revolute) return rotzT(d.c[i], d.s[i], rotcT(m.Rc[i], x));
  return rotcT(m.Rc[i], x);
}

// x cross r_i, with r_i the parent-to-body translation (constant for revolute joints)
template <class S>
inline V3T<S> cross_r(const Model& m, const DataTpl<S>& d, int i, const V3T<S>& x) {
  if (m.type[i] == JointType::Revolute) return cross_const(x, m.pc[i], m.pc_nz[i]);
  return cross(x, d.r[i]);
}

// symmetric 3x3 times vector (rotational inertia): 9 mul, 6 add
template <class S>
inline V3T<S> sym_mul(const Mat3& I, const V3T<S>& x) {
  return V3T<S>(S(I(0, 0)) * x[0] + S(I(0, 1)) * x[1] + S(I(0, 2)) * x[2],
                S(I(0, 1)) * x[0] + S(I(1, 1)) * x[1] + S(I(1, 2)) * x[2],
                S(I(0, 2)) * x[0] + S(I(1, 2)) * x[1] + S(I(2, 2)) * x[2]);
}

// skew-symmetric matrix [x]
template <class S>
inline M3T<S> skew(const V3T<S>& x) {
  M3T<S> K;
  K << S(0), -x[2], x[1], x[2], S(0), -x[0], -x[1], x[0], S(0);
  return K;
}

}  // namespace robodyn
