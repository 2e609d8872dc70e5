// Model building and validation.
#include "robodyn/model/model.hpp"

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "robodyn/algorithms/aba.hpp"
#include "robodyn/algorithms/momentum.hpp"
#include "robodyn/model/data.hpp"

namespace robodyn {

namespace {

[[noreturn]] void fail(const std::string& who, const std::string& why) {
  throw std::invalid_argument(who + ": " + why);
}

std::string body_label(const BodySpec& b, int i) {
  std::ostringstream s;
  s << "body " << i;
  if (!b.name.empty()) s << " ('" << b.name << "'";
  if (!b.joint_name.empty())
    s << (b.name.empty() ? " (" : ", ") << "joint '" << b.joint_name << "'";
  if (!b.name.empty() || !b.joint_name.empty()) s << ")";
  return s.str();
}

bool finite(const Eigen::MatrixXd& x) { return x.allFinite(); }

// Snapping of constant rotations, so that a rotation that is a signed permutation or a
// rotation about x up to rounding is classified as one (cheap in every algorithm):
// - entries within 1e-15 of 0 or +-1 (rounding noise of products and of cos(pi/2)) are made
//   exact; the matrix stays orthonormal to ~1e-15;
// - a matrix within kSnap of a signed permutation (every entry) becomes that permutation, and
//   one within kSnap of a rotation about x gets its first row and column exact.
// A change of at most kSnap = 1e-12 rad per link keeps every result within 1e-10 relative of
// the unsnapped model (tests/test_urdf_policy.py measures 12-link chains); pi/2 written to 13
// digits (1.570796326795) snaps, one written as 1.57079632679 (4.9e-12 off) or 1.5708 is kept
// as written. (Snapping single entries at 1e-10, as before, changed results by 4e-9.)
constexpr double kSnap = 1e-12;

Mat3 snap(const Mat3& R) {
  Mat3 S = R;
  bool permutation = true;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      const double x = S(i, j);
      if (std::abs(x) < 1e-15) S(i, j) = 0;
      if (std::abs(x - 1) < 1e-15) S(i, j) = 1;
      if (std::abs(x + 1) < 1e-15) S(i, j) = -1;
      const double r = std::round(x);
      permutation = permutation && std::abs(r) <= 1 && std::abs(x - r) <= kSnap;
    }
  if (permutation) return R.array().round().matrix();
  if (std::abs(S(0, 0) - 1) <= kSnap && std::abs(S(0, 1)) <= kSnap &&
      std::abs(S(0, 2)) <= kSnap && std::abs(S(1, 0)) <= kSnap && std::abs(S(2, 0)) <= kSnap) {
    S(0, 0) = 1;
    S(0, 1) = S(0, 2) = S(1, 0) = S(2, 0) = 0;
  }
  return S;
}

ConstRotation classify(const Mat3& R) {
  ConstRotation c;
  c.R = snap(R);
  c.kind = ConstRotation::Permutation;
  for (int k = 0; k < 3; ++k) {
    int found = -1;
    for (int j = 0; j < 3; ++j) {
      const double x = c.R(j, k);
      if (x == 0) continue;
      if ((x == 1 || x == -1) && found < 0) {
        found = j;
      } else {
        found = -2;
        break;
      }
    }
    if (found < 0) {
      c.kind = ConstRotation::General;
      break;
    }
    // column k of R is sign * e_found: (R^T x)_k = sign * x[found], (R x)_found = sign * x[k]
    c.perm[k] = found;
    c.neg[k] = c.R(found, k) < 0;
    c.iperm[found] = k;
    c.ineg[found] = c.neg[k];
  }
  if (c.kind == ConstRotation::Permutation)
    c.relabel = static_cast<unsigned char>(2 * c.perm[0] + (c.perm[1] > c.perm[2] ? 1 : 0));
  if (c.kind == ConstRotation::General && c.R(0, 0) == 1 && c.R(0, 1) == 0 && c.R(0, 2) == 0 &&
      c.R(1, 0) == 0 && c.R(2, 0) == 0) {
    c.kind = ConstRotation::RotX;
    c.cx = c.R(1, 1);
    c.sx = c.R(2, 1);
    c.s2x = c.sx * c.sx;
    c.csx = c.cx * c.sx;
    c.cpsx = c.cx + c.sx;
    c.s2x2 = 2 * c.s2x;
    c.csx2 = 2 * c.csx;
    c.cmsx = c.cx - c.sx;
  }
  return c;
}

// a unit axis with components below 1e-15 made 0 (a tilt below 1e-15 rad: results change by
// rounding only), renormalised; a component is +-1 only when the others are 0, so a tilt of
// 1e-8..1e-15 rad (a float32 cos(pi/2) in a file) keeps its effect
Vec3 unit_axis(Vec3 a) {
  for (int c = 0; c < 3; ++c)
    if (std::abs(a[c]) < 1e-15) a[c] = 0;
  a /= a.norm();
  for (int c = 0; c < 3; ++c)
    if (a[(c + 1) % 3] == 0 && a[(c + 2) % 3] == 0) a[c] = a[c] > 0 ? 1 : -1;
  return a;
}

// a rotation whose third column is the unit vector a (exact for the coordinate axes)

Mat3 axis_frame(const Vec3& a) {
  for (int k = 0; k < 3; ++k) {
    // a coordinate axis only if the other components are 0 (a[k] rounds to +-1 for tilts
    // below 1e-8 rad; the tilt is in the other components)
    if ((a[k] == 1.0 || a[k] == -1.0) && a[(k + 1) % 3] == 0 && a[(k + 2) % 3] == 0) {
      const double s = a[k];
      Mat3 R = Mat3::Zero();
      // columns: e_{k+1}, s e_{k+2}, s e_k  (a right-handed signed permutation)
      R((k + 1) % 3, 0) = 1;
      R((k + 2) % 3, 1) = s;
      R(k, 2) = s;
      return R;
    }
  }
  // Rodrigues rotation taking z to a
  const Vec3 z = Vec3::UnitZ();
  const Vec3 v = z.cross(a);
  const double c = z.dot(a);
  const double s = v.norm();
  if (s < 1e-15) return c > 0 ? Mat3::Identity() : Mat3(Eigen::Vector3d(1, -1, -1).asDiagonal());
  const Vec3 k = v / s;
  Mat3 K;
  K << 0, -k[2], k[1], k[2], 0, -k[0], -k[1], k[0], 0;
  return Mat3::Identity() + s * K + (1 - c) * K * K;
}

void check_inertia(const std::string& who, double mass, const Mat3& I, bool physical) {
  if (!(mass >= 0)) fail(who, "mass must be >= 0 (got " + std::to_string(mass) + ")");
  const double scale = std::max(1.0, I.cwiseAbs().maxCoeff());
  if ((I - I.transpose()).cwiseAbs().maxCoeff() > 1e-9 * scale)
    fail(who, "inertia tensor is not symmetric");
  if (!physical) return;
  Eigen::SelfAdjointEigenSolver<Mat3> es(0.5 * (I + I.transpose()), Eigen::EigenvaluesOnly);
  const Vec3 l = es.eigenvalues();
  const double tol = std::max(kInertiaRtol * l.cwiseAbs().maxCoeff(), kInertiaAtol);
  if (l.minCoeff() < -tol) {
    std::ostringstream s;
    s << "inertia tensor is not positive semidefinite (principal moments " << l.transpose()
      << "; pass check_inertia=False to accept it as given)";
    fail(who, s.str());
  }
  if (l[0] + l[1] < l[2] - tol) {
    std::ostringstream s;
    s << "principal moments " << l.transpose()
      << " violate the triangle inequality (non-physical; pass check_inertia=False to accept a "
         "published model as it is)";
    fail(who, s.str());
  }
}

}  // namespace

