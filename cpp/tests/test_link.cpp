// link.hpp's Xup against the dense 6x6 Plücker transform X = [[E^T, 0], [-E^T [r], E^T]] built
// from the cached pose (E, r) of every body, at random configurations, on
//   - a tree that has every LinkKind (revolute and prismatic with a permutation, a rotation
//     about x and a general constant rotation, a DH link, a free-flyer);
//   - six floating trees, one per joint axis +-x, +-y, +-z, whose bodies take each of the 24
//     signed permutations with det +1 as their origin's rotation, once on a revolute and once
//     on a prismatic joint: the model's constant rotations Rc then run through all 24 for each
//     joint type and axis (checked, with the bodies' kinds RevPerm / PrisPerm), with offsets of
//     every zero pattern, so that a wrong relabelling or sign of any one of them fails here.
// Every Xup operation is checked three times: with the kind read at run time (Xup(m, d, i)),
// as the compile-time constant of with_link, and with that kind and the relabelling of a
// signed-permutation Rc as compile-time constants (with_step's case, Xup<double, P>: what crba
// uses; the case checked against the body's kind, relabelling and parent joint type). Also: d.Xup_r[i] is valid for every kind at cache level 1. Prints "ok" and exits 0, or
// names the failed check and exits 1.
// Built and run by tests/test_link.py.
#include <Eigen/Geometry>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "robodyn/algorithms/kinematics.hpp"
#include "robodyn/spatial/link.hpp"

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

static std::mt19937 g(7);
static std::uniform_real_distribution<double> u(-1, 1);
static Vec3 rnd3() { return Vec3(u(g), u(g), u(g)); }
static Mat3 rndrot() { return Eigen::AngleAxisd(3 * u(g), rnd3().normalized()).toRotationMatrix(); }
static void inertia(BodySpec& b) {
  b.mass = 1.5 + u(g);
  b.com = 0.1 * rnd3();
  const Mat3 R = rndrot();
  b.inertia = R * Vec3(0.03, 0.04, 0.05).asDiagonal() * R.transpose();
}

// a free-flyer on the base at a random pose, with a random inertia
static BodySpec free_base() {
  BodySpec base;
  base.type = JointType::FreeFlyer;
  base.origin_p = rnd3();
  base.origin_R = rndrot();
  inertia(base);
  return base;
}

