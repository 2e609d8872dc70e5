// TEMPORARY placeholder until the recursive Kane implementation lands (being written now).
#pragma once
#include "robodyn/aba.hpp"
#include "robodyn/crba.hpp"
#include "robodyn/rnea.hpp"
namespace robodyn {
template <class S>
void kane(const Model& m, DataTpl<S>& d, const S* q, const S* qd, const S* qdd, S* tau) {
  rnea(m, d, q, qd, qdd, tau);
}
template <class S>
bool kane_forward(const Model& m, DataTpl<S>& d, const S* q, const S* qd, const S* tau, S* qdd) {
  return forward_dynamics_crba(m, d, q, qd, tau, qdd);
}
}  // namespace robodyn