Vec3 checked_gravity(const Vec3& g) {
  if (!g.allFinite()) throw std::invalid_argument("gravity: must be 3 finite numbers");
  return g;
}

void set_gravity(Model& m, const Vec3& g) {
  const Vec3 grav = checked_gravity(g);
  // the gravity seen by each body on the base must be finite too
  for (int i = 1; i <= m.n; ++i)
    if (m.parent[i] == 0 && !(m.Rc[i].R.transpose() * grav).allFinite())
      throw std::invalid_argument("gravity: too large (overflows when rotated into the frame "
                                  "of body " + std::to_string(i - 1) + ")");
  m.gravity = grav;
}

namespace {

// every constant derived for body i (and the frames) finite, else the build is refused with
// the link named: numbers that pass one by one (an inertial origin of 1e160) can overflow in
// products (m c.c = inf)
void check_derived(const Model& m, const std::vector<BodySpec>& bodies,
                   const std::vector<FrameSpec>& frames) {
  for (int i = 1; i <= m.n; ++i) {
    const bool ok = m.Rc[i].R.allFinite() && m.pc[i].allFinite() && m.h[i].allFinite() &&
                    m.Ibar[i].allFinite() && m.J[i].allFinite() &&
                    std::isfinite(m.qoff[i]) &&
                    std::isfinite(m.pc[i].squaredNorm());
    if (!ok)
      fail(body_label(bodies[i - 1], i - 1),
           "the model constants derived from its origin, centre of mass and inertia overflow "
           "(numbers too large)");
  }
  for (size_t f = 0; f < m.frame_body.size(); ++f)
    if (!m.frame_R[f].allFinite() || !m.frame_p[f].allFinite()) {
      const size_t nb = bodies.size();
      fail(f < nb ? body_label(bodies[f], static_cast<int>(f))
                  : "frame " + std::to_string(f - nb) + " ('" + frames[f - nb].name + "')",
           "its pose overflows when re-expressed (numbers too large)");
    }
}

}  // namespace

