// The factorisations the algorithms run, each written once:
//
// - The tree-sparse factor of the joint-space inertia matrix, M = L' L (Featherstone, RBDA
//   section 6.5, Tables 6.3 and 6.4), L's rows packed by model.hpp's TreeFactorPattern: L is
//   lower triangular with L(k, j) != 0 only for j = k or an ancestor coordinate of k, so
//   nothing fills in; the factor costs O(sum of depth^2), a solve O(sum of depth). Run by
//   forward_dynamics_derivatives and the constrained dynamics (constraints/dynamics.hpp).
// - A dense Cholesky factor A = L L' of a symmetric positive definite matrix (the lower
//   triangle, row- or column-major), with an optional pivot test relative to the diagonal entry
//   so that a rank-deficient matrix is reported instead of factorised. Run on M by
//   forward_dynamics_crba and kane_forward (the mass matrix + Cholesky that the operation-count
//   tables compare with the articulated-body algorithm), and on the constraints' Schur
//   complement J M^-1 J'.
// - The 6x6 L diag(D) L' of a free-flyer's articulated inertia (aba), unrolled.
#pragma once

#include <Eigen/Core>
#include <cmath>
#include <type_traits>

#include "robodyn/model/data.hpp"
#include "robodyn/model/model.hpp"
#include "robodyn/scalar/simd.hpp"
#include "robodyn/spatial/link.hpp"
#include "robodyn/spatial/spatial.hpp"

