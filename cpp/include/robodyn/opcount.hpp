// Operation counts of the algorithms, measured by running them with a counting scalar.
#pragma once

#include <array>
#include <string>

#include "robodyn/model.hpp"

namespace robodyn {

// {multiplications + divisions, additions + subtractions, sin/cos/sqrt} of one call of
// `algorithm` (a name of the table in algorithms.hpp: "rnea", "kane", "crba", "aba",
// "forward_dynamics", "kane_forward", "gravity", ...) at a general state. Throws
// std::invalid_argument for an unknown algorithm.
std::array<long, 3> count_ops(const Model& model, const std::string& algorithm);

}  // namespace robodyn
