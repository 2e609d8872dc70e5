// The link transform of body i, Featherstone's X_i = Xup[i] (RBDA 2.8, 4.1): the one place that
// knows how each kind of link (model.hpp's LinkKind, chosen once in build_model) is applied.
//
// Body i's pose in its parent is (E, r): E the parent-to-body rotation (body axes to parent
// axes), r the body origin in parent axes. The motion transform from the parent to body i is
//
//   X = [ E^T        0  ]      X m = (E^T w, E^T (v + w x r))   for m = (w, v) in the parent
//       [ -E^T [r]  E^T ]      X^T f = (E n + r x E f, E f)      for f = (n, f) in body i
//
// (spatial vectors [angular; linear], each held as two 3-vectors). E = Rc Rz(q) for a revolute
// joint (r = pc, a constant with known zeros), E = Rc for a prismatic one (r = pc + Rc q e_z),
// E = Rc R(quat) for a free-flyer (its E and r computed by update_kinematics). Rc is a signed
// permutation (free), a rotation about x (3 mul) or general; the kind of each body is fixed
// at build time, and every switch on Model::link[i] is inside this type (with_link and with_step
// below make it a compile-time constant for a loop body).
//
// Xup needs the configuration cache at level >= 1 (update_kinematics): d.cos_q, d.sin_q for
// revolute joints, d.Xup_r (valid for every kind at level >= 1), d.Xup_E for a free-flyer.
#pragma once

#include <array>
#include <cstddef>
#include <type_traits>

#include "robodyn/model/data.hpp"
#include "robodyn/model/model.hpp"
#include "robodyn/spatial/link_turns.hpp"
#include "robodyn/spatial/spatial.hpp"

// fixed-count loops over the entries of 3x3 and 6x6 matrices: unrolled (their index lists are
// compile-time constants)
#if defined(__GNUC__) && !defined(__clang__)
#define ROBODYN_UNROLL _Pragma("GCC unroll 8")
#elif defined(__clang__)
#define ROBODYN_UNROLL _Pragma("unroll")
#else
#define ROBODYN_UNROLL
#endif
// loops whose counts are compile-time constants up to 16 (a factorisation of a fixed size)
#if defined(__GNUC__) && !defined(__clang__)
#define ROBODYN_UNROLL_ALL _Pragma("GCC unroll 16")
#elif defined(__clang__)
#define ROBODYN_UNROLL_ALL _Pragma("unroll")
#else
#define ROBODYN_UNROLL_ALL
#endif

