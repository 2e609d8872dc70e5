// Traced: a scalar that records an expression graph, for generating robot-specific code.
//
// The algorithms are templates over the scalar type; run once with Traced, with the model's
// constant parameters as numbers and q, qd, qdd (or tau) as inputs, they leave behind the
// directed acyclic graph of every operation they did on the inputs. The graph is simplified as
// it is built:
//
//   - hash-consing: an (op, a, b) seen before returns the existing node (common
//     subexpressions are shared; sin and cos of one angle are one node each);
//   - constant folding: operations on constants are done at once (and c1 * (c2 * x) becomes
//     (c1 c2) * x);
//   - identities: x + 0, x - 0, x * 1, x * 0, x / 1, 0 / x, x - x, -(-x), sin(-x) = -sin x,
//     cos(-x) = cos x;
//   - negation is pulled outwards (-(a) * b = -(a b), negative constants become a negation of
//     the product with the positive one) and absorbed by additions (a + -b = a - b), so that a
//     term and its negative share one node.
//
// Comparisons of non-constant values cannot be decided at trace time: `x > y` and `x >= y`
// answer true and `<`, `<=` false (the positive-definiteness guards of the Cholesky and ABA
// passes take their normal branch; Graph::assumptions counts them); sign(x), the only
// value-dependent branch of the dynamics (Coulomb friction), is recorded as a Sign node.
// `==` compares node identity (equal nodes are equal values). abs(x) is x sign(x).
//
// The graph is thread-local (TraceScope installs one); include this header only where the
// tracing instantiation lives (cpp/src/codegen.cpp): the double build never sees it.
#pragma once

#include <Eigen/Core>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "robodyn/scalar/scalar_traits.hpp"

namespace robodyn {

namespace tracing {

// Node operations. Input: a = input index; Const: c = value. Unary ops use a, binary a and b
// (Atan2: atan2(a, b)).
enum class Op : std::uint8_t { Const, Input, Neg, Add, Sub, Mul, Div, Sin, Cos, Sqrt, Sign, Atan2 };

struct Node {
  Op op;
  std::int32_t a, b;
  double c;
};

class Graph {
 public:
  static constexpr std::int32_t kZero = 0, kOne = 1;  // the two constants every graph has

  Graph() {
    constant(0.0);
    constant(1.0);
  }

  std::vector<Node> nodes;  // in creation order: every node's operands come before it
  long assumptions = 0;     // comparisons of non-constant values answered by assumption

  std::int32_t constant(double v) {
    if (v == 0) v = 0.0;  // -0 and +0 are one constant
    return intern(Op::Const, 0, 0, bits_of(v), v);
  }
  std::int32_t input(int k) { return intern(Op::Input, k, 0, 0, 0.0); }
  std::int32_t node(Op op, std::int32_t a, std::int32_t b = 0) { return intern(op, a, b, 0, 0.0); }

  const Node& operator[](std::int32_t id) const { return nodes[static_cast<size_t>(id)]; }
  std::int32_t size() const { return static_cast<std::int32_t>(nodes.size()); }
  bool is_const(std::int32_t id) const { return (*this)[id].op == Op::Const; }
  double value(std::int32_t id) const { return (*this)[id].c; }

  // forget the nodes created after the graph had `size` nodes (a trial build undone)
  void truncate(std::int32_t size) {
    for (std::int32_t k = size; k < this->size(); ++k) {
      const Node& n = (*this)[k];
      index_.erase(key(n.op, n.a, n.b, n.op == Op::Const ? bits_of(n.c) : 0));
    }
    nodes.resize(static_cast<size_t>(size));
  }

 private:
  struct Key {
    std::uint64_t op_a_b;  // op | a | b packed
    std::uint64_t bits;    // constant value bits
    bool operator==(const Key& k) const { return op_a_b == k.op_a_b && bits == k.bits; }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      std::uint64_t h = k.op_a_b * 0x9e3779b97f4a7c15ULL ^ (k.bits + 0x632be59bd9b4e019ULL);
      h ^= h >> 29;
      return static_cast<size_t>(h * 0xbf58476d1ce4e5b9ULL);
    }
  };

  static std::uint64_t bits_of(double v) {
    std::uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    return bits;
  }
  static Key key(Op op, std::int32_t a, std::int32_t b, std::uint64_t bits) {
    return Key{static_cast<std::uint64_t>(op) << 56 |
                   (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) & 0xfffffffULL)
                       << 28 |
                   (static_cast<std::uint64_t>(static_cast<std::uint32_t>(b)) & 0xfffffffULL),
               bits};
  }

  std::int32_t intern(Op op, std::int32_t a, std::int32_t b, std::uint64_t bits, double c) {
    const Key key = Graph::key(op, a, b, bits);
    auto it = index_.find(key);
    if (it != index_.end()) return it->second;
    const auto id = static_cast<std::int32_t>(nodes.size());
    nodes.push_back(Node{op, a, b, c});
    index_.emplace(key, id);
    return id;
  }

  std::unordered_map<Key, std::int32_t, KeyHash> index_;
};

