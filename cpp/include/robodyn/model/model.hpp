// The immutable robot model: a kinematic tree of rigid bodies joined by joints.
//
// Body 0 is the world (the fixed base); bodies 1..n each carry one joint, and parent[i] < i.
// Joints are revolute or prismatic (1 DOF) or, for body 1 only, a free-flyer (6 DOF: the
// free-floating base). Body i's coordinates are q[iq[i] ..] and v[iv[i] ..]; a free-flyer has
// 7 configuration coordinates (position in the parent frame, unit quaternion x, y, z, w) and
// 6 velocity coordinates (angular velocity, then the velocity of the body origin, both in body
// axes), so nq = nv + 1 with a free base and nq = nv = n otherwise. Every body has
// an internal frame whose z axis is its joint axis (the user's link frame is re-expressed at
// build time), so the joint-dependent part of each parent-to-body transform is a rotation
// about z (revolute) or a translation along z (prismatic):
//
//   pose of body i in its parent = (Rc[i], pc[i]) * Rz(q_i + qoff[i])  (revolute)
//                                = (Rc[i], pc[i]) * Tz(q_i)     (prismatic)
//                                = (Rc[i], pc[i]) * (R(quat), p)  (free-flyer; its internal
//                                  frame is the user's link frame)
//
// Inertias are stored about the internal body origin as (mass, h = mass * com, Ibar).
#pragma once

#include <Eigen/Core>
#include <array>
#include <cstddef>
#include <string>
#include <vector>

