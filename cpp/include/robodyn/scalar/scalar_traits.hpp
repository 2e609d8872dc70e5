// What the algorithm templates ask of a scalar type: Eigen's traits of the instrumented scalars
// (counting.hpp, tracing.hpp) and whether a sweep skips a constant's known zeros (kSkipZeros).
#pragma once

#include <Eigen/Core>
#include <limits>
#include <type_traits>

namespace robodyn {

// NumTraits of a scalar T that stands for a double (T constructible from double). Costs equal
// to double's, so Eigen takes the same evaluation decisions (which sub-expressions it evaluates
// into temporaries) as in the double build; T has no packet type, so Eigen runs its scalar
// paths, whose fixed-size products do k multiplications and k - 1 additions per dot product.
template <class T>
struct DoubleLikeNumTraits : Eigen::GenericNumTraits<double> {
  using Real = T;
  using NonInteger = T;
  using Nested = T;
  using Literal = T;
  enum {
    IsComplex = 0,
    IsInteger = 0,
    IsSigned = 1,
    RequireInitialization = 1,
    ReadCost = Eigen::NumTraits<double>::ReadCost,
    AddCost = Eigen::NumTraits<double>::AddCost,
    MulCost = Eigen::NumTraits<double>::MulCost
  };
  static Real epsilon() { return std::numeric_limits<double>::epsilon(); }
  static Real dummy_precision() { return Eigen::NumTraits<double>::dummy_precision(); }
  static Real highest() { return std::numeric_limits<double>::max(); }
  static Real lowest() { return std::numeric_limits<double>::lowest(); }
  static Real infinity() { return std::numeric_limits<double>::infinity(); }
  static Real quiet_NaN() { return std::numeric_limits<double>::quiet_NaN(); }
  static int digits10() { return std::numeric_limits<double>::digits10; }
  static int digits() { return std::numeric_limits<double>::digits; }
};

// Whether spatial.hpp's helpers skip a constant's zero components by a branch (the counting and
// tracing scalars: their counts and generated code state the work left once the robot's
// numbers are known) or multiply by the zeros (double: a multiplication by a known 0 costs less
// than the branch that selects the pattern; the values are the same)
template <class S>
constexpr bool kSkipZeros = !std::is_floating_point<S>::value;

}  // namespace robodyn
