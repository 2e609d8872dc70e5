// Counted: a double that counts the arithmetic done with it, for exact operation counts.
//
// The algorithms are templates over the scalar type; instantiated with Counted they execute the
// same operations as the double code, and the operations a build-time-specialised evaluation
// of that code (one robot, its parameters known) would still do are tallied:
//
//   mul  = multiplications and divisions,
//   add  = additions and subtractions (negation is free),
//   trig = sin, cos, sqrt and atan2 calls;
//
// comparisons, abs, copies and conversions are free.
//
// Folding. A Counted value is either a model constant or a variable. Constants are what the
// double code builds from literals and model parameters (masses, inertias, link transforms,
// gravity, armature ...): every Counted made from a double is a constant. Variables are the
// inputs q, qd, qdd (or tau), marked by the caller with Counted::variable (count_ops in
// cpp/src/opcount.cpp), and everything computed from a variable. Then, like the tracer's
// simplifier (tracing.hpp) and a compiler given the robot's numbers:
//   - an operation whose operands are all constants is not counted (it is folded at build
//     time); its result is a constant; sin, cos and sqrt of a constant likewise;
//   - x * 0 and 0 * x (a constant 0) are not counted and give the constant 0; 0 / x likewise;
//   - x * 1, x * -1, 1 * x, -1 * x, x / 1, x / -1 (constants +-1) are not counted and give
//     x or -x (negation is free);
//   - x + 0, 0 + x, x - 0, 0 - x (a constant 0) are not counted and give x or -x;
// every other operation with a variable operand is counted and gives a variable. And only
// what the outputs need is counted: every counted operation is recorded on a tape, and
// live_counts() tallies those the given outputs depend on (dead code is not generated either).
// count_ops takes as outputs the algorithm's result and the configuration cache it leaves in
// Data for the next algorithm (sin and cos of every revolute angle, the prismatic
// translations, a free-flyer's transform), so the cache is counted whole. The figures state
// the arithmetic that depends on the state, not the double code's own work on its zeros
// (which it may still do; the speed of the double code is measured separately).
// The counters are thread_local. Include this header only where the counting instantiation
// lives (cpp/src/opcount.cpp): the double build never sees it.
#pragma once

#include <Eigen/Core>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "robodyn/scalar/scalar_traits.hpp"

namespace robodyn {

// Operations counted since the last reset_op_counts() on this thread (needed or not).
struct OpTally {
  long mul = 0, add = 0, trig = 0;
};

inline OpTally& op_tally() {
  thread_local OpTally t;
  return t;
}

// The tape: one entry per counted operation or input since the last reset_op_tape(), its
// operands' entries (-1: a constant) before it.
struct OpNode {
  enum Kind : unsigned char { Input, Mul, Add, Trig };
  int a, b;
  Kind kind;
};

inline std::vector<OpNode>& op_tape() {
  thread_local std::vector<OpNode> t;
  return t;
}

// zero the tally (the tape is kept: values made before stay valid)
inline void reset_op_counts() { op_tally() = OpTally(); }

// forget the tape: only for values made afterwards can live_counts be asked
inline void reset_op_tape() { op_tape().clear(); }

// the operations (tape entries) the values with tape entries `outputs` depend on
inline OpTally live_counts(const std::vector<int>& outputs) {
  const std::vector<OpNode>& tape = op_tape();
  std::vector<char> live(tape.size(), 0);
  for (int k : outputs) {
    if (k >= static_cast<int>(tape.size()))
      throw std::logic_error("counting scalar: a value older than the tape");
    if (k >= 0) live[static_cast<size_t>(k)] = 1;
  }
  OpTally t;
  for (size_t k = tape.size(); k-- > 0;) {
    if (!live[k]) continue;
    const OpNode& e = tape[k];
    if (e.a >= 0) live[static_cast<size_t>(e.a)] = 1;
    if (e.b >= 0) live[static_cast<size_t>(e.b)] = 1;
    if (e.kind == OpNode::Mul) ++t.mul;
    if (e.kind == OpNode::Add) ++t.add;
    if (e.kind == OpNode::Trig) ++t.trig;
  }
  return t;
}

class Counted {
 public:
  Counted() = default;  // the constant 0
  // implicit, so that constants mix with counted values: a double is a model constant
  Counted(double v) : v_(v) {}  // NOLINT(google-explicit-constructor)

  // a variable: an input of the algorithm (q, qd, qdd, tau)
  static Counted variable(double v) { return Counted(v, record(OpNode::Input, -1, -1)); }

  double value() const { return v_; }
  explicit operator double() const { return v_; }
  // true for a value computed from an input
  bool is_variable() const { return id_ >= 0; }
  // its tape entry (-1: a constant)
  int tape_id() const { return id_; }

