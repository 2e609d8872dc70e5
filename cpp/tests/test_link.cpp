// link.hpp's Xup against the dense 6x6 Plücker transform X = [[E^T, 0], [-E^T [r], E^T]] built
// from the cached pose (E, r) of every body, on a tree that has every LinkKind (revolute and
// prismatic with a permutation, a rotation about x and a general constant rotation, a DH link,
// a free-flyer), at random configurations. Also: d.r[i] is valid for every kind at cache
// level 1. Prints "ok" and exits 0, or names the failed check and exits 1.
// Built and run by tests/test_link.py.
#include <Eigen/Geometry>
#include <cmath>
#include <cstdio>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "robodyn/kinematics.hpp"
#include "robodyn/link.hpp"

using namespace robodyn;
using M6 = Eigen::Matrix<double, 6, 6>;
using V6 = Eigen::Matrix<double, 6, 1>;

static int failures = 0;

static void check(double err, double tol, const std::string& what) {
  if (!(err <= tol)) {
    std::printf("FAIL %s: error %.3g\n", what.c_str(), err);
    ++failures;
  }
}

int main() {
  std::mt19937 g(7);
  std::uniform_real_distribution<double> u(-1, 1);
  auto rnd3 = [&]() { return Vec3(u(g), u(g), u(g)); };
  auto rndrot = [&]() {
    return Eigen::AngleAxisd(3 * u(g), rnd3().normalized()).toRotationMatrix();
  };
  auto inertia = [&](BodySpec& b) {
    b.mass = 1.5 + u(g);
    b.com = 0.1 * rnd3();
    const Mat3 R = rndrot();
    b.inertia = R * Vec3(0.03, 0.04, 0.05).asDiagonal() * R.transpose();
  };
  std::vector<BodySpec> bs;
  BodySpec base;
  base.type = JointType::FreeFlyer;
  base.origin_p = rnd3();
  base.origin_R = rndrot();
  inertia(base);
  bs.push_back(base);
  // (type, rotation class: 0 identity, 1 about x, 2 general; dh: pc = (a, 0, d))
  struct K { JointType t; int rot; bool dh; };
  const K kinds[] = {{JointType::Revolute, 0, false},  {JointType::Revolute, 1, false},
                     {JointType::Revolute, 1, true},   {JointType::Revolute, 2, false},
                     {JointType::Prismatic, 0, false}, {JointType::Prismatic, 1, false},
                     {JointType::Prismatic, 2, false}};
  for (int rep = 0; rep < 2; ++rep)
    for (const K& k : kinds) {
      BodySpec b;
      b.parent = static_cast<int>(bs.size()) - 1 - (rep && bs.size() > 3 ? 2 : 0);
      b.type = k.t;
      b.axis = k.rot == 2 ? rnd3().normalized() : Vec3::UnitZ();
      b.origin_R = k.rot == 0   ? Mat3::Identity()
                   : k.rot == 1 ? Eigen::AngleAxisd(0.3 + u(g), Vec3::UnitX()).toRotationMatrix()
                                : rndrot();
      b.origin_p = k.dh ? Vec3(0.4 * u(g) + 0.5, 0, 0.3 * u(g) - 0.5) : Vec3(0.3 * rnd3());
      inertia(b);
      bs.push_back(b);
    }
  const Model m = build_model(bs, {}, Vec3(0, 0, -9.81));
  std::set<int> seen;
  for (int i = 1; i <= m.n; ++i) seen.insert(static_cast<int>(m.link[i]));
  if (seen.size() != 8) {
    for (int i = 1; i <= m.n; ++i) std::printf("%d ", int(m.link[i]));
    std::printf("FAIL the test tree has %d of the 8 link kinds\n", int(seen.size()));
    return 1;
  }
  Data d(m);
  std::vector<double> q(m.nq);
  for (int trial = 0; trial < 5; ++trial) {
    for (auto& x : q) x = 2 * u(g);
    Eigen::Vector4d quat(u(g), u(g), u(g), u(g));
    quat.normalize();
    for (int k = 0; k < 4; ++k) q[3 + k] = quat[k];
    // level 1 first: r must already be right for every kind
    d.level = 0;
    update_kinematics(m, d, q.data(), 1);
    std::vector<Vec3> r1(d.r.begin(), d.r.end());
    update_kinematics(m, d, q.data(), 3);
    for (int i = 1; i <= m.n; ++i) {
      const std::string who = "body " + std::to_string(i) + " kind " +
                              std::to_string(int(m.link[i]));
      const Mat3 E = d.E[i];
      const Vec3 r = d.r[i];
      // r at level 1 against the pose at level 3 (op_i = op_p + oR_p r)
      const int p = m.parent[i];
      check((r1[i] - d.oR[p].transpose() * (d.op[i] - d.op[p])).norm(), 1e-12,
            who + ": d.r at cache level 1");
      Mat3 rx;
      rx << 0, -r[2], r[1], r[2], 0, -r[0], -r[1], r[0], 0;
      M6 X = M6::Zero();
      X.topLeftCorner<3, 3>() = E.transpose();
      X.bottomRightCorner<3, 3>() = E.transpose();
      X.bottomLeftCorner<3, 3>() = -E.transpose() * rx;
      const Xup<double> Xi(m, d, i);
      const Vec3 a = rnd3(), b = rnd3();
      check((Xi.E(a) - E * a).norm(), 1e-13, who + ": E");
      check((Xi.ET(a) - E.transpose() * a).norm(), 1e-13, who + ": ET");
      check((Xi.cross_r(a) - a.cross(r)).norm(), 1e-13, who + ": cross_r");
      const Mat3 A = Mat3::Random();
      check((Xi.times_r(A) - A * r).norm(), 1e-13, who + ": times_r");
      // motion
      V6 mv;
      mv << a, b;
      Vec3 wi, vi;
      Xi.apply(a, b, wi, vi);
      V6 got;
      got << wi, vi;
      check((got - X * mv).norm(), 1e-12, who + ": apply");
      // force, added to the parent's
      const Vec3 n0 = rnd3(), f0 = rnd3();
      Vec3 np = n0, fp = f0;
      Xi.apply_transpose(a, b, np, fp);
      V6 fx;
      fx << np - n0, fp - f0;
      check((fx - X.transpose() * mv).norm(), 1e-12, who + ": apply_transpose");
      // rotations of tensors
      const Mat3 B = Mat3::Random(), Bs = B + B.transpose();
      check((Xi.rotate<false>(B) - E * B * E.transpose()).norm(), 1e-12, who + ": rotate");
      check((Xi.rotate<true>(Bs) - E * Bs * E.transpose()).norm(), 1e-12, who + ": rotate sym");
      // rigid inertia (mass, h, Ibar) moved to the parent, added to what it holds
      const double mass = 1.7;
      const Vec3 h = 0.2 * rnd3();
      const Mat3 R = rndrot();
      const Mat3 Ib = R * Vec3(0.3, 0.4, 0.5).asDiagonal() * R.transpose();
      Mat3 hx;
      hx << 0, -h[2], h[1], h[2], 0, -h[0], -h[1], h[0], 0;
      M6 I6;
      I6 << Ib, hx, hx.transpose(), mass * Mat3::Identity();
      const M6 Ip = X.transpose() * I6 * X;
      double mp = 0.5;
      Vec3 hp = Vec3(0.1, 0.2, 0.3);
      Mat3 Ibp = Mat3::Identity();
      Xi.transport_inertia(mass, h, Ib, mp, hp, Ibp);
      Mat3 hpx;
      const Vec3 dh = hp - Vec3(0.1, 0.2, 0.3);
      hpx << 0, -dh[2], dh[1], dh[2], 0, -dh[0], -dh[1], dh[0], 0;
      check(std::abs(mp - 0.5 - Ip(3, 3)), 1e-12, who + ": transport_inertia mass");
      check((hpx - Ip.topRightCorner<3, 3>()).norm(), 1e-12, who + ": transport_inertia h");
      check((Ibp - Mat3::Identity() - Ip.topLeftCorner<3, 3>()).norm(), 1e-12,
            who + ": transport_inertia Ibar");
      // a general symmetric 6x6 (articulated inertia)
      M6 G = M6::Random();
      G = G * G.transpose();
      check((Xi.transport(G) - X.transpose() * G * X).norm(), 1e-11, who + ": transport 6x6");
    }
  }
  if (failures) return 1;
  std::printf("ok\n");
  return 0;
}
