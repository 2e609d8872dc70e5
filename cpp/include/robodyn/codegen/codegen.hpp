// Robot-specific code generation: the algorithms traced with the Traced scalar (tracing.hpp),
// and the generated kernels compiled into the extension (cpp/generated/).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "robodyn/model/model.hpp"

namespace robodyn {

// The expression graph of one algorithm on one model, in creation (topological) order.
// op codes: 0 Const (c), 1 Input (a = input index), 2 Neg, 3 Add, 4 Sub, 5 Mul, 6 Div, 7 Sin,
// 8 Cos, 9 Sqrt, 10 Sign, 11 Atan2 (atan2(a, b)) (unary ops use a, binary a and b). Inputs:
// q = 0..nq-1, qd = nq..nq+nv-1, the third argument (qdd or tau) = nq+nv..nq+2nv-1 (nq = nv = n
// on a fixed base; a free-flyer's q block is its position and quaternion x, y, z, w).
struct ExprGraph {
  std::vector<std::uint8_t> op;
  std::vector<std::int32_t> a, b;
  std::vector<double> c;
  std::vector<std::int32_t> outputs;  // tau / qdd (nv) or the row-major mass matrix (nv * nv)
  long assumptions = 0;               // comparisons decided by assumption (see tracing.hpp)
};

// Runs `algorithm` once with the tracing scalar: any straight-line algorithm of the table of
// algorithms.hpp ("rnea", "kane", "gravity", "gravity_kane", "bias", "crba", "kane_inertia",
// "aba", "forward_dynamics", "kane_forward"), on a fixed or a free-floating base. Constants
// within 1e-14 (relative) of zero in the model's inertias, and in J and Kane's central inertias
// derived again from them, are taken as zero first, and principal moments that close as equal
// (rounding residue of pi/2 rotations and of the round trip through the origin). The graph is
// simplified as it is built (tracing.hpp). On a free-floating model the base's rotation is
// traced from the quaternion inputs (normalised in the graph, as the generic code does).
// Throws std::invalid_argument for an unknown algorithm or one that cannot be traced.
ExprGraph trace_algorithm(const Model& model, const std::string& algorithm);

struct ConstraintModel;

// Constrained forward dynamics (constraints/dynamics.hpp) of `model` with the loop constraints
// `cm`, traced: inputs q, v, tau as above; outputs qdd (nv) then the multipliers lam (m).
// mu = 0: one Cholesky solve of J M^-1 J' (its pivots assumed positive: the system must not be
// rank deficient), iterations must be 1; mu > 0: exactly `iterations` proximal iterations.
// The model's inertias are cleaned as for trace_algorithm. Throws std::invalid_argument for a
// bad mu or iterations, rank-deficient constraints with mu = 0, or a Baumgarte position gain
// kp on a constraint's rotation rows (the rotation vector's series branch at 0 cannot be
// traced).
ExprGraph trace_constrained(const Model& model, const ConstraintModel& cm, double mu,
                            int iterations);

// The graph with the same outputs and fewer operations (simplify.cpp): rebuilt through the
// rules of tracing.hpp, nodes no output needs dropped, and sin^2 + cos^2 = 1 applied where it
// lowers the count. Throws std::invalid_argument for a malformed graph (an operand that does
// not come before its user, an unknown operation, a non-finite constant).
ExprGraph simplify(const ExprGraph& graph);

// The kernels of cpp/generated/ (C ABI, see robodyn.codegen): q (nq), qd, qdd, tau (nv),
// M (nv * nv, row-major).
using IdKernel = void (*)(const double* q, const double* qd, const double* qdd, double* tau);
using MassKernel = void (*)(const double* q, double* M);
using GravityKernel = void (*)(const double* q, double* tau);
using FdKernel = void (*)(const double* q, const double* qd, const double* tau, double* qdd);

struct BuiltinKernels {
  const char* name;    // robot name
  const char* sha256;  // of the generated source file the kernels were compiled from
  IdKernel inverse_dynamics;
  MassKernel mass_matrix;
  GravityKernel gravity;
  FdKernel forward_dynamics;
};

// the table of cpp/generated/registry.cpp
const std::vector<BuiltinKernels>& builtin_kernels();

}  // namespace robodyn
