// Loop constraints between two bodies (or a body and the world): the model, the workspace,
// and the constraint kinematics phi(q), J(q), gamma(q, v).
//
// A constraint holds frame 1, fixed to body a, to frame 2, fixed to body b (either may be the
// world, body 0). With (Ra, pa), (Rb, pb) the world poses of the frames, the residual is the
// pose of frame 1 relative to frame 2 in frame 1's axes,
//   phi = [log(Rb' Ra); Ra' (pa - pb)]          (rotation vector; offset of origin 1 from 2)
// and J v is its rate: with Vrel = V_a - V_b the difference of the bodies' spatial velocities
// (world axes, Plücker at the world origin, [angular; linear]),
//   J v = [Ra' w_rel; Ra' (v_rel + w_rel x pb)]   (Vrel moved to the point pb, frame 1 axes)
// exactly d/dt of phi's linear part and, on its angular part, Jr(phi_ang)^-1 times it (equal
// when the loop is closed). gamma = d(J v)/dt at qdd = 0 (the bodies' velocity-product
// accelerations A_i and the turning of frame 1, w_a = V_a's angular part):
//   x = [w_rel; v_rel + w_rel x pb],  xd = [a_rel; al_rel + a_rel x pb + w_rel x pb_dot]
//   gamma = [Ra' (xd_ang - w_a x x_ang); Ra' (xd_lin - w_a x x_lin)].
// Each constraint keeps a subset of the six rows ([angular; linear], frame 1 axes). The
// generalised force of a wrench lam (those rows) on body a is J' lam: lam acts on body a (at
// pb, equal to pa when closed), its opposite on body b.
#pragma once

#include <Eigen/Core>
#include <array>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "robodyn/algorithms/kinematics.hpp"
#include "robodyn/model/data.hpp"
#include "robodyn/model/model.hpp"
#include "robodyn/spatial/joint.hpp"
#include "robodyn/spatial/spatial.hpp"

namespace robodyn {

// One constraint, fixed once the constrained system is built.
struct LoopModel {
  int body1 = 0, body2 = 0;          // model bodies (0: the world)
  Mat3 R1 = Mat3::Identity();        // frame 1 in body1's internal frame (rotation, origin)
  Vec3 p1 = Vec3::Zero();
  Mat3 R2 = Mat3::Identity();        // frame 2 in body2's internal frame
  Vec3 p2 = Vec3::Zero();
  int nrows = 0;                     // constrained axes: rows[0..nrows) of [angular; linear]
  std::array<int, 6> rows{};         // (increasing)
  bool angular() const { return rows[0] < 3; }         // some angular row
  bool linear() const { return rows[nrows - 1] >= 3; }  // some linear row
  double kp = 0, kd = 0;             // Baumgarte gains: J qdd = -gamma - kd J v - kp phi
  std::string name;                  // for error messages
};

struct ConstraintModel {
  std::vector<LoopModel> loops;
  std::vector<int> start;            // first row of each loop in the stacked rows, loops + 1
  int m = 0;                         // rows in all
  bool baumgarte = false;            // some loop has a non-zero gain
  std::vector<int> support_bodies;   // the bodies on the paths of some loop's two bodies to
                                     // the root (the supports), increasing
  std::vector<int> shared_start, shared_runs;  // the coordinates in the supports (the paths
                                     // of both bodies to the root) of loops l and l2 <= l as
                                     // runs (lo, hi): pair p = l (l + 1) / 2 + l2 at
                                     // shared_runs[2 shared_start[p] .. 2 shared_start[p + 1])
};

// The constraint model of `loops` (rows and gains as given; bodies checked in range).
inline ConstraintModel make_constraint_model(const Model& model, std::vector<LoopModel> loops) {
  ConstraintModel cm;
  cm.start.push_back(0);
  for (const LoopModel& l : loops) {
    if (l.body1 < 0 || l.body1 > model.n || l.body2 < 0 || l.body2 > model.n)
      throw std::invalid_argument("constraint " + l.name + ": body index out of range");
    if (l.nrows < 1 || l.nrows > 6)
      throw std::invalid_argument("constraint " + l.name + ": expected 1 to 6 rows");
    cm.m += l.nrows;
    cm.start.push_back(cm.m);
    cm.baumgarte = cm.baumgarte || l.kp != 0 || l.kd != 0;
  }
  cm.loops = std::move(loops);
  std::vector<char> on_path(model.n + 1, 0);
  for (const LoopModel& l : cm.loops)
    for (int body : {l.body1, l.body2})
      for (int j = body; j > 0; j = model.parent[j]) on_path[j] = 1;
  for (int i = 1; i <= model.n; ++i)
    if (on_path[i]) cm.support_bodies.push_back(i);
  std::vector<std::vector<char>> support;
  for (const LoopModel& l : cm.loops) {
    std::vector<char> in(model.nv, 0);
    for (int body : {l.body1, l.body2})
      for (int j = body; j > 0; j = model.parent[j])
        for (int k = model.iv[j]; k < model.iv[j] + joint_nv(model.type[j]); ++k) in[k] = 1;
    support.push_back(std::move(in));
  }
  cm.shared_start.push_back(0);
  for (size_t l = 0; l < cm.loops.size(); ++l)
    for (size_t l2 = 0; l2 <= l; ++l2) {
      for (int k = 0; k < model.nv; ++k) {
        if (!(support[l][k] && support[l2][k])) continue;
        if (k > 0 && support[l][k - 1] && support[l2][k - 1]) {
          cm.shared_runs.back() = k;
        } else {
          cm.shared_runs.push_back(k);
          cm.shared_runs.push_back(k);
        }
      }
      cm.shared_start.push_back(static_cast<int>(cm.shared_runs.size() / 2));
    }
  return cm;
}

// The workspace of the constrained algorithms, sized once from the Model and the constraints.
template <class S>
struct ConstraintDataTpl {
  using V3 = Eigen::Matrix<S, 3, 1>;
  using M3 = Eigen::Matrix<S, 3, 3>;
  using V6 = Eigen::Matrix<S, 6, 1>;
  using MatR = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using VecX = Eigen::Matrix<S, Eigen::Dynamic, 1>;