namespace robodyn {

namespace detail {

// R^T x and R x for a signed-permutation constant rotation (free; kP: perm_at)
template <int kP = -1, class S>
ROBODYN_INLINE V3T<S> permT(const ConstRotation& R, const V3T<S>& x) {
  const int p0 = perm_at<kP>(R, 0), p1 = perm_at<kP>(R, 1), p2 = perm_at<kP>(R, 2);
  return V3T<S>(R.neg[0] ? S(-x[p0]) : x[p0], R.neg[1] ? S(-x[p1]) : x[p1],
                R.neg[2] ? S(-x[p2]) : x[p2]);
}
template <int kP = -1, class S>
ROBODYN_INLINE V3T<S> perm(const ConstRotation& R, const V3T<S>& x) {
  const int p0 = iperm_at<kP>(R, 0), p1 = iperm_at<kP>(R, 1), p2 = iperm_at<kP>(R, 2);
  return V3T<S>(R.ineg[0] ? S(-x[p0]) : x[p0], R.ineg[1] ? S(-x[p1]) : x[p1],
                R.ineg[2] ? S(-x[p2]) : x[p2]);
}

// the symmetric parallel-axis shift of an inertia about the body origin, moved by r (parent
// axes) with first moment y (parent axes) and mass mass:
//   -[r][y] - [y][r] - mass [r][r] = 2 (r.z) 1 - (r z' + z r'),  z = y + (mass/2) r,
// added to A; the zero components of r (nz) are skipped
template <class S>
ROBODYN_INLINE void add_shift(const V3T<S>& r, const std::array<bool, 3>& nz, const V3T<S>& z,
                              M3T<S>& A) {
  S p[3];
  for (int k = 0; k < 3; ++k) p[k] = nz[k] ? S(r[k] * z[k]) : S(0);
  auto sum2 = [&](int i, int j) ROBODYN_INLINE_LAMBDA -> S {  // 2 (p_i + p_j), skipping zeros
    const S t = nz[i] && nz[j] ? S(p[i] + p[j]) : (nz[i] ? p[i] : (nz[j] ? p[j] : S(0)));
    return nz[i] || nz[j] ? S(t + t) : S(0);
  };
  if (nz[1] || nz[2]) A(0, 0) += sum2(1, 2);
  if (nz[0] || nz[2]) A(1, 1) += sum2(0, 2);
  if (nz[0] || nz[1]) A(2, 2) += sum2(0, 1);
  const int ij[3][2] = {{0, 1}, {0, 2}, {1, 2}};
  for (const auto& e : ij) {
    const int i = e[0], j = e[1];
    if (!nz[i] && !nz[j]) continue;
    S t = nz[i] && nz[j] ? S(r[i] * z[j] + z[i] * r[j]) : (nz[i] ? S(r[i] * z[j]) : S(z[i] * r[j]));
    A(i, j) -= t;
    A(j, i) = A(i, j);
  }
}

// The articulated-inertia shifts of Xup::add_transport. [A B; B' C] moved by r = l e_x (see
// shift_dense); kZ2: row and column 2 of A and row 2 of B are zero
template <bool kZ2, class S>
ROBODYN_INLINE void shift_x(double l, M3T<S>& A, M3T<S>& B, const M3T<S>& C) {
  const S L(l), L2(l + l), LL(l * l);
  A(0, 1) -= L * B(0, 2);
  A(1, 1) += LL * C(2, 2) - L2 * B(1, 2);
  if (kZ2) {
    A(0, 2) = L * B(0, 1);
    A(1, 2) = L * B(1, 1) - LL * C(2, 1);
    A(2, 2) = LL * C(1, 1);
  } else {
    A(0, 2) += L * B(0, 1);
    A(1, 2) += L * (B(1, 1) - B(2, 2)) - LL * C(2, 1);
    A(2, 2) += LL * C(1, 1) + L2 * B(2, 1);
  }
  A(1, 0) = A(0, 1);
  A(2, 0) = A(0, 2);
  A(2, 1) = A(1, 2);
  for (int j = 0; j < 3; ++j) {
    B(1, j) -= L * C(j, 2);
    B(2, j) = kZ2 ? S(L * C(j, 1)) : S(B(2, j) + L * C(j, 1));
  }
}

// the same for r = l e_z
template <class S>
ROBODYN_INLINE void shift_z(double l, M3T<S>& A, M3T<S>& B, const M3T<S>& C) {
  const S L(l), L2(l + l), LL(l * l);
  A(0, 0) += LL * C(1, 1) - L2 * B(0, 1);
  A(0, 1) += L * (B(0, 0) - B(1, 1)) - LL * C(1, 0);
  A(0, 2) -= L * B(2, 1);
  A(1, 1) += LL * C(0, 0) + L2 * B(1, 0);
  A(1, 2) += L * B(2, 0);
  A(1, 0) = A(0, 1);
  A(2, 0) = A(0, 2);
  A(2, 1) = A(1, 2);
  for (int j = 0; j < 3; ++j) {
    const S b0 = B(0, j) - L * C(j, 1);
    B(1, j) += L * C(j, 0);
    B(0, j) = b0;
  }
}

// calls fn(std::integral_constant<int, P>()) for the zero pattern P of nz (bit k: nz[k])
template <class Fn>
ROBODYN_INLINE void with_pattern(const std::array<bool, 3>& nz, Fn&& fn) {
  switch (int(nz[0]) | int(nz[1]) << 1 | int(nz[2]) << 2) {
    case 0: return fn(std::integral_constant<int, 0>());
    case 1: return fn(std::integral_constant<int, 1>());
    case 2: return fn(std::integral_constant<int, 2>());
    case 3: return fn(std::integral_constant<int, 3>());
    case 4: return fn(std::integral_constant<int, 4>());
    case 5: return fn(std::integral_constant<int, 5>());
    case 6: return fn(std::integral_constant<int, 6>());
    default: return fn(std::integral_constant<int, 7>());
  }
}

// Moves [A B; B' C] to a point displaced by -r: A - K - K' - [r] T, B - T', C with K = B [r],
// T = C [r] ([r] T is symmetric). P: the zero pattern of r (bit k: r_k != 0, known when the
// model is built: a revolute link's constant offset), its zero terms skipped; 7 every entry
template <int P, class S>
ROBODYN_INLINE void shift_dense(const V3T<S>& r, M3T<S>& A, M3T<S>& B, const M3T<S>& C) {
  if constexpr (P != 0) {
    constexpr bool nz[3] = {(P & 1) != 0, (P & 2) != 0, (P & 4) != 0};
    // x r_a - y r_b, the terms of the zero r's skipped
    auto cr = [&](int a, const S& x, int b, const S& y) ROBODYN_INLINE_LAMBDA -> S {
      if (nz[a] && nz[b]) return x * r[a] - y * r[b];
      if (nz[a]) return x * r[a];
      if (nz[b]) return -(y * r[b]);
      return S(0);
    };
    M3T<S> T, K;
    ROBODYN_UNROLL
    for (int a = 0; a < 3; ++a) {
      T(a, 0) = cr(2, C(a, 1), 1, C(a, 2));
      T(a, 1) = cr(0, C(a, 2), 2, C(a, 0));
      T(a, 2) = cr(1, C(a, 0), 0, C(a, 1));
      K(a, 0) = cr(2, B(a, 1), 1, B(a, 2));
      K(a, 1) = cr(0, B(a, 2), 2, B(a, 0));
      K(a, 2) = cr(1, B(a, 0), 0, B(a, 1));
    }
    ROBODYN_UNROLL
    for (int a = 0; a < 3; ++a)
      ROBODYN_UNROLL
      for (int b = a; b < 3; ++b) {
        const int a1 = (a + 1) % 3, a2 = (a + 2) % 3;
        A(a, b) = A(a, b) - K(a, b) - K(b, a) - cr(a1, T(a2, b), a2, T(a1, b));
        A(b, a) = A(a, b);
      }
    B -= T.transpose();
  }
}

}  // namespace detail

// the joint of a link kind
constexpr JointType joint_of(LinkKind k) {
  return k <= LinkKind::RevGeneral    ? JointType::Revolute
         : k <= LinkKind::PrisGeneral ? JointType::Prismatic
                                      : JointType::FreeFlyer;
}

// Calls fn(std::integral_constant<LinkKind, K>()) with body i's link kind K (Model::link[i]):
// the one dispatch per body. An Xup made from it (Xup(m, d, i, K)) knows its kind at compile
// time, so the loop body runs without the per-call switches on the kind.
template <class Fn>
ROBODYN_INLINE void with_link(const Model& m, int i, Fn&& fn) {
  using K = LinkKind;
  switch (m.link[i]) {
    case K::RevPerm: return fn(std::integral_constant<K, K::RevPerm>());
    case K::RevRotX: return fn(std::integral_constant<K, K::RevRotX>());
    case K::RevDH: return fn(std::integral_constant<K, K::RevDH>());
    case K::RevGeneral: return fn(std::integral_constant<K, K::RevGeneral>());
    case K::PrisPerm: return fn(std::integral_constant<K, K::PrisPerm>());
    case K::PrisRotX: return fn(std::integral_constant<K, K::PrisRotX>());
    case K::PrisGeneral: return fn(std::integral_constant<K, K::PrisGeneral>());
    default: return fn(std::integral_constant<K, K::FreeFlyer>());
  }
}

// Calls fn(std::integral_constant<int, C>()) with body i's case C (Model::step: step_kind(C),
// step_relabel(C), step_parent(C)): one jump per body where switches on the link kind, on the
// relabelling of a signed permutation and on the parent's joint type would make three
#define ROBODYN_STEP_CASE(C) \
  case C: return fn(std::integral_constant<int, C>());
#define ROBODYN_STEP_CASES6(C)                                              \
  ROBODYN_STEP_CASE(C) ROBODYN_STEP_CASE(C + 1) ROBODYN_STEP_CASE(C + 2) \
  ROBODYN_STEP_CASE(C + 3) ROBODYN_STEP_CASE(C + 4) ROBODYN_STEP_CASE(C + 5)
template <class Fn>
ROBODYN_INLINE void with_step(const Model& m, int i, Fn&& fn) {
  static_assert(kStepCases == 54, "with_step lists 54 cases");
  switch (m.step[i]) {
    ROBODYN_STEP_CASES6(0) ROBODYN_STEP_CASES6(6) ROBODYN_STEP_CASES6(12)
    ROBODYN_STEP_CASES6(18) ROBODYN_STEP_CASES6(24) ROBODYN_STEP_CASES6(30)
    ROBODYN_STEP_CASES6(36) ROBODYN_STEP_CASES6(42) ROBODYN_STEP_CASE(48)
    ROBODYN_STEP_CASE(49) ROBODYN_STEP_CASE(50) ROBODYN_STEP_CASE(51) ROBODYN_STEP_CASE(52)
    default: return fn(std::integral_constant<int, 53>());
  }
}
#undef ROBODYN_STEP_CASES6
#undef ROBODYN_STEP_CASE

// X_i at the cached configuration: a view of the model's constants and the Data's cache. kP: the
// number of a signed permutation Rc's relabelling (perm_at) when the caller knows it at compile
// time (with_step's case), else -1
template <class S, int kP = -1>
struct Xup {
  using V3 = V3T<S>;
  using M3 = M3T<S>;
  using M6 = Eigen::Matrix<S, 6, 6>;