namespace robodyn {
namespace detail {

// ---------------------------------------------------------------- tree-sparse M = L' L

// f(lo, hi, o) for every run of consecutive ancestor coordinates lo..hi of k, the nearest
// first: o + j is j's entry in k's packed row of L (and in the row of every coordinate with j
// as an ancestor)
template <class F>
ROBODYN_INLINE void for_each_run(const TreeFactorPattern& p, int k, F&& f) {
  const int* s = p.runs.data() + 3 * p.run_start[k];
  const int* end = p.runs.data() + 3 * p.run_start[k + 1];
  for (; s != end; s += 3) f(s[0], s[1], s[2]);
}

// f(j, e) for every ancestor coordinate j of k, e its entry in k's packed row of L (by runs,
// as for_each_run)
template <class F>
ROBODYN_INLINE void for_each_ancestor(const TreeFactorPattern& p, int k, F&& f) {
  for_each_run(p, k, [&](int lo, int hi, int o) {
    for (int j = lo; j <= hi; ++j) f(j, o + j);
  });
}

// f(j) for j = lo..hi, a run of for_each_run; a free-flyer's six coordinates (0..5) unrolled
template <class F>
ROBODYN_INLINE void for_each_in_run(int lo, int hi, F&& f) {
  if (lo == 0 && hi == 5) {
    ROBODYN_UNROLL_ALL
    for (int j = 0; j < 6; ++j) f(j);
  } else {
    for (int j = lo; j <= hi; ++j) f(j);
  }
}

// y[u] -= a x[u] for u < n (y and x apart; double: two entries at a time in a D2's lanes, the
// same operations on each)
template <class S>
ROBODYN_INLINE void sub_scaled(S* __restrict y, S a, const S* __restrict x, int n) {
  int u = 0;
#if ROBODYN_HAVE_D2
  if constexpr (std::is_same<S, double>::value) {
    const D2 a2(a);
    for (; u + 1 < n; u += 2) store_pair(y + u, load_pair(y + u) - a2 * load_pair(x + u));
  }
#endif
  for (; u < n; ++u) y[u] -= a * x[u];
}

// M = L' L (RBDA Table 6.3) into d.L from the lower triangle of d.H (column-major: M(k, j) at
// H[j nv + k]), which is left as it was; 1 / L(k, k) into d.L_inv_diag. From the tips to the
// root: row k scaled by its pivot updates the row of each ancestor i of k, whose entries are
// the first ones of row k up to i (one contiguous loop). false when M is not positive definite.
template <class S>
bool ltl_factor(const Model& m, DataTpl<S>& d) {
  using std::sqrt;
  d.size_factor(m);
  const TreeFactorPattern& p = d.L_pattern;
  const int n = m.nv;
  const int* start = p.row_start.data();
  const std::ptrdiff_t* h_at = p.h_at.data();
  const S* H = d.H.data();
  S* L = d.L.data();
  for (int e = 0, ne = p.size(); e < ne; ++e) L[e] = H[h_at[e]];
  for (int k = n - 1; k >= 0; --k) {
    S* __restrict lk = L + start[k];
    const int dk = start[k + 1] - start[k] - 1;  // k's ancestors
    if (!(lk[dk] > S(0))) return false;
    const S lkk = sqrt(lk[dk]);
    lk[dk] = lkk;
    const S inv = S(1) / lkk;
    d.L_inv_diag[k] = inv;
    for (int t = 0; t < dk; ++t) lk[t] *= inv;
    // the row of each ancestor: its t ancestors and itself. A free-flyer's six coordinates
    // (0..5, each the parent of the next) are the first ancestors of every coordinate below
    // them (its root-most ancestor 0, whose row starts at 0), their rows the packed triangle
    // L[0..21): that update unrolled, with compile-time lengths (Talos 14.3k instructions per
    // factor against about 19.5k for the same update run by runs of ancestors)
    const int* row = p.col_row.data() + start[k];
    int t0 = 0;
    if (m.floating && dk >= 6 && row[0] == 0) {
      ROBODYN_UNROLL_ALL
      for (int t = 0; t < 6; ++t) sub_scaled(L + t * (t + 1) / 2, lk[t], lk, t + 1);
      t0 = 6;
    }
    for (int t = t0; t < dk; ++t) sub_scaled(L + row[t], lk[t], lk, t + 1);
  }
  return true;
}

// X := X L^-1 for NR right-hand sides, the rows of X stored coordinate-major (entry (r, j)
// at X[j NR + r]: the NR entries of a coordinate contiguous), over the coordinates `each`
// visits in decreasing order (the rows are zero elsewhere: a constraint's support); L' y = x
// from the tips to the root, each L(i, j) loaded once for the NR rows (double: pairs of rows
// in the two lanes of a D2, the same operations on each entry).
template <int NR, class S, class Each>
ROBODYN_INLINE void ltl_solve_t_fixed(const DataTpl<S>& d, S* X, Each&& each) {
  const S* L = d.L.data();
  const S* inv = d.L_inv_diag.data();
  each([&](int i) {
    const S* Li = L + d.L_pattern.row_start[i];
    S* X_i = X + i * NR;
    S xi[NR];
    for (int r = 0; r < NR; ++r) {
      xi[r] = X_i[r] * inv[i];
      X_i[r] = xi[r];
    }
#if ROBODYN_HAVE_D2
    if constexpr (std::is_same<S, double>::value && NR > 1) {
      constexpr int kPairs = NR / 2;
      D2 x2[kPairs];
      for (int p = 0; p < kPairs; ++p) x2[p] = load_pair(xi + 2 * p);
      for_each_run(d.L_pattern, i, [&](int lo, int hi, int o) {
        for_each_in_run(lo, hi, [&](int j) ROBODYN_INLINE_LAMBDA {
          const double lij = Li[o + j];
          const D2 l(lij);
          double* X_j = X + j * NR;
          for (int p = 0; p < kPairs; ++p)
            store_pair(X_j + 2 * p, load_pair(X_j + 2 * p) - l * x2[p]);
          if (NR % 2) X_j[NR - 1] -= lij * xi[NR - 1];
        });
      });
      return;
    }
#endif
    for_each_ancestor(d.L_pattern, i, [&](int j, int e) {
      const S lij = Li[e];
      S* X_j = X + j * NR;
      for (int r = 0; r < NR; ++r) X_j[r] -= lij * xi[r];
    });
  });
}

// f(std::integral_constant<int, n>) for n = 1..N (n in that range): a size known at run time
// turned into a compile-time one
template <int N, class F>
ROBODYN_INLINE void with_size(int n, F&& f) {
  if constexpr (N == 1) {
    f(std::integral_constant<int, 1>());
  } else {
    if (n == N) return f(std::integral_constant<int, N>());
    with_size<N - 1>(n, f);
  }
}

// x := L^-T x, x (nv,): L' y = x from the tips to the root, each run of ancestors at once
template <class S>
void ltl_solve_t(const DataTpl<S>& d, S* x) {
  const S* L = d.L.data();
  for (int i = d.nv - 1; i >= 0; --i) {
    const S* Li = L + d.L_pattern.row_start[i];
    const S xi = x[i] * d.L_inv_diag[i];
    x[i] = xi;
    for_each_run(d.L_pattern, i,
                 [&](int lo, int hi, int o) { sub_scaled(x + lo, xi, Li + o + lo, hi - lo + 1); });
  }
}

// x := L^-1 x, x (nv,): L x = y from the root to the tips
template <class S>
void ltl_solve_l(const DataTpl<S>& d, S* x) {
  const S* L = d.L.data();
  for (int i = 0; i < d.nv; ++i) {
    const S* Li = L + d.L_pattern.row_start[i];
    S xi = x[i];
    for_each_run(d.L_pattern, i, [&](int lo, int hi, int o) {
      for_each_in_run(lo, hi, [&](int j) ROBODYN_INLINE_LAMBDA { xi -= Li[o + j] * x[j]; });
    });
    x[i] = xi * d.L_inv_diag[i];
  }
}

// x := M^-1 x (RBDA Table 6.4), x (nv,)
template <class S>
void ltl_solve(const DataTpl<S>& d, S* x) {
  ltl_solve_t(d, x);
  ltl_solve_l(d, x);
}

// B := M^-1 B for each of the NB blocks B (nv, nv) row-major, their columns the right-hand
// sides: the two passes of ltl_solve on whole rows (contiguous: the inner loops vectorise),
// the blocks side by side so that each L(i, j) is loaded once. O(nv sum of depths) instead of
// the O(nv^3) of a dense factor.
template <int NB, class S>
void ltl_solve_columns(const DataTpl<S>& d, S* const (&B)[NB]) {
  const int n = d.nv;
  const S* L = d.L.data();
  const S* inv = d.L_inv_diag.data();
  for (int i = n - 1; i >= 0; --i) {
    const S* Li = L + d.L_pattern.row_start[i];
    for (int b = 0; b < NB; ++b)
      for (int c = 0; c < n; ++c) B[b][i * n + c] *= inv[i];
    for_each_ancestor(d.L_pattern, i, [&](int j, int e) {
      const S lij = Li[e];
      for (int b = 0; b < NB; ++b) {
        const S* __restrict bi = B[b] + i * n;
        S* __restrict bj = B[b] + j * n;
        for (int c = 0; c < n; ++c) bj[c] -= lij * bi[c];
      }
    });
  }
  for (int i = 0; i < n; ++i) {
    const S* Li = L + d.L_pattern.row_start[i];
    for_each_ancestor(d.L_pattern, i, [&](int j, int e) {
      const S lij = Li[e];
      for (int b = 0; b < NB; ++b) {
        S* __restrict bi = B[b] + i * n;
        const S* __restrict bj = B[b] + j * n;
        for (int c = 0; c < n; ++c) bi[c] -= lij * bj[c];
      }
    });
    for (int b = 0; b < NB; ++b)
      for (int c = 0; c < n; ++c) B[b][i * n + c] *= inv[i];
  }
}

// ---------------------------------------------------------------- 6x6 L diag(D) L'

// x > 0: a pivot of the factorisation is usable (simd.hpp's D2: in both lanes)
template <class S>
inline bool positive(const S& x) {
  return x > S(0);
}

// In-place L diag(D) L' of a symmetric positive definite 6x6 matrix: L (unit, strictly lower)
// and D (diagonal) overwrite the lower triangle of A. Returns false when a pivot is not
// positive.
template <class S>
bool ldlt6(Eigen::Matrix<S, 6, 6>& A) {
  ROBODYN_UNROLL
  for (int j = 0; j < 6; ++j) {
    S dj = A(j, j);
    ROBODYN_UNROLL
    for (int k = 0; k < j; ++k) dj -= A(j, k) * A(k, j);
    if (!positive(dj)) return false;
    A(j, j) = dj;
    const S inv = S(1) / dj;
    ROBODYN_UNROLL
    for (int i = j + 1; i < 6; ++i) {
      // A(j, i) (upper) keeps L(i, k) D(k) for the next columns; A(i, j) = L(i, j)
      S x = A(i, j);
      ROBODYN_UNROLL
      for (int k = 0; k < j; ++k) x -= A(i, k) * A(k, j);
      A(j, i) = x;
      A(i, j) = x * inv;
    }
  }
  return true;
}

// x = (L diag(D) L')^-1 x for ldlt6's factor
template <class S>
void ldlt6_solve(const Eigen::Matrix<S, 6, 6>& F, Eigen::Matrix<S, 6, 1>& x) {
  ROBODYN_UNROLL
  for (int i = 1; i < 6; ++i)
    ROBODYN_UNROLL
    for (int k = 0; k < i; ++k) x[i] -= F(i, k) * x[k];
  ROBODYN_UNROLL
  for (int i = 0; i < 6; ++i) x[i] /= F(i, i);
  ROBODYN_UNROLL
  for (int i = 4; i >= 0; --i)
    ROBODYN_UNROLL
    for (int k = i + 1; k < 6; ++k) x[i] -= F(k, i) * x[k];
}

}  // namespace detail

// ---------------------------------------------------------------- dense A = L L'

// The storage of an n x n matrix: entry (i, j) at i n + j (RowMajor) or j n + i (ColMajor)
enum class Storage { RowMajor, ColMajor };

template <Storage O>
ROBODYN_INLINE int dense_at(int n, int i, int j) {
  return O == Storage::RowMajor ? i * n + j : j * n + i;
}

// A = L L' in place on the lower triangle of the n x n matrix A (its strict upper triangle is
// not read); n an int, or a std::integral_constant (then the loops unroll: the constraints'
// multipliers, up to 12 rows). Returns -1, or the first row j whose pivot is not positive, or
// (rtol > 0) not above rtol times A(j, j) (A(j, j) minus the squares of row j's entries left of
// the diagonal: the squared distance of row j from the span of the rows before it, relative to
// its own squared length), where A is (numerically) singular; then A is partly overwritten.
template <Storage O = Storage::RowMajor, class S, class N>
ROBODYN_INLINE int llt_factor(S* A, N size, double rtol) {
  using std::sqrt;
  const int n = size;
  auto a = [&](int i, int j) -> S& { return A[dense_at<O>(n, i, j)]; };
  ROBODYN_UNROLL_ALL
  for (int j = 0; j < n; ++j) {
    S djj = a(j, j);
    ROBODYN_UNROLL_ALL
    for (int k = 0; k < j; ++k) djj -= a(j, k) * a(j, k);
    if (rtol > 0 && !(djj > S(rtol) * a(j, j))) return j;
    if (!(djj > S(0))) return j;
    const S ljj = sqrt(djj);
    a(j, j) = ljj;
    const S inv = S(1) / ljj;
    ROBODYN_UNROLL_ALL
    for (int i = j + 1; i < n; ++i) {
      S x = a(i, j);
      ROBODYN_UNROLL_ALL
      for (int k = 0; k < j; ++k) x -= a(i, k) * a(j, k);
      a(i, j) = x * inv;
    }
  }
  return -1;
}

// b := (L L')^-1 b for llt_factor's L (n x n, lower triangle), b (n,); n as for llt_factor
template <Storage O = Storage::RowMajor, class S, class N>
ROBODYN_INLINE void llt_solve(const S* L, N size, S* b) {
  const int n = size;
  auto l = [&](int i, int j) { return L[dense_at<O>(n, i, j)]; };
  ROBODYN_UNROLL_ALL
  for (int i = 0; i < n; ++i) {
    S x = b[i];
    ROBODYN_UNROLL_ALL
    for (int k = 0; k < i; ++k) x -= l(i, k) * b[k];
    b[i] = x / l(i, i);
  }
  ROBODYN_UNROLL_ALL
  for (int i = n - 1; i >= 0; --i) {
    S x = b[i];
    ROBODYN_UNROLL_ALL
    for (int k = i + 1; k < n; ++k) x -= l(k, i) * b[k];
    b[i] = x / l(i, i);
  }
}

// b := H^-1 b by H = L L' in place on the lower triangle of d.H (the mass matrix, column-major),
// b (nv,). false when H is not positive definite.
template <class S>
bool cholesky_solve(DataTpl<S>& d, S* b) {
  d.H_pattern = false;  // the factor fills in
  if (llt_factor<Storage::ColMajor>(d.H.data(), d.nv, 0.0) >= 0) return false;
  llt_solve<Storage::ColMajor>(d.H.data(), d.nv, b);
  return true;
}

}  // namespace robodyn
