// call_layer::Core (core.hpp): the robot of a bench case file and robodyn's rnea at -O3, as
// in robodyn's own instance units.
#include "core.hpp"

#include <time.h>

// valgrind's client requests; without its headers the requests do nothing
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#else
#define CALLGRIND_START_INSTRUMENTATION
#define CALLGRIND_ZERO_STATS
#define CALLGRIND_DUMP_STATS_AT(label) (void)(label)
#define RUNNING_ON_VALGRIND 0
#endif

#include <cmath>
#include <stdexcept>
#include <vector>

#include "case_file.hpp"
#include "robodyn/algorithms/rnea.hpp"

namespace call_layer {

namespace {

robodyn::Model read_model(const std::string& path) {
  bench::CaseFile c;
  std::string error;
  if (!bench::read_case_file(path, c, error)) throw std::invalid_argument(error);
  return robodyn::build_model(c.bodies, {}, c.gravity, false);
}

[[noreturn]] void bad(const char* name, const std::string& why) {
  throw std::invalid_argument(std::string(name) + ": " + why);
}

// robodyn's branch-free test (numpy_boundary.hpp's all_finite): x - x is zero for a finite x
bool all_finite(const double* p, long n) {
  std::uint64_t acc = 0;
  for (long k = 0; k < n; ++k) {
    const double z = p[k] - p[k];
    std::uint64_t bits;
    __builtin_memcpy(&bits, &z, sizeof bits);
    acc |= bits;
  }
  return (acc & 0x7fffffffffffffffULL) == 0;
}

void check_one(const char* name, const double* p, long got, long want) {
  if (got != want)
    bad(name, "expected shape (" + std::to_string(want) + ",), got (" + std::to_string(got) +
                  ",)");
  if (!all_finite(p, got)) bad(name, "contains NaN or inf");
}

}  // namespace

Core::Core(const std::string& case_path) : model(read_model(case_path)), data(model) {}

void Core::rnea(const double* q, const double* qd, const double* qdd, double* tau) {
  robodyn::rnea(model, data, q, qd, qdd, tau);
}

void Core::check(const double* q, long nq, const double* qd, long nqd, const double* qdd,
                 long nqdd) const {
  check_one("q", q, nq, model.nq);
  check_one("qd", qd, nqd, model.nv);
  check_one("qdd", qdd, nqdd, model.nv);
  if (model.floating) {
    const double* x = q + model.iq[1] + 3;
    const double norm = std::sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2] + x[3] * x[3]);
    if (!(std::abs(norm - 1) <= 1e-6)) bad("q", "the base quaternion is not a unit quaternion");
  }
}

double Core::loop_ns(const double* Q, const double* V, const double* A, long rows, long reps) {
  const int nq = model.nq, nv = model.nv;
  std::vector<double> tau(nv);
  timespec t0, t1;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
  for (long r = 0; r < reps; ++r) {
    const long k = r % rows;
    rnea(Q + k * nq, V + k * nv, A + k * nv, tau.data());
  }
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
  return (1e9 * (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec)) / static_cast<double>(reps);
}

void callgrind_start() { CALLGRIND_START_INSTRUMENTATION; }
void callgrind_zero() { CALLGRIND_ZERO_STATS; }
void callgrind_dump(const char* label) { CALLGRIND_DUMP_STATS_AT(label); }
bool under_valgrind() { return RUNNING_ON_VALGRIND; }

}  // namespace call_layer
