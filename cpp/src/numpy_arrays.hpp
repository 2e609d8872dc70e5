// The result arrays of robodyn._core's bindings: an array shape kept on the stack, new float64
// arrays made by NumPy's own constructor, and the `out=` array of a call (checked, or a new one).
// The inputs are numpy_boundary.hpp's.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "numpy_boundary.hpp"

namespace robodyn_py {

namespace py = pybind11;

// an array shape of at most 4 dimensions, kept on the stack
struct Shape {
  int nd = 0;
  Py_intptr_t dim[4] = {0, 0, 0, 0};
  Shape() = default;
  Shape(std::initializer_list<py::ssize_t> d) {
    for (auto x : d) dim[nd++] = x;
  }
  size_t size() const { return static_cast<size_t>(nd); }
  Py_intptr_t operator[](size_t k) const { return dim[k]; }
  py::ssize_t prod() const {
    py::ssize_t p = 1;
    for (int k = 0; k < nd; ++k) p *= dim[k];
    return p;
  }
};

// NumPy's constructor of new arrays. pybind11's public constructors (py::array_t(shape)) pass
// shape and strides in heap-allocated vectors: about 470 instructions more per call than
// NumPy's own PyArray_NewFromDescr, a tenth of a small call. So result arrays are made by that
// function, taken from the table NumPy publishes for C extensions (the `_ARRAY_API` capsule of
// numpy's multiarray module; slots 2 PyArray_Type, 45 PyArray_DescrFromType and 94
// PyArray_NewFromDescr of numpy's __multiarray_api.h, the same in NumPy 1 and 2). The table is
// checked once (its array type must be numpy.ndarray); if it does not match, the arrays come
// from pybind11's public constructor.
class NumpyNew {
 public:
  static const NumpyNew& get() {
    static const NumpyNew api;
    return api;
  }
  // a new C-contiguous float64 array of nd dimensions dims, or null (then use pybind11)
  PyObject* empty(int nd, const Py_intptr_t* dims) const {
    if (!new_from_descr_) return nullptr;
    // NumPy's float64 descriptor, looked up once (a builtin, never freed); the constructor
    // steals a reference
    Py_INCREF(double_);
    PyObject* a = new_from_descr_(type_, double_, nd, dims, nullptr, nullptr, 0, nullptr);
    if (!a) throw py::error_already_set();
    return a;
  }

 private:
  static constexpr int kDouble = 12;  // NPY_DOUBLE
  NumpyNew() {
    py::module_ numpy = py::module_::import("numpy");
    const bool v2 = numpy.attr("__version__").cast<std::string>()[0] != '1';
    py::object table = py::module_::import(v2 ? "numpy._core.multiarray" : "numpy.core.multiarray")
                           .attr("_ARRAY_API");
    void** api = static_cast<void**>(PyCapsule_GetPointer(table.ptr(), nullptr));
    if (!api) {
      PyErr_Clear();
      return;
    }
    if (api[2] != numpy.attr("ndarray").ptr()) return;
    type_ = static_cast<PyTypeObject*>(api[2]);
    auto descr_from_type = reinterpret_cast<PyObject* (*)(int)>(api[45]);
    double_ = descr_from_type(kDouble);  // a new reference, kept
    if (!double_) {
      PyErr_Clear();
      return;
    }
    new_from_descr_ = reinterpret_cast<decltype(new_from_descr_)>(api[94]);
  }
  PyTypeObject* type_ = nullptr;
  PyObject* double_ = nullptr;
  PyObject* (*new_from_descr_)(PyTypeObject*, PyObject*, int, const Py_intptr_t*,
                               const Py_intptr_t*, void*, int, PyObject*) = nullptr;
};

// a new C-contiguous float64 array
inline py::array_t<double> new_array(const Shape& shape) {
  if (PyObject* a = NumpyNew::get().empty(shape.nd, shape.dim))
    return py::reinterpret_steal<py::array_t<double>>(a);
  return py::array_t<double>(std::vector<py::ssize_t>(shape.dim, shape.dim + shape.nd));
}

// the output array: `out` checked against shape, or a new one
inline py::object get_output(py::handle out, const Shape& shape, double** p) {
  if (out.is_none()) {
    py::array_t<double> a = new_array(shape);
    *p = a.mutable_data();
    return std::move(a);
  }
  *p = robodyn::boundary::get_writeable(out, "out", shape.nd, shape.dim);
  return py::reinterpret_borrow<py::object>(out);
}

}  // namespace robodyn_py