namespace robodyn {

using Vec3 = Eigen::Vector3d;
using Mat3 = Eigen::Matrix3d;

enum class JointType : unsigned char { Revolute = 0, Prismatic = 1, FreeFlyer = 2 };

// velocity coordinates of a joint (a free-flyer's configuration has one more)
constexpr int joint_nv(JointType t) { return t == JointType::FreeFlyer ? 6 : 1; }

// One body as given by a front end (URDF, DH): user frames, any unit axis.
struct BodySpec {
  int parent = -1;               // index of the parent body in the spec list, -1 = base
  JointType type = JointType::Revolute;  // FreeFlyer: only the first body, on the base
  Vec3 axis = Vec3::UnitZ();     // joint axis in the body's user frame (normalised at build;
                                 // unused by a free-flyer)
  Mat3 origin_R = Mat3::Identity();  // pose of the body frame in the parent frame at q = 0
  Vec3 origin_p = Vec3::Zero();
  double mass = 0;
  Vec3 com = Vec3::Zero();       // centre of mass in the body frame (m)
  Mat3 inertia = Mat3::Zero();   // rotational inertia about the COM, body frame (kg m^2)
  double armature = 0, damping = 0, friction = 0;
  double lower = -1e300, upper = 1e300, velocity = 1e300, effort = 1e300;
  std::string name, joint_name;
};

// A frame fixed to a body (parent index into the spec list, -1 = base).
struct FrameSpec {
  int parent = -1;
  Mat3 R = Mat3::Identity();
  Vec3 p = Vec3::Zero();
  std::string name;
};

// How body i's parent-to-body transform is applied (link.hpp's Xup), chosen once in build_model
// from the joint kind, the class of the constant rotation Rc and the zeros of pc:
//   Rev*   revolute: E = Rc Rz(q + qoff), r = pc (constant, its zeros skipped)
//   Pris*  prismatic: E = Rc, r = pc + Rc (0, 0, q) (cached in Data at level 1)
//   *Perm  Rc a signed permutation (free), *RotX Rc a rotation about x (3 mul), *General
//   RevDH  revolute with Rc a rotation about x and pc = (a, 0, d), a, d != 0 (a DH link)
//   FreeFlyer  E and r the cached full rotation and translation of the free-flyer
enum class LinkKind : unsigned char {
  RevPerm, RevRotX, RevDH, RevGeneral, PrisPerm, PrisRotX, PrisGeneral, FreeFlyer
};

// A body's case in the one dispatch per body of crba's sweep (link.hpp's with_step, built into
// Model::step): its variant v (the link kind, and for RevPerm and PrisPerm which of the six
// relabellings of ConstRotation::relabel: 18 variants) and its parent's joint type t (of a
// body on the world: Revolute, unused), numbered 3 v + t
constexpr int kStepCases = 54;
// the link kinds of variants 12..17 (0..5 RevPerm, 6..11 PrisPerm by relabelling)
constexpr LinkKind kStepOtherKinds[6] = {LinkKind::RevRotX,  LinkKind::RevDH,
                                         LinkKind::RevGeneral, LinkKind::PrisRotX,
                                         LinkKind::PrisGeneral, LinkKind::FreeFlyer};
constexpr LinkKind step_kind(int c) {
  const int v = c / 3;
  return v < 6 ? LinkKind::RevPerm : v < 12 ? LinkKind::PrisPerm : kStepOtherKinds[v - 12];
}
constexpr int step_relabel(int c) { return c / 3 < 12 ? (c / 3) % 6 : -1; }  // -1: not *Perm
constexpr JointType step_parent(int c) { return static_cast<JointType>(c % 3); }
inline unsigned char step_case(LinkKind k, int relabel, JointType parent) {
  int v = k == LinkKind::RevPerm ? relabel : 6 + relabel;  // (the *Perm kinds)
  for (int o = 0; o < 6; ++o)
    if (kStepOtherKinds[o] == k) v = 12 + o;
  return static_cast<unsigned char>(3 * v + int(parent));
}

// A constant rotation, classified once at build so hot loops can skip its zeros and ones.
struct ConstRotation {
  enum Kind : unsigned char { Permutation, RotX, General };
  Mat3 R = Mat3::Identity();
  Kind kind = Permutation;           // signed permutation (free), rotation about x, general
  double cx = 1, sx = 0;             // RotX: R = Rx(angle), cos and sin of the angle
  double s2x = 0, csx = 0;           // RotX: sin^2 and sin cos of the angle
  double cpsx = 1, cmsx = 1;         // RotX: cos + sin and cos - sin (3-multiply plane rotation)
  double s2x2 = 0, csx2 = 0;         // RotX: 2 sin^2 and 2 sin cos
  std::array<int, 3> perm{{0, 1, 2}};  // (R^T x)_k = sign[k] * x[perm[k]]
  std::array<int, 3> iperm{{0, 1, 2}};  // (R x)_k = isign[k] * x[iperm[k]]
  std::array<bool, 3> neg{{false, false, false}};
  std::array<bool, 3> ineg{{false, false, false}};
  unsigned char relabel = 0;           // perm's number 2 perm[0] + (perm[1] > perm[2]), 0..5
};

// Kane's method's constants (kane.hpp), built once with the model: each body's mass centre and
// central inertia, in its internal frame. Entry 0 unused.
struct KaneConstants {
  std::vector<Vec3> c;                     // mass centre c_k = h / mass (m); components below
                                           // 1e-15 m are zero
  std::vector<std::array<bool, 3>> c_nz;   // which components of c are non-zero
  std::vector<Mat3> I;                     // central inertia I_k = Ibar - mass (c.c 1 - c c^T)
  std::vector<char> principal;             // 1: I is diagonal (principal body axes)
};

struct Model {
  int n = 0;                          // number of moving bodies (= joints)
  int nq = 0, nv = 0;                 // configuration and velocity sizes (n, n without a
                                      // free-flyer; n + 6, n + 5 with one)
  bool floating = false;              // body 1 is on a free-flyer joint
  std::vector<int> parent;            // size n+1, parent[0] = -1, parent[i] < i
  std::vector<JointType> type;        // size n+1 (entry 0 unused)
  std::vector<int> iq, iv;            // size n+1: first index of body i's joint in q and in v
  std::vector<ConstRotation> Rc;      // constant part of parent-to-body rotation
  std::vector<LinkKind> link;         // size n+1: how Xup applies body i's transform (entry 0
                                      // unused)
  std::vector<unsigned char> step;    // size n+1: body i's case in crba's one dispatch per body
                                      // (link.hpp's with_step: link kind, relabelling, parent's
                                      // joint type; entry 0 unused)
  std::vector<int> angle_src;         // size n+2: where update_kinematics reads body i's angle
                                      // in Data::q_key: iq[i] for a revolute joint, else nq
                                      // (q_key's last entry, always 0: sin 0, cos 1); entry n+1
                                      // (the padding of the angles to pairs) nq too
  std::vector<int> angle_offset;      // the revolute bodies with qoff != 0
  std::vector<int> nonrevolute;       // the prismatic and free-flyer bodies (level 1's other
                                      // work: translations, a free-flyer's transform)
  std::vector<double> qoff;           // revolute: E = Rc Rz(q + qoff) (a rotation about z taken
                                      // out of Rc at build; 0 for most joints)
  std::vector<Vec3> pc;               // parent-to-body translation, parent internal frame
  std::vector<std::array<bool, 3>> pc_nz;  // which components of pc are non-zero
  std::vector<int> subtree_begin;     // size n+2: the columns of v moved by body i's subtree
  std::vector<std::array<int, 2>> subtree_runs;  // (i and its descendants) are the runs
                                      // [lo, hi) subtree_runs[subtree_begin[i] ..
                                      // subtree_begin[i+1]) (one run in depth-first order)
  std::vector<int> vparent;           // size nv: the parent velocity coordinate of each (the
                                      // previous one inside a free-flyer, else the last one of
                                      // the parent body's joint; -1 on the world): M's tree
                                      // sparsity (TreeFactorPattern)
  std::vector<double> mass;           // kg
  std::vector<Vec3> h;                // mass * com, internal frame (kg m)
  std::vector<std::array<bool, 3>> h_nz;   // which components of h are non-zero
  std::vector<Mat3> Ibar;             // rotational inertia about the internal origin
  std::vector<std::array<bool, 6>> I_nz;   // non-zero entries of Ibar: xx yy zz xy xz yz
  std::vector<Mat3> J;                // second moment of mass about the origin, tr(Ibar)/2 - Ibar
  std::vector<std::array<bool, 6>> J_nz;   // non-zero entries of J: xx yy zz xy xz yz
  std::vector<double> armature, damping, friction;
  std::vector<double> lower, upper, velocity, effort;
  Vec3 gravity{0, 0, -9.81};          // in the base frame (change it with set_gravity)

