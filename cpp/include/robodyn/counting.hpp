// Counted: a double that counts the arithmetic done with it, for exact operation counts.
//
// The algorithms are templates over the scalar type; instantiated with Counted they execute the
// same operations as the double code, and every one of them is tallied:
//
//   mul  = multiplications and divisions,
//   add  = additions and subtractions (negation is free),
//   trig = sin, cos and sqrt calls;
//
// comparisons, abs, copies and conversions are free. A binary operation counts whatever its
// operand values are (0 * x is work the double code really does). The counters are
// thread_local. Include this header only where the counting instantiation lives
// (cpp/src/opcount.cpp): the double build never sees it.
#pragma once

#include <Eigen/Core>
#include <cmath>
#include <limits>

#include "robodyn/scalar_traits.hpp"

namespace robodyn {

// Operations counted since the last reset_op_counts() on this thread.
struct OpTally {
  long mul = 0, add = 0, trig = 0;
};

inline OpTally& op_tally() {
  thread_local OpTally t;
  return t;
}

inline void reset_op_counts() { op_tally() = OpTally(); }

class Counted {
 public:
  Counted() = default;
  // implicit, so that constants mix with counted values; the operation is counted
  Counted(double v) : v_(v) {}  // NOLINT(google-explicit-constructor)

  double value() const { return v_; }
  explicit operator double() const { return v_; }

  Counted& operator+=(const Counted& y) {
    ++op_tally().add;
    v_ += y.v_;
    return *this;
  }
  Counted& operator-=(const Counted& y) {
    ++op_tally().add;
    v_ -= y.v_;
    return *this;
  }
  Counted& operator*=(const Counted& y) {
    ++op_tally().mul;
    v_ *= y.v_;
    return *this;
  }
  Counted& operator/=(const Counted& y) {
    ++op_tally().mul;
    v_ /= y.v_;
    return *this;
  }

  // binary operators and functions are hidden friends: found by argument-dependent lookup
  // only (after `using std::sin;` the call sin(x) picks these for a Counted x)
  friend Counted operator+(Counted x, const Counted& y) { return x += y; }
  friend Counted operator-(Counted x, const Counted& y) { return x -= y; }
  friend Counted operator*(Counted x, const Counted& y) { return x *= y; }
  friend Counted operator/(Counted x, const Counted& y) { return x /= y; }
  friend Counted operator-(const Counted& x) { return Counted(-x.v_); }
  friend Counted operator+(const Counted& x) { return x; }

  friend bool operator==(const Counted& x, const Counted& y) { return x.v_ == y.v_; }
  friend bool operator!=(const Counted& x, const Counted& y) { return x.v_ != y.v_; }
  friend bool operator<(const Counted& x, const Counted& y) { return x.v_ < y.v_; }
  friend bool operator<=(const Counted& x, const Counted& y) { return x.v_ <= y.v_; }
  friend bool operator>(const Counted& x, const Counted& y) { return x.v_ > y.v_; }
  friend bool operator>=(const Counted& x, const Counted& y) { return x.v_ >= y.v_; }

  friend Counted sin(const Counted& x) {
    ++op_tally().trig;
    return Counted(std::sin(x.v_));
  }
  friend Counted cos(const Counted& x) {
    ++op_tally().trig;
    return Counted(std::cos(x.v_));
  }
  friend Counted sqrt(const Counted& x) {
    ++op_tally().trig;
    return Counted(std::sqrt(x.v_));
  }
  friend Counted abs(const Counted& x) { return Counted(std::abs(x.v_)); }
  friend bool isfinite(const Counted& x) { return std::isfinite(x.v_); }
  friend bool isnan(const Counted& x) { return std::isnan(x.v_); }
  friend bool isinf(const Counted& x) { return std::isinf(x.v_); }

 private:
  double v_ = 0.0;
};

}  // namespace robodyn

namespace Eigen {

// the traits of a scalar standing for a double (scalar_traits.hpp)
template <>
struct NumTraits<robodyn::Counted> : robodyn::DoubleLikeNumTraits<robodyn::Counted> {};

}  // namespace Eigen