  const Model& m;
  const DataTpl<S>& d;
  const int i;
  const LinkKind kind;

  ROBODYN_INLINE Xup(const Model& model, const DataTpl<S>& data, int body)
      : m(model), d(data), i(body), kind(model.link[body]) {}
  // the kind given as a compile-time constant (with_link below): every dispatch on it folds
  template <LinkKind K>
  ROBODYN_INLINE Xup(const Model& model, const DataTpl<S>& data, int body,
                     std::integral_constant<LinkKind, K>)
      : m(model), d(data), i(body), kind(K) {}

  bool revolute() const { return kind <= LinkKind::RevGeneral; }

  // E x: a body-i vector in parent axes (revolute: 4 mul for Rz, then 0 / 3 / 9 for Rc)
  ROBODYN_INLINE V3 E(const V3& x) const {
    const ConstRotation& R = m.Rc[i];
    switch (kind) {
      case LinkKind::RevPerm: return detail::perm<kP>(R, rotz(d.cos_q[i], d.sin_q[i], x));
      case LinkKind::RevRotX:
      case LinkKind::RevDH: return rotx(R, rotz(d.cos_q[i], d.sin_q[i], x));
      case LinkKind::RevGeneral: return mat_mul<S>(R.R, rotz(d.cos_q[i], d.sin_q[i], x));
      case LinkKind::PrisPerm: return detail::perm<kP>(R, x);
      case LinkKind::PrisRotX: return rotx(R, x);
      case LinkKind::PrisGeneral: return mat_mul<S>(R.R, x);
      default: return mat_mul<S>(d.Xup_E[i], x);  // free-flyer: the full rotation
    }
  }