  ConstraintDataTpl(const Model& model, const ConstraintModel& cm)
      : Sw(model.nv, V6::Zero()), Vw(model.n + 1, V6::Zero()), Aw(model.n + 1, V6::Zero()),
        Rw(model.n + 1, M3::Identity()), pw(model.n + 1, V3::Zero()),
        Ra(cm.loops.size(), M3::Identity()), pa(cm.loops.size(), V3::Zero()),
        Rb(cm.loops.size(), M3::Identity()), pb(cm.loops.size(), V3::Zero()),
        J(MatR::Zero(cm.m, model.nv)),
        Y(VecX::Zero(cm.m * model.nv)),
        A(MatR::Zero(cm.m, cm.m)), F(MatR::Zero(cm.m, cm.m)),
        phi(VecX::Zero(cm.m)), gamma(VecX::Zero(cm.m)), Jv(VecX::Zero(cm.m)),
        r(VecX::Zero(cm.m)), lam(VecX::Zero(cm.m)), b(VecX::Zero(cm.m)),
        z(VecX::Zero(model.nv)) {}

  AVec<V6> Sw;          // (nv) joint axes of the velocity coordinates, world axes
  AVec<V6> Vw, Aw;      // (n+1) body spatial velocities and their qdd = 0 rates, world axes
  AVec<M3> Rw;          // (n+1) body poses in the world: rotation (body to world axes),
  AVec<V3> pw;          //   origin (world)
                        // (Sw, Vw, Aw, Rw, pw: of ConstraintModel::support_bodies and the
                        // world, body 0; the others unused)
  AVec<M3> Ra;          // per loop: world rotation of frame 1
  AVec<V3> pa;          //   world origin of frame 1
  AVec<M3> Rb;          //   world rotation of frame 2
  AVec<V3> pb;          //   world origin of frame 2
  MatR J;               // (m, nv) constraint Jacobian
  VecX Y;               // (m nv) rows L^-T J' (M = L' L): J M^-1 J' = Y Y'; loop l's block at
                        // start[l] nv, coordinate-major (entry (row r, coordinate k) at
                        // k nrows + r)
  MatR A;               // (m, m) J M^-1 J', lower triangle
  MatR F;               // (m, m) factor of A (+ mu I), lower triangle
  VecX phi, gamma, Jv;  // (m) residual, bias acceleration, constraint velocity (Jv: the
                        // rows of the loops with a velocity gain kd)
  VecX r;               // (m) J qdd - r = the constraint acceleration error at lam = 0, negated
  VecX lam, b;          // (m) multipliers, right-hand side of a proximal step
  VecX z;               // (nv) L^-T (tau - h), then L^-T (tau - h + J' lam)
  int iterations = 0;   // proximal iterations of the last forward dynamics
  double error = 0;     // its final max |J qdd + gamma + Baumgarte terms| when error_known
  bool error_known = false;  // (with mu = 0 error is not computed: multiplier_error gives it)
  int bad_row = -1;     // the row where a rank-deficient J was found
};

using ConstraintData = ConstraintDataTpl<double>;

namespace detail {

// rotation vector of R (|phi| <= pi)
template <class S>
V3T<S> log3(const M3T<S>& R) {
  using std::atan2;
  using std::sqrt;
  const V3T<S> w(S(0.5) * (R(2, 1) - R(1, 2)), S(0.5) * (R(0, 2) - R(2, 0)),
                 S(0.5) * (R(1, 0) - R(0, 1)));  // sin(t) u
  const S s = sqrt(w.squaredNorm());
  const S c = S(0.5) * (R(0, 0) + R(1, 1) + R(2, 2) - S(1));  // cos(t)
  const S t = atan2(s, c);
  if (c > S(-0.9)) {
    // t / sin(t): its series below 1e-4
    const S k = t < S(1e-4) ? S(1) + t * t / S(6) : t / s;
    return k * w;
  }
  // near pi: u u' = (sym(R) - c I) / (1 - c) from its largest diagonal entry, u's sign by w
  const M3T<S> B = (S(0.5) * (R + R.transpose()) - c * M3T<S>::Identity()) / (S(1) - c);
  int k = 0;
  if (B(1, 1) > B(k, k)) k = 1;
  if (B(2, 2) > B(k, k)) k = 2;
  V3T<S> u = B.col(k) / sqrt(B(k, k));
  if (u.dot(w) < S(0)) u = -u;
  return t * u;
}

// the world poses of cm.support_bodies into cd.Rw, cd.pw from the joint transforms of
// update_kinematics at level 1 (the other bodies' poses are not needed): R_i = R_p Rc Rz(q)
// with R_p Rc by Rc's kind (free for a signed permutation) and Rz(q) turning two columns,
// p_i = p_p + R_p r_i
template <class S>
void support_poses(const Model& m, const ConstraintModel& cm, DataTpl<S>& d,
                   ConstraintDataTpl<S>& cd, const S* q) {
  update_kinematics(m, d, q, 1);
  for (const int i : cm.support_bodies) {
    const int p = m.parent[i];
    const M3T<S>& Rp = cd.Rw[p];
    M3T<S>& R = cd.Rw[i];
    if (m.type[i] == JointType::FreeFlyer) {
      R = Rp * d.Xup_E[i];  // (Rc R(quat), level 1)
    } else {
      // R_p Rc row by row: (Rc' row)'
      M3T<S> W;
      for (int r = 0; r < 3; ++r)
        W.row(r) = rotcT<S>(m.Rc[i], V3T<S>(Rp.row(r).transpose())).transpose();
      if (m.type[i] == JointType::Revolute) {
        const S c = d.cos_q[i], s = d.sin_q[i];
        R.col(0) = W.col(0) * c + W.col(1) * s;
        R.col(1) = W.col(1) * c - W.col(0) * s;
        R.col(2) = W.col(2);
      } else {
        R = W;
      }
    }
    cd.pw[i] = cd.pw[p] + Rp * d.Xup_r[i];
  }
}

// the world poses of every loop's frames (support_poses done); a frame on the world is its
// own pose
template <class S>
void loop_frames(const ConstraintModel& cm, ConstraintDataTpl<S>& cd) {
  for (size_t l = 0; l < cm.loops.size(); ++l) {
    const LoopModel& c = cm.loops[l];
    cd.Ra[l] = cd.Rw[c.body1] * c.R1.template cast<S>();
    cd.pa[l] = cd.pw[c.body1] + cd.Rw[c.body1] * c.p1.template cast<S>();
    if (c.body2 == 0) {
      cd.Rb[l] = c.R2.template cast<S>();
      cd.pb[l] = c.p2.template cast<S>();
    } else {
      cd.Rb[l] = cd.Rw[c.body2] * c.R2.template cast<S>();
      cd.pb[l] = cd.pw[c.body2] + cd.Rw[c.body2] * c.p2.template cast<S>();
    }
  }
}

// the world axes of the joints of cm.support_bodies into cd.Sw (support_poses done)
template <class S>
void world_axes(const Model& m, const ConstraintModel& cm, ConstraintDataTpl<S>& cd) {
  for (const int i : cm.support_bodies)
    joint_axes_world<S>(m.type[i], cd.Rw[i], cd.pw[i], &cd.Sw[m.iv[i]]);
}

// the loop's six rows of x (frame 1 axes), its selected ones written to out
template <class S>
ROBODYN_INLINE void put_rows(const LoopModel& c, const V6T<S>& x, S* out, int stride = 1) {
  for (int k = 0; k < c.nrows; ++k) out[k * stride] = x[c.rows[k]];
}

}  // namespace detail

namespace detail {

// phi from the frames of loop_frames, (m,) into out
template <class S>
void loop_residual(const ConstraintModel& cm, const ConstraintDataTpl<S>& cd, S* out) {
  for (size_t l = 0; l < cm.loops.size(); ++l) {
    const LoopModel& c = cm.loops[l];
    V6T<S> x;
    x.template tail<3>() = cd.Ra[l].transpose() * (cd.pa[l] - cd.pb[l]);
    if (c.rows[0] < 3)
      x.template head<3>() = log3<S>(M3T<S>(cd.Rb[l].transpose() * cd.Ra[l]));
    else
      x.template head<3>().setZero();
    put_rows(c, x, out + cm.start[l]);
  }
}

}  // namespace detail

// phi(q), (m,) into out: per loop its rows of [log(Rb' Ra); Ra' (pa - pb)].
template <class S>
void constraint_residual(const Model& m, const ConstraintModel& cm, DataTpl<S>& d,
                         ConstraintDataTpl<S>& cd, const S* q, S* out) {
  detail::support_poses(m, cm, d, cd, q);
  detail::loop_frames(cm, cd);
  detail::loop_residual(cm, cd, out);
}

namespace detail {

// the frames and joint axes the constraint kinematics read: support_poses, loop_frames,
// world_axes
template <class S>
void constraint_frames(const Model& m, const ConstraintModel& cm, DataTpl<S>& d,
                       ConstraintDataTpl<S>& cd, const S* q) {
  support_poses(m, cm, d, cd, q);
  loop_frames(cm, cd);
  world_axes(m, cm, cd);
}

// f(k, x) for every velocity coordinate k on loop l's two paths up to their common ancestor
// (constraint_frames done), x its column of J's rows [Ra' s_ang; Ra' (s_lin + s_ang x pb)]
// (the kinds of rows the loop has, only), negated on body b's path
template <class S, class F>
ROBODYN_INLINE void jacobian_columns(const Model& m, const ConstraintModel& cm,
                                     const ConstraintDataTpl<S>& cd, size_t l, F&& f) {
  const LoopModel& c = cm.loops[l];
  const M3T<S> RaT = cd.Ra[l].transpose();
  const V3T<S>& pb = cd.pb[l];
  int a = c.body1, b = c.body2;
  while (a != b) {
    const bool on_a = a > b;
    const int j = on_a ? a : b;
    for (int k = m.iv[j]; k < m.iv[j] + joint_nv(m.type[j]); ++k) {
      const V6T<S>& s = cd.Sw[k];
      const V3T<S> w = s.template head<3>();
      V6T<S> x;
      if (c.angular()) x.template head<3>() = RaT * w;
      if (c.linear())
        x.template tail<3>() = RaT * (V3T<S>(s.template tail<3>()) + cross<S>(w, pb));
      if (!on_a) x = -x;
      f(k, x);
    }
    if (on_a) a = m.parent[a]; else b = m.parent[b];
  }
}

}  // namespace detail

// J(q) into cd.J, (m, nv): row block of loop l = its rows of
// [Ra' s_ang; Ra' (s_lin + s_ang x pb)] for every axis s on body a's path to the root, minus
// the same for body b's path (the common part cancels and stays zero).
template <class S>
void constraint_jacobian(const Model& m, const ConstraintModel& cm, DataTpl<S>& d,
                         ConstraintDataTpl<S>& cd, const S* q) {
  detail::constraint_frames(m, cm, d, cd, q);
  const int nv = m.nv;
  // (J's entries off the paths are the zeros it was made with: never written)
  for (size_t l = 0; l < cm.loops.size(); ++l) {
    S* rows = cd.J.data() + cm.start[l] * nv;
    detail::jacobian_columns(m, cm, cd, l, [&](int k, const V6T<S>& x) {
      detail::put_rows(cm.loops[l], x, rows + k, nv);
    });
  }
}

namespace detail {

// gamma and J v (only for a loop with a velocity gain kd) into cd.gamma, cd.Jv from the frames
// and axes of loop_frames and world_axes: the body velocities and their qdd = 0 rates over
// the supports (a body's parent is on the support too), then per loop the rows of the kinds
// (angular, linear) it has
template <class S>
void loop_bias(const Model& m, const ConstraintModel& cm, ConstraintDataTpl<S>& cd, const S* v) {
  for (const int i : cm.support_bodies) {
    const int p = m.parent[i];
    const int k0 = m.iv[i], nj = joint_nv(m.type[i]);
    V6T<S> V = cd.Vw[p];
    for (int k = k0; k < k0 + nj; ++k) V += cd.Sw[k] * v[k];
    // sum_k (V x s_k) v_k = V x (V - V_p) = V_p x V (none on a body of the world)
    cd.Aw[i] = p == 0 ? V6T<S>(V6T<S>::Zero()) : V6T<S>(cd.Aw[p] + crm<S>(cd.Vw[p], V));
    cd.Vw[i] = V;
  }
  for (size_t l = 0; l < cm.loops.size(); ++l) {
    const LoopModel& c = cm.loops[l];
    const bool ang = c.angular(), lin = c.linear();
    const M3T<S> RaT = cd.Ra[l].transpose();
    const V3T<S>& pb = cd.pb[l];
    const V6T<S> Vr = cd.Vw[c.body1] - cd.Vw[c.body2], Ar = cd.Aw[c.body1] - cd.Aw[c.body2];
    const V3T<S> wr = Vr.template head<3>(), ar = Ar.template head<3>();
    const V3T<S> wa = cd.Vw[c.body1].template head<3>();
    const V3T<S> x_lin = V3T<S>(Vr.template tail<3>()) + cross<S>(wr, pb);
    V6T<S> g;
    if (ang) g.template head<3>() = RaT * V3T<S>(ar - cross<S>(wa, wr));
    if (lin) {
      const V3T<S> wb = cd.Vw[c.body2].template head<3>();
      const V3T<S> pb_dot = V3T<S>(cd.Vw[c.body2].template tail<3>()) + cross<S>(wb, pb);
      const V3T<S> xd_lin =
          V3T<S>(Ar.template tail<3>()) + cross<S>(ar, pb) + cross<S>(wr, pb_dot);
      g.template tail<3>() = RaT * V3T<S>(xd_lin - cross<S>(wa, x_lin));
    }
    put_rows(c, g, cd.gamma.data() + cm.start[l]);
    if (c.kd != 0) {
      V6T<S> jv;
      if (ang) jv.template head<3>() = RaT * wr;
      if (lin) jv.template tail<3>() = RaT * x_lin;
      put_rows(c, jv, cd.Jv.data() + cm.start[l]);
    }
  }
}

}  // namespace detail

// gamma(q, v) into cd.gamma and J v into cd.Jv (the rows of the loops with a velocity gain kd),
// (m,): the body velocities and their qdd = 0 rates in world axes (V_i = V_p + sum s v,
// A_i = A_p + sum (V_i x s) v = A_p + V_p x V_i), then per loop the formula at the top of this
// file.
template <class S>
void constraint_bias(const Model& m, const ConstraintModel& cm, DataTpl<S>& d,
                     ConstraintDataTpl<S>& cd, const S* q, const S* v) {
  detail::constraint_frames(m, cm, d, cd, q);
  detail::loop_bias(m, cm, cd, v);
}

}  // namespace robodyn