  Counted& operator+=(const Counted& y) { return add(y, false); }
  Counted& operator-=(const Counted& y) { return add(y, true); }
  Counted& operator*=(const Counted& y) {
    const double r = v_ * y.v_;
    if (is_variable() && y.is_variable()) {
      id_ = counted(OpNode::Mul, id_, y.id_);
    } else if (is_variable() || y.is_variable()) {
      const double c = is_variable() ? y.v_ : v_;  // the constant operand
      const int x = is_variable() ? id_ : y.id_;
      if (c == 0)
        id_ = -1;  // x * 0 = 0, known at build time
      else if (c == 1 || c == -1)
        id_ = x;  // x or -x (negation free)
      else
        id_ = counted(OpNode::Mul, x, -1);
    }
    v_ = r;
    return *this;
  }
  Counted& operator/=(const Counted& y) {
    const double r = v_ / y.v_;
    if (is_variable() && y.is_variable())
      id_ = counted(OpNode::Mul, id_, y.id_);
    else if (is_variable() && y.v_ != 1 && y.v_ != -1)
      id_ = counted(OpNode::Mul, id_, -1);
    else if (y.is_variable())
      id_ = v_ == 0 ? -1 : counted(OpNode::Mul, -1, y.id_);  // 0 / x = 0
    v_ = r;
    return *this;
  }

  // binary operators and functions are hidden friends: found by argument-dependent lookup
  // only (after `using std::sin;` the call sin(x) picks these for a Counted x)
  friend Counted operator+(Counted x, const Counted& y) { return x += y; }
  friend Counted operator-(Counted x, const Counted& y) { return x -= y; }
  friend Counted operator*(Counted x, const Counted& y) { return x *= y; }
  friend Counted operator/(Counted x, const Counted& y) { return x /= y; }
  friend Counted operator-(const Counted& x) { return Counted(-x.v_, x.id_); }
  friend Counted operator+(const Counted& x) { return x; }

  friend bool operator==(const Counted& x, const Counted& y) { return x.v_ == y.v_; }
  friend bool operator!=(const Counted& x, const Counted& y) { return x.v_ != y.v_; }
  friend bool operator<(const Counted& x, const Counted& y) { return x.v_ < y.v_; }
  friend bool operator<=(const Counted& x, const Counted& y) { return x.v_ <= y.v_; }
  friend bool operator>(const Counted& x, const Counted& y) { return x.v_ > y.v_; }
  friend bool operator>=(const Counted& x, const Counted& y) { return x.v_ >= y.v_; }

  friend Counted sin(const Counted& x) { return x.call(std::sin(x.v_)); }
  friend Counted cos(const Counted& x) { return x.call(std::cos(x.v_)); }
  friend Counted sqrt(const Counted& x) { return x.call(std::sqrt(x.v_)); }
  friend Counted abs(const Counted& x) { return Counted(std::abs(x.v_), x.id_); }
  // atan2 (the rotation vector of a loop constraint's residual): one trig call
  friend Counted atan2(const Counted& y, const Counted& x) {
    const double r = std::atan2(y.v_, x.v_);
    if (!y.is_variable() && !x.is_variable()) return Counted(r);
    return Counted(r, counted(OpNode::Trig, y.id_, x.id_));
  }
  friend bool isfinite(const Counted& x) { return std::isfinite(x.v_); }
  friend bool isnan(const Counted& x) { return std::isnan(x.v_); }
  friend bool isinf(const Counted& x) { return std::isinf(x.v_); }

  // the same value, depending on the same inputs as x (sign(x): free, like a comparison)
  static Counted like(double v, const Counted& x) { return Counted(v, x.id_); }

 private:
  Counted(double v, int id) : v_(v), id_(id) {}

  static int record(OpNode::Kind kind, int a, int b) {
    std::vector<OpNode>& tape = op_tape();
    tape.push_back(OpNode{a, b, kind});
    return static_cast<int>(tape.size()) - 1;
  }
  static int counted(OpNode::Kind kind, int a, int b) {
    OpTally& t = op_tally();
    if (kind == OpNode::Mul) ++t.mul;
    if (kind == OpNode::Add) ++t.add;
    if (kind == OpNode::Trig) ++t.trig;
    return record(kind, a, b);
  }

  // x += y (sub: x -= y) with the folding rules above
  Counted& add(const Counted& y, bool sub) {
    const double r = sub ? v_ - y.v_ : v_ + y.v_;
    if (is_variable() && y.is_variable()) {
      id_ = counted(OpNode::Add, id_, y.id_);
    } else if (is_variable() || y.is_variable()) {
      const double c = is_variable() ? y.v_ : v_;
      const int x = is_variable() ? id_ : y.id_;
      id_ = c == 0 ? x : counted(OpNode::Add, x, -1);
    }
    v_ = r;
    return *this;
  }

  // a sin, cos or sqrt of this value, with result v
  Counted call(double v) const {
    return Counted(v, is_variable() ? counted(OpNode::Trig, id_, -1) : -1);
  }

  double v_ = 0.0;
  int id_ = -1;  // tape entry of a value computed from an input; -1 for a model constant
};

namespace detail {
// sign(x) of joint.hpp (Coulomb friction): of a variable, a variable (a specialised evaluation
// still multiplies the friction by it, as the tracer's Sign node does)
template <class S>
S signum(const S& x);
template <>
inline Counted signum<Counted>(const Counted& x) {
  return Counted::like(x.value() > 0 ? 1.0 : (x.value() < 0 ? -1.0 : 0.0), x);
}
}  // namespace detail

}  // namespace robodyn

namespace Eigen {

// the traits of a scalar standing for a double (scalar_traits.hpp)
template <>
struct NumTraits<robodyn::Counted> : robodyn::DoubleLikeNumTraits<robodyn::Counted> {};

}  // namespace Eigen
