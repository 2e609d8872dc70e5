// Operation counts of the algorithms, measured by running them with a counting scalar.
#pragma once

#include <array>
#include <string>

#include "robodyn/model/model.hpp"

namespace robodyn {

// {multiplications + divisions, additions + subtractions, sin/cos/sqrt} of one call of
// `algorithm` (a name of the table in algorithms.hpp: "rnea", "kane", "crba", "aba",
// "forward_dynamics", "kane_forward", "gravity", ...) at a general state. Throws
// std::invalid_argument for an unknown algorithm.
std::array<long, 3> count_ops(const Model& model, const std::string& algorithm);

struct ConstraintModel;

// The same for constrained forward dynamics (constraints/dynamics.hpp) of `model` with the loop
// constraints `cm`: qdd and the multipliers at a general state (the loops not closed). mu = 0:
// one Cholesky solve of J M^-1 J' (iterations must be 1); mu > 0: exactly `iterations`
// proximal iterations (no early stop). Throws std::invalid_argument for a bad mu or
// iterations, or when the system cannot be solved at that state (rank-deficient constraints
// with mu = 0: the message says so).
std::array<long, 3> count_constrained_ops(const Model& model, const ConstraintModel& cm,
                                          double mu, int iterations);

}  // namespace robodyn