  // E^T x: a parent-axes vector in body i's axes
  ROBODYN_INLINE V3 ET(const V3& x) const {
    const ConstRotation& R = m.Rc[i];
    switch (kind) {
      case LinkKind::RevPerm: return rotzT(d.cos_q[i], d.sin_q[i], detail::permT<kP>(R, x));
      case LinkKind::RevRotX:
      case LinkKind::RevDH: return rotzT(d.cos_q[i], d.sin_q[i], rotxT(R, x));
      case LinkKind::RevGeneral:
        return rotzT(d.cos_q[i], d.sin_q[i], mat_mulT<S>(R.R, x));
      case LinkKind::PrisPerm: return detail::permT<kP>(R, x);
      case LinkKind::PrisRotX: return rotxT(R, x);
      case LinkKind::PrisGeneral: return mat_mulT<S>(R.R, x);
      default: return mat_mulT<S>(d.Xup_E[i], x);
    }
  }

  // r, the body origin in parent axes (valid for every kind at cache level >= 1)
  ROBODYN_INLINE const V3& r() const { return d.Xup_r[i]; }

  // the zero pattern of r: the constant pc's for a revolute joint, else full
  ROBODYN_INLINE std::array<bool, 3> r_nz() const {
    if (revolute()) return m.pc_nz[i];
    return {{true, true, true}};
  }