// the link kind of a body (model.hpp's LinkKind): how Xup applies its transform
static LinkKind link_kind(JointType t, ConstRotation::Kind rc, const std::array<bool, 3>& pc_nz) {
  if (t == JointType::FreeFlyer) return LinkKind::FreeFlyer;
  if (t == JointType::Prismatic)
    return rc == ConstRotation::Permutation ? LinkKind::PrisPerm
           : rc == ConstRotation::RotX      ? LinkKind::PrisRotX
                                            : LinkKind::PrisGeneral;
  if (rc == ConstRotation::Permutation) return LinkKind::RevPerm;
  if (rc == ConstRotation::General) return LinkKind::RevGeneral;
  return pc_nz[0] && !pc_nz[1] && pc_nz[2] ? LinkKind::RevDH : LinkKind::RevRotX;
}

// Kane's method's constants (model.hpp's KaneConstants) from (mass, h = mass c, Ibar about the
// origin): c = h / mass, I = Ibar - mass (c.c 1 - c c^T); components of c below 1e-15 m and
// products of inertia below 1e-14 of the largest moment count as zero (as for pc)
KaneConstants kane_constants(const Model& m) {
  KaneConstants K;
  K.c.assign(m.n + 1, Vec3::Zero());
  K.c_nz.assign(m.n + 1, {{false, false, false}});
  K.I.assign(m.n + 1, Mat3::Zero());
  K.principal.assign(m.n + 1, 1);
  for (int k = 1; k <= m.n; ++k) {
    const double mk = m.mass[k];
    Vec3 c = mk > 0 ? Vec3(m.h[k] / mk) : Vec3::Zero();
    for (int j = 0; j < 3; ++j)
      if (std::abs(c[j]) < 1e-15) c[j] = 0;
    Mat3 I = m.Ibar[k] - mk * (c.dot(c) * Mat3::Identity() - c * c.transpose());
    I = 0.5 * (I + I.transpose());
    const double tol = 1e-14 * I.diagonal().cwiseAbs().maxCoeff();
    const bool principal =
        std::abs(I(0, 1)) <= tol && std::abs(I(0, 2)) <= tol && std::abs(I(1, 2)) <= tol;
    if (principal) I = Mat3(I.diagonal().asDiagonal());
    K.c[k] = c;
    for (int j = 0; j < 3; ++j) K.c_nz[k][j] = c[j] != 0;
    K.I[k] = I;
    K.principal[k] = principal ? 1 : 0;
  }
  return K;
}

