// The simplifier of the generated code: a traced expression graph rebuilt through the
// simplifying constructors of tracing.hpp (the only place the rules are written), dead nodes
// dropped, then the identity sin^2 + cos^2 = 1 applied where it pays.
//
// A rotation applied and undone (gravity rotated out to a link and its weight rotated back,
// E I E^T of a symmetric inertia) leaves c^2 x + s^2 x in the expression, invisible node by
// node. Every node is expanded into a polynomial over "atoms" (inputs, sin/cos, quotients,
// square roots, and nodes whose expansion is too large), kept in a normal form where s^2 is
// replaced by 1 - c^2, so that such sums cancel. A node is rebuilt from its reduced polynomial
// (greedy factoring of the most frequent atom) when that makes the whole graph cheaper:
// candidates are tried from the outputs down, each accepted only if the operation count
// (mul + add + 20 trig) drops. Deterministic: no iteration over hashed containers decides
// anything.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "robodyn/codegen/codegen.hpp"
#include "robodyn/scalar/tracing.hpp"

namespace robodyn {

namespace {

using tracing::Graph;
using tracing::Op;
using Id = std::int32_t;

constexpr size_t kPolyLimit = 48;      // largest expansion (terms) kept; larger nodes are atoms
constexpr size_t kProductLimit = 512;  // largest term product formed expanding a multiplication
constexpr long kTrigWeight = 20;       // a sin/cos/sqrt/atan2 weighs this many mul/add

bool is_binary(Op op) {
  return op == Op::Add || op == Op::Sub || op == Op::Mul || op == Op::Div || op == Op::Atan2;
}
bool is_leaf(Op op) { return op == Op::Const || op == Op::Input; }

long weight(Op op) {
  if (op == Op::Sin || op == Op::Cos || op == Op::Sqrt || op == Op::Atan2) return kTrigWeight;
  if (is_binary(op)) return 1;
  return 0;
}

// the node (op, a, b) in the current graph, through the simplifying constructors
Id build(Op op, Id a, Id b) {
  switch (op) {
    case Op::Neg: return tracing::neg(a);
    case Op::Add: return tracing::add(a, b);
    case Op::Sub: return tracing::sub(a, b);
    case Op::Mul: return tracing::mul(a, b);
    case Op::Div: return tracing::div(a, b);
    case Op::Atan2: return tracing::atan2(a, b);
    default: return tracing::unary(op, a);
  }
}

// the nodes the outputs depend on, ascending (a topological order)
std::vector<Id> live(const Graph& g, const std::vector<Id>& outputs) {
  std::vector<char> seen(static_cast<size_t>(g.size()), 0);
  std::vector<Id> stack(outputs.begin(), outputs.end());
  while (!stack.empty()) {
    const Id x = stack.back();
    stack.pop_back();
    if (seen[x]) continue;
    seen[x] = 1;
    const tracing::Node& n = g[x];
    if (is_binary(n.op)) {
      stack.push_back(n.a);
      stack.push_back(n.b);
    } else if (!is_leaf(n.op)) {
      stack.push_back(n.a);
    }
  }
  std::vector<Id> ids;
  for (Id k = 0; k < g.size(); ++k)
    if (seen[k]) ids.push_back(k);
  return ids;
}

long cost(const Graph& g, const std::vector<Id>& outputs) {
  long c = 0;
  for (Id k : live(g, outputs)) c += weight(g[k].op);
  return c;
}

// how many live nodes (and outputs) use each node
std::vector<int> use_counts(const Graph& g, const std::vector<Id>& outputs) {
  std::vector<int> uses(static_cast<size_t>(g.size()), 0);
  for (Id k : live(g, outputs)) {
    const tracing::Node& n = g[k];
    if (is_binary(n.op)) {
      ++uses[n.a];
      ++uses[n.b];
    } else if (!is_leaf(n.op)) {
      ++uses[n.a];
    }
  }
  for (Id o : outputs) ++uses[o];
  return uses;
}

// ---- polynomials over atoms

using Mono = std::vector<Id>;  // sorted atom ids (repeated for powers)

struct MonoHash {
  size_t operator()(const Mono& m) const {
    std::uint64_t h = 0x9e3779b97f4a7c15ULL ^ m.size();
    for (Id a : m) h = (h ^ static_cast<std::uint32_t>(a)) * 0x100000001b3ULL;
    return static_cast<size_t>(h);
  }
};

struct Term {
  Mono mono;
  double c;    // coefficient
  double mag;  // sum of the magnitudes that were added into c (for the cancellation test)
};

// terms in insertion order (sums are formed in a fixed order), found by monomial
class Poly {
 public:
  std::vector<Term> terms;
  void add(const Mono& m, double c, double mag) {
    auto it = index_.find(m);
    if (it == index_.end()) {
      index_.emplace(m, terms.size());
      terms.push_back(Term{m, c, mag});
    } else {
      terms[it->second].c += c;
      terms[it->second].mag += mag;
    }
  }
  size_t size() const { return terms.size(); }

