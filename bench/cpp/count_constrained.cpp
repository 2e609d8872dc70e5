// Instructions per call of robodyn's constrained forward dynamics (constrained_forward_dynamics,
// mu = 0) on a bench case, for callgrind, like count_core.cpp:
//
//   g++ -O3 -DNDEBUG -std=c++17 -g -Icpp/include -Ibench/cpp -isystem <eigen> \
//       bench/cpp/count_constrained.cpp cpp/src/model.cpp -o build/count_constrained
//   python bench/cpp_cases.py --out build/bench/cases        # the case files
//   valgrind --tool=callgrind build/count_constrained build/bench/cases/solo12.model \
//       FL_KFE,FR_KFE,HL_KFE,HR_KFE point 2000
//
// JOINTS names the joints whose child bodies are held to the world: each a frame at the fixed
// offset (0.01, 0.02, -0.16) from the body's origin (a foot), `point` (3 rows) or `weld` (6
// rows); e.g. Solo12's four lower legs as above, Talos' soles
// leg_left_6_joint,leg_right_6_joint weld. The calls cycle through 64 seeded random states
// (a free-flyer's quaternion normalised). Run with REPS and with 0: the difference of the two
// totals over REPS is one call. Prints a checksum of the results and the failed calls.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "robodyn/constraints/dynamics.hpp"
#include "case_file.hpp"

using namespace robodyn;

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: count_constrained CASE.model JOINT[,JOINT...] point|weld REPS\n");
    return 2;
  }
  bench::CaseFile c;
  std::string error;
  if (!bench::read_case_file(argv[1], c, error)) {
    std::fprintf(stderr, "count_constrained: %s\n", error.c_str());
    return 2;
  }
  const Model m = build_model(c.bodies, {}, c.gravity, false);
  const bool weld = std::string(argv[3]) == "weld";
  std::vector<LoopModel> loops;
  std::stringstream names(argv[2]);
  std::string name;
  while (std::getline(names, name, ',')) {
    int body = -1;
    for (size_t i = 0; i < c.bodies.size(); ++i)
      if (c.bodies[i].joint_name == name) body = static_cast<int>(i) + 1;
    if (body < 0) {
      std::fprintf(stderr, "count_constrained: no joint %s\n", name.c_str());
      return 2;
    }
    LoopModel l;
    l.body1 = body;
    l.p1 = Vec3(0.01, 0.02, -0.16);
    l.name = name;
    l.nrows = weld ? 6 : 3;
    for (int k = 0; k < l.nrows; ++k) l.rows[k] = weld ? k : 3 + k;
    loops.push_back(l);
  }
  const ConstraintModel cm = make_constraint_model(m, loops);
  Data d(m);
  ConstraintData cd(m, cm);
  const int reps = std::atoi(argv[4]);
  const int K = 64, nq = m.nq, nv = m.nv;
  std::mt19937 g(0);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> Q(K * nq), V(K * nv), T(K * nv), qdd(nv), lam(cm.m);
  for (auto& x : Q) x = u(g);
  for (auto& x : V) x = u(g);
  for (auto& x : T) x = u(g);
  if (m.floating)
    for (int k = 0; k < K; ++k) {
      double* x = &Q[k * nq + 3];
      const double n = std::sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2] + x[3] * x[3]);
      for (int i = 0; i < 4; ++i) x[i] /= n;
    }
  double sum = 0;
  int failed = 0;
  for (int r = 0; r < reps; ++r) {
    const int k = r % K;
    if (constrained_forward_dynamics(m, cm, d, cd, &Q[k * nq], &V[k * nv], &T[k * nv], 0.0, 1,
                                     1e-12, qdd.data(), lam.data()) != ConstraintStatus::Ok)
      ++failed;
    sum += qdd[0] + lam[0];
  }
  std::printf("%.17g %d\n", sum, failed);  // keeps the calls
  return 0;
}
