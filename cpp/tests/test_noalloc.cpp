// No heap allocation inside the algorithms (STYLE.md rule 7).
//
// Every global operator new / new[] is replaced by a counting version, and on glibc malloc,
// calloc, realloc, posix_memalign, aligned_alloc and memalign are interposed too (forwarding to
// __libc_*), so an allocation by Eigen, the standard library or the code under test is seen
// whichever way it is made. EIGEN_RUNTIME_NO_MALLOC plus set_is_malloc_allowed(false) makes
// every Eigen heap allocation fail an eigen_assert, which is redirected here to a recording
// handler (so it works with or without NDEBUG and names the failed check).
//
// Three models are built from BodySpec: a free-floating random tree (a free-flyer base, nq = 14,
// nv = 13, every joint kind of joint.hpp), and two 7-DOF models: a random tree (random axes, origins, inertias,
// revolute and prismatic joints, armature, damping, Coulomb friction, extra frames) and a
// structured chain (coordinate axes, signed-permutation origins, principal inertias: the
// special-cased paths). For each, Data is created and warmed up, then every algorithm runs at
// several new configurations (cache misses) and again at the same configuration (cache hits)
// while the counters are armed. A few identities (FD(ID(qdd)) = qdd, kane = rnea,
// ID = M qdd + bias + joint terms) check that the calls really computed something.
//
// Usage: test_noalloc                    exit 0 if no allocation happened, 1 otherwise
//        test_noalloc --self-check-new     allocates with operator new inside the guard
//        test_noalloc --self-check-malloc  allocates with malloc inside the guard
//        test_noalloc --self-check-eigen   allocates an Eigen::VectorXd inside the guard
// The self-check modes must report failure (exit 1): they show the test can fail.
#ifndef EIGEN_RUNTIME_NO_MALLOC
#define EIGEN_RUNTIME_NO_MALLOC
#endif

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

