// The arithmetic under Xup::forces_to_parent (link.hpp): a link's rotation applied to three
// scalars at a time, and the loop that moves many columns of forces to the parent with it.
#pragma once

#include "robodyn/scalar/simd.hpp"
#include "robodyn/spatial/spatial.hpp"

namespace robodyn {

namespace detail {

// The rotations of a link applied to three scalars in place: the arithmetic of rotz, rotx and
// a general Rc (spatial.hpp), on scalars, so that a loop over many vectors vectorises. The
// constants are of the algorithm's scalar S, the values of V (S, or for double two columns in
// the lanes of simd.hpp's D2: the same operations lane by lane).
template <class S, bool kNeg2 = false>
struct TurnZ {  // rows (c0, -s0, 0), (s1, c1, 0), (0, 0, +-1): Rz(q) with the rows' signs of a
  S c0, s0, s1, c1;  // signed permutation folded in (4 mul, 2 add)
  template <class V>
  ROBODYN_INLINE void operator()(V& x0, V& x1, V& x2) const {
    const V y0 = V(c0) * x0 - V(s0) * x1;
    x1 = V(s1) * x0 + V(c1) * x1;
    x0 = y0;
    if (kNeg2) x2 = -x2;
  }
};
template <class S>
struct TurnX {  // a constant Rx, (c + s, c - s) precomputed: 3 mul, 3 add
  S cx, cps, cms;
  template <class V>
  ROBODYN_INLINE void operator()(V&, V& x1, V& x2) const {
    const V t = V(cx) * (x1 + x2);
    const V y1 = t - V(cps) * x2;
    x2 = t - V(cms) * x1;
    x1 = y1;
  }
};
template <class S>
struct TurnA {  // a general rotation, row-major: 9 mul, 6 add
  S a[9];
  template <class V>
  ROBODYN_INLINE void operator()(V& x0, V& x1, V& x2) const {
    const V y0 = V(a[0]) * x0 + V(a[1]) * x1 + V(a[2]) * x2;
    const V y1 = V(a[3]) * x0 + V(a[4]) * x1 + V(a[5]) * x2;
    x2 = V(a[6]) * x0 + V(a[7]) * x1 + V(a[8]) * x2;
    x0 = y0;
    x1 = y1;
  }
};
template <class S>
struct TurnSigns {  // x_k -> -x_k where neg[k] (free)
  bool neg[3];
  template <class V>
  ROBODYN_INLINE void operator()(V& x0, V& x1, V& x2) const {
    if (neg[0]) x0 = -x0;
    if (neg[1]) x1 = -x1;
    if (neg[2]) x2 = -x2;
  }
};
template <class S, class A, class B>
struct TurnBoth {  // B after A
  A first;
  B second;
  template <class V>
  ROBODYN_INLINE void operator()(V& x0, V& x1, V& x2) const {
    first(x0, x1, x2);
    second(x0, x1, x2);
  }
};

// The loop of Xup::forces_to_parent: for each column c in [lo, hi), its force (n, f) held
// component by component, F[k][c] (k = 0..2 the moment n, 3..5 the force f): u = A f,
// w = A n (turn), w -= u x r, then the force in parent coordinates v = (w, u), relabelled when
// kPerm (a signed permutation: v[dst[j]] = w[j], v[3 + dst[j]] = u[j]; dst is a compile-time
// constant for the callers that know the permutation, Xup<S, kP>), stored in place,
// F[k][c] = v[k], and handed to sink(c, v). Every column is independent: for double the
// columns go two at a time through the lanes of a D2 (simd.hpp; sink.pair(c, v) then gets
// columns c and c + 1), the same operations as one at a time; other scalars one by one. No
// zero pattern: the counting and tracing scalars fold r's known zeros themselves, and the
// double build multiplies by them (cheaper than the branch that would skip them).
template <bool kPerm, class S, class Turn, class Sink>
ROBODYN_INLINE void move_forces(const Turn& turn, const S (&r)[3], const int (&dst)[3],
                                S* const* F, int lo, int hi, const Sink& sink) {
  S* const F0 = F[0]; S* const F1 = F[1]; S* const F2 = F[2];
  S* const F3 = F[3]; S* const F4 = F[4]; S* const F5 = F[5];
  // column c (V = S), or columns c, c + 1 (V = D2): load(p) reads p[c], store(p, x) writes it
  auto move = [&](auto load, auto store, auto emit, int c) ROBODYN_INLINE_LAMBDA {
    auto u0 = load(F3 + c), u1 = load(F4 + c), u2 = load(F5 + c);
    auto w0 = load(F0 + c), w1 = load(F1 + c), w2 = load(F2 + c);
    using V = decltype(u0);
    turn(u0, u1, u2);
    turn(w0, w1, w2);
    const V r0(r[0]), r1(r[1]), r2(r[2]);
    w0 -= u1 * r2;
    w0 += u2 * r1;
    w1 -= u2 * r0;
    w1 += u0 * r2;
    w2 -= u0 * r1;
    w2 += u1 * r0;
    V v[6];
    if (kPerm) {
      v[dst[0]] = w0; v[dst[1]] = w1; v[dst[2]] = w2;
      v[3 + dst[0]] = u0; v[3 + dst[1]] = u1; v[3 + dst[2]] = u2;
    } else {
      v[0] = w0; v[1] = w1; v[2] = w2; v[3] = u0; v[4] = u1; v[5] = u2;
    }
    store(F0 + c, v[0]);
    store(F1 + c, v[1]);
    store(F2 + c, v[2]);
    store(F3 + c, v[3]);
    store(F4 + c, v[4]);
    store(F5 + c, v[5]);
    emit(c, v);
  };
  auto load1 = [](const S* p) ROBODYN_INLINE_LAMBDA { return *p; };
  auto store1 = [](S* p, const S& x) ROBODYN_INLINE_LAMBDA { *p = x; };
#if ROBODYN_HAVE_D2
  if constexpr (std::is_same<S, double>::value) {
    int c = lo;
    for (; c + 2 <= hi; c += 2)
      move(load_pair, store_pair,
           [&](int k, const D2 (&v)[6]) ROBODYN_INLINE_LAMBDA { sink.pair(k, v); }, c);
    if (c < hi) move(load1, store1, sink, c);
    return;
  }
#endif
  for (int c = lo; c < hi; ++c) move(load1, store1, sink, c);
}

}  // namespace detail

}  // namespace robodyn