inline Graph*& current_graph() {
  thread_local Graph* g = nullptr;
  return g;
}

inline Graph& graph() {
  Graph* g = current_graph();
  if (!g) throw std::logic_error("Traced: no expression graph on this thread (use TraceScope)");
  return *g;
}

// Makes `g` the graph of this thread for its lifetime: the simplifying constructors below
// (and Traced arithmetic) build into it.
class UseGraph {
 public:
  explicit UseGraph(Graph& g) : prev_(current_graph()) { current_graph() = &g; }
  ~UseGraph() { current_graph() = prev_; }
  UseGraph(const UseGraph&) = delete;
  UseGraph& operator=(const UseGraph&) = delete;

 private:
  Graph* prev_;
};

// Installs a fresh graph on this thread for its lifetime.
class TraceScope {
 public:
  TraceScope() : use_(graph_) {}
  Graph& graph() { return graph_; }

 private:
  Graph graph_;
  UseGraph use_;
};

// Constant folding goes through a volatile so that no compiler fuses a fold into an FMA: the
// folded constants (and hence the generated files) are the same on every IEEE platform.
inline double fold(double x) {
  volatile double v = x;
  return v;
}

// the simplifying constructors of the graph's nodes
inline std::int32_t neg(std::int32_t x);
inline std::int32_t add(std::int32_t x, std::int32_t y);
inline std::int32_t sub(std::int32_t x, std::int32_t y);
inline std::int32_t mul(std::int32_t x, std::int32_t y);

inline std::int32_t neg(std::int32_t x) {
  Graph& g = graph();
  const Node& n = g[x];
  if (n.op == Op::Const) return g.constant(fold(-n.c));
  if (n.op == Op::Neg) return n.a;
  if (n.op == Op::Sub) return sub(n.b, n.a);
  return g.node(Op::Neg, x);
}

inline std::int32_t add(std::int32_t x, std::int32_t y) {
  Graph& g = graph();
  if (g.is_const(x) && g.is_const(y)) return g.constant(fold(g.value(x) + g.value(y)));
  if (x == Graph::kZero) return y;
  if (y == Graph::kZero) return x;
  if (g[x].op == Op::Neg) return sub(y, g[x].a);
  if (g[y].op == Op::Neg) return sub(x, g[y].a);
  if (g.is_const(y) && g.value(y) < 0) return sub(x, g.constant(-g.value(y)));
  if (g.is_const(x) && g.value(x) < 0) return sub(y, g.constant(-g.value(x)));
  if (x > y) std::swap(x, y);
  return g.node(Op::Add, x, y);
}

inline std::int32_t sub(std::int32_t x, std::int32_t y) {
  Graph& g = graph();
  if (g.is_const(x) && g.is_const(y)) return g.constant(fold(g.value(x) - g.value(y)));
  if (y == Graph::kZero) return x;
  if (x == Graph::kZero) return neg(y);
  if (x == y) return Graph::kZero;
  if (g[y].op == Op::Neg) return add(x, g[y].a);
  if (g[x].op == Op::Neg) return neg(add(g[x].a, y));
  if (g.is_const(y) && g.value(y) < 0) return add(x, g.constant(-g.value(y)));
  return g.node(Op::Sub, x, y);
}

inline std::int32_t mul(std::int32_t x, std::int32_t y) {
  Graph& g = graph();
  if (g.is_const(x) && g.is_const(y)) return g.constant(fold(g.value(x) * g.value(y)));
  if (g.is_const(y)) std::swap(x, y);  // a constant factor first
  if (x == Graph::kZero || y == Graph::kZero) return Graph::kZero;
  if (x == Graph::kOne) return y;
  if (g[x].op == Op::Neg) return neg(mul(g[x].a, y));
  if (g[y].op == Op::Neg) return neg(mul(x, g[y].a));
  if (g.is_const(x)) {
    const double c = g.value(x);
    if (c == -1) return neg(y);
    if (c < 0) return neg(mul(g.constant(-c), y));
    // c1 * (c2 * z) = (c1 c2) * z
    if (g[y].op == Op::Mul && g.is_const(g[y].a))
      return mul(g.constant(fold(c * g.value(g[y].a))), g[y].b);
    return g.node(Op::Mul, x, y);
  }
  if (x > y) std::swap(x, y);
  return g.node(Op::Mul, x, y);
}

inline std::int32_t div(std::int32_t x, std::int32_t y) {
  Graph& g = graph();
  if (g.is_const(x) && g.is_const(y)) return g.constant(fold(g.value(x) / g.value(y)));
  if (x == Graph::kZero) return Graph::kZero;
  if (y == Graph::kOne) return x;
  if (g[x].op == Op::Neg) return neg(div(g[x].a, y));
  if (g[y].op == Op::Neg) return neg(div(x, g[y].a));
  if (g.is_const(y)) return mul(g.constant(fold(1.0 / g.value(y))), x);
  return g.node(Op::Div, x, y);
}