void noalloc_eigen_assert_failed(const char* what, const char* file, int line);
#define eigen_assert(x)                                          \
  do {                                                           \
    if (!(x)) ::noalloc_eigen_assert_failed(#x, __FILE__, __LINE__); \
  } while (false)

#include <Eigen/Core>
#include <Eigen/Geometry>
#include <cerrno>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "robodyn/aba.hpp"
#include "robodyn/centroidal.hpp"
#include "robodyn/constraints/dynamics.hpp"
#include "robodyn/constraints/loop.hpp"
#include "robodyn/coriolis.hpp"
#include "robodyn/crba.hpp"
#include "robodyn/data.hpp"
#include "robodyn/momentum.hpp"
#include "robodyn/joint.hpp"
#include "robodyn/kane.hpp"
#include "robodyn/kinematics.hpp"
#include "robodyn/model.hpp"
#include "robodyn/regressor.hpp"
#include "robodyn/rnea.hpp"
#include "robodyn/rnea_derivatives.hpp"
#include "robodyn/simulate.hpp"

// ---------------------------------------------------------------- counting allocators

namespace {

bool g_armed = false;        // count only while the algorithms run
long g_news = 0;             // operator new / new[] calls while armed
long g_mallocs = 0;          // malloc family calls while armed (glibc only)
long g_eigen_asserts = 0;    // failed eigen_asserts while armed (includes forbidden mallocs)
const char* g_eigen_what = "";
const char* g_eigen_file = "";
int g_eigen_line = 0;
void* volatile g_sink = nullptr;  // keeps deliberate allocations from being optimised away

inline void note_new() {
  if (g_armed) ++g_news;
}

void* counted_new(std::size_t n) {
  note_new();
  void* p = std::malloc(n ? n : 1);
  if (!p) throw std::bad_alloc();
  return p;
}

void* counted_new_aligned(std::size_t n, std::size_t a) {
  note_new();
  if (a < sizeof(void*)) a = sizeof(void*);
  void* p = nullptr;
  if (posix_memalign(&p, a, n ? n : 1) != 0) throw std::bad_alloc();
  return p;
}

}  // namespace

void noalloc_eigen_assert_failed(const char* what, const char* file, int line) {
  ++g_eigen_asserts;
  g_eigen_what = what;
  g_eigen_file = file;
  g_eigen_line = line;
}

void* operator new(std::size_t n) { return counted_new(n); }
void* operator new[](std::size_t n) { return counted_new(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  note_new();
  return std::malloc(n ? n : 1);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  note_new();
  return std::malloc(n ? n : 1);
}
void* operator new(std::size_t n, std::align_val_t a) {
  return counted_new_aligned(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return counted_new_aligned(n, static_cast<std::size_t>(a));
}
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  try {
    return counted_new_aligned(n, static_cast<std::size_t>(a));
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  try {
    return counted_new_aligned(n, static_cast<std::size_t>(a));
  } catch (...) {
    return nullptr;
  }
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  std::free(p);
}

#if defined(__GLIBC__) && !defined(ROBODYN_NOALLOC_NO_MALLOC_HOOK)
// glibc supports replacing malloc in the executable; these forward to its implementation
#define ROBODYN_NOALLOC_MALLOC_HOOK 1
extern "C" {
void* __libc_malloc(std::size_t);
void* __libc_calloc(std::size_t, std::size_t);
void* __libc_realloc(void*, std::size_t);
void* __libc_memalign(std::size_t, std::size_t);
void __libc_free(void*);

static inline void note_malloc() {
  if (g_armed) ++g_mallocs;
}

void* malloc(std::size_t n) noexcept {
  note_malloc();
  return __libc_malloc(n);
}
void* calloc(std::size_t k, std::size_t n) noexcept {
  note_malloc();
  return __libc_calloc(k, n);
}
void* realloc(void* p, std::size_t n) noexcept {
  note_malloc();
  return __libc_realloc(p, n);
}
void free(void* p) noexcept { __libc_free(p); }
void* memalign(std::size_t a, std::size_t n) noexcept {
  note_malloc();
  return __libc_memalign(a, n);
}
void* aligned_alloc(std::size_t a, std::size_t n) noexcept {
  note_malloc();
  return __libc_memalign(a, n);
}
int posix_memalign(void** p, std::size_t a, std::size_t n) noexcept {
  note_malloc();
  void* r = __libc_memalign(a, n);
  if (!r) return ENOMEM;
  *p = r;
  return 0;
}
}
#else
#define ROBODYN_NOALLOC_MALLOC_HOOK 0
#endif

// ---------------------------------------------------------------- models

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

// ---------------------------------------------------------------- the guarded calls

struct Buffers {
  std::vector<double> tau, qdd, qdd2, bias, grav, M, C, fk, J, tmp, D1, D2, D3, Y;
  double energy = 0;
  explicit Buffers(const Model& m)
      : tau(m.n), qdd(m.n), qdd2(m.n), bias(m.n), grav(m.n), M(m.n * m.n), C(m.n * m.n),
        fk(16 * m.frame_body.size()), J(6 * m.n), tmp(m.n), D1(m.n * m.n), D2(m.n * m.n),
        D3(m.n * m.n), Y(10 * m.n * m.n) {}
};

// the guarded calls; the last entry is the deliberate allocation of the self-check modes
constexpr int kAlgorithms = 23;
const char* const kNames[kAlgorithms] = {
    "rnea", "kane", "crba", "aba", "forward_dynamics_crba", "kane_forward", "bias_torques",
    "gravity_torques", "coriolis_matrix", "forward_kinematics", "jacobian", "kinetic_energy",
    "potential_energy", "kane_inertia", "rnea_derivatives", "forward_dynamics_derivatives",
    "regressor", "regressor_slotine_li", "rnea (two rows)", "aba (two rows)",
    "bias_torques (two rows)", "gravity_torques (two rows)", "self-check"};

#if defined(ROBODYN_HAVE_D2)
// the two-row sweeps of the bindings' batches (simd.hpp's D2): lane 0 the state, lane 1 the
// state shifted by 0.25 (another configuration: the configuration cache sees a new q)
struct PairBuffers {
  explicit PairBuffers(const Model& m)
      : d(m), q(m.nq), qd(m.nv), qdd(m.nv), tau(m.nv), out(m.nv) {}
  DataTpl<D2> d;
  AVec<D2> q, qd, qdd, tau, out;
  void fill(const Model& m, const double* q0, const double* qd0, const double* qdd0,
            const double* tau0) {
    for (int k = 0; k < m.nq; ++k) q[k] = D2::lanes(q0[k], q0[k] + 0.25);
    for (int k = 0; k < m.nv; ++k) {
      qd[k] = D2::lanes(qd0[k], qd0[k] + 0.25);
      qdd[k] = D2::lanes(qdd0[k], qdd0[k] + 0.25);
      tau[k] = D2::lanes(tau0[k], tau0[k] + 0.25);
    }
  }
};
PairBuffers* g_pairs = nullptr;  // check_model's, made before the counters are armed
#endif

struct Tally {
  long calls = 0;
  long news[kAlgorithms] = {};
  long mallocs[kAlgorithms] = {};
  long eigen[kAlgorithms] = {};
};

// runs algorithm k once at (q, qd, qdd, tau), attributing any allocation to it
void run_one(int k, const Model& m, Data& d, const double* q, const double* qd,
             const double* qdd, const double* tau, Buffers& b, Tally& t,
             const std::string& mode) {
  const long n0 = g_news, m0 = g_mallocs, e0 = g_eigen_asserts;
  switch (k) {
    case 0: rnea(m, d, q, qd, qdd, b.tau.data()); break;
    case 1: kane(m, d, q, qd, qdd, b.tmp.data()); break;
    case 2:
      crba(m, d, q);
      for (int i = 0; i < m.n; ++i)
        for (int j = 0; j < m.n; ++j) b.M[i * m.n + j] = d.H(i, j);
      break;
    case 3: aba(m, d, q, qd, tau, b.qdd.data()); break;
    case 4: forward_dynamics_crba(m, d, q, qd, tau, b.qdd2.data()); break;
    case 5: kane_forward(m, d, q, qd, tau, b.tmp.data()); break;
    case 6: bias_torques(m, d, q, qd, b.bias.data()); break;
    case 7: gravity_torques(m, d, q, b.grav.data()); break;
    case 8: coriolis_matrix(m, d, q, qd, b.C.data()); break;
    case 9: forward_kinematics(m, d, q, b.fk.data()); break;
    case 10:
      for (int f = 0; f < static_cast<int>(m.frame_body.size()); ++f)
        jacobian(m, d, q, f, b.J.data());
      break;
    case 11: b.energy += kinetic_energy(m, d, q, qd); break;
    case 12: b.energy += potential_energy(m, d, q); break;
    case 13: update_kinematics(m, d, q, 2); detail::kane_inertia(m, d); break;
    case 14: rnea_derivatives(m, d, q, qd, qdd, b.D1.data(), b.D2.data()); break;
    case 15:
      forward_dynamics_derivatives(m, d, q, qd, tau, b.qdd2.data(), b.D1.data(), b.D2.data(),
                                   b.D3.data());
      break;
    case 16: regressor(m, d, q, qd, qdd, b.Y.data()); break;
    case 17: regressor_slotine_li(m, d, q, qd, qdd, tau, b.Y.data()); break;
#if defined(ROBODYN_HAVE_D2)
    case 18:
      g_pairs->fill(m, q, qd, qdd, tau);
      rnea(m, g_pairs->d, g_pairs->q.data(), g_pairs->qd.data(), g_pairs->qdd.data(),
           g_pairs->out.data());
      break;
    case 19:
      g_pairs->fill(m, q, qd, qdd, tau);
      aba(m, g_pairs->d, g_pairs->q.data(), g_pairs->qd.data(), g_pairs->tau.data(),
          g_pairs->out.data());
      break;
    case 20:
      g_pairs->fill(m, q, qd, qdd, tau);
      bias_torques(m, g_pairs->d, g_pairs->q.data(), g_pairs->qd.data(), g_pairs->out.data());
      break;
    case 21:
      g_pairs->fill(m, q, qd, qdd, tau);
      gravity_torques(m, g_pairs->d, g_pairs->q.data(), g_pairs->out.data());
      break;
#endif
    case 22:
      // the deliberate allocations of the self-check modes (the previous one is freed)
      if (mode == "--self-check-new") {
        delete[] static_cast<double*>(g_sink);
        g_sink = new double[64];
      }
      if (mode == "--self-check-malloc") {
        std::free(g_sink);
        g_sink = std::malloc(64);
      }
      if (mode == "--self-check-eigen") {
        Eigen::VectorXd v(64);
        g_sink = v.data();
      }
      break;
    default: break;
  }
  ++t.calls;
  t.news[k] += g_news - n0;
  t.mallocs[k] += g_mallocs - m0;
  t.eigen[k] += g_eigen_asserts - e0;
}

// the identities that show the guarded calls computed real results; "" when they hold
std::string check_results(const Model& m, Data& d, const double* q, const double* qd,
                          const double* qdd) {
  const int n = m.n;
  std::vector<double> tau(n), tau2(n), back(n), back2(n), back3(n), bias(n);
  rnea(m, d, q, qd, qdd, tau.data());
  kane(m, d, q, qd, qdd, tau2.data());
  aba(m, d, q, qd, tau.data(), back.data());
  forward_dynamics_crba(m, d, q, qd, tau.data(), back2.data());
  kane_forward(m, d, q, qd, tau.data(), back3.data());
  bias_torques(m, d, q, qd, bias.data());
  crba(m, d, q);
  double scale = 1, err = 0;
  for (int i = 0; i < n; ++i) scale = std::max(scale, std::abs(tau[i]));
  for (int i = 0; i < n; ++i) {
    double mq = bias[i] + m.damping[i + 1] * qd[i] +
                m.friction[i + 1] * (qd[i] > 0 ? 1.0 : qd[i] < 0 ? -1.0 : 0.0);
    for (int j = 0; j < n; ++j) mq += d.H(i, j) * qdd[j];
    err = std::max(err, std::abs(mq - tau[i]) / scale);
    err = std::max(err, std::abs(tau2[i] - tau[i]) / scale);
    for (const auto* x : {&back, &back2, &back3})
      err = std::max(err, std::abs((*x)[i] - qdd[i]) / std::max(1.0, std::abs(qdd[i])));
  }
  // dqdd/dtau = M^-1: its product with M is the identity
  std::vector<double> D1(n * n), D2(n * n), D3(n * n), qdd3(n);
  forward_dynamics_derivatives(m, d, q, qd, tau.data(), qdd3.data(), D1.data(), D2.data(),
                               D3.data());
  crba(m, d, q);
  for (int i = 0; i < n; ++i) {
    err = std::max(err, std::abs(qdd3[i] - qdd[i]) / std::max(1.0, std::abs(qdd[i])));
    for (int j = 0; j < n; ++j) {
      double x = 0;
      for (int k = 0; k < n; ++k) x += D3[i * n + k] * d.H(k, j);
      err = std::max(err, std::abs(x - (i == j ? 1.0 : 0.0)));
    }
  }
  if (!(err < 1e-8)) return "identity check failed (max relative error " + std::to_string(err) + ")";
  return "";
}

// the C++ simulation loop (computed torque at a zero-order hold, RK4, then semi-implicit Euler,
// with force elements): everything is sized before the counters are armed, Simulator::run
// must allocate nothing
int check_simulation(const char* label, const Model& m) {
  const int n = m.n;
  const long N = 200;
  std::vector<double> t(N + 1), kp(n, 100.0), kd(n, 20.0), q0(n, 0.1), qd0(n, 0.0);
  std::vector<unsigned char> control(N + 1, 0);
  for (long k = 0; k <= N; ++k) {
    t[k] = 1e-3 * k;
    control[k] = k % 2 == 0;
  }
  SimGrid grid;
  grid.t = t.data();
  grid.control = control.data();
  grid.N = N;
  SimRobot robot;
  robot.model = &m;
  // force elements (forces.hpp), in the plant's forward dynamics and the controller's inverse
  // dynamics: a spring-damper from the first body to the last, a rotational spring with a
  // stiffness curve, a wrench in body axes
  ForceSet forces;
  forces.curves.push_back(Curve{{-1.0, 0.0, 2.0}, {3.0, 1.0, 5.0}, {0.0, 0.7, 0.0}});
  TranslationalElement spring;
  spring.body1 = 1;
  spring.body2 = m.n;
  spring.p1 = Vec3(0.1, 0.0, 0.0);
  spring.p2 = Vec3(0.0, 0.05, 0.0);
  spring.k.value = 30.0;
  spring.c.value = 0.5;
  spring.l0 = 0.2;
  forces.springs.push_back(spring);
  RotationalElement rot;
  rot.body = 2;
  rot.k.curve = 0;
  rot.c.value = 0.1;
  forces.rotational.push_back(rot);
  WrenchElement wrench;
  wrench.body = m.n;
  wrench.world_axes = false;
  wrench.moment = Vec3(0.1, 0.0, -0.2);
  wrench.force = Vec3(0.0, 1.0, 0.5);
  forces.wrenches.push_back(wrench);
  robot.forces = &forces;
  SimController ctrl;
  ctrl.law = SimLaw::ComputedTorque;
  ctrl.robot = robot;
  ctrl.kp = kp.data();
  ctrl.kd = kd.data();
  const long rows = sim_control_calls(grid, SimIntegrator::RK4);
  std::vector<double> rq(rows * n, 0.2), rqd(rows * n, 0.0), rqdd(rows * n, 0.0);
  SimReference ref{rq.data(), rqd.data(), rqdd.data(), rows};
  std::vector<double> oq((N + 1) * n), oqd((N + 1) * n), otau((N + 1) * n);
  SimOutput out{oq.data(), oqd.data(), otau.data()};
  // joint stops below the reference (0.2 rad): the joints driven there hit them
  std::vector<double> lower(n, -1e300), upper(n, 0.15), hits(n, 0.0), excess(n, 0.0);
  SimLimits stops;
  stops.lower = lower.data();
  stops.upper = upper.data();
  stops.hits = hits.data();
  stops.excess = excess.data();
  int failures = 0;
  for (int run = 0; run < 4; ++run) {
    const SimIntegrator integrator = run % 2 ? SimIntegrator::SemiImplicitEuler
                                             : SimIntegrator::RK4;
    const bool limited = run >= 2;
    std::fill(hits.begin(), hits.end(), 0.0);
    Simulator sim(robot, SimForward::Aba, integrator, ctrl, limited ? stops : SimLimits());
    const long n0 = g_news, m0 = g_mallocs, e0 = g_eigen_asserts;
    Eigen::internal::set_is_malloc_allowed(false);
    g_armed = true;
    const SimResult res =
        sim.run(grid, ref, q0.data(), qd0.data(), out, 50, [](double) { return true; });
    g_armed = false;
    Eigen::internal::set_is_malloc_allowed(true);
    const long news = g_news - n0, mallocs = g_mallocs - m0, eigen = g_eigen_asserts - e0;
    // with the limits, steps ending at a stop must have been taken
    const double stopped = std::accumulate(hits.begin(), hits.end(), 0.0);
    if (news || mallocs || eigen || res.status != SimStatus::Ok || res.fd_calls == 0 ||
        (limited && !(stopped > 0.0))) {
      std::printf("FAIL %s: simulate (%s%s) allocated %ld new, %ld malloc, %ld Eigen asserts; "
                  "status %d, %ld forward-dynamics calls, %g steps at a stop\n", label,
                  integrator == SimIntegrator::RK4 ? "rk4" : "euler",
                  limited ? ", joint stops" : "", news, mallocs, eigen,
                  static_cast<int>(res.status), res.fd_calls, stopped);
      ++failures;
    }
  }
  // lu_solve (the systems of a floating robot's joint stops): allocates nothing, and solves
  std::mt19937_64 g(7);
  std::normal_distribution<double> N01(0.0, 1.0);
  std::vector<double> A(36), A0(36), B(12), B0(12);
  for (auto* v : {&A0, &B0})
    for (auto& x : *v) x = N01(g);
  A = A0;
  B = B0;
  const long n0 = g_news, m0 = g_mallocs;
  g_armed = true;
  const bool solved = lu_solve(6, A.data(), 2, B.data());
  g_armed = false;
  double residual = 0.0;
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 2; ++j) {
      double x = -B0[i * 2 + j];
      for (int k = 0; k < 6; ++k) x += A0[i * 6 + k] * B[k * 2 + j];
      residual = std::max(residual, std::abs(x));
    }
  if (!solved || g_news != n0 || g_mallocs != m0 || !(residual < 1e-10)) {
    std::printf("FAIL %s: lu_solve (solved %d, %ld new, %ld malloc, residual %g)\n", label,
                solved, g_news - n0, g_mallocs - m0, residual);
    ++failures;
  }
  return failures;
}

// warms up, then runs every algorithm at new and repeated states with the counters armed
int check_model(const char* label, const Model& m, const std::string& mode) {
  std::mt19937_64 g(1234);
  std::normal_distribution<double> N(0.0, 1.0);
  const int n = m.n, states = 4;
  std::vector<std::vector<double>> Q(states), QD(states), QDD(states), TAU(states);
  for (int s = 0; s < states; ++s) {
    for (auto* v : {&Q[s], &QD[s], &QDD[s], &TAU[s]}) {
      v->resize(n);
      for (auto& x : *v) x = N(g);
    }
  }
  Data d(m);
  Buffers b(m);
#if defined(ROBODYN_HAVE_D2)
  PairBuffers pairs(m);
  g_pairs = &pairs;
#endif
  Tally t;
  // warm-up: everything once, unguarded
  for (int k = 0; k < kAlgorithms; ++k)
    run_one(k, m, d, Q[0].data(), QD[0].data(), QDD[0].data(), TAU[0].data(), b, t, "");
  t = Tally();
  const long hits0 = d.cache_hits, misses0 = d.cache_misses;

  Eigen::internal::set_is_malloc_allowed(false);
  g_armed = true;
  for (int rep = 0; rep < 2; ++rep) {
    for (int s = 0; s < states; ++s) {
      // a new q first (a cache miss), then every algorithm twice at the same q (hits)
      for (int twice = 0; twice < 2; ++twice)
        for (int k = 0; k < kAlgorithms; ++k)
          run_one(k, m, d, Q[s].data(), QD[s].data(), QDD[s].data(), TAU[s].data(), b, t, mode);
      // the same algorithm alone at alternating q: a miss on every call
      for (int k = 0; k < kAlgorithms; ++k)
        for (int s2 = 0; s2 < states; ++s2)
          run_one(k, m, d, Q[s2].data(), QD[s2].data(), QDD[s2].data(), TAU[s2].data(), b, t,
                  mode);
    }
  }
  g_armed = false;
  Eigen::internal::set_is_malloc_allowed(true);
  if (g_sink) {
    // free the self-check allocation (with the function that made it)
    if (mode == "--self-check-new") delete[] static_cast<double*>(g_sink);
    if (mode == "--self-check-malloc") std::free(g_sink);
    g_sink = nullptr;
  }

  int failures = 0;
  for (int k = 0; k < kAlgorithms; ++k) {
    if (t.news[k] || t.mallocs[k] || t.eigen[k]) {
      std::printf("FAIL %s: %s allocated: %ld operator new, %ld malloc, %ld Eigen malloc "
                  "asserts\n", label, kNames[k], t.news[k], t.mallocs[k], t.eigen[k]);
      ++failures;
    }
  }
  if (g_eigen_asserts)
    std::printf("  last failed eigen_assert: %s (%s:%d)\n", g_eigen_what, g_eigen_file,
                g_eigen_line);
  const long hits = d.cache_hits - hits0, misses = d.cache_misses - misses0;
  if (hits == 0 || misses == 0) {
    std::printf("FAIL %s: the guarded calls did not exercise both cache paths "
                "(%ld hits, %ld misses)\n", label, hits, misses);
    ++failures;
  }
  for (int s = 0; s < states; ++s) {
    const std::string why = check_results(m, d, Q[s].data(), QD[s].data(), QDD[s].data());
    if (!why.empty()) {
      std::printf("FAIL %s: %s\n", label, why.c_str());
      ++failures;
    }
  }
  failures += check_simulation(label, m);
  std::printf("%s: n=%d, %ld guarded calls (%ld cache hits, %ld misses), %d failure(s)\n", label,
              n, t.calls, hits, misses, failures);
  return failures;
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

// every algorithm of a free-floating model at new and repeated states, counters armed; then
// FD(ID(a)) = a by the three forward dynamics, kane = rnea and difference(q, integrate(q, v))
// = v
int check_floating(const char* label, const Model& m, const std::string& mode) {
  std::mt19937_64 g(99);
  std::normal_distribution<double> N(0.0, 1.0);
  const int nq = m.nq, nv = m.nv, states = 3;
  std::vector<std::vector<double>> Q(states), V(states), A(states);
  for (int s = 0; s < states; ++s) {
    Q[s].resize(nq);
    V[s].resize(nv);
    A[s].resize(nv);
    for (auto& x : Q[s]) x = N(g);
    for (auto& x : V[s]) x = N(g);
    for (auto& x : A[s]) x = N(g);
    double n2 = 0;
    for (int k = 3; k < 7; ++k) n2 += Q[s][k] * Q[s][k];
    for (int k = 3; k < 7; ++k) Q[s][k] /= std::sqrt(n2);
  }
  Data d(m);
  std::vector<double> tau(nv), a1(nv), a2(nv), bias(nv), grav(nv), h(6), c(3), q1(nq), dv(nv),
      fk(16 * m.frame_body.size()), J(6 * nv), M(nv * nv), AG(6 * nv), tauk(nv), a3(nv),
      a4(nv), D1(nv * nv), D2(nv * nv), D3(nv * nv), Y(10 * m.n * nv);
  double energy = 0;
  const int kCalls = 23;
  const char* names[kCalls] = {"rnea", "crba", "aba", "forward_dynamics_crba", "bias_torques",
                               "gravity_torques", "forward_kinematics", "jacobian",
                               "kinetic_energy", "potential_energy", "momentum",
                               "center_of_mass", "integrate", "difference",
                               "centroidal_momentum_matrix", "kane", "kane_forward",
                               "kane_inertia", "rnea_derivatives",
                               "forward_dynamics_derivatives", "regressor",
                               "regressor_slotine_li", "self-check"};
  long news[kCalls] = {}, mallocs[kCalls] = {}, eigen[kCalls] = {};
  auto run = [&](int k, int s, bool armed) {
    const double *q = Q[s].data(), *v = V[s].data(), *a = A[s].data();
    const long n0 = g_news, m0 = g_mallocs, e0 = g_eigen_asserts;
    switch (k) {
      case 0: rnea(m, d, q, v, a, tau.data()); break;
      case 1:
        crba(m, d, q);
        for (int i = 0; i < nv; ++i)
          for (int j = 0; j < nv; ++j) M[i * nv + j] = d.H(i, j);
        break;
      case 2: aba(m, d, q, v, tau.data(), a1.data()); break;
      case 3: forward_dynamics_crba(m, d, q, v, tau.data(), a2.data()); break;
      case 4: bias_torques(m, d, q, v, bias.data()); break;
      case 5: gravity_torques(m, d, q, grav.data()); break;
      case 6: forward_kinematics(m, d, q, fk.data()); break;
      case 7:
        for (int f = 0; f < static_cast<int>(m.frame_body.size()); ++f)
          jacobian(m, d, q, f, J.data());
        break;
      case 8: energy += kinetic_energy(m, d, q, v); break;
      case 9: energy += potential_energy(m, d, q); break;
      case 10: momentum(m, d, q, v, h.data()); break;
      case 11: center_of_mass(m, d, q, c.data()); break;
      case 12: integrate(m, q, v, 0.01, q1.data()); break;
      case 13: difference(m, q, q1.data(), dv.data()); break;
      case 14: centroidal_momentum_matrix(m, d, q, AG.data()); break;
      case 15: kane(m, d, q, v, a, tauk.data()); break;
      case 16: kane_forward(m, d, q, v, tau.data(), a3.data()); break;
      case 17: update_kinematics(m, d, q, 1); detail::kane_inertia(m, d); break;
      case 18: rnea_derivatives(m, d, q, v, a, D1.data(), D2.data()); break;
      case 19:
        forward_dynamics_derivatives(m, d, q, v, tau.data(), a4.data(), D1.data(), D2.data(),
                                     D3.data());
        break;
      case 20: regressor(m, d, q, v, a, Y.data()); break;
      case 21: regressor_slotine_li(m, d, q, v, a, tau.data(), Y.data()); break;
      case 22:
        if (armed && mode == "--self-check-new") {
          delete[] static_cast<double*>(g_sink);
          g_sink = new double[64];
        }
        if (armed && mode == "--self-check-malloc") {
          std::free(g_sink);
          g_sink = std::malloc(64);
        }
        if (armed && mode == "--self-check-eigen") {
          Eigen::VectorXd x(64);
          g_sink = x.data();
        }
        break;
      default: break;
    }
    news[k] += g_news - n0;
    mallocs[k] += g_mallocs - m0;
    eigen[k] += g_eigen_asserts - e0;
  };
  for (int k = 0; k < kCalls; ++k) run(k, 0, false);  // warm-up
  for (int k = 0; k < kCalls; ++k) news[k] = mallocs[k] = eigen[k] = 0;
  const long hits0 = d.cache_hits, misses0 = d.cache_misses;
  Eigen::internal::set_is_malloc_allowed(false);
  g_armed = true;
  for (int s = 0; s < states; ++s) {
    for (int twice = 0; twice < 2; ++twice)
      for (int k = 0; k < kCalls; ++k) run(k, s, true);
    for (int k = 0; k < kCalls; ++k)
      for (int s2 = 0; s2 < states; ++s2) run(k, s2, true);
  }
  g_armed = false;
  Eigen::internal::set_is_malloc_allowed(true);
  if (g_sink) {
    if (mode == "--self-check-new") delete[] static_cast<double*>(g_sink);
    if (mode == "--self-check-malloc") std::free(g_sink);
    g_sink = nullptr;
  }
  int failures = 0;
  for (int k = 0; k < kCalls; ++k)
    if (news[k] || mallocs[k] || eigen[k]) {
      std::printf("FAIL %s: %s allocated: %ld operator new, %ld malloc, %ld Eigen malloc "
                  "asserts\n", label, names[k], news[k], mallocs[k], eigen[k]);
      ++failures;
    }
  const long hits = d.cache_hits - hits0, misses = d.cache_misses - misses0;
  if (hits == 0 || misses == 0) {
    std::printf("FAIL %s: both cache paths not exercised (%ld hits, %ld misses)\n", label,
                hits, misses);
    ++failures;
  }
  // the results are real: FD(ID(a)) = a by ABA, by CRBA + Cholesky and by Kane, Kane's ID
  // = rnea's; difference inverts integrate
  double err = 0;
  for (int s = 0; s < states; ++s) {
    rnea(m, d, Q[s].data(), V[s].data(), A[s].data(), tau.data());
    aba(m, d, Q[s].data(), V[s].data(), tau.data(), a1.data());
    forward_dynamics_crba(m, d, Q[s].data(), V[s].data(), tau.data(), a2.data());
    kane_forward(m, d, Q[s].data(), V[s].data(), tau.data(), a3.data());
    kane(m, d, Q[s].data(), V[s].data(), A[s].data(), tauk.data());
    integrate(m, Q[s].data(), V[s].data(), 0.3, q1.data());
    difference(m, Q[s].data(), q1.data(), dv.data());
    for (int i = 0; i < nv; ++i) {
      err = std::max(err, std::abs(a1[i] - A[s][i]) / std::max(1.0, std::abs(A[s][i])));
      err = std::max(err, std::abs(a2[i] - A[s][i]) / std::max(1.0, std::abs(A[s][i])));
      err = std::max(err, std::abs(a3[i] - A[s][i]) / std::max(1.0, std::abs(A[s][i])));
      err = std::max(err, std::abs(tauk[i] - tau[i]) / std::max(1.0, std::abs(tau[i])));
      err = std::max(err, std::abs(dv[i] - 0.3 * V[s][i]));
    }
    // dqdd/dtau M = 1 (the derivatives ran on the floating model)
    forward_dynamics_derivatives(m, d, Q[s].data(), V[s].data(), tau.data(), a4.data(),
                                 D1.data(), D2.data(), D3.data());
    crba(m, d, Q[s].data());
    for (int i = 0; i < nv; ++i)
      for (int j = 0; j < nv; ++j) {
        double x = 0;
        for (int k = 0; k < nv; ++k) x += D3[i * nv + k] * d.H(k, j);
        err = std::max(err, std::abs(x - (i == j ? 1.0 : 0.0)));
      }
  }
  if (!(err < 1e-8)) {
    std::printf("FAIL %s: identity check failed (max error %g)\n", label, err);
    ++failures;
  }
  std::printf("%s: nq=%d nv=%d, %ld cache hits, %ld misses, %d failure(s)\n", label, nq, nv,
              hits, misses, failures);
  return failures;
}

// crba into d.H writes only H's pattern when d.H holds zeros off it (DataTpl::M_pattern): after
// every other algorithm that writes d.H on the same Data (the Cholesky factor fills in, Kane
// writes one triangle, the L'L factor), crba's d.H must equal a fresh Data's, entry for entry
// (both triangles); crba_lower's lower triangle too. "" when it holds
std::string check_pattern_reuse(const Model& m) {
  const int nq = m.nq, nv = m.nv;
  std::mt19937 g(5);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> q(nq), qd(nv), tau(nv), out(nv), D1(nv * nv), D2(nv * nv), D3(nv * nv);
  Data d(m);
  auto fresh = [&](bool lower) {
    Data f(m);
    if (lower)
      detail::crba_lower(m, f, q.data());
    else
      crba(m, f, q.data());
    return Eigen::MatrixXd(f.H);
  };
  auto differs = [&](bool lower, const char* after) -> std::string {
    const Eigen::MatrixXd want = fresh(lower);
    for (int i = 0; i < nv; ++i)
      for (int j = 0; j <= (lower ? i : nv - 1); ++j)
        if (d.H(i, j) != want(i, j))
          return std::string(lower ? "crba_lower" : "crba") + " after " + after +
                 ": entry (" + std::to_string(i) + ", " + std::to_string(j) + ") differs";
    return "";
  };
  // each step: a new state, the writer under test, then crba (or crba_lower) on the same Data
  const char* steps[] = {"crba", "forward_dynamics_crba", "kane_forward",
                         "forward_dynamics_derivatives", "crba_lower"};
  for (int round = 0; round < 2; ++round)
    for (const char* step : steps) {
      for (auto& x : q) x = u(g);
      for (auto& x : qd) x = u(g);
      for (auto& x : tau) x = u(g);
      const std::string s = step;
      if (s == "crba") crba(m, d, q.data());
      if (s == "forward_dynamics_crba")
        forward_dynamics_crba(m, d, q.data(), qd.data(), tau.data(), out.data());
      if (s == "kane_forward") kane_forward(m, d, q.data(), qd.data(), tau.data(), out.data());
      if (s == "forward_dynamics_derivatives")
        forward_dynamics_derivatives(m, d, q.data(), qd.data(), tau.data(), out.data(),
                                     D1.data(), D2.data(), D3.data());
      if (s == "crba_lower") detail::crba_lower(m, d, q.data());
      for (auto& x : q) x = u(g);  // crba at another state than the writer's
      const bool lower = round == 1;
      if (lower)
        detail::crba_lower(m, d, q.data());
      else
        crba(m, d, q.data());
      const std::string e = differs(lower, step);
      if (!e.empty()) return e;
    }
  return "";
}

// the constrained algorithms (constraints/*.hpp) on a model with a weld between two bodies
// and a point to the world, at new and repeated states, counters armed; J qdd + gamma = 0
// checks that forward dynamics computed something
int check_constraints(const char* label, const Model& m) {
  // a fixed base: a point of the deepest body held to the world (generic axes: 3 independent
  // columns); a floating base: a weld of the last body to the world (the base's six columns)
  std::vector<LoopModel> loops(1);
  LoopModel& c = loops[0];
  int deepest = 1, depth = 0;
  for (int i = 1; i <= m.n; ++i) {
    int k = 0;
    for (int j = i; j > 0; j = m.parent[j]) ++k;
    if (k > depth) depth = k, deepest = i;
  }
  c.body1 = m.floating ? m.n : deepest;
  c.body2 = 0;
  c.p1 = Vec3(0.1, 0.2, 0.0);
  c.p2 = Vec3(0.3, -0.1, 0.2);
  c.nrows = m.floating ? 6 : 3;
  c.rows = m.floating ? std::array<int, 6>{0, 1, 2, 3, 4, 5} : std::array<int, 6>{3, 4, 5};
  c.kp = 10;
  c.kd = 2;
  c.name = "loop";
  const ConstraintModel cm = make_constraint_model(m, loops);
  Data d(m);
  ConstraintData cd(m, cm);
  std::mt19937_64 g(5);
  std::normal_distribution<double> N(0.0, 1.0);
  std::vector<double> q(m.nq), v(m.nv), tau(m.nv), qdd(m.nv), lam(cm.m), phi(cm.m),
      osim(cm.m * cm.m);
  long news = 0, mallocs = 0, eigen = 0;
  int failures = 0;
  for (int s = 0; s < 3; ++s) {
    for (auto& x : q) x = N(g);
    for (auto& x : v) x = N(g);
    for (auto& x : tau) x = N(g);
    if (m.floating) {
      double n2 = 0;
      for (int k = 3; k < 7; ++k) n2 += q[k] * q[k];
      for (int k = 3; k < 7; ++k) q[k] /= std::sqrt(n2);
    }
    for (int repeat = 0; repeat < 2; ++repeat) {
      const long n0 = g_news, m0 = g_mallocs, e0 = g_eigen_asserts;
      Eigen::internal::set_is_malloc_allowed(false);
      g_armed = true;
      constraint_residual(m, cm, d, cd, q.data(), phi.data());
      constraint_jacobian(m, cm, d, cd, q.data());
      constraint_bias(m, cm, d, cd, q.data(), v.data());
      operational_space_inverse_inertia(m, cm, d, cd, q.data(), osim.data());
      const ConstraintStatus st0 = constrained_forward_dynamics(
          m, cm, d, cd, q.data(), v.data(), tau.data(), 1e-6, 20, 1e-12, qdd.data(), lam.data());
      const ConstraintStatus st = constrained_forward_dynamics(
          m, cm, d, cd, q.data(), v.data(), tau.data(), 0.0, 1, 1e-12, qdd.data(), lam.data());
      g_armed = false;
      Eigen::internal::set_is_malloc_allowed(true);
      news += g_news - n0;
      mallocs += g_mallocs - m0;
      eigen += g_eigen_asserts - e0;
      if (st0 != ConstraintStatus::Ok || st != ConstraintStatus::Ok) {
        std::printf("FAIL %s constraints: forward dynamics failed\n", label);
        ++failures;
        continue;
      }
      // J qdd + gamma + kd J v + kp phi = 0
      constraint_jacobian(m, cm, d, cd, q.data());
      constraint_bias(m, cm, d, cd, q.data(), v.data());
      constraint_residual(m, cm, d, cd, q.data(), phi.data());
      double err = 0, scale = 1;
      for (int r = 0; r < cm.m; ++r) {
        double x = cd.gamma[r] + 2 * cd.Jv[r] + 10 * phi[r];
        for (int c = 0; c < m.nv; ++c) x += cd.J(r, c) * qdd[c];
        err = std::max(err, std::abs(x));
        scale = std::max(scale, std::abs(cd.gamma[r]));
      }
      if (err > 1e-9 * scale) {
        std::printf("FAIL %s constraints: |J qdd + gamma + ...| = %g\n", label, err);
        ++failures;
      }
    }
  }
  if (news || mallocs || eigen) {
    std::printf("FAIL %s constraints: %ld new, %ld malloc, %ld Eigen allocations\n", label, news,
                mallocs, eigen);
    ++failures;
  }
  std::printf("%s constraints: %d failure(s)\n", label, failures);
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (!mode.empty() && mode != "--self-check-new" && mode != "--self-check-malloc" &&
      mode != "--self-check-eigen") {
    std::printf("usage: %s [--self-check-new|--self-check-malloc|--self-check-eigen]\n", argv[0]);
    return 2;
  }
  std::printf("malloc hook: %s\n", ROBODYN_NOALLOC_MALLOC_HOOK ? "on" : "off");
  int failures = 0;
  failures += check_model("random tree", random_tree_model(20080101u), mode);
  failures += check_model("structured chain", structured_chain_model(7u), mode);
  failures += check_floating("floating tree", floating_tree_model(17u), mode);
  failures += check_constraints("random tree", random_tree_model(20080101u));
  failures += check_constraints("floating tree", floating_tree_model(17u));
  for (const auto& [label, model] :
       {std::pair<const char*, Model>{"random tree", random_tree_model(20080101u)},
        {"floating tree", floating_tree_model(17u)}}) {
    const std::string e = check_pattern_reuse(model);
    if (!e.empty()) {
      std::printf("FAIL %s: %s\n", label, e.c_str());
      ++failures;
    }
  }
  if (failures) {
    std::printf("test_noalloc: FAILED (%d)\n", failures);
    return 1;
  }
  std::printf("test_noalloc: OK, no heap allocation inside the algorithms\n");
  return 0;
}
