// Eigen traits shared by the instrumented scalars (counting.hpp, tracing.hpp).
#pragma once

#include <Eigen/Core>
#include <limits>

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

}  // namespace robodyn
