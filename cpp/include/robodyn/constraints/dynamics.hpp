// Constrained forward dynamics and the operational-space inverse inertia of loop constraints
// (constraints/loop.hpp).
//
//   M qdd + h = tau + J' lam,   J qdd = -gamma - kd J v - kp phi = rhs
// through M's tree-sparse factor M = L' L (factorization.hpp's ltl_factor) and the Schur
// complement A = J M^-1 J' = Y Y', Y = J L^-1 (rows L^-T J'): with z = L^-T (tau - h), the
// unconstrained acceleration gives J qdd_free = Y z, and A lam = rhs - Y z = r; then
// qdd = L^-1 (z + Y' lam). mu = 0 solves A lam = r by A's Cholesky factor and refuses a
// rank-deficient A; mu > 0 runs the proximal point iterations on the multipliers
// (Carpentier, Budhiraja & Mansard, RSS 2021), (A + mu I) lam_k+1 = r + mu lam_k from lam_0 = 0,
// until |A lam - r| (the constraint acceleration error) is below tol or max_iter: for a
// consistent singular A they converge to the minimum-norm multipliers.
#pragma once

#include <cmath>
#include <type_traits>

#include "robodyn/algorithms/crba.hpp"
#include "robodyn/algorithms/factorization.hpp"
#include "robodyn/algorithms/rnea.hpp"
#include "robodyn/constraints/loop.hpp"
#include "robodyn/model/data.hpp"
#include "robodyn/model/model.hpp"
#include "robodyn/spatial/joint.hpp"
#include "robodyn/spatial/link.hpp"
#include "robodyn/spatial/spatial.hpp"

