// Factorisations of the joint-space inertia matrix and of small dense SPD matrices.
//
// - The tree-sparse factor M = L' L (Featherstone, RBDA section 6.5, Tables 6.3 and 6.4): L
//   lower triangular with L(i, j) != 0 only for j = i or an ancestor coordinate of i
//   (Model::vparent), so nothing fills in; factor O(sum of depth^2), solves O(sum of depth).
//   Used by forward_dynamics_derivatives; the constrained dynamics run the same factor on
//   packed rows (constraints/dynamics.hpp: ltl_factor_packed, the same operations on each
//   entry in the same order, in a storage of its own for the loops' supports).
// - A dense Cholesky factor A = L L' of a small symmetric positive definite matrix (row-major,
//   lower triangle), with a pivot test relative to the diagonal entry so a rank-deficient
//   matrix is reported instead of factorised: the constraints' Schur complement J M^-1 J'.
#pragma once

#include <cmath>

#include "robodyn/model/data.hpp"
#include "robodyn/model/model.hpp"

namespace robodyn {
namespace detail {

// M = L' L in place on the lower triangle of d.H (Featherstone, RBDA Table 6.3): L lower
// triangular with the tree's sparsity, L(i, j) != 0 only for j = i or an ancestor coordinate
// of i (m.vparent), so nothing fills in and the factor costs O(sum of depth^2). Returns false
// when M is not positive definite.
template <class S>
bool ltl_factor(const Model& m, DataTpl<S>& d) {
  using std::sqrt;
  auto& M = d.H;
  d.H_pattern = false;  // (no fill-in; cleared as by every writer of M but crba)
  const int* lambda = m.vparent.data();
  for (int k = m.nv - 1; k >= 0; --k) {
    if (!(M(k, k) > S(0))) return false;
    const S lkk = sqrt(M(k, k));
    M(k, k) = lkk;
    const S inv = S(1) / lkk;
    for (int i = lambda[k]; i >= 0; i = lambda[i]) M(k, i) *= inv;
    for (int i = lambda[k]; i >= 0; i = lambda[i])
      for (int j = i; j >= 0; j = lambda[j]) M(i, j) -= M(k, i) * M(k, j);
  }
  return true;
}

// x := L^-T x for ltl_factor's L (left in d.H), x (nv,): L' y = x from the tips to the root.
// A zero entry passes nothing on (a constraint row's zeros outside its bodies' paths).
template <class S>
void ltl_solve_t(const Model& m, const DataTpl<S>& d, S* x) {
  const auto& L = d.H;
  const int* lambda = m.vparent.data();
  for (int i = m.nv - 1; i >= 0; --i) {
    x[i] /= L(i, i);
    for (int j = lambda[i]; j >= 0; j = lambda[j]) x[j] -= L(i, j) * x[i];
  }
}

// x := L^-1 x for ltl_factor's L, x (nv,): from the root to the tips.
template <class S>
void ltl_solve_l(const Model& m, const DataTpl<S>& d, S* x) {
  const auto& L = d.H;
  const int* lambda = m.vparent.data();
  for (int i = 0; i < m.nv; ++i) {
    for (int j = lambda[i]; j >= 0; j = lambda[j]) x[i] -= L(i, j) * x[j];
    x[i] /= L(i, i);
  }
}

// x := M^-1 x with M = L' L (RBDA Table 6.4): L' y = x from the tips, then L x = y from the
// root; x (nv,)
template <class S>
void ltl_solve(const Model& m, const DataTpl<S>& d, S* x) {
  ltl_solve_t(m, d, x);
  ltl_solve_l(m, d, x);
}

// B := M^-1 B (negate: -M^-1 B) for B (nv, nv) row-major, the two passes of ltl_solve on
// whole rows (contiguous: the inner loops vectorise); inv[i] = 1 / L(i, i). O(nv sum of
// depths) instead of the O(nv^3) of a dense factor.
template <class S>
void ltl_solve_rows(const Model& m, const DataTpl<S>& d, const S* inv, S* B, bool negate) {
  const auto& L = d.H;
  const int* lambda = m.vparent.data();
  const int n = m.nv;
  if (negate)
    for (int k = 0; k < n * n; ++k) B[k] = -B[k];
  for (int i = n - 1; i >= 0; --i) {
    S* bi = B + i * n;
    for (int c = 0; c < n; ++c) bi[c] *= inv[i];
    for (int j = lambda[i]; j >= 0; j = lambda[j]) {
      const S lij = L(i, j);
      S* bj = B + j * n;
      for (int c = 0; c < n; ++c) bj[c] -= lij * bi[c];
    }
  }
  for (int i = 0; i < n; ++i) {
    S* bi = B + i * n;
    for (int j = lambda[i]; j >= 0; j = lambda[j]) {
      const S lij = L(i, j);
      const S* bj = B + j * n;
      for (int c = 0; c < n; ++c) bi[c] -= lij * bj[c];
    }
    for (int c = 0; c < n; ++c) bi[c] *= inv[i];
  }
}

}  // namespace detail

// A = L L' in place on the lower triangle of the n x n row-major A (its strict upper triangle
// is not read). Returns -1, or the first row j whose pivot is not above rtol times A(j, j)
// (A(j, j) minus the squares of row j's entries left of the diagonal: the squared distance of
// row j from the span of the rows before it, relative to its own squared length), where A is
// (numerically) singular; then A is partly overwritten.
template <class S>
int llt_factor(S* A, int n, double rtol) {
  using std::sqrt;
  for (int j = 0; j < n; ++j) {
    S* aj = A + j * n;
    const S ajj = aj[j];
    S djj = ajj;
    for (int k = 0; k < j; ++k) djj -= aj[k] * aj[k];
    if (!(djj > S(rtol) * ajj) || !(djj > S(0))) return j;
    const S ljj = sqrt(djj);
    aj[j] = ljj;
    const S inv = S(1) / ljj;
    for (int i = j + 1; i < n; ++i) {
      S* ai = A + i * n;
      S x = ai[j];
      for (int k = 0; k < j; ++k) x -= ai[k] * aj[k];
      ai[j] = x * inv;
    }
  }
  return -1;
}

// b := (L L')^-1 b for llt_factor's L (n x n row-major, lower triangle), b (n,)
template <class S>
void llt_solve(const S* L, int n, S* b) {
  for (int i = 0; i < n; ++i) {
    S x = b[i];
    for (int k = 0; k < i; ++k) x -= L[i * n + k] * b[k];
    b[i] = x / L[i * n + i];
  }
  for (int i = n - 1; i >= 0; --i) {
    S x = b[i];
    for (int k = i + 1; k < n; ++k) x -= L[k * n + i] * b[k];
    b[i] = x / L[i * n + i];
  }
}

}  // namespace robodyn
