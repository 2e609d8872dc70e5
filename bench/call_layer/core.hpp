// The work behind every entry point of the call-layer benchmark (bench/bench_call_layer.py):
// a robot read from a bench case file (bench/cpp_cases.py) and built by robodyn's model
// builder, its Data workspace, robodyn's rnea, and the checks robodyn's fast calls make at the
// boundary (sizes, finiteness, a unit base quaternion, an output that overlaps an input). The
// pybind11 and nanobind modules include it, so the layers differ by the binding alone.
#pragma once

#include <cstdint>
#include <string>

#include "robodyn/model/data.hpp"
#include "robodyn/model/model.hpp"

namespace call_layer {

// one robot: the immutable model and its per-call workspace
struct Core {
  explicit Core(const std::string& case_path);
  Core(const Core&) = delete;
  Core& operator=(const Core&) = delete;

  robodyn::Model model;
  robodyn::Data data;

  // tau = ID(q, qd, qdd): robodyn::rnea, compiled in core.cpp (a call, as robodyn's
  // instance units make it)
  void rnea(const double* q, const double* qd, const double* qdd, double* tau);
  // the checks of robodyn's fast call on one state: std::invalid_argument (ValueError in
  // both bindings) naming the argument
  void check(const double* q, long nq, const double* qd, long nqd, const double* qdd,
             long nqdd) const;
  // nanoseconds of thread CPU time per rnea over `reps` calls cycling through `rows` states
  // stored row by row in Q (rows x nq), V and A (rows x nv): the C++ loop, no Python
  double loop_ns(const double* Q, const double* V, const double* A, long rows, long reps);
};

// whether [a, a + na) and [b, b + nb) share memory (robodyn's check of out=)
inline bool overlaps(const double* a, long na, const double* b, long nb) {
  const auto a0 = reinterpret_cast<std::uintptr_t>(a), b0 = reinterpret_cast<std::uintptr_t>(b);
  return a0 < b0 + nb * sizeof(double) && b0 < a0 + na * sizeof(double);
}

// callgrind client requests (no-ops outside valgrind): start instrumenting (a process started
// with --instr-atstart=no), zero the counters, dump them to a file whose description is `label`
void callgrind_start();
void callgrind_zero();
void callgrind_dump(const char* label);
bool under_valgrind();

}  // namespace call_layer