namespace robodyn {

enum class ConstraintStatus { Ok, MassNotPositive, RankDeficient };

// a pivot of A's Cholesky factor at most this times its diagonal entry: A is rank deficient
constexpr double kConstraintRankRtol = 1e-10;

namespace detail {

// the last common body of the paths of the loop's two bodies to the root (0: the world)
inline int common_ancestor(const Model& m, const LoopModel& c) {
  int a = c.body1, b = c.body2;
  while (a != b) {
    if (a > b) a = m.parent[a]; else b = m.parent[b];
  }
  return a;
}

// f(k) for every velocity coordinate k of the loop's support, the bodies on the paths of its
// two bodies to the root (the common part once), from the tips to the root (k decreasing:
// parent[i] < i, so the larger of the two bodies is never an ancestor of the other). A row of
// J is zero outside the support, and so is its row of Y = J L^-1 (L's row k is non-zero only
// on the ancestors of k).
template <class F>
ROBODYN_INLINE void for_each_support_coordinate(const Model& m, const LoopModel& c, F&& f) {
  auto body = [&](int j) {
    for (int k = m.iv[j] + joint_nv(m.type[j]) - 1; k >= m.iv[j]; --k) f(k);
  };
  int a = c.body1, b = c.body2;
  while (a != b) {
    if (a > b) {
      body(a);
      a = m.parent[a];
    } else {
      body(b);
      b = m.parent[b];
    }
  }
  for (; a > 0; a = m.parent[a]) body(a);
}

// the block of A = Y Y' of loops l (NA rows, Ya) and l2 (NB rows, Yb; coordinate-major as
// cd.Y) into A (row-major, nc columns) from row and column 0 of the block: each entry the sum
// over the coordinates both supports share, the runs (lo, hi) [s0, s1), increasing; kLower
// (l2 = l): the lower triangle only
template <int NA, int NB, bool kLower, class S>
ROBODYN_INLINE void schur_block(const S* Ya, const S* Yb, const int* s0, const int* s1, S* A,
                                int nc) {
  S x[NA][NB];
  for (int a = 0; a < NA; ++a)
    for (int b = 0; b < (kLower ? a + 1 : NB); ++b) x[a][b] = S(0);
  for (const int* s = s0; s != s1; s += 2)
    for (int k = s[0]; k <= s[1]; ++k) {
      const S* ya = Ya + k * NA;
      const S* yb = Yb + k * NB;
      for (int a = 0; a < NA; ++a)
        for (int b = 0; b < (kLower ? a + 1 : NB); ++b) x[a][b] += ya[a] * yb[b];
    }
  for (int a = 0; a < NA; ++a)
    for (int b = 0; b < (kLower ? a + 1 : NB); ++b) A[a * nc + b] = x[a][b];
}

// M's factor into d.L, cd.Y = rows L^-T J' (J's rows written there, not into cd.J) and
// cd.A = Y Y' (its lower triangle; the upper one is not written); false when M is not
// positive definite. A loop's rows of J and Y are zero outside its support
// (for_each_support_coordinate): the solves and products run over the supports alone.
template <class S>
bool schur_complement(const Model& m, const ConstraintModel& cm, DataTpl<S>& d,
                      ConstraintDataTpl<S>& cd, const S* q) {
  crba_lower(m, d, q);
  if (!ltl_factor(m, d)) return false;
  constraint_frames(m, cm, d, cd, q);
  const int nv = m.nv, nc = cm.m;
  // (Y's entries off the supports are the zeros it was made with: never written)
  S* Y = cd.Y.data();
  S* A = cd.A.data();
  for (size_t l = 0; l < cm.loops.size(); ++l) {
    const LoopModel& c = cm.loops[l];
    const int r0 = cm.start[l], na = c.nrows;
    S* Yl = Y + r0 * nv;  // this loop's rows, coordinate-major
    // its rows of J (zero on the common part of the two paths), L^-T on each
    with_size<6>(na, [&](auto NA) {
      constexpr int kA = decltype(NA)::value;
      for (int a = common_ancestor(m, c); a > 0; a = m.parent[a])
        for (int k = m.iv[a]; k < m.iv[a] + joint_nv(m.type[a]); ++k)
          for (int r = 0; r < kA; ++r) Yl[k * kA + r] = S(0);
      // (put_rows with the row count a compile-time constant: put_rows' run-time count cost
      // 1.3k instructions per call on Solo12)
      jacobian_columns(m, cm, cd, l, [&](int k, const V6T<S>& x) {
        for (int r = 0; r < kA; ++r) Yl[k * kA + r] = x[c.rows[r]];
      });
      ltl_solve_t_fixed<kA>(d, Yl, [&](auto f) { for_each_support_coordinate(m, c, f); });
    });
    // this loop's rows of A = Y Y' left of the diagonal: with the rows of each loop l2 <= l,
    // the sum over the coordinates both loops' supports share (a row is zero outside its own)
    for (size_t l2 = 0; l2 <= l; ++l2) {
      const size_t p = l * (l + 1) / 2 + l2;
      const int* s0 = cm.shared_runs.data() + 2 * cm.shared_start[p];
      const int* s1 = cm.shared_runs.data() + 2 * cm.shared_start[p + 1];
      const int c0 = cm.start[l2], nb = cm.start[l2 + 1] - c0;
      S* Ab = A + r0 * nc + c0;
      with_size<6>(na, [&](auto NA) {
        constexpr int kA = decltype(NA)::value;
        if (l2 == l) {
          schur_block<kA, kA, true>(Yl, Yl, s0, s1, Ab, nc);
          return;
        }
        with_size<6>(nb, [&](auto NB) {
          schur_block<kA, decltype(NB)::value, false>(Yl, Y + c0 * nv, s0, s1, Ab, nc);
        });
      });
    }
  }
  return true;
}

// max |A lam - r| (cd.A's lower triangle, cd.lam, cd.r; n rows): the constraint acceleration
// error of the multipliers
template <class S, class N>
ROBODYN_INLINE S multiplier_error(const ConstraintDataTpl<S>& cd, N size) {
  using std::abs;
  const int n = size;
  const S* A = cd.A.data();
  const S* r = cd.r.data();
  const S* lam = cd.lam.data();
  S err(0);
  ROBODYN_UNROLL_ALL
  for (int i = 0; i < n; ++i) {
    S x = -r[i];
    ROBODYN_UNROLL_ALL
    for (int j = 0; j < n; ++j) x += (j <= i ? A[i * n + j] : A[j * n + i]) * lam[j];
    if (abs(x) > err) err = abs(x);
  }
  return err;
}

// the multipliers lam of A lam = r (cd.A's lower triangle, cd.r; n = cm.m rows, an int or a
// std::integral_constant): mu = 0 by A's Cholesky factor, mu > 0 the proximal iterations,
// each followed by the error A lam - r (cd.error; with mu = 0 it is left to
// multiplier_error, on request); the iterations run into cd. false: A is rank deficient
// (cd.bad_row)
template <class S, class N>
ROBODYN_INLINE bool solve_multipliers(ConstraintDataTpl<S>& cd, N size, double mu,
                                      int max_iter, double tol) {
  const int n = size;
  const S* A = cd.A.data();
  S* F = cd.F.data();
  const S* r = cd.r.data();
  S* b = cd.b.data();
  S* lam = cd.lam.data();
  ROBODYN_UNROLL_ALL
  for (int i = 0; i < n; ++i) {
    ROBODYN_UNROLL_ALL
    for (int j = 0; j <= i; ++j) F[i * n + j] = A[i * n + j];
    F[i * n + i] += S(mu);
  }
  cd.bad_row = llt_factor(F, size, mu > 0 ? 0.0 : kConstraintRankRtol);
  if (cd.bad_row >= 0) return false;
  cd.error_known = mu > 0;
  if (mu == 0) {
    ROBODYN_UNROLL_ALL
    for (int k = 0; k < n; ++k) lam[k] = r[k];
    llt_solve(F, size, lam);
    cd.iterations = 1;
    return true;
  }
  ROBODYN_UNROLL_ALL
  for (int k = 0; k < n; ++k) lam[k] = S(0);
  cd.iterations = 0;
  for (int it = 0; it < max_iter; ++it) {
    ROBODYN_UNROLL_ALL
    for (int k = 0; k < n; ++k) b[k] = r[k] + S(mu) * lam[k];
    llt_solve(F, size, b);
    ROBODYN_UNROLL_ALL
    for (int k = 0; k < n; ++k) lam[k] = b[k];
    ++cd.iterations;
    const S err = multiplier_error(cd, size);
    cd.error = static_cast<double>(err);
    if (err < S(tol)) break;
  }
  return true;
}

}  // namespace detail

// J M^-1 J' at q, (m, m) into out (row-major; symmetric). false when M is not positive
// definite.
template <class S>
bool operational_space_inverse_inertia(const Model& m, const ConstraintModel& cm, DataTpl<S>& d,
                                       ConstraintDataTpl<S>& cd, const S* q, S* out) {
  if (!detail::schur_complement(m, cm, d, cd, q)) return false;
  const int n = cm.m;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j <= i; ++j) out[i * n + j] = out[j * n + i] = cd.A.data()[i * n + j];
  return true;
}

