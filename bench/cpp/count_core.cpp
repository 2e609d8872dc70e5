// Instructions per call of robodyn's generic C++ algorithms on a bench case (no Python, no
// Pinocchio: quick to build), for callgrind:
//
//   g++ -O3 -DNDEBUG -std=c++17 -g -Icpp/include -isystem <eigen> bench/cpp/count_core.cpp \
//       cpp/src/model.cpp -o build/count_core
//   python bench/cpp_cases.py --out build/bench/cases        # the case files
//   valgrind --tool=callgrind build/count_core build/bench/cases/panda.model id 2000
//
// ALGO is id (rnea), M (crba into an (nv, nv) buffer), fd (aba) or none; the calls cycle
// through 64 seeded random states. Run with REPS and with 0: the difference of the two totals
// over REPS is one call. The case file is bench/cpp_cases.py's (see bench_vs_pinocchio.cpp);
// only its body lines and gravity are read. -g changes no generated code (line-level profiles
// with callgrind_annotate).
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "robodyn/aba.hpp"
#include "robodyn/crba.hpp"
#include "robodyn/rnea.hpp"

using namespace robodyn;

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: count_core CASE.model id|M|fd|none REPS\n");
    return 2;
  }
  std::ifstream f(argv[1]);
  if (!f) {
    std::fprintf(stderr, "count_core: cannot read %s\n", argv[1]);
    return 2;
  }
  std::vector<BodySpec> bodies;
  Vec3 gravity(0, 0, -9.81);
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream s(line);
    std::string key;
    if (!(s >> key)) continue;
    if (key == "gravity") s >> gravity[0] >> gravity[1] >> gravity[2];
    if (key != "body") continue;
    BodySpec b;
    int type;
    s >> b.parent >> type >> b.axis[0] >> b.axis[1] >> b.axis[2];
    b.type = type == 0 ? JointType::Revolute
                       : type == 1 ? JointType::Prismatic : JointType::FreeFlyer;
    for (int r = 0; r < 3; ++r)
      for (int k = 0; k < 3; ++k) s >> b.origin_R(r, k);
    s >> b.origin_p[0] >> b.origin_p[1] >> b.origin_p[2] >> b.mass;
    s >> b.com[0] >> b.com[1] >> b.com[2];
    for (int r = 0; r < 3; ++r)
      for (int k = 0; k < 3; ++k) s >> b.inertia(r, k);
    s >> b.armature >> b.lower >> b.upper >> b.joint_name;
    if (!s) {
      std::fprintf(stderr, "count_core: bad body line: %s\n", line.c_str());
      return 2;
    }
    bodies.push_back(b);
  }
  const Model m = build_model(bodies, {}, gravity, false);
  Data d(m);
  const std::string algo = argv[2];
  const int reps = std::atoi(argv[3]);
  // 64 random states; a free-flyer's quaternion is normalised by the algorithms
  const int K = 64, nq = m.nq, nv = m.nv;
  std::mt19937 g(0);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> Q(K * nq), V(K * nv), A(K * nv), out(nv * nv);
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
    else if (algo == "fd")
      aba(m, d, q, v, a, out.data());
    sum += out[0];
  }
  std::printf("%g\n", sum);  // keeps the calls
  return 0;
}