inline std::int32_t unary(Op op, std::int32_t x) {
  Graph& g = graph();
  const Node& n = g[x];
  if (n.op == Op::Const) {
    switch (op) {
      case Op::Sin: return g.constant(std::sin(n.c));
      case Op::Cos: return g.constant(std::cos(n.c));
      case Op::Sqrt: return g.constant(std::sqrt(n.c));
      default: return g.constant(n.c > 0 ? 1.0 : (n.c < 0 ? -1.0 : 0.0));
    }
  }
  if (n.op == Op::Neg) {
    if (op == Op::Sin || op == Op::Sign) return neg(unary(op, n.a));
    if (op == Op::Cos) return unary(op, n.a);
  }
  return g.node(op, x);
}

// atan2(y, x) (the rotation vector of a loop constraint's residual)
inline std::int32_t atan2(std::int32_t y, std::int32_t x) {
  Graph& g = graph();
  if (g.is_const(y) && g.is_const(x)) return g.constant(std::atan2(g.value(y), g.value(x)));
  return g.node(Op::Atan2, y, x);
}

}  // namespace tracing

class Traced {
 public:
  Traced() = default;  // the constant 0
  // implicit, so that the model's constants mix with traced values
  Traced(double v) : id_(tracing::graph().constant(v)) {}  // NOLINT(google-explicit-constructor)

  static Traced from_id(std::int32_t id) {
    Traced t;
    t.id_ = id;
    return t;
  }
  static Traced input(int k) { return from_id(tracing::graph().input(k)); }
  std::int32_t id() const { return id_; }

  Traced& operator+=(const Traced& y) { return *this = from_id(tracing::add(id_, y.id_)); }
  Traced& operator-=(const Traced& y) { return *this = from_id(tracing::sub(id_, y.id_)); }
  Traced& operator*=(const Traced& y) { return *this = from_id(tracing::mul(id_, y.id_)); }
  Traced& operator/=(const Traced& y) { return *this = from_id(tracing::div(id_, y.id_)); }

  // hidden friends: found by argument-dependent lookup only
  friend Traced operator+(Traced x, const Traced& y) { return x += y; }
  friend Traced operator-(Traced x, const Traced& y) { return x -= y; }
  friend Traced operator*(Traced x, const Traced& y) { return x *= y; }
  friend Traced operator/(Traced x, const Traced& y) { return x /= y; }
  friend Traced operator-(const Traced& x) { return from_id(tracing::neg(x.id_)); }
  friend Traced operator+(const Traced& x) { return x; }

  friend bool operator==(const Traced& x, const Traced& y) {
    return x.id_ == y.id_;  // hash-consed: one node per (op, operands), one per constant
  }
  friend bool operator!=(const Traced& x, const Traced& y) { return !(x == y); }
  friend bool operator>(const Traced& x, const Traced& y) { return compare(x, y, true, 1); }
  friend bool operator>=(const Traced& x, const Traced& y) { return compare(x, y, true, 2); }
  friend bool operator<(const Traced& x, const Traced& y) { return compare(x, y, false, 3); }
  friend bool operator<=(const Traced& x, const Traced& y) { return compare(x, y, false, 4); }

  friend Traced sin(const Traced& x) { return from_id(tracing::unary(tracing::Op::Sin, x.id_)); }
  friend Traced cos(const Traced& x) { return from_id(tracing::unary(tracing::Op::Cos, x.id_)); }
  friend Traced sqrt(const Traced& x) {
    return from_id(tracing::unary(tracing::Op::Sqrt, x.id_));
  }
  friend Traced sign(const Traced& x) {
    return from_id(tracing::unary(tracing::Op::Sign, x.id_));
  }
  // |x| = x sign(x) (the constrained dynamics' convergence test: its value only compared)
  friend Traced abs(const Traced& x) { return x * sign(x); }
  friend Traced atan2(const Traced& y, const Traced& x) {
    return from_id(tracing::atan2(y.id_, x.id_));
  }
  // a constant's value; NaN for a traced value (diagnostics only, e.g. an error estimate)
  explicit operator double() const {
    const tracing::Graph& g = tracing::graph();
    return g.is_const(id_) ? g.value(id_) : std::numeric_limits<double>::quiet_NaN();
  }
  friend bool isfinite(const Traced&) { return true; }
  friend bool isnan(const Traced&) { return false; }
  friend bool isinf(const Traced&) { return false; }

 private:
  // constants compare by value; anything else by the documented assumption
  static bool compare(const Traced& x, const Traced& y, bool assumed, int kind) {
    tracing::Graph& g = tracing::graph();
    if (g.is_const(x.id_) && g.is_const(y.id_)) {
      const double a = g.value(x.id_), b = g.value(y.id_);
      switch (kind) {
        case 1: return a > b;
        case 2: return a >= b;
        case 3: return a < b;
        default: return a <= b;
      }
    }
    ++g.assumptions;
    return assumed;
  }

  std::int32_t id_ = tracing::Graph::kZero;
};

}  // namespace robodyn

namespace Eigen {

// the traits of a scalar standing for a double (scalar_traits.hpp)
template <>
struct NumTraits<robodyn::Traced> : robodyn::DoubleLikeNumTraits<robodyn::Traced> {};

}  // namespace Eigen
