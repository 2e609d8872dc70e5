// The models under test: a random 7-DOF tree, a structured 7-DOF chain, a random tree on a
// free-flying base.
// Part of test_noalloc.cpp (one translation unit: these definitions are included once, by it).
#pragma once

#include "harness.hpp"

namespace {

using namespace robodyn;

Mat3 random_rotation(std::mt19937_64& g) {
  std::normal_distribution<double> N(0.0, 1.0);
  Eigen::Quaterniond x(N(g), N(g), N(g), N(g));
  x.normalize();
  return x.toRotationMatrix();
}

// R diag(J) R' with J from positive second moments (strict triangle inequality)
Mat3 random_inertia(double mass, std::mt19937_64& g, bool principal) {
  std::uniform_real_distribution<double> U(0.002, 0.03);
  const double s0 = mass * U(g), s1 = mass * U(g), s2 = mass * U(g);
  const Mat3 J = Vec3(s1 + s2, s0 + s2, s0 + s1).asDiagonal();
  if (principal) return J;
  const Mat3 R = random_rotation(g);
  const Mat3 I = R * J * R.transpose();
  return 0.5 * (I + I.transpose());
}

// a random 7-DOF tree (at least one branch), random axes and origins, joint terms, 2 frames
Model random_tree_model(unsigned seed) {
  std::mt19937_64 g(seed);
  std::normal_distribution<double> N(0.0, 1.0);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  const int n = 7;
  std::vector<int> parent(n);
  for (bool branched = false; !branched;) {
    std::vector<int> children(n + 1, 0);
    for (int i = 0; i < n; ++i) {
      parent[i] = static_cast<int>(std::floor(U(g) * (i + 1))) - 1;  // uniform in [-1, i-1]
      ++children[parent[i] + 1];
    }
    for (int c : children) branched = branched || c > 1;
  }
  std::vector<BodySpec> bodies(n);
  for (int i = 0; i < n; ++i) {
    BodySpec& b = bodies[i];
    b.parent = parent[i];
    b.type = (i == 2 || (i != 0 && U(g) < 0.3)) ? JointType::Prismatic : JointType::Revolute;
    b.axis = Vec3(N(g), N(g), N(g)).normalized();
    b.origin_R = random_rotation(g);
    b.origin_p = 0.3 * Vec3(N(g), N(g), N(g));
    b.mass = 0.5 + 4.5 * U(g);
    b.com = 0.1 * Vec3(N(g), N(g), N(g));
    b.inertia = random_inertia(b.mass, g, false);
    b.armature = 0.01 + 0.09 * U(g);
    b.damping = 0.01 + 0.5 * U(g);
    b.friction = 0.01 + 0.5 * U(g);
    b.name = "link" + std::to_string(i + 1);
    b.joint_name = "joint" + std::to_string(i + 1);
  }
  std::vector<FrameSpec> frames(2);
  for (int f = 0; f < 2; ++f) {
    frames[f].parent = f == 0 ? -1 : n - 1;
    frames[f].R = random_rotation(g);
    frames[f].p = 0.2 * Vec3(N(g), N(g), N(g));
    frames[f].name = "frame" + std::to_string(f + 1);
  }
  return build_model(bodies, frames, Vec3(0.0, 0.0, -9.81));
}

// a 7-DOF chain on coordinate axes with signed-permutation origins and principal inertias
Model structured_chain_model(unsigned seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  const int n = 7;
  Mat3 Rx90;  // rotation by +90 degrees about x: a signed permutation
  Rx90 << 1, 0, 0, 0, 0, -1, 0, 1, 0;
  const Vec3 axes[3] = {Vec3::UnitZ(), Vec3::UnitX(), -Vec3::UnitY()};
  std::vector<BodySpec> bodies(n);
  for (int i = 0; i < n; ++i) {
    BodySpec& b = bodies[i];
    b.parent = i - 1;
    b.type = i == 4 ? JointType::Prismatic : JointType::Revolute;
    b.axis = axes[i % 3];
    b.origin_R = i % 2 ? Rx90 : Mat3::Identity();
    b.origin_p = Vec3(0.0, i % 2 ? 0.0 : 0.1 + 0.2 * U(g), 0.3 * U(g));
    b.mass = 0.5 + 4.5 * U(g);
    b.com = Vec3(0.0, 0.0, 0.05 + 0.1 * U(g));
    b.inertia = random_inertia(b.mass, g, true);
    b.armature = i % 2 ? 0.0 : 0.05;
    b.name = "link" + std::to_string(i + 1);
    b.joint_name = "joint" + std::to_string(i + 1);
  }
  return build_model(bodies, {}, Vec3(0.0, 0.0, -9.81));
}

// a random 7-joint tree on a free-flying base (body 0 of the spec)
Model floating_tree_model(unsigned seed) {
  std::mt19937_64 g(seed);
  std::normal_distribution<double> N(0.0, 1.0);
  std::vector<BodySpec> bodies;
  BodySpec base;
  base.type = JointType::FreeFlyer;
  base.mass = 6.0;
  base.com = 0.05 * Vec3(N(g), N(g), N(g));
  base.inertia = random_inertia(base.mass, g, false);
  base.name = "base";
  base.joint_name = "root_joint";
  bodies.push_back(base);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  for (int i = 0; i < 7; ++i) {
    BodySpec b;
    b.parent = static_cast<int>(std::floor(U(g) * (i + 1)));  // uniform in [0, i]: on the base
    b.type = U(g) < 0.3 ? JointType::Prismatic : JointType::Revolute;
    b.axis = Vec3(N(g), N(g), N(g)).normalized();
    b.origin_R = random_rotation(g);
    b.origin_p = 0.3 * Vec3(N(g), N(g), N(g));
    b.mass = 0.5 + 4.5 * U(g);
    b.com = 0.1 * Vec3(N(g), N(g), N(g));
    b.inertia = random_inertia(b.mass, g, false);
    b.armature = 0.05;
    b.damping = 0.1;
    b.friction = 0.2;
    b.name = "link" + std::to_string(i + 1);
    b.joint_name = "joint" + std::to_string(i + 1);
    bodies.push_back(b);
  }
  std::vector<FrameSpec> frames(1);
  frames[0].parent = 3;
  frames[0].p = Vec3(0.1, 0.0, 0.2);
  frames[0].name = "tool";
  return build_model(bodies, frames, Vec3(0.0, 0.0, -9.81));
}

}  // namespace
