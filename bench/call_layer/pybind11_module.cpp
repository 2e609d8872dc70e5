// robodyn's rnea through pybind11's ordinary entry points (bench/bench_call_layer.py): a class
// holding a call_layer::Core with methods taking Eigen::Ref or py::array_t arguments, the same
// checks as robodyn's fast call, and an empty method (the boundary without the dynamics).
#include <pybind11/eigen.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "core.hpp"

namespace py = pybind11;
using call_layer::Core;
using In = Eigen::Ref<const Eigen::VectorXd>;
using Out = Eigen::Ref<Eigen::VectorXd>;
using Arr = py::array_t<double, py::array::c_style | py::array::forcecast>;

namespace {

void check(const Core& c, const In& q, const In& qd, const In& qdd) {
  c.check(q.data(), q.size(), qd.data(), qd.size(), qdd.data(), qdd.size());
}

void check_out(const In& q, const In& qd, const In& qdd, const Out& out, long nv) {
  if (out.size() != nv) throw std::invalid_argument("out: expected shape (" +
                                                    std::to_string(nv) + ",)");
  for (const In* x : {&q, &qd, &qdd})
    if (call_layer::overlaps(x->data(), x->size(), out.data(), out.size()))
      throw std::invalid_argument("out: shares memory with an input");
}

const double* data_1d(const Arr& a, const char* name) {
  if (a.ndim() != 1) throw std::invalid_argument(std::string(name) + ": expected one dimension");
  return a.data();
}

// a METH_FASTCALL entry point taking three positional arguments and returning None: the
// floor of a hand-made vectorcall entry (what robodyn's fast calls build on)
PyObject* fastcall_dispatch(PyObject*, PyObject* const*, Py_ssize_t nargs, PyObject* kwnames) {
  if (nargs != 3 || (kwnames && PyTuple_GET_SIZE(kwnames) != 0)) {
    PyErr_SetString(PyExc_TypeError, "fastcall_dispatch() takes 3 positional arguments");
    return nullptr;
  }
  Py_RETURN_NONE;
}

PyMethodDef kFastcallDispatch = {
    "fastcall_dispatch",
    reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(fastcall_dispatch)),
    METH_FASTCALL | METH_KEYWORDS, "fastcall_dispatch(q, qd, qdd) -> None"};

}  // namespace

PYBIND11_MODULE(call_layer_pybind11, m) {
  m.doc() = "robodyn's rnea through pybind11 (bench/bench_call_layer.py)";
  py::class_<Core> cls(m, "Core");
  cls
      .def(py::init<const std::string&>(), py::arg("case_path"))
      .def_property_readonly("nq", [](const Core& c) { return c.model.nq; })
      .def_property_readonly("nv", [](const Core& c) { return c.model.nv; })
      // Eigen::Ref inputs, a new Eigen vector as the result
      .def("inverse_dynamics",
           [](Core& c, const In& q, const In& qd, const In& qdd) {
             check(c, q, qd, qdd);
             Eigen::VectorXd tau(c.model.nv);
             c.rnea(q.data(), qd.data(), qdd.data(), tau.data());
             return tau;
           },
           py::arg("q"), py::arg("qd"), py::arg("qdd"))
      // the result written into a writeable Eigen::Ref (passed by keyword, out=)
      .def("inverse_dynamics_out",
           [](Core& c, const In& q, const In& qd, const In& qdd, Out out) {
             check(c, q, qd, qdd);
             check_out(q, qd, qdd, out, c.model.nv);
             c.rnea(q.data(), qd.data(), qdd.data(), out.data());
           },
           py::arg("q"), py::arg("qd"), py::arg("qdd"), py::kw_only(), py::arg("out"))
      // py::array_t inputs (C-contiguous float64, converted when not), a new py::array_t
      .def("inverse_dynamics_array",
           [](Core& c, const Arr& q, const Arr& qd, const Arr& qdd) {
             const double *pq = data_1d(q, "q"), *pv = data_1d(qd, "qd"),
                          *pa = data_1d(qdd, "qdd");
             c.check(pq, q.shape(0), pv, qd.shape(0), pa, qdd.shape(0));
             py::array_t<double> tau(c.model.nv);
             c.rnea(pq, pv, pa, tau.mutable_data());
             return tau;
           },
           py::arg("q"), py::arg("qd"), py::arg("qdd"))
      // inverse_dynamics without the dynamics: the arguments, the checks, the result array
      .def("empty",
           [](Core& c, const In& q, const In& qd, const In& qdd) {
             check(c, q, qd, qdd);
             Eigen::VectorXd tau = qdd;
             return tau;
           },
           py::arg("q"), py::arg("qd"), py::arg("qdd"))
      // the dispatch alone: three arguments taken as they come, None returned
      .def("dispatch", [](Core&, py::handle, py::handle, py::handle) {},
           py::arg("q"), py::arg("qd"), py::arg("qdd"))
      // robodyn's rnea in a C++ loop over the rows of Q, V, A (no Python between the calls)
      .def("loop_ns",
           [](Core& c, const Arr& Q, const Arr& V, const Arr& A, long reps) {
             const bool ok = Q.ndim() == 2 && V.ndim() == 2 && A.ndim() == 2 &&
                             Q.shape(1) == c.model.nq && V.shape(1) == c.model.nv &&
                             A.shape(1) == c.model.nv && Q.shape(0) == V.shape(0) &&
                             A.shape(0) == V.shape(0) && V.shape(0) >= 1 && reps >= 1;
             if (!ok)
               throw std::invalid_argument("loop_ns: expected Q (N, nq), V, A (N, nv), reps > 0");
             const long rows = V.shape(0);
             return c.loop_ns(Q.data(), V.data(), A.data(), rows, reps);
           },
           py::arg("Q"), py::arg("V"), py::arg("A"), py::arg("reps"));
  // a method descriptor on the class, as robodyn._core installs its fast calls
  PyObject* descr = PyDescr_NewMethod(reinterpret_cast<PyTypeObject*>(cls.ptr()),
                                      &kFastcallDispatch);
  if (!descr || PyObject_SetAttrString(cls.ptr(), kFastcallDispatch.ml_name, descr) < 0)
    throw py::error_already_set();
  Py_DECREF(descr);
  m.def("callgrind_start", &call_layer::callgrind_start);
  m.def("callgrind_zero", &call_layer::callgrind_zero);
  m.def("callgrind_dump", [](const std::string& label) {
    call_layer::callgrind_dump(label.c_str());
  });
  m.def("under_valgrind", &call_layer::under_valgrind);
}