Model build_model(const std::vector<BodySpec>& bodies, const std::vector<FrameSpec>& frames,
                  const Vec3& gravity, bool check_inertia_flag, bool check_singular) {
  const int n = static_cast<int>(bodies.size());
  if (n < 1) throw std::invalid_argument("model: needs at least one moving joint");
  Model m;
  m.n = n;
  m.gravity = checked_gravity(gravity);
  m.parent.assign(n + 1, -1);
  m.type.assign(n + 1, JointType::Revolute);
  m.iq.assign(n + 1, 0);
  m.iv.assign(n + 1, 0);
  m.floating = bodies[0].type == JointType::FreeFlyer;
  m.Rc.assign(n + 1, ConstRotation());
  m.pc.assign(n + 1, Vec3::Zero());
  m.pc_nz.assign(n + 1, {{false, false, false}});
  m.mass.assign(n + 1, 0);
  m.h.assign(n + 1, Vec3::Zero());
  m.h_nz.assign(n + 1, {{false, false, false}});
  m.Ibar.assign(n + 1, Mat3::Zero());
  m.I_nz.assign(n + 1, {{false, false, false, false, false, false}});
  m.J.assign(n + 1, Mat3::Zero());
  m.J_nz.assign(n + 1, {{false, false, false, false, false, false}});
  m.armature.assign(n + 1, 0);
  m.damping.assign(n + 1, 0);
  m.friction.assign(n + 1, 0);
  m.lower.assign(n + 1, 0);
  m.upper.assign(n + 1, 0);
  m.velocity.assign(n + 1, 0);
  m.effort.assign(n + 1, 0);
  m.qoff.assign(n + 1, 0);
  std::vector<Mat3> Ra(n + 1, Mat3::Identity());  // user frame -> internal frame rotation

  // Internal frames, DH-like: each body p may turn its frame about its own axis by psi_p so
  // that its first child's axis has no x component (parallel axes: so that the offset to the
  // child has no y component), and a revolute child whose axis is not near-parallel slides its
  // origin along its axis by delta_j so that the offset to it has no y component. A model that
  // is already in that form (a DH table) is left as it is. Then every such link is
  // Rx(alpha) Rz(q + offset) with an offset (a, 0, d): cheap in every algorithm.
  std::vector<Vec3> ax(n + 1, Vec3::UnitZ());  // unit joint axis, user frame
  std::vector<double> psi(n + 1, 0), slide(n + 1, 0);
  {
    std::vector<int> first_child(n + 1, -1);
    for (int k = 0; k < n; ++k) {
      const BodySpec& b = bodies[k];
      const double an = b.axis.norm();
      // a free-flyer keeps the user's link frame (its axis is unused)
      if (b.type != JointType::FreeFlyer && std::isfinite(an) && an >= 1e-12)
        ax[k + 1] = unit_axis(b.axis / an);
      Ra[k + 1] = axis_frame(ax[k + 1]);
      const int p = b.parent + 1;
      if (p >= 1 && p <= k && first_child[p] < 0) first_child[p] = k + 1;
    }
    std::vector<int> children(n + 1, 0);
    for (int k = 0; k < n; ++k) {
      const int p = bodies[k].parent + 1;
      if (p >= 1 && p <= k) ++children[p];
    }
    for (int p = 1; p <= n; ++p) {
      const int j = first_child[p];
      // a body with one child, on a revolute joint (its own link takes the turn back as a
      // joint angle offset; a sibling or a sliding joint could not)
      if (j < 0 || children[p] != 1 || bodies[p - 1].type != JointType::Revolute) continue;
      const BodySpec& bj = bodies[j - 1];
      if (!bj.origin_R.allFinite() || !bj.origin_p.allFinite()) continue;
      // only links whose constant rotation is not already free (a signed permutation): turning
      // or sliding a frame can fill in zeros of its inertia and offsets
      if (classify(Ra[p].transpose() * bj.origin_R * Ra[j]).kind == ConstRotation::Permutation)
        continue;
      const Vec3 v = Ra[p].transpose() * (bj.origin_R * ax[j]);  // child axis, frame p
      const Vec3 o = Ra[p].transpose() * bj.origin_p;              // child origin, frame p
      const double rho = std::hypot(v[0], v[1]);
      if (rho > 1e-6) {
        if (std::abs(v[0]) > 1e-12) psi[p] = std::atan2(-v[0], v[1]);
      } else if (std::abs(o[1]) > 1e-12) {
        psi[p] = std::atan2(o[1], o[0]);
      }
      if (bj.type == JointType::Revolute && rho >= 0.1) {
        // y components in p's turned frame; |slide| <= 10 |offset|
        const double cp = std::cos(psi[p]), sp = std::sin(psi[p]);
        const double y = cp * o[1] - sp * o[0], vy = cp * v[1] - sp * v[0];
        if (std::abs(y) > 1e-12) slide[j] = -y / vy;
      }
    }
    for (int i = 1; i <= n; ++i)
      if (psi[i] != 0) {
        const double c = std::cos(psi[i]), s = std::sin(psi[i]);
        Mat3 Rz;
        Rz << c, -s, 0, s, c, 0, 0, 0, 1;
        Ra[i] = snap(Ra[i] * snap(Rz));
      }
  }

  for (int k = 0; k < n; ++k) {
    const BodySpec& b = bodies[k];
    const int i = k + 1;
    const std::string who = body_label(b, k);
    if (b.parent < -1 || b.parent >= k)
      fail(who, "parent index must be in [-1, " + std::to_string(k - 1) + "], got " +
                    std::to_string(b.parent));
    const bool free = b.type == JointType::FreeFlyer;
    if (free && (k != 0 || b.parent != -1))
      fail(who, "a floating (free-flyer) joint must join the first body to the base");
    if (!b.axis.allFinite() || !b.origin_R.allFinite() || !b.origin_p.allFinite() ||
        !b.com.allFinite() || !b.inertia.allFinite() || !std::isfinite(b.mass))
      fail(who, "geometry and inertia must be finite numbers");
    const double an = b.axis.norm();
    if (!free && an < 1e-12) fail(who, "joint axis is zero");
    if ((b.origin_R.transpose() * b.origin_R - Mat3::Identity()).cwiseAbs().maxCoeff() > 1e-6 ||
        b.origin_R.determinant() < 0)
      fail(who, "origin rotation is not a proper rotation matrix");
    check_inertia(who, b.mass, b.inertia, check_inertia_flag);
    for (double x : {b.armature, b.damping, b.friction})
      if (!(std::isfinite(x) && x >= 0))
        fail(who, "armature, damping and friction must be finite and >= 0");
    if (std::isnan(b.lower) || std::isnan(b.upper))
      fail(who, "joint limits: lower or upper is NaN (no limit is -inf / inf)");
    if (!(b.lower <= b.upper)) fail(who, "joint limits need lower <= upper");
    if (std::isnan(b.velocity) || std::isnan(b.effort))
      fail(who, std::string(std::isnan(b.effort) ? "effort" : "velocity") +
                    " limit is NaN (no limit is inf or 0)");
    if (!(b.velocity >= 0) || !(b.effort >= 0))
      fail(who, "velocity and effort limits must be >= 0 (0: not given)");

    const int p = b.parent + 1;
    m.parent[i] = p;
    m.type[i] = b.type;
    m.iq[i] = m.nq;
    m.iv[i] = m.nv;
    m.nq += free ? 7 : 1;
    m.nv += joint_nv(b.type);
    // internal_i = internal_p * Ra_p^T * origin * Ra_i * joint(z, q); the internal origins are
    // the user's moved along the joint axis by slide
    const Mat3 Rc = Ra[p].transpose() * b.origin_R * Ra[i];
    m.Rc[i] = classify(Rc);
    if (m.Rc[i].kind == ConstRotation::General && b.type == JointType::Revolute) {
      // Rc = R' Rz(gamma) with R' free or a rotation about x: keep R', turn the joint angle by
      // gamma. Candidates: the body's own turn psi (its link was free before it), and the
      // gamma of Rc = Rx(alpha) Rz(gamma) when Rc's first row has no z component.
      double cand[2] = {psi[i], 0};
      int nc = psi[i] != 0 ? 1 : 0;
      if (std::abs(Rc(0, 2)) <= kSnap) cand[nc++] = std::atan2(-Rc(0, 1), Rc(0, 0));
      for (int t = 0; t < nc; ++t) {
        const double g = cand[t];
        Mat3 Rz;
        Rz << std::cos(g), std::sin(g), 0, -std::sin(g), std::cos(g), 0, 0, 0, 1;
        const ConstRotation r = classify(Rc * snap(Rz));
        if (r.kind != ConstRotation::General) {
          m.Rc[i] = r;
          m.qoff[i] = g;
          break;
        }
      }
    }
    const Vec3 own = slide[i] * ax[i];                      // user frame of body i
    const Vec3 par = p > 0 ? Vec3(slide[p] * ax[p]) : Vec3::Zero();  // user frame of p
    Vec3 pc = Ra[p].transpose() * (b.origin_p + b.origin_R * own - par);
    const double pc_tol = 1e-13 * std::max(1.0, pc.norm());  // rounding of the re-expression
    for (int c = 0; c < 3; ++c) {
      if (std::abs(pc[c]) < pc_tol) pc[c] = 0;
      m.pc_nz[i][c] = pc[c] != 0;
    }
    m.pc[i] = pc;
    // inertia about the internal origin, internal axes
    const Vec3 c = Ra[i].transpose() * (b.com - own);
    const Mat3 Ic = Ra[i].transpose() * b.inertia * Ra[i];
    m.mass[i] = b.mass;
    m.h[i] = b.mass * c;
    m.Ibar[i] = 0.5 * (Ic + Ic.transpose()) +
                b.mass * (c.dot(c) * Mat3::Identity() - c * c.transpose());
    for (int k = 0; k < 3; ++k) m.h_nz[i][k] = m.h[i][k] != 0;
    const int rr[6] = {0, 1, 2, 0, 0, 1}, cc[6] = {0, 1, 2, 1, 2, 2};
    for (int k = 0; k < 6; ++k) m.I_nz[i][k] = m.Ibar[i](rr[k], cc[k]) != 0;
    m.J[i] = second_moment(m.Ibar[i]);
    for (int k = 0; k < 6; ++k) m.J_nz[i][k] = m.J[i](rr[k], cc[k]) != 0;
    // a free-flyer: no rotor, friction or limits; a limit of 0 is "not given" (URDF exporters
    // write it for unknown limits)
    m.armature[i] = free ? 0 : b.armature;
    m.damping[i] = free ? 0 : b.damping;
    m.friction[i] = free ? 0 : b.friction;
    m.lower[i] = free ? -HUGE_VAL : b.lower;
    m.upper[i] = free ? HUGE_VAL : b.upper;
    m.velocity[i] = free || b.velocity == 0 ? HUGE_VAL : b.velocity;
    m.effort[i] = free || b.effort == 0 ? HUGE_VAL : b.effort;
    m.joint_names.push_back(b.joint_name);
    m.link_names.push_back(b.name);
    // the body's own user frame
    m.frame_body.push_back(i);
    m.frame_R.push_back(Ra[i].transpose());
    m.frame_p.push_back(Ra[i].transpose() * (-own));
  }
  for (size_t f = 0; f < frames.size(); ++f) {
    const FrameSpec& fr = frames[f];
    const std::string who = "frame " + std::to_string(f) + " ('" + fr.name + "')";
    if (fr.parent < -1 || fr.parent >= n) fail(who, "parent index out of range");
    if (!fr.R.allFinite() || !fr.p.allFinite()) fail(who, "pose must be finite");
    if ((fr.R.transpose() * fr.R - Mat3::Identity()).cwiseAbs().maxCoeff() > 1e-6 ||
        fr.R.determinant() < 0)
      fail(who, "pose rotation is not a proper rotation matrix");
    const int b = fr.parent + 1;
    m.frame_body.push_back(b);
    m.frame_R.push_back(Ra[b].transpose() * fr.R);
    m.frame_p.push_back(Ra[b].transpose() * (fr.p - (b > 0 ? Vec3(slide[b] * ax[b]) : Vec3::Zero())));
    m.link_names.push_back(fr.name);
  }
  // the columns of v moved by each subtree, as runs of consecutive indices
  m.subtree_begin.assign(n + 2, 0);
  m.subtree_runs.clear();
  std::vector<char> below(n + 1, 0);
  for (int i = 1; i <= n; ++i) {
    m.subtree_begin[i] = static_cast<int>(m.subtree_runs.size());
    for (int k = i; k <= n; ++k) {
      below[k] = k == i || (m.parent[k] >= i && below[m.parent[k]]);
      if (!below[k]) continue;
      const int lo = m.iv[k], hi = lo + joint_nv(m.type[k]);
      if (m.subtree_begin[i] < static_cast<int>(m.subtree_runs.size()) &&
          m.subtree_runs.back()[1] == lo)
        m.subtree_runs.back()[1] = hi;
      else
        m.subtree_runs.push_back({{lo, hi}});
    }
  }
  m.subtree_begin[n + 1] = static_cast<int>(m.subtree_runs.size());
  // the parent of each velocity coordinate
  m.vparent.assign(m.nv, -1);
  for (int i = 1; i <= n; ++i) {
    const int p = m.parent[i], k0 = m.iv[i];
    m.vparent[k0] = p > 0 ? m.iv[p] + joint_nv(m.type[p]) - 1 : -1;
    for (int c = 1; c < joint_nv(m.type[i]); ++c) m.vparent[k0 + c] = k0 + c - 1;
  }
  m.link.assign(n + 1, LinkKind::RevPerm);
  for (int i = 1; i <= n; ++i) m.link[i] = link_kind(m.type[i], m.Rc[i].kind, m.pc_nz[i]);
  m.step.assign(n + 1, 0);
  for (int i = 1; i <= n; ++i)
    m.step[i] = step_case(m.link[i], m.Rc[i].relabel,
                          m.parent[i] > 0 ? m.type[m.parent[i]] : JointType::Revolute);
  // where update_kinematics finds each body's angle, and its other work
  m.angle_src.assign(n + 2, m.nq);
  m.angle_offset.clear();
  m.nonrevolute.clear();
  for (int i = 1; i <= n; ++i) {
    if (m.type[i] != JointType::Revolute) {
      m.nonrevolute.push_back(i);
      continue;
    }
    m.angle_src[i] = m.iq[i];
    if (m.qoff[i] != 0) m.angle_offset.push_back(i);
  }
  check_derived(m, bodies, frames);
  set_gravity(m, m.gravity);
  m.kane = kane_constants(m);
  Data d(m);
  for (int i = 1; i <= n; ++i)
    if (!m.kane.c[i].allFinite() || !m.kane.I[i].allFinite())
      fail(body_label(bodies[i - 1], i - 1),
           "its central inertia overflows (numbers too large)");
  if (!check_singular) return m;
  // a joint that moves no inertia makes M singular: test at a few configurations, in O(n) time
  // and memory. The articulated-body pivots D_i = S_i' IA_i S_i (+ armature) are the pivots of
  // a factorisation of M from the tips (Featherstone, RBDA 6.5), so M is positive definite
  // exactly when every D_i > 0, which aba() checks.
  // (a free-flyer's 6x6 pivot is its articulated inertia, factorised by aba)
  std::vector<double> q(m.nq), zero(m.nv, 0.0), qdd(m.nv);
  for (int trial = 0; trial < 3; ++trial) {
    for (int i = 0; i < m.nq; ++i)
      q[i] = trial == 0 ? 0.0 : std::sin(1.3 * (i + 1) * trial + 0.4);
    if (m.floating)  // the base at the world origin, its quaternion the identity
      for (int k = 0; k < 7; ++k) q[k] = k == 6 ? 1.0 : 0.0;
    const bool ok = aba(m, d, q.data(), zero.data(), zero.data(), qdd.data());
    if (!ok)
      throw std::invalid_argument(
          "model: the mass matrix is singular (a joint moves no mass or inertia; give the "
          "links beyond it mass, inertia or armature)");
  }
  return m;
}