  // x . r (revolute: the constant pc's zeros skipped)
  ROBODYN_INLINE S dot_r(const V3& x) const {
    if (!revolute()) return x.dot(d.Xup_r[i]);
    return dot_const<S>(x[0], x[1], x[2], m.pc[i], m.pc_nz[i]);
  }

  // x cross r (revolute: the constant pc's zeros skipped; 4 mul for a DH link)
  ROBODYN_INLINE V3 cross_r(const V3& x) const {
    switch (kind) {
      case LinkKind::RevDH: return detail::cross_pattern<5, S>(x, m.pc[i]);  // pc = (a, 0, d)
      case LinkKind::RevPerm:
      case LinkKind::RevRotX:
      case LinkKind::RevGeneral: return cross_const(x, m.pc[i], m.pc_nz[i]);
      default: return cross<S>(x, d.Xup_r[i]);
    }
  }

  // A r for a 3x3 A (revolute: the zeros of pc skipped; the others written out, the same
  // order of additions for double and simd.hpp's D2)
  ROBODYN_INLINE V3 times_r(const M3& A) const {
    if (!revolute()) return mat_mul<S>(A, d.Xup_r[i]);
    const Vec3& c = m.pc[i];
    const auto& nz = m.pc_nz[i];
    return V3(dot_const<S>(A(0, 0), A(0, 1), A(0, 2), c, nz),
              dot_const<S>(A(1, 0), A(1, 1), A(1, 2), c, nz),
              dot_const<S>(A(2, 0), A(2, 1), A(2, 2), c, nz));
  }

  // X m for a parent motion m = (w, v): (E^T w, E^T (v + w x r))
  ROBODYN_INLINE void apply(const V3& w, const V3& v, V3& wi, V3& vi) const {
    wi = ET(w);
    vi = ET(V3(v + cross_r(w)));
  }

  // X^T f for a body force f = (n, f), the force in parent coordinates, is
  // (E n - (E f) x r, E f): its three parts (E f, (E f) x r, E n)
  ROBODYN_INLINE void force_parts(const V3& n, const V3& f, V3& Ef, V3& Efr, V3& En) const {
    Ef = E(f);
    Efr = cross_r(Ef);
    En = E(n);
  }

  // X^T f: (np, fp) = (E n + r x E f, E f) (the outputs may be the inputs)
  ROBODYN_INLINE void force_to_parent(const V3& n, const V3& f, V3& np, V3& fp) const {
    V3 Ef, c, En;
    force_parts(n, f, Ef, c, En);
    for (int k = 0; k < 3; ++k) {
      np[k] = En[k] - c[k];
      fp[k] = Ef[k];
    }
  }

  // X^T f ADDED to the parent's (np, fp): np += E n + r x E f, fp += E f
  ROBODYN_INLINE void apply_transpose(const V3& n, const V3& f, V3& np, V3& fp) const {
    V3 Ef, c, En;
    force_parts(n, f, Ef, c, En);
    for (int k = 0; k < 3; ++k) {
      np[k] += En[k] - c[k];
      fp[k] += Ef[k];
    }
  }

