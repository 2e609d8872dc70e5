// D2: two doubles in one SSE2 register, a scalar type for the algorithm templates, so that a
// batch runs two states through one sweep (the bindings' batch loop, two rows at a time).
//
// Every operation is the double operation on both lanes (IEEE, no fused multiply-add on
// baseline x86-64), so each lane takes the same steps as the double build; kSkipZeros is
// false as for double (known zeros multiplied, not branched on). There are deliberately no
// ordering comparisons: a branch on a value would have to pick one lane, so an algorithm that
// branches on its data does not compile with D2 (equality, both lanes equal, serves the
// configuration cache's key). Functions of one lane's value get their own overloads here
// (signum, positive) or beside the double kernel (sin_cos in kinematics.hpp).
#pragma once

#if defined(__SSE2__)
#define ROBODYN_HAVE_D2 1

#include <emmintrin.h>

#include <Eigen/Core>

#include "robodyn/scalar/scalar_traits.hpp"

namespace robodyn {

struct D2 {
  __m128d v;

  D2() = default;
  D2(double x) : v(_mm_set1_pd(x)) {}  // a model constant: both lanes
  explicit D2(__m128d x) : v(x) {}
  // lane 0 = a, lane 1 = b
  static D2 lanes(double a, double b) { return D2(_mm_set_pd(b, a)); }
  double lane0() const { return _mm_cvtsd_f64(v); }
  double lane1() const { return _mm_cvtsd_f64(_mm_unpackhi_pd(v, v)); }

  D2& operator+=(const D2& y) { v = _mm_add_pd(v, y.v); return *this; }
  D2& operator-=(const D2& y) { v = _mm_sub_pd(v, y.v); return *this; }
  D2& operator*=(const D2& y) { v = _mm_mul_pd(v, y.v); return *this; }
  D2& operator/=(const D2& y) { v = _mm_div_pd(v, y.v); return *this; }

  // hidden friends: found by argument-dependent lookup (sqrt(x) after `using std::sqrt;`)
  friend D2 operator+(D2 x, const D2& y) { return x += y; }
  friend D2 operator-(D2 x, const D2& y) { return x -= y; }
  friend D2 operator*(D2 x, const D2& y) { return x *= y; }
  friend D2 operator/(D2 x, const D2& y) { return x /= y; }
  friend D2 operator-(const D2& x) { return D2(_mm_xor_pd(x.v, _mm_set1_pd(-0.0))); }
  friend D2 operator+(const D2& x) { return x; }
  // both lanes equal
  friend bool operator==(const D2& x, const D2& y) {
    return _mm_movemask_pd(_mm_cmpeq_pd(x.v, y.v)) == 3;
  }
  friend bool operator!=(const D2& x, const D2& y) { return !(x == y); }
  friend D2 sqrt(const D2& x) { return D2(_mm_sqrt_pd(x.v)); }
  friend D2 abs(const D2& x) { return D2(_mm_andnot_pd(_mm_set1_pd(-0.0), x.v)); }
};

// two consecutive doubles of an array as one D2 (p[0] in lane 0), and back
inline D2 load_pair(const double* p) { return D2(_mm_loadu_pd(p)); }
inline void store_pair(double* p, const D2& x) { _mm_storeu_pd(p, x.v); }
// lane 0 to *p0, lane 1 to *p1
inline void store_lanes(double* p0, double* p1, const D2& x) {
  _mm_storel_pd(p0, x.v);
  _mm_storeh_pd(p1, x.v);
}
// (a, b) = ((a0, a1), (b0, b1)) -> ((a0, b0), (a1, b1))
inline void transpose_pair(D2& a, D2& b) {
  const __m128d lo = _mm_unpacklo_pd(a.v, b.v);
  b.v = _mm_unpackhi_pd(a.v, b.v);
  a.v = lo;
}

// the double build multiplies by known zeros: so does D2 (the same steps in each lane)
template <>
constexpr bool kSkipZeros<D2> = false;

namespace detail {
// sign(x) as -1, 0, +1 in each lane (joint.hpp's signum)
inline D2 signum(const D2& x) {
  const __m128d zero = _mm_setzero_pd(), one = _mm_set1_pd(1.0);
  const __m128d pos = _mm_and_pd(_mm_cmpgt_pd(x.v, zero), one);
  const __m128d neg = _mm_and_pd(_mm_cmplt_pd(x.v, zero), one);
  return D2(_mm_sub_pd(pos, neg));
}
// x > 0 in both lanes (aba.hpp's pivot test: a batch fails when any row does)
inline bool positive(const D2& x) {
  return _mm_movemask_pd(_mm_cmpgt_pd(x.v, _mm_setzero_pd())) == 3;
}
}  // namespace detail

}  // namespace robodyn

namespace Eigen {
template <>
struct NumTraits<robodyn::D2> : robodyn::DoubleLikeNumTraits<robodyn::D2> {};
}  // namespace Eigen

#endif
