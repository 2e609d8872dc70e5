// The algorithms' explicit instantiations, one group per macro and scalar. Each group of each
// scalar is compiled in its own unit (cpp/src/instances/*.cpp: `ROBODYN_X(, S)`, a definition),
// so the build compiles them in parallel and with their own flags (CMakeLists.txt); the units
// that call them (bindings.cpp, simulate.cpp, opcount.cpp, codegen.cpp) include this header and
// see only the declarations (`ROBODYN_X(extern, S)`), so they compile no copy of their own.
// A unit that instantiates a group does not include the declarations: what the group calls
// inside (a sweep, update_kinematics) is compiled and inlined there as before.
#pragma once

#include "robodyn/algorithms/aba.hpp"
#include "robodyn/algorithms/centroidal.hpp"
#include "robodyn/algorithms/coriolis.hpp"
#include "robodyn/algorithms/crba.hpp"
#include "robodyn/algorithms/kane.hpp"
#include "robodyn/algorithms/kinematics.hpp"
#include "robodyn/algorithms/momentum.hpp"
#include "robodyn/algorithms/regressor.hpp"
#include "robodyn/algorithms/rnea.hpp"
#include "robodyn/algorithms/rnea_derivatives.hpp"
#include "robodyn/model/data.hpp"
#include "robodyn/model/model.hpp"

// Newton-Euler: inverse dynamics, bias and gravity torques
#define ROBODYN_RNEA(X, S)                                                                 \
  X template void rnea<S>(const Model&, DataTpl<S>&, const S*, const S*, const S*, S*);  \
  X template void bias_torques<S>(const Model&, DataTpl<S>&, const S*, const S*, S*);    \
  X template void gravity_torques<S>(const Model&, DataTpl<S>&, const S*, S*)

// articulated-body forward dynamics
#define ROBODYN_ABA(X, S) \
  X template bool aba<S>(const Model&, DataTpl<S>&, const S*, const S*, const S*, S*)

// composite rigid bodies: the mass matrix (both triangles), and its lower triangle with forward
// dynamics by its Cholesky factor; two groups, each with one of crba_sweep's two
// instantiations, the costliest code to compile (docs/build.md)
#define ROBODYN_CRBA(X, S)                                \
  X template void crba<S>(const Model&, DataTpl<S>&, const S*); \
  X template void crba<S>(const Model&, DataTpl<S>&, const S*, S*)
#define ROBODYN_CRBA_LOWER(X, S)                                                            \
  X template void detail::crba_lower<S>(const Model&, DataTpl<S>&, const S*);             \
  X template bool forward_dynamics_crba<S>(const Model&, DataTpl<S>&, const S*, const S*, \
                                           const S*, S*)

// Kane's equations
#define ROBODYN_KANE(X, S)                                                                    \
  X template void kane<S>(const Model&, DataTpl<S>&, const S*, const S*, const S*, S*);     \
  X template bool kane_forward<S>(const Model&, DataTpl<S>&, const S*, const S*, const S*, \
                                  S*);                                                      \
  X template void detail::kane_inertia<S>(const Model&, DataTpl<S>&)

// the derivatives of inverse and forward dynamics
#define ROBODYN_DERIVATIVES(X, S)                                                          \
  X template void rnea_derivatives<S>(const Model&, DataTpl<S>&, const S*, const S*,    \
                                      const S*, S*, S*);                                 \
  X template bool forward_dynamics_derivatives<S>(const Model&, DataTpl<S>&, const S*, \
                                                  const S*, const S*, S*, S*, S*, S*)

// the torque regressor
#define ROBODYN_REGRESSOR(X, S) \
  X template void regressor<S>(const Model&, DataTpl<S>&, const S*, const S*, const S*, S*)

// kinematics and the quantities built on it
#define ROBODYN_KINEMATICS(X, S)                                                              \
  X template void update_kinematics<S>(const Model&, DataTpl<S>&, const S*, int);            \
  X template void forward_kinematics<S>(const Model&, DataTpl<S>&, const S*, S*);            \
  X template void jacobian<S>(const Model&, DataTpl<S>&, const S*, int, S*);                 \
  X template S kinetic_energy<S>(const Model&, DataTpl<S>&, const S*, const S*);             \
  X template S potential_energy<S>(const Model&, DataTpl<S>&, const S*);                     \
  X template void momentum<S>(const Model&, DataTpl<S>&, const S*, const S*, S*);            \
  X template bool center_of_mass<S>(const Model&, DataTpl<S>&, const S*, S*);                \
  X template bool centroidal_momentum_matrix<S>(const Model&, DataTpl<S>&, const S*, S*);    \
  X template void coriolis_matrix<S>(const Model&, DataTpl<S>&, const S*, const S*, S*)

// every group above for scalar S: ROBODYN_ALL_GROUPS(extern, double) in a unit that calls them
// all (bindings.cpp, opcount.cpp) compiles none of them
#define ROBODYN_ALL_GROUPS(X, S) \
  ROBODYN_RNEA(X, S);            \
  ROBODYN_ABA(X, S);             \
  ROBODYN_CRBA(X, S);            \
  ROBODYN_CRBA_LOWER(X, S);      \
  ROBODYN_KANE(X, S);            \
  ROBODYN_DERIVATIVES(X, S);     \
  ROBODYN_REGRESSOR(X, S);       \
  ROBODYN_KINEMATICS(X, S)

// the algorithms of robodyn::run_algorithm (algorithms.hpp) for the counting and tracing
// scalars: update_kinematics for the mass matrix by Kane's method
#define ROBODYN_UPDATE_KINEMATICS(X, S) \
  X template void update_kinematics<S>(const Model&, DataTpl<S>&, const S*, int)