 private:
  std::unordered_map<Mono, size_t, MonoHash> index_;
};

// the terms that did not cancel to rounding level (|c| <= 1e-13 of what was summed)
Poly cancel(const Poly& p) {
  Poly out;
  for (const Term& t : p.terms)
    if (std::abs(t.c) > 1e-13 * t.mag) out.add(t.mono, t.c, t.mag);
  return out;
}

Poly atom(Id a) {
  Poly p;
  p.add(Mono{a}, 1.0, 1.0);
  return p;
}

struct Expansion {
  std::vector<Poly> P;          // the polynomial of each node (when has[k])
  std::vector<char> has;        // 0: the node is an atom
  std::vector<char> fired;      // a cancellation at or below the node: a rewrite candidate
};

Expansion polynomials(const Graph& g, const std::vector<Id>& nodes) {
  const size_t size = static_cast<size_t>(g.size());
  Expansion ex{std::vector<Poly>(size), std::vector<char>(size, 0), std::vector<char>(size, 0)};
  std::unordered_map<Id, Id> cos_of, sin_to_cos;
  for (Id k : nodes)
    if (g[k].op == Op::Cos) cos_of[g[k].a] = k;
  for (Id k : nodes)
    if (g[k].op == Op::Sin) {
      auto it = cos_of.find(g[k].a);
      if (it != cos_of.end()) sin_to_cos[k] = it->second;
    }
  // s^2 m -> m - c^2 m until no square of a sine is left
  auto reduce_squares = [&](Poly p) {
    for (;;) {
      Poly out;
      bool changed = false;
      for (const Term& t : p.terms) {
        size_t i = 0;
        for (; i + 1 < t.mono.size(); ++i)
          if (t.mono[i] == t.mono[i + 1] && sin_to_cos.count(t.mono[i])) break;
        if (i + 1 >= t.mono.size()) {
          out.add(t.mono, t.c, t.mag);
          continue;
        }
        changed = true;
        const Id cs = sin_to_cos[t.mono[i]];
        Mono rest = t.mono;
        rest.erase(rest.begin() + static_cast<long>(i), rest.begin() + static_cast<long>(i) + 2);
        out.add(rest, t.c, t.mag);
        rest.push_back(cs);
        rest.push_back(cs);
        std::sort(rest.begin(), rest.end());
        out.add(rest, -t.c, t.mag);
      }
      p = cancel(out);
      if (!changed) return p;
    }
  };
  // an operand's polynomial; an atom (or a polynomial that cancelled to nothing) stands as itself
  auto operand = [&](Id a) { return ex.has[a] && ex.P[a].size() ? ex.P[a] : atom(a); };
  for (Id k : nodes) {
    const tracing::Node& n = g[k];
    if (n.op == Op::Const) {
      ex.P[k].add(Mono{}, n.c, std::abs(n.c));
      ex.has[k] = 1;
      continue;
    }
    if (n.op != Op::Neg && n.op != Op::Add && n.op != Op::Sub && n.op != Op::Mul) continue;
    const Poly A = operand(n.a);
    if (n.op == Op::Neg) {
      for (const Term& t : A.terms) ex.P[k].add(t.mono, -t.c, t.mag);
      ex.has[k] = 1;
      continue;
    }
    const Poly B = operand(n.b);
    Poly R;
    size_t formed;
    if (n.op == Op::Add || n.op == Op::Sub) {
      const double sign = n.op == Op::Add ? 1.0 : -1.0;
      R = A;
      for (const Term& t : B.terms) R.add(t.mono, sign * t.c, t.mag);
      formed = R.size();
      R = cancel(R);
    } else {
      if (A.size() * B.size() > kProductLimit) continue;
      for (const Term& ta : A.terms)
        for (const Term& tb : B.terms) {
          Mono m(ta.mono);
          m.insert(m.end(), tb.mono.begin(), tb.mono.end());
          std::sort(m.begin(), m.end());
          R.add(m, ta.c * tb.c, ta.mag * tb.mag);
        }
      formed = R.size();
      R = reduce_squares(cancel(R));
    }
    if (R.size() < formed || ex.fired[n.a] || ex.fired[n.b]) ex.fired[k] = 1;
    if (R.size() <= kPolyLimit) {
      ex.P[k] = std::move(R);
      ex.has[k] = 1;
    }
  }
  return ex;
}

using Terms = std::vector<std::pair<Mono, double>>;  // sorted by monomial

Terms sorted_terms(const Poly& p) {
  Terms t;
  for (const Term& x : p.terms) t.emplace_back(x.mono, x.c);
  std::sort(t.begin(), t.end());
  return t;
}

// sum c * prod(atoms) in the current graph, factoring out the most frequent atom first, then
// equal coefficients; `get` maps an atom to its node
template <class Get>
Id build_polynomial(const Terms& terms, const Get& get) {
  Graph& h = tracing::graph();
  if (terms.empty()) return Graph::kZero;
  if (terms.size() == 1) {
    Id x = h.constant(terms[0].second);
    for (Id a : terms[0].first) x = tracing::mul(x, get(a));
    return x;
  }
  std::map<Id, int> count;  // atom -> terms containing it
  for (const auto& t : terms)
    for (size_t i = 0; i < t.first.size(); ++i)
      if (i == 0 || t.first[i] != t.first[i - 1]) ++count[t.first[i]];
  Id best = -1;
  int most = 0;
  for (const auto& [a, c] : count)
    if (c > most) best = a, most = c;
  if (most >= 2) {
    Terms inner, rest;
    for (const auto& t : terms) {
      auto it = std::find(t.first.begin(), t.first.end(), best);
      if (it == t.first.end()) {
        rest.push_back(t);
      } else {
        Mono m(t.first);
        m.erase(m.begin() + (it - t.first.begin()));
        inner.emplace_back(std::move(m), t.second);
      }
    }
    const Id factor = build_polynomial(inner, get);
    const Id product = tracing::mul(factor, get(best));
    const Id others = build_polynomial(rest, get);
    return tracing::add(product, others);
  }
  std::map<double, Terms> groups;  // |c| -> the terms with coefficient +-|c| (as +-1)
  for (const auto& t : terms)
    groups[std::abs(t.second)].emplace_back(t.first, t.second > 0 ? 1.0 : -1.0);
  Id x = Graph::kZero;
  for (const auto& [value, group] : groups) {
    if (group.size() >= 2 && value != 1.0) {
      const Id c = h.constant(value);
      const Id sum = build_polynomial(group, get);
      x = tracing::add(x, tracing::mul(c, sum));
    } else {
      for (const auto& t : group)
        x = tracing::add(x, build_polynomial(Terms{{t.first, t.second * value}}, get));
    }
  }
  return x;
}

struct Built {
  Graph h;
  std::vector<Id> outputs;
  std::vector<Id> where;  // node of g -> node of h (-1: not needed)
};

// g rebuilt through the simplifying constructors, dead nodes dropped, the nodes in `replace`
// built from their polynomials
Built rebuild(const Graph& g, const std::vector<Id>& outputs,
              const std::map<Id, const Poly*>& replace) {
  const size_t size = static_cast<size_t>(g.size());
  std::vector<char> need(size, 0);
  std::vector<Id> stack(outputs.begin(), outputs.end());
  while (!stack.empty()) {
    const Id x = stack.back();
    stack.pop_back();
    if (need[x]) continue;
    need[x] = 1;
    auto r = replace.find(x);
    if (r != replace.end()) {
      for (const Term& t : r->second->terms) stack.insert(stack.end(), t.mono.begin(), t.mono.end());
    } else if (is_binary(g[x].op)) {
      stack.push_back(g[x].a);
      stack.push_back(g[x].b);
    } else if (!is_leaf(g[x].op)) {
      stack.push_back(g[x].a);
    }
  }
  Built b;
  b.where.assign(size, -1);
  tracing::UseGraph use(b.h);
  auto get = [&](Id a) {
    if (b.where[a] < 0) throw std::logic_error("simplify: an atom was not rebuilt");
    return b.where[a];
  };
  for (Id k = 0; k < g.size(); ++k) {  // ascending ids: operands and atoms first
    if (!need[k]) continue;
    const tracing::Node& n = g[k];
    auto r = replace.find(k);
    if (r != replace.end())
      b.where[k] = build_polynomial(sorted_terms(*r->second), get);
    else if (n.op == Op::Const)
      b.where[k] = b.h.constant(n.c);
    else if (n.op == Op::Input)
      b.where[k] = b.h.input(n.a);
    else
      b.where[k] = build(n.op, get(n.a), is_binary(n.op) ? get(n.b) : 0);
  }
  for (Id o : outputs) b.outputs.push_back(b.where[o]);
  return b;
}

// g with only the nodes the outputs need, renumbered in the same (topological) order
Built compact(const Graph& g, const std::vector<Id>& outputs) {
  Built b;
  b.where.assign(static_cast<size_t>(g.size()), -1);
  for (Id k : live(g, outputs)) {
    const tracing::Node& n = g[k];
    if (n.op == Op::Const)
      b.where[k] = b.h.constant(n.c);
    else if (n.op == Op::Input)
      b.where[k] = b.h.input(n.a);
    else
      b.where[k] = b.h.node(n.op, b.where[n.a], is_binary(n.op) ? b.where[n.b] : 0);
  }
  for (Id o : outputs) b.outputs.push_back(b.where[o]);
  return b;
}

// Cost saved by using node `root` (built from node `before` on) instead of node x: the
// weighted operations of x's fanout-free cone that the new nodes do not reuse, minus the
// weighted new operations.
long rewrite_gain(const Graph& h, Id x, Id root, Id before, const std::vector<int>& uses) {
  if (root == x) return 0;
  std::unordered_map<Id, int> extra, taken;
  auto operands = [&](Id y, auto&& f) {
    const tracing::Node& n = h[y];
    if (is_leaf(n.op)) return;
    f(n.a);
    if (is_binary(n.op)) f(n.b);
  };
  long added = 0;
  for (Id y = before; y < h.size(); ++y) {
    operands(y, [&](Id z) {
      if (z < before) ++extra[z];
    });
    added += weight(h[y].op);
  }
  if (root < before) ++extra[root];
  long freed = 0;
  std::vector<Id> stack{x};
  while (!stack.empty()) {
    const Id y = stack.back();
    stack.pop_back();
    freed += weight(h[y].op);
    operands(y, [&](Id z) {
      auto e = extra.find(z);
      if (++taken[z] == uses[z] + (e == extra.end() ? 0 : e->second)) stack.push_back(z);
    });
  }
  return freed - added;
}

Built pythagoras(const Graph& g, const std::vector<Id>& outputs) {
  const std::vector<Id> nodes = live(g, outputs);
  const Expansion ex = polynomials(g, nodes);
  std::vector<Id> candidates;
  for (Id k : nodes)
    if (ex.fired[k] && ex.has[k]) candidates.push_back(k);
  // tried from the outputs down; each is rewritten when that saves operations, then the
  // whole graph is rebuilt and re-checked
  std::map<Id, const Poly*> accepted;
  Built cur = rebuild(g, outputs, accepted);
  long best = cost(cur.h, cur.outputs);
  std::vector<int> uses = use_counts(cur.h, cur.outputs);
  for (auto it = candidates.rbegin(); it != candidates.rend(); ++it) {
    const Id k = *it;
    const Id x = cur.where[k];
    if (x < 0 || uses[x] == 0) continue;  // no longer needed after a rewrite above it
    const Id before = cur.h.size();
    Id root;
    {
      tracing::UseGraph use(cur.h);
      root = build_polynomial(sorted_terms(ex.P[k]), [&](Id a) {
        if (cur.where[a] < 0) throw std::logic_error("simplify: an atom was not rebuilt");
        return cur.where[a];
      });
    }
    const long gain = rewrite_gain(cur.h, x, root, before, uses);
    cur.h.truncate(before);
    if (gain <= 0) continue;
    std::map<Id, const Poly*> trial = accepted;
    trial[k] = &ex.P[k];
    Built next = rebuild(g, outputs, trial);
    const long c = cost(next.h, next.outputs);
    if (c < best) {
      best = c;
      accepted = std::move(trial);
      cur = std::move(next);
      uses = use_counts(cur.h, cur.outputs);
    }
  }
  Built done = rebuild(g, outputs, accepted);
  return compact(done.h, done.outputs);
}

// the graph of an ExprGraph, checked (operands before their users, known operations)
Graph from_expr(const ExprGraph& e) {
  const size_t size = e.op.size();
  if (e.a.size() != size || e.b.size() != size || e.c.size() != size)
    throw std::invalid_argument("simplify: op, a, b and c must have the same length");
  Graph g;
  g.truncate(0);
  for (size_t k = 0; k < size; ++k) {
    if (e.op[k] > static_cast<std::uint8_t>(Op::Atan2))
      throw std::invalid_argument("simplify: unknown operation " + std::to_string(e.op[k]) +
                                  " at node " + std::to_string(k));
    const Op op = static_cast<Op>(e.op[k]);
    const auto bad_operand = [&](std::int32_t x) { return x < 0 || static_cast<size_t>(x) >= k; };
    if ((!is_leaf(op) && bad_operand(e.a[k])) || (is_binary(op) && bad_operand(e.b[k])))
      throw std::invalid_argument("simplify: node " + std::to_string(k) +
                                  " uses a node that does not come before it");
    if (op == Op::Input && e.a[k] < 0)
      throw std::invalid_argument("simplify: negative input index at node " + std::to_string(k));
    if (op == Op::Const && !std::isfinite(e.c[k]))
      throw std::invalid_argument("simplify: non-finite constant at node " + std::to_string(k));
    // stored as given (not interned): the rebuild below interns and simplifies
    g.nodes.push_back(tracing::Node{op, is_leaf(op) && op != Op::Input ? 0 : e.a[k],
                                    is_binary(op) ? e.b[k] : 0, op == Op::Const ? e.c[k] : 0.0});
  }
  for (std::int32_t o : e.outputs)
    if (o < 0 || static_cast<size_t>(o) >= size)
      throw std::invalid_argument("simplify: output " + std::to_string(o) + " is not a node");
  return g;
}

}  // namespace

ExprGraph simplify(const ExprGraph& e) {
  const Graph g = from_expr(e);
  // the rules alone first (dead nodes dropped), then sin^2 + cos^2 = 1
  Built ruled = rebuild(g, e.outputs, {});
  Built first = compact(ruled.h, ruled.outputs);
  const Built s = pythagoras(first.h, first.outputs);
  ExprGraph r;
  for (const tracing::Node& n : s.h.nodes) {
    r.op.push_back(static_cast<std::uint8_t>(n.op));
    r.a.push_back(n.a);
    r.b.push_back(n.b);
    r.c.push_back(n.c);
  }
  r.outputs = s.outputs;
  r.assumptions = e.assumptions;
  return r;
}

}  // namespace robodyn