  KaneConstants kane;                 // Kane's method's per-body constants

  // user-visible frames: first the n bodies' own frames, then the extra fixed frames
  std::vector<int> frame_body;        // body the frame is fixed to (0 = base)
  std::vector<Mat3> frame_R;          // pose in the body's internal frame
  std::vector<Vec3> frame_p;

  std::vector<std::string> joint_names, link_names;  // n joints; n + extra frames links

};

// M's tree sparsity as the packed rows of its factor M = L' L (algorithms/factorization.hpp):
// L(k, j) != 0 only for j = k or an ancestor coordinate j of k (Model::vparent's chain), so row
// k holds L(k, j) for k's ancestors j, increasing, then L(k, k): entries row_start[k] ..
// row_start[k + 1] of the packed L. The ancestors of an ancestor i of k are the ancestors of k
// before i, so row i is the first entries of row k up to i. The size of L: a Data makes it
// only when an algorithm factorises M (DataTpl::size_factor), with L.
struct TreeFactorPattern {
  std::vector<int> row_start;        // size nv+1
  std::vector<std::ptrdiff_t> h_at;  // per entry of L, (k, j): where M(k, j) is in the
                                     // column-major nv x nv H, j nv + k
  std::vector<int> col_row;          // per entry of L, (k, j): row_start[j], where j's row
                                     // starts
  std::vector<int> run_start, runs;  // k's ancestors as runs of consecutive coordinates, the
                                     // nearest first: triples (lo, hi, o) at runs[3 run_start[k]
                                     // .. 3 run_start[k + 1]); o + j is j's entry in the packed
                                     // row of any coordinate with j as an ancestor
  int size() const { return row_start.empty() ? 0 : row_start.back(); }  // entries of L
};

// The pattern of m's mass matrix factor; time and memory O(entries of L).
TreeFactorPattern tree_factor_pattern(const Model& m);

// Validates the bodies and frames and builds the model. Throws std::invalid_argument with a
// message naming the body and the reason (non-finite numbers, negative mass, non-physical
// inertia, bad parent order, zero axis, non-orthonormal origin, singular mass matrix).
// check_inertia = false accepts non-physical inertias as given (published models such as the
// Stanford arm's link 5, or a URDF the front end loaded with a warning); the singular mass
// matrix test still runs unless check_singular = false (a joint that moves no mass: inverse
// dynamics and kinematics work, forward dynamics fails at call time). A velocity or effort
// limit of 0 means "not given" (stored as inf).
Model build_model(const std::vector<BodySpec>& bodies, const std::vector<FrameSpec>& frames,
                  const Vec3& gravity, bool check_inertia = true, bool check_singular = true);

// The one inertia tolerance (robodyn.urdf uses the same numbers): a principal moment may be
// below 0, and I1 + I2 below I3, by max(kInertiaRtol * largest |moment|, kInertiaAtol).
constexpr double kInertiaRtol = 1e-9;
constexpr double kInertiaAtol = 1e-12;  // kg m^2

// J = tr(Ibar)/2 1 - Ibar: the second moment of mass sum r r^T dm about the origin (Model::J)
inline Mat3 second_moment(const Mat3& Ibar) {
  return 0.5 * Ibar.trace() * Mat3::Identity() - Ibar;
}

// Kane's per-body constants (Model::kane) derived from mass, h and Ibar: build_model calls it,
// and code generation again for its copy of the model with rounding residue cleaned.
KaneConstants kane_constants(const Model& m);

// Checks a gravity vector (finite) and returns it; throws std::invalid_argument otherwise.
Vec3 checked_gravity(const Vec3& g);

// Sets the gravity of a model being built (or a copy) and the quantities derived from it; the
// model is unchanged when it throws (std::invalid_argument: non-finite, or overflowing in a
// body frame). A shared model is never changed: the bindings build a new one.
void set_gravity(Model& m, const Vec3& g);

}  // namespace robodyn