  // X^T f in place for the forces f = (n, f) of the columns c in [lo, hi), held component by
  // component: F[k][c], k = 0..2 the moment n, 3..5 the force f; each becomes
  // (E n + r x E f, E f) in parent coordinates, then goes to sink(c, v) (v: its six components
  // in parent coordinates; crba stores the parent's entries of H from it). Made with the kind
  // as a compile-time constant (with_link), the kind's case is chosen when this inlines; the
  // rotation's constants are set up once for the range.
  template <class Sink>
  ROBODYN_INLINE void forces_to_parent(S* const* F, int lo, int hi, const Sink& sink) const;

  // E B E^T (B symmetric if kSym): a body-axes 3x3 tensor in parent axes. (B copied entry by
  // entry, the result one named matrix: in a large translation unit GCC may leave Eigen's 3x3
  // copy and move constructors out of line, a call each per body)
  template <bool kSym>
  ROBODYN_INLINE M3 rotate(const M3& B0) const {
    M3 B;
    for (int k = 0; k < 9; ++k) B.data()[k] = B0.data()[k];
    if (kind == LinkKind::FreeFlyer) return d.Xup_E[i] * B * d.Xup_E[i].transpose();
    if (revolute()) {
      if (kSym)
        rotate_sym_plane<0, 1, 2>(plane_z(d, i), B);
      else
        rotate_gen_plane<0, 1, 2>(plane_z(d, i), B);
    }
    return rotate_const<kSym, S, kP>(m.Rc[i], B, const_kind());
  }

  // the class of the constant rotation Rc (fixed by the link kind)
  ROBODYN_INLINE ConstRotation::Kind const_kind() const {
    switch (kind) {
      case LinkKind::RevPerm:
      case LinkKind::PrisPerm: return ConstRotation::Permutation;
      case LinkKind::RevRotX:
      case LinkKind::RevDH:
      case LinkKind::PrisRotX: return ConstRotation::RotX;
      case LinkKind::FreeFlyer: return m.Rc[i].kind;
      default: return ConstRotation::General;
    }
  }

  // X^T I X for a rigid (or composite) inertia I = (mass, h, Ibar) of body i (first moment h,
  // rotational inertia Ibar about body i's origin, body axes), ADDED to the parent's
  // (mass_p, h_p, Ibar_p): h_p += E h + mass r, Ibar_p += E Ibar E^T - [r][Eh] - [Eh][r]
  // - mass [r][r]
  ROBODYN_INLINE void transport_inertia(const S& mass, const V3& h, const M3& Ibar, S& mass_p,
                                        V3& h_p, M3& Ibar_p) const {
    const V3& rr = d.Xup_r[i];
    // the zeros of r skipped by the instrumented scalars; the double build multiplies by them
    const std::array<bool, 3> nz =
        kSkipZeros<S> ? r_nz() : std::array<bool, 3>{{true, true, true}};
    const V3 y = E(h);
    // t = (mass/2) r, z = y + t; the first moment moves to y + mass r = y + (t + t)
    const S half = S(0.5) * mass;
    V3 z = y, t;
    for (int k = 0; k < 3; ++k) {
      t[k] = nz[k] ? S(half * rr[k]) : S(0);
      if (nz[k]) z[k] += t[k];
    }
    M3 Ip = rotate<true>(Ibar);
    detail::add_shift<S>(rr, nz, z, Ip);
    // (entry by entry: Eigen's += is not always inlined in a large translation unit)
    for (int k = 0; k < 9; ++k) Ibar_p.data()[k] += Ip.data()[k];
    for (int k = 0; k < 3; ++k) h_p[k] += nz[k] ? S(y[k] + (t[k] + t[k])) : y[k];
    mass_p += mass;
  }

  // X^T IA X for a symmetric 6x6 (articulated) inertia of body i, in parent coordinates
  // (returned whole, both triangles): add_transport below from zero
  ROBODYN_INLINE M6 transport(const M6& IA) const {
    M6 out = M6::Zero();
    add_transport<false>(IA, out);
    return out.template selfadjointView<Eigen::Upper>();
  }

