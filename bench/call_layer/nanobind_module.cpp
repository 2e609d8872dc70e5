// robodyn's rnea through nanobind (bench/bench_call_layer.py): a class holding a
// call_layer::Core with methods taking nb::ndarray or Eigen references, the same checks as
// robodyn's fast call, and an empty method (the boundary without the dynamics).
#include <nanobind/eigen/dense.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include "core.hpp"

namespace nb = nanobind;
using call_layer::Core;
using In = nb::ndarray<const double, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using Out = nb::ndarray<double, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using Result = nb::ndarray<nb::numpy, double, nb::ndim<1>>;
using ERef = nb::DRef<const Eigen::VectorXd>;

namespace {

void check(const Core& c, const In& q, const In& qd, const In& qdd) {
  c.check(q.data(), static_cast<long>(q.shape(0)), qd.data(), static_cast<long>(qd.shape(0)),
          qdd.data(), static_cast<long>(qdd.shape(0)));
}

// a new NumPy array of n doubles owned by a capsule (nanobind's way of returning memory)
Result new_result(size_t n, double** p) {
  *p = new double[n];
  nb::capsule owner(*p, [](void* x) noexcept { delete[] static_cast<double*>(x); });
  return Result(*p, {n}, owner);
}

}  // namespace

NB_MODULE(call_layer_nanobind, m) {
  m.doc() = "robodyn's rnea through nanobind (bench/bench_call_layer.py)";
  nb::class_<Core>(m, "Core")
      .def(nb::init<const std::string&>(), nb::arg("case_path"))
      .def_prop_ro("nq", [](const Core& c) { return c.model.nq; })
      .def_prop_ro("nv", [](const Core& c) { return c.model.nv; })
      // nb::ndarray inputs, a new NumPy array as the result
      .def("inverse_dynamics",
           [](Core& c, const In& q, const In& qd, const In& qdd) {
             check(c, q, qd, qdd);
             double* tau;
             Result r = new_result(c.model.nv, &tau);
             c.rnea(q.data(), qd.data(), qdd.data(), tau);
             return r;
           },
           nb::arg("q"), nb::arg("qd"), nb::arg("qdd"))
      // the result written into a writeable nb::ndarray (passed by keyword, out=)
      .def("inverse_dynamics_out",
           [](Core& c, const In& q, const In& qd, const In& qdd, Out out) {
             check(c, q, qd, qdd);
             const long nv = c.model.nv;
             if (static_cast<long>(out.shape(0)) != nv)
               throw std::invalid_argument("out: expected shape (" + std::to_string(nv) + ",)");
             for (const In* x : {&q, &qd, &qdd})
               if (call_layer::overlaps(x->data(), x->shape(0), out.data(), nv))
                 throw std::invalid_argument("out: shares memory with an input");
             c.rnea(q.data(), qd.data(), qdd.data(), out.data());
           },
           nb::arg("q"), nb::arg("qd"), nb::arg("qdd"), nb::kw_only(), nb::arg("out"))
      // Eigen::Ref inputs (nb::DRef), a new Eigen vector as the result
      .def("inverse_dynamics_eigen",
           [](Core& c, const ERef& q, const ERef& qd, const ERef& qdd) {
             c.check(q.data(), q.size(), qd.data(), qd.size(), qdd.data(), qdd.size());
             Eigen::VectorXd tau(c.model.nv);
             c.rnea(q.data(), qd.data(), qdd.data(), tau.data());
             return tau;
           },
           nb::arg("q"), nb::arg("qd"), nb::arg("qdd"))
      // inverse_dynamics without the dynamics: the arguments, the checks, the result array
      .def("empty",
           [](Core& c, const In& q, const In& qd, const In& qdd) {
             check(c, q, qd, qdd);
             double* tau;
             Result r = new_result(c.model.nv, &tau);
             std::copy(qdd.data(), qdd.data() + c.model.nv, tau);
             return r;
           },
           nb::arg("q"), nb::arg("qd"), nb::arg("qdd"))
      // the dispatch alone: three arguments taken as they come, None returned
      .def("dispatch", [](Core&, nb::handle, nb::handle, nb::handle) {},
           nb::arg("q"), nb::arg("qd"), nb::arg("qdd"));
}