// qdd (nv,) and lam (m,) of the constrained dynamics at (q, v, tau) (see the top of this file);
// lam per loop: the wrench on body 1, its rows in frame 1 axes. mu >= 0, max_iter >= 1.
// Leaves the iterations run and the final constraint acceleration error in cd. RankDeficient
// (mu = 0): cd.bad_row is the first row found dependent on the rows before it.
template <class S>
ConstraintStatus constrained_forward_dynamics(const Model& m, const ConstraintModel& cm,
                                              DataTpl<S>& d, ConstraintDataTpl<S>& cd,
                                              const S* q, const S* v, const S* tau, double mu,
                                              int max_iter, double tol, S* qdd, S* lam) {
  using std::abs;
  const int nv = m.nv, nc = cm.m;
  // z = L^-T (tau - h): the bias first (the inputs are read before the outputs are written)
  S* z = cd.z.data();
  bias_torques(m, d, q, v, z);
  forward_dynamics_rhs(m, v, tau, z);
  if (!detail::schur_complement(m, cm, d, cd, q)) return ConstraintStatus::MassNotPositive;
  detail::ltl_solve_t(d, z);
  // r = -gamma - kd J v - kp phi - Y z
  // (the frames and axes of schur_complement's constraint_frames)
  detail::loop_bias(m, cm, cd, v);
  if (cm.baumgarte) detail::loop_residual(cm, cd, cd.phi.data());
  // (per loop, its row count a compile-time constant: the rows' sums in registers)
  const S* Y = cd.Y.data();
  for (size_t l = 0; l < cm.loops.size(); ++l) {
    const LoopModel& c = cm.loops[l];
    const int r0 = cm.start[l];
    const S* Yl = Y + r0 * nv;  // (coordinate-major)
    detail::with_size<6>(c.nrows, [&](auto NA) {
      constexpr int na = decltype(NA)::value;
      S x[na];
      for (int k = 0; k < na; ++k) {
        x[k] = -cd.gamma[r0 + k];
        if (c.kd != 0) x[k] -= S(c.kd) * cd.Jv[r0 + k];
        if (c.kp != 0) x[k] -= S(c.kp) * cd.phi[r0 + k];
      }
      detail::for_each_support_coordinate(m, c, [&](int i) {
        for (int k = 0; k < na; ++k) x[k] -= Yl[i * na + k] * z[i];
      });
      for (int k = 0; k < na; ++k) cd.r[r0 + k] = x[k];
    });
  }
  // the multipliers: A's size a compile-time constant for double up to 12 rows (the loops
  // unrolled; the same operations in the same order)
  bool ok = true;
  if constexpr (std::is_same_v<S, double>) {
    if (nc >= 1 && nc <= 12) {
      detail::with_size<12>(
          nc, [&](auto n) { ok = detail::solve_multipliers(cd, n, mu, max_iter, tol); });
    } else {
      ok = detail::solve_multipliers(cd, nc, mu, max_iter, tol);
    }
  } else {
    ok = detail::solve_multipliers(cd, nc, mu, max_iter, tol);
  }
  if (!ok) return ConstraintStatus::RankDeficient;
  // qdd = L^-1 (z + Y' lam)
  for (size_t l = 0; l < cm.loops.size(); ++l) {
    const LoopModel& c = cm.loops[l];
    const int r0 = cm.start[l];
    const S* Yl = Y + r0 * nv;
    detail::with_size<6>(c.nrows, [&](auto NA) {
      constexpr int na = decltype(NA)::value;
      S lam_l[na];
      for (int k = 0; k < na; ++k) lam_l[k] = cd.lam[r0 + k];
      detail::for_each_support_coordinate(m, c, [&](int i) {
        S x = z[i];
        for (int k = 0; k < na; ++k) x += Yl[i * na + k] * lam_l[k];
        z[i] = x;
      });
    });
  }
  detail::ltl_solve_l(d, z);
  for (int i = 0; i < nv; ++i) qdd[i] = z[i];
  for (int k = 0; k < nc; ++k) lam[k] = cd.lam[k];
  return ConstraintStatus::Ok;
}

// max |J qdd + gamma + Baumgarte terms| (the constraint acceleration error) of the last
// constrained_forward_dynamics run on cd
template <class S>
double constraint_acceleration_error(const ConstraintModel& cm, const ConstraintDataTpl<S>& cd) {
  return cd.error_known ? cd.error : static_cast<double>(detail::multiplier_error(cd, cm.m));
}

}  // namespace robodyn
