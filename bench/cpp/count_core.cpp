// Instructions per call of robodyn's generic C++ algorithms on a bench case (no Python, no
// Pinocchio: quick to build), for callgrind:
//
//   g++ -O3 -DNDEBUG -std=c++17 -g -Icpp/include -isystem <eigen> bench/cpp/count_core.cpp \
//       cpp/src/model.cpp -o build/count_core
//   python bench/cpp_cases.py --out build/bench/cases        # the case files
//   valgrind --tool=callgrind build/count_core build/bench/cases/panda.model id 2000
//
// ALGO is id (rnea), M (crba into an (nv, nv) buffer), L (its lower triangle only, into
// d.H: what forward_dynamics_crba factorises), fd (aba), dd (rnea_derivatives), dfd
// (forward_dynamics_derivatives), fdc (forward_dynamics_crba: bias torques, L, Cholesky) or
// none; the calls cycle
// through 64 seeded random states. Run with REPS and with 0: the difference of the two totals
// over REPS is one call. The case file is bench/cpp_cases.py's (see bench_vs_pinocchio.cpp);
// only its body lines and gravity are used (bench/cpp/case_file.hpp reads it). -g changes no
// generated code (line-level profiles with callgrind_annotate).
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "robodyn/algorithms/aba.hpp"
#include "robodyn/algorithms/crba.hpp"
#include "robodyn/algorithms/rnea.hpp"
#include "robodyn/algorithms/rnea_derivatives.hpp"
#include "case_file.hpp"

using namespace robodyn;

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: count_core CASE.model id|M|L|fd|dd|dfd|fdc|none REPS\n");
    return 2;
  }
  bench::CaseFile c;
  std::string error;
  if (!bench::read_case_file(argv[1], c, error)) {
    std::fprintf(stderr, "count_core: %s\n", error.c_str());
    return 2;
  }
  const Model m = build_model(c.bodies, {}, c.gravity, false);
  Data d(m);
  const std::string algo = argv[2];
  const int reps = std::atoi(argv[3]);
  // 64 random states; a free-flyer's quaternion is normalised by the algorithms
  const int K = 64, nq = m.nq, nv = m.nv;
  std::mt19937 g(0);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> Q(K * nq), V(K * nv), A(K * nv), out(nv * nv), out2(nv * nv),
      out3(nv * nv), qdd(nv);
  for (auto& x : Q) x = u(g);
  for (auto& x : V) x = u(g);
  for (auto& x : A) x = u(g);
  double sum = 0;
  for (int r = 0; r < reps; ++r) {
    const int k = r % K;
    const double *q = &Q[k * nq], *v = &V[k * nv], *a = &A[k * nv];
    if (algo == "id")
      rnea(m, d, q, v, a, out.data());
    else if (algo == "M")
      crba(m, d, q, out.data());
    else if (algo == "L")
      detail::crba_lower(m, d, q);  // one triangle, into d.H
    else if (algo == "fd")
      aba(m, d, q, v, a, out.data());
    else if (algo == "dd")
      rnea_derivatives(m, d, q, v, a, out.data(), out2.data());
    else if (algo == "dfd")
      forward_dynamics_derivatives(m, d, q, v, a, qdd.data(), out.data(), out2.data(),
                                   out3.data());
    else if (algo == "fdc")
      forward_dynamics_crba(m, d, q, v, a, out.data());  // a as the torques
    sum += out[0];
  }
  std::printf("%g\n", sum);  // keeps the calls
  return 0;
}