  // IA_p += X^T Ia X (upper triangles): body i's articulated inertia Ia = [A B; B' C] (about its
  // origin, body axes; read from the upper triangle) in parent coordinates, the aba's transport
  // (RBDA Table 7.1). kZ2: row and column 2 of Ia are zero (a revolute joint without armature:
  // Ia S = 0). Turned by Rz(q) (revolute), then a DH link (Rc a rotation about x, r = (a, 0, d))
  // in three cheap steps: a shift along x by a (x is fixed by the next step), Rx(alpha), a shift
  // along z by d; any other link moved by Rc^T r, then turned by Rc (a signed permutation: while
  // adding).
  template <bool kZ2>
  void add_transport(const M6& Ia, M6& IAp) const {
    M3T<S> A, B, C;
    ROBODYN_UNROLL
    for (int a = 0; a < 3; ++a)
      ROBODYN_UNROLL
      for (int b = a; b < 3; ++b) {
        A(a, b) = A(b, a) = Ia(a, b);
        C(a, b) = C(b, a) = Ia(3 + a, 3 + b);
      }
    B = Ia.template topRightCorner<3, 3>();
    if (revolute()) {
      const PlaneRot<S> R = plane_z(d, i);
      rotate_sym_plane<0, 1, 2, kZ2>(R, A);
      rotate_gen_plane<0, 1, 2, kZ2>(R, B);
      rotate_sym_plane<0, 1, 2>(R, C);
    }
    const ConstRotation& Rc = m.Rc[i];
    const V3T<S>& r = d.Xup_r[i];
    if (kind == LinkKind::RevDH) {
      detail::shift_x<kZ2>(m.pc[i][0], A, B, C);
      const PlaneRot<S> P = plane_of<S>(Rc);
      rotate_sym_plane<1, 2, 0>(P, A);
      rotate_gen_plane<1, 2, 0>(P, B);
      rotate_sym_plane<1, 2, 0>(P, C);
      detail::shift_z(m.pc[i][2], A, B, C);
    } else if (kind == LinkKind::FreeFlyer) {
      const M3T<S>& E = d.Xup_E[i];
      A = E * A * E.transpose();
      B = E * B * E.transpose();
      C = E * C * E.transpose();
      detail::shift_dense<7, S>(r, A, B, C);
    } else {
      // r in Rc's axes; its zeros (a revolute link's pc through a signed permutation) skipped
      const V3T<S> rr = rotcT<S>(Rc, r);
      if (revolute() && Rc.kind == ConstRotation::Permutation) {
        const auto& nz = m.pc_nz[i];
        const std::array<bool, 3> rnz{
            {nz[perm_at<kP>(Rc, 0)], nz[perm_at<kP>(Rc, 1)], nz[perm_at<kP>(Rc, 2)]}};
        detail::with_pattern(rnz, [&](auto P) {
          detail::shift_dense<decltype(P)::value, S>(rr, A, B, C);
        });
      } else {
        detail::shift_dense<7, S>(rr, A, B, C);
      }
      if (Rc.kind == ConstRotation::Permutation) {
        // (Rc M Rc')(a, b) = +-M(iperm a, iperm b)
        ROBODYN_UNROLL
        for (int a = 0; a < 3; ++a) {
          const int pa = iperm_at<kP>(Rc, a);
          ROBODYN_UNROLL
          for (int b = 0; b < 3; ++b) {
            const int pb = iperm_at<kP>(Rc, b);
            const bool flip = Rc.ineg[a] != Rc.ineg[b];
            if (b >= a) {
              IAp(a, b) += flip ? S(-A(pa, pb)) : A(pa, pb);
              IAp(3 + a, 3 + b) += flip ? S(-C(pa, pb)) : C(pa, pb);
            }
            IAp(a, 3 + b) += flip ? S(-B(pa, pb)) : B(pa, pb);
          }
        }
        return;
      }
      A = rotate_const<true, S>(Rc, A);
      B = rotate_const<false, S>(Rc, B);
      C = rotate_const<true, S>(Rc, C);
    }
    ROBODYN_UNROLL
    for (int a = 0; a < 3; ++a) {
      ROBODYN_UNROLL
      for (int b = a; b < 3; ++b) {
        IAp(a, b) += A(a, b);
        IAp(3 + a, 3 + b) += C(a, b);
      }
      ROBODYN_UNROLL
      for (int b = 0; b < 3; ++b) IAp(a, 3 + b) += B(a, b);
    }
  }
};

template <class S, int kP>
template <class Sink>
ROBODYN_INLINE void Xup<S, kP>::forces_to_parent(S* const* F, int lo, int hi,
                                                 const Sink& sink) const {
  using namespace detail;
  const ConstRotation& R = m.Rc[i];
  const bool rev = revolute();
  // r (revolute: the constant pc)
  const S r[3] = {rev ? S(m.pc[i][0]) : d.Xup_r[i][0], rev ? S(m.pc[i][1]) : d.Xup_r[i][1],
                  rev ? S(m.pc[i][2]) : d.Xup_r[i][2]};
  const int id[3] = {0, 1, 2};
  if (kind == LinkKind::RevPerm || kind == LinkKind::PrisPerm) {
    // Rc = P, a signed permutation, (P^T x)_j = +-x_perm[j]: with D = diag(+-1) the signs
    // neg and Pi the relabelling j -> perm[j], P = Pi D and D (a x b) = det(D) (D a x D b),
    // so P (w - u x P^T r) = Pi (D w - D u x det(D) Pi^T r): D folded into the rotation,
    // Pi applied by storing component j at perm[j]
    const bool* neg = R.neg.data();
    const bool odd = neg[0] != neg[1] != neg[2];  // det(D) = -1
    const int dst[3] = {perm_at<kP>(R, 0), perm_at<kP>(R, 1), perm_at<kP>(R, 2)};
    S rp[3];  // det(D) Pi^T r
    for (int j = 0; j < 3; ++j) rp[j] = odd ? S(-r[dst[j]]) : r[dst[j]];
    if (!rev) {
      const TurnSigns<S> turn{{neg[0], neg[1], neg[2]}};
      return move_forces<true, S>(turn, rp, dst, F, lo, hi, sink);
    }
    const S c = d.cos_q[i], s = d.sin_q[i];
    const S c0 = neg[0] ? S(-c) : c, s0 = neg[0] ? S(-s) : s;
    const S c1 = neg[1] ? S(-c) : c, s1 = neg[1] ? S(-s) : s;
    if (neg[2]) {
      return move_forces<true, S>(TurnZ<S, true>{c0, s0, s1, c1}, rp, dst, F, lo, hi, sink);
    }
    return move_forces<true, S>(TurnZ<S>{c0, s0, s1, c1}, rp, dst, F, lo, hi, sink);
  }
  const TurnZ<S> z{d.cos_q[i], d.sin_q[i], d.sin_q[i], d.cos_q[i]};
  if (kind == LinkKind::RevRotX || kind == LinkKind::RevDH || kind == LinkKind::PrisRotX) {
    const TurnX<S> x{S(R.cx), S(R.cpsx), S(R.cmsx)};
    if (!rev) return move_forces<false, S>(x, r, id, F, lo, hi, sink);
    return move_forces<false, S>(TurnBoth<S, TurnZ<S>, TurnX<S>>{z, x}, r, id, F, lo, hi, sink);
  }
  // a general rotation (or a free-flyer's)
  TurnA<S> a;
  for (int k = 0; k < 9; ++k)
    a.a[k] = kind == LinkKind::FreeFlyer ? d.Xup_E[i](k / 3, k % 3) : S(R.R(k / 3, k % 3));
  if (!rev) return move_forces<false, S>(a, r, id, F, lo, hi, sink);
  return move_forces<false, S>(TurnBoth<S, TurnZ<S>, TurnA<S>>{z, a}, r, id, F, lo, hi, sink);
}

}  // namespace robodyn
