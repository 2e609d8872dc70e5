// Rigid-body and composite inertias, RBDA 2.13: I = (mass, h, Ibar) about a body's origin, in
// body axes (h = mass c the first moment, Ibar the rotational inertia about the origin); as a
// 6x6 matrix, [angular; linear],
//
//   I = [ Ibar    [h]x   ]
//       [ [h]x^T  mass 1 ]
//
// and a joint's motion subspace S in body coordinates: every column of S is a unit axis
// (revolute e_z, prismatic the linear e_z, a free-flyer all six), so I S picks columns of I
// without arithmetic.
#pragma once

#include <cstring>
#include <type_traits>

#include "robodyn/data.hpp"
#include "robodyn/model.hpp"
#include "robodyn/spatial.hpp"

namespace robodyn {

// A view of an inertia held in Data's three arrays (DataTpl::Im, Ih, II at one body)
template <class S>
struct InertiaRef {
  S& mass;
  V3T<S>& h;
  M3T<S>& Ibar;
};

// IC_i, the composite inertia of body i's subtree (crba, kane): a view of d's arrays
template <class S>
ROBODYN_INLINE InertiaRef<S> composite_inertia(DataTpl<S>& d, int i) {
  return {d.Im[i], d.Ih[i], d.II[i]};
}

namespace detail {

// index in [angular; linear] of the unit axis that is column k of a joint's S
inline int joint_axis(JointType t, int k) {
  switch (t) {
    case JointType::Revolute: return 2;
    case JointType::Prismatic: return 5;
    default: return k;
  }
}

// I e_s = (n, f) for an inertia (mass, h, Ibar) and the unit axis e_s of a 6-vector:
// (Ibar e, e x h) for an angular axis, (h x e, mass e) for a linear one (no arithmetic)
template <class S>
ROBODYN_INLINE void inertia_times_axis(const S& mass, const V3T<S>& h, const M3T<S>& Ibar, int s,
                                       V3T<S>& n, V3T<S>& f) {
  const S z(0);
  switch (s) {
    case 0: n = Ibar.col(0); f = V3T<S>(z, S(-h[2]), h[1]); break;
    case 1: n = Ibar.col(1); f = V3T<S>(h[2], z, S(-h[0])); break;
    case 2: n = Ibar.col(2); f = V3T<S>(S(-h[1]), h[0], z); break;
    case 3: n = V3T<S>(z, h[2], S(-h[1])); f = V3T<S>(mass, z, z); break;
    case 4: n = V3T<S>(S(-h[2]), z, h[0]); f = V3T<S>(z, mass, z); break;
    default: n = V3T<S>(h[1], S(-h[0]), z); f = V3T<S>(z, z, mass); break;
  }
}

// IC_i = I_i for every body (for double a copy of the model's arrays, bytes for bytes)
template <class S>
void set_rigid_inertias(const Model& m, DataTpl<S>& d) {
  if constexpr (std::is_same<S, double>::value) {
    const std::size_t n = std::size_t(m.n);
    std::memcpy(d.Im.data() + 1, m.mass.data() + 1, n * sizeof(double));
    std::memcpy(static_cast<void*>(d.Ih.data() + 1), m.h.data() + 1, n * sizeof(Vec3));
    std::memcpy(static_cast<void*>(d.II.data() + 1), m.Ibar.data() + 1, n * sizeof(Mat3));
  } else {
    for (int i = 1; i <= m.n; ++i) {
      d.Im[i] = S(m.mass[i]);
      d.Ih[i] = m.h[i].template cast<S>();
      d.II[i] = m.Ibar[i].template cast<S>();
    }
  }
}

}  // namespace detail

}  // namespace robodyn
