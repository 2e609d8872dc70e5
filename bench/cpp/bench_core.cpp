// Per-call time of the core algorithms in C++ (no Python), on a random 6-DOF chain.
// Build: g++ -O3 -std=c++17 -Icpp/include -I<eigen> bench/cpp/bench_core.cpp cpp/src/model.cpp
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>
#include <algorithm>
#include <string>

#include <Eigen/Geometry>

#include "robodyn/algorithms/aba.hpp"
#include "robodyn/algorithms/crba.hpp"
#include "robodyn/algorithms/kane.hpp"
#include "robodyn/algorithms/rnea.hpp"

using namespace robodyn;

// dense: random axes and rotations; dh: DH-like (alpha = +-90 deg, sparse offsets and COM)
static Model random_chain(int n, std::mt19937& g, bool dh) {
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<BodySpec> bs(n);
  for (int i = 0; i < n; ++i) {
    BodySpec& b = bs[i];
    b.parent = i - 1;
    if (dh) {
      b.origin_R = Eigen::AngleAxisd((i % 2 ? 1 : -1) * M_PI / 2, Vec3::UnitX()).toRotationMatrix();
      b.origin_p = Vec3(0.3 * u(g), 0, 0.2 * u(g));
      b.mass = 2;
      b.com = Vec3(0, 0.1 * u(g), 0.1 * u(g));
      b.inertia = Vec3(0.02, 0.03, 0.04).asDiagonal();
      continue;
    }
    b.axis = Vec3(u(g), u(g), u(g)).normalized();
    b.origin_R = Eigen::AngleAxisd(u(g) * 3, Vec3(u(g), u(g), u(g)).normalized()).toRotationMatrix();
    b.origin_p = Vec3(u(g), u(g), u(g)) * 0.3;
    b.mass = 1 + u(g) * 0.5;
    b.com = Vec3(u(g), u(g), u(g)) * 0.1;
    b.inertia = Vec3(0.02, 0.03, 0.04).asDiagonal();
  }
  return build_model(bs, {}, Vec3(0, 0, -9.81));
}

template <class F>
double time_ns(F&& f, int reps) {
  std::vector<double> t;
  for (int k = 0; k < 7; ++k) {
    auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) f(r);
    auto t1 = std::chrono::steady_clock::now();
    t.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / reps);
  }
  std::sort(t.begin(), t.end());
  return t[3];
}

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 6;
  const bool dh = argc > 2 && std::string(argv[2]) == "dh";
  std::mt19937 g(1);
  Model m = random_chain(n, g, dh);
  Data d(m);
  const int K = 1024;
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> Q(K * n), QD(K * n), QDD(K * n), out(n);
  for (auto* v : {&Q, &QD, &QDD})
    for (auto& x : *v) x = u(g);
  const int reps = 200000;
  double sink = 0;
  auto at = [&](std::vector<double>& v, int r) { return v.data() + (r % K) * n; };
  double t_rnea = time_ns([&](int r) { rnea(m, d, at(Q, r), at(QD, r), at(QDD, r), out.data()); sink += out[0]; }, reps);
  double t_rnea_same = time_ns([&](int r) { rnea(m, d, Q.data(), at(QD, r), at(QDD, r), out.data()); sink += out[0]; }, reps);
  double t_kane = time_ns([&](int r) { kane(m, d, at(Q, r), at(QD, r), at(QDD, r), out.data()); sink += out[0]; }, reps);
  double t_crba = time_ns([&](int r) { crba(m, d, at(Q, r)); sink += d.H(0, 0); }, reps);
  double t_aba = time_ns([&](int r) { aba(m, d, at(Q, r), at(QD, r), at(QDD, r), out.data()); sink += out[0]; }, reps);
  double t_fd = time_ns([&](int r) { forward_dynamics_crba(m, d, at(Q, r), at(QD, r), at(QDD, r), out.data()); sink += out[0]; }, reps);
  double t_g = time_ns([&](int r) { gravity_torques(m, d, at(Q, r), out.data()); sink += out[0]; }, reps);
  std::printf("%s n=%d  rnea %.0f ns (same q %.0f)  kane %.0f  crba %.0f  aba %.0f  crba+chol %.0f  gravity %.0f  [%g]\n",
              dh ? "dh" : "dense", n, t_rnea, t_rnea_same, t_kane, t_crba, t_aba, t_fd, t_g, sink * 0);
}