TreeFactorPattern tree_factor_pattern(const Model& m) {
  TreeFactorPattern p;
  p.row_start.assign(m.nv + 1, 0);
  std::vector<int> depth(m.nv, 0);    // ancestors of each coordinate
  std::vector<int> run_lo(m.nv, 0);   // the first coordinate of the run that ends at k
  for (int k = 0; k < m.nv; ++k) {
    const int j = m.vparent[k];
    depth[k] = j < 0 ? 0 : depth[j] + 1;
    run_lo[k] = k > 0 && j == k - 1 ? run_lo[k - 1] : k;
    p.row_start[k + 1] = p.row_start[k] + depth[k] + 1;
  }
  std::vector<int> col;  // each entry's column: k's ancestors (root first), then k
  for (int k = 0; k < m.nv; ++k) {
    const size_t first = col.size();
    for (int j = k; j >= 0; j = m.vparent[j]) col.push_back(j);
    std::reverse(col.begin() + first, col.end());
    for (size_t e = first; e < col.size(); ++e)
      p.h_at.push_back(static_cast<std::ptrdiff_t>(col[e]) * m.nv + k);
  }
  for (const int j : col) p.col_row.push_back(p.row_start[j]);
  // j's entry in a row holding it is its depth: o + j = depth[j] for every j of a run
  p.run_start.assign(m.nv + 1, 0);
  for (int k = 0; k < m.nv; ++k) {
    int count = 0;
    for (int j = m.vparent[k]; j >= 0; j = m.vparent[run_lo[j]]) {
      p.runs.insert(p.runs.end(), {run_lo[j], j, depth[j] - j});
      ++count;
    }
    p.run_start[k + 1] = p.run_start[k] + count;
  }
  return p;
}

}  // namespace robodyn