// the 24 signed permutation matrices with determinant +1
static std::vector<Mat3> proper_signed_permutations() {
  std::vector<Mat3> out;
  const int perms[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  for (const auto& p : perms)
    for (int signs = 0; signs < 8; ++signs) {
      Mat3 P = Mat3::Zero();
      for (int k = 0; k < 3; ++k) P(k, p[k]) = (signs >> k & 1) ? -1 : 1;
      if (P.determinant() > 0) out.push_back(P);
    }
  return out;
}

// Xi's operations on body i against the dense transform X built from (E, r) = (d.Xup_E[i], d.Xup_r[i])
// forces_to_parent's sink: the moved forces (parent coordinates) it was handed, column by
// column, one at a time or, for double, two at a time in D2 lanes
template <int kCols>
struct Seen {
  Eigen::Matrix<double, 6, kCols>* v;
  std::vector<int>* calls;
  void operator()(std::ptrdiff_t c, const double (&x)[6]) const {
    for (int k = 0; k < 6; ++k) (*v)(k, c) = x[k];
    ++(*calls)[c];
  }
#if ROBODYN_HAVE_D2
  void pair(std::ptrdiff_t c, const D2 (&x)[6]) const {
    for (int k = 0; k < 6; ++k) {
      (*v)(k, c) = x[k].lane0();
      (*v)(k, c + 1) = x[k].lane1();
    }
    ++(*calls)[c];
    ++(*calls)[c + 1];
  }
#endif
};

template <int kP>
static void check_xup(const Xup<double, kP>& Xi, const Model& m, const Data& d, int i,
                      const std::string& who) {
  const Mat3 E = d.Xup_E[i];
  const Vec3 r = d.Xup_r[i];
  Mat3 rx;
  rx << 0, -r[2], r[1], r[2], 0, -r[0], -r[1], r[0], 0;
  M6 X = M6::Zero();
  X.topLeftCorner<3, 3>() = E.transpose();
  X.bottomRightCorner<3, 3>() = E.transpose();
  X.bottomLeftCorner<3, 3>() = -E.transpose() * rx;
  const Vec3 a = rnd3(), b = rnd3();
  check((Xi.E(a) - E * a).norm(), 1e-13, who + ": E");
  check((Xi.ET(a) - E.transpose() * a).norm(), 1e-13, who + ": ET");
  check((Xi.cross_r(a) - a.cross(r)).norm(), 1e-13, who + ": cross_r");
  check(std::abs(Xi.dot_r(a) - a.dot(r)), 1e-13, who + ": dot_r");
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
  // forces of several columns moved in place, component by component (F[k][c]): runs of 1, 2,
  // 3 columns and 4, 7 (odd and even counts, so one and two at a time); the columns outside the
  // run untouched; each moved column handed to the sink once, with the values stored
  constexpr int kCols = 7;
  const int runs[][2] = {{0, 1}, {2, 4}, {4, 7}, {1, 5}, {0, 7}};
  for (const auto& run : runs) {
    using F6 = Eigen::Matrix<double, 6, kCols, Eigen::RowMajor>;
    const F6 F0 = F6::Random();
    F6 F = F0;
    double* rows[6];
    for (int k = 0; k < 6; ++k) rows[k] = &F(k, 0);
    Eigen::Matrix<double, 6, kCols> sunk = Eigen::Matrix<double, 6, kCols>::Zero();
    std::vector<int> calls(kCols, 0);
    Xi.forces_to_parent(rows, run[0], run[1], Seen<kCols>{&sunk, &calls});
    for (int c = 0; c < kCols; ++c) {
      const bool in = c >= run[0] && c < run[1];
      const V6 want = in ? V6(X.transpose() * F0.col(c)) : V6(F0.col(c));
      const std::string col = who + ": forces_to_parent [" + std::to_string(run[0]) + ", " +
                              std::to_string(run[1]) + ") column " + std::to_string(c);
      check((V6(F.col(c)) - want).norm(), 1e-12, col);
      check(std::abs(calls[c] - (in ? 1 : 0)), 0, col + ": calls of the sink");
      if (in) check((V6(sunk.col(c)) - V6(F.col(c))).norm(), 0, col + ": the sink's values");
    }
  }
  // rotations of tensors
  const Mat3 B = Mat3::Random(), Bs = B + B.transpose();
  check((Xi.template rotate<false>(B) - E * B * E.transpose()).norm(), 1e-12, who + ": rotate");
  check((Xi.template rotate<true>(Bs) - E * Bs * E.transpose()).norm(), 1e-12,
        who + ": rotate sym");
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
  // the aba's add_transport: read from Ia's upper triangle (NaN below it), added to the upper
  // triangle of IAp, IAp's strict lower triangle untouched; kZ2 (a revolute joint without
  // armature) with row and column 2 of Ia zero
  for (const bool z2 : {false, true}) {
    if (z2 && !Xi.revolute()) continue;
    M6 Ia = G;
    if (z2) {
      Ia.row(2).setZero();
      Ia.col(2).setZero();
    }
    const M6 want = X.transpose() * Ia * X;
    for (int c = 0; c < 6; ++c)
      for (int rr = c + 1; rr < 6; ++rr) Ia(rr, c) = std::numeric_limits<double>::quiet_NaN();
    const M6 IAp0 = M6::Random();
    M6 IAp = IAp0;
    if (z2)
      Xi.template add_transport<true>(Ia, IAp);
    else
      Xi.template add_transport<false>(Ia, IAp);
    double err = 0;
    for (int c = 0; c < 6; ++c)
      for (int rr = 0; rr < 6; ++rr)
        err = std::max(err, std::abs(IAp(rr, c) - IAp0(rr, c) - (rr <= c ? want(rr, c) : 0.0)));
    check(err, 1e-11, who + (z2 ? ": add_transport<kZ2>" : ": add_transport"));
  }
}

// every body of m at `trials` random configurations, through both Xup constructors
static void check_model(const Model& m, int trials, const std::string& name) {
  Data d(m);
  std::vector<double> q(m.nq);
  for (int trial = 0; trial < trials; ++trial) {
    for (auto& x : q) x = 2 * u(g);
    if (m.floating) {
      Eigen::Vector4d quat(u(g), u(g), u(g), u(g));
      quat.normalize();
      for (int k = 0; k < 4; ++k) q[3 + k] = quat[k];
    }
    // level 1 first: r must already be right for every kind
    d.cache_level = 0;
    update_kinematics(m, d, q.data(), 1);
    std::vector<Vec3> r1(d.Xup_r.begin(), d.Xup_r.end());
    update_kinematics(m, d, q.data(), 3);
    for (int i = 1; i <= m.n; ++i) {
      const std::string who = name + " body " + std::to_string(i) + " kind " +
                              std::to_string(int(m.link[i]));
      // r at level 1 against the pose at level 3 (op_i = op_p + oR_p r)
      const int p = m.parent[i];
      check((r1[i] - d.world_R[p].transpose() * (d.world_p[i] - d.world_p[p])).norm(), 1e-12,
            who + ": d.Xup_r at cache level 1");
      check_xup(Xup<double>(m, d, i), m, d, i, who);
      with_link(m, i, [&](auto K) {
        check_xup(Xup<double>(m, d, i, K), m, d, i, who + " (with_link)");
      });
      // crba's dispatch: the case names the body's kind, relabelling and parent joint type
      with_step(m, i, [&](auto C) {
        constexpr int c = decltype(C)::value;
        constexpr LinkKind k = step_kind(c);
        const bool perm = k == LinkKind::RevPerm || k == LinkKind::PrisPerm;
        check(k == m.link[i] && step_relabel(c) == (perm ? int(m.Rc[i].relabel) : -1) &&
                      (p == 0 || step_parent(c) == m.type[p])
                  ? 0.0
                  : 1.0,
              0.5, who + ": with_step case " + std::to_string(c));
        check_xup(Xup<double, step_relabel(c)>(m, d, i, std::integral_constant<LinkKind, k>()),
                  m, d, i, who + " (with_step " + std::to_string(c) + ")");
      });
    }
  }
}

int main() {
  // a tree with every link kind
  {
    std::vector<BodySpec> bs{free_base()};
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
    check_model(m, 5, "kinds tree");
  }

  // The 24 signed permutations on every axis. One floating tree per axis a: the free-flyer,
  // then body 1 on a revolute joint about a (not counted: its parent's frame is the
  // free-flyer's), then 48 bodies, body k on a revolute (k even) or prismatic (k odd) joint
  // about a whose origin turns by the permutation P[k / 2], hung as a binary tree (parent
  // 1 + k / 2: branches, so runs of several columns). Each counted body's Rc is then
  // Ra' P Ra, Ra the model's frame taking z to a (the same for the body and its parent): all
  // 24 for each joint type. The offsets take the 8 zero patterns in turn.
  const std::vector<Mat3> P = proper_signed_permutations();
  if (P.size() != 24) {
    std::printf("FAIL %d signed permutations with det +1, not 24\n", int(P.size()));
    return 1;
  }
  for (int axis = 0; axis < 6; ++axis) {
    const Vec3 a = (axis % 2 ? -1.0 : 1.0) * Vec3::Unit(axis / 2);
    const std::string name = std::string(axis % 2 ? "-" : "+") + "xyz"[axis / 2] + " axis";
    std::vector<BodySpec> bs{free_base()};
    BodySpec first;
    first.parent = 0;
    first.axis = a;
    first.origin_p = 0.3 * rnd3();
    inertia(first);
    bs.push_back(first);
    for (int k = 0; k < 48; ++k) {
      BodySpec b;
      b.parent = 1 + k / 2;
      b.type = k % 2 ? JointType::Prismatic : JointType::Revolute;
      b.axis = a;
      b.origin_R = P[k / 2];
      const int zeros = (k / 2 + 3 * (k % 2)) % 8;  // bit c: component c of the offset is 0
      for (int c = 0; c < 3; ++c) b.origin_p[c] = (zeros >> c & 1) ? 0.0 : 0.2 + 0.3 * u(g);
      inertia(b);
      bs.push_back(b);
    }
    const Model m = build_model(bs, {}, Vec3(0, 0, -9.81));
    std::set<std::vector<double>> rc[2];  // the distinct Rc of each joint type
    for (int k = 0; k < 48; ++k) {
      const int i = 3 + k;  // the free-flyer is body 1, the first body 2
      const bool pris = k % 2 != 0;
      const LinkKind want = pris ? LinkKind::PrisPerm : LinkKind::RevPerm;
      if (m.link[i] != want || m.Rc[i].kind != ConstRotation::Permutation || m.qoff[i] != 0) {
        std::printf("FAIL %s body %d: kind %d, Rc class %d, qoff %g (want kind %d)\n",
                    name.c_str(), i, int(m.link[i]), int(m.Rc[i].kind), m.qoff[i], int(want));
        ++failures;
      }
      const Mat3& R = m.Rc[i].R;
      rc[pris].insert(std::vector<double>(R.data(), R.data() + 9));
    }
    if (rc[0].size() != 24 || rc[1].size() != 24) {
      std::printf("FAIL %s: %d revolute and %d prismatic constant rotations, not 24 each\n",
                  name.c_str(), int(rc[0].size()), int(rc[1].size()));
      ++failures;
    }
    check_model(m, 3, name);
  }
  if (failures) return 1;
  std::printf("ok\n");
  return 0;
}
