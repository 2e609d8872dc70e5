// The NumPy boundary of the binding units (bindings.cpp, simulate.cpp): one place that turns a
// Python argument into a float64 view, checks its shape and finiteness, and checks outputs.
//
// Rules (../shared/STYLE.md rule 8): a C-contiguous, aligned, native float64 array is used in
// place; anything else of a real kind (float, int, unsigned, bool arrays, and lists of real
// numbers) is converted once; complex, object, string and other kinds are refused with a
// ValueError naming the argument (a list of complex numbers as well as a complex array). A
// MemoryError raised while converting stays a MemoryError. Private to the binding units: the
// C++ core does not depend on Python.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

// the hot checks inline into the binding functions, their error paths stay out of line
#if defined(__GNUC__)
#define ROBODYN_BOUNDARY_INLINE inline __attribute__((always_inline))
#define ROBODYN_BOUNDARY_COLD inline __attribute__((noinline, cold))
#else
#define ROBODYN_BOUNDARY_INLINE inline
#define ROBODYN_BOUNDARY_COLD inline
#endif

namespace robodyn {
namespace boundary {

namespace py = pybind11;

[[noreturn]] inline void bad(const std::string& name, const std::string& why) {
  throw py::value_error(name + ": " + why);
}
[[noreturn]] inline void bad(const char* name, const std::string& why) {
  throw py::value_error(std::string(name) + ": " + why);
}

// Only public pybind11 API below: py::array's accessors read the array struct inline (no call
// into NumPy), so the checks of the hot path cost what the struct reads cost.

inline bool is_array(PyObject* o) { return py::isinstance<py::array>(o); }

// `o` (an array) as a py::array, for its accessors (a borrowed reference)
inline py::array array_of(PyObject* o) { return py::reinterpret_borrow<py::array>(o); }

// whether the data pointer is aligned for double: for a C-contiguous float64 array (every
// stride of an axis longer than 1 a multiple of 8) what NumPy's ALIGNED flag says
inline bool aligned(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) % alignof(double) == 0;
}

inline bool is_native_f64_c(PyObject* o) {
  if (!is_array(o)) return false;
  const py::array a = array_of(o);
  const py::dtype dt = a.dtype();
  // 'd': C double (float64); '>' big-endian, not this machine's order
  return dt.char_() == 'd' && dt.byteorder() != '>' && (a.flags() & py::array::c_style) &&
         aligned(a.data());
}

inline std::string shape_str(PyObject* o) {
  const py::array a = array_of(o);
  std::string s = "(";
  for (py::ssize_t k = 0; k < a.ndim(); ++k) {
    s += std::to_string(a.shape(k));
    if (a.ndim() == 1 || k + 1 < a.ndim()) s += k + 1 < a.ndim() ? ", " : ",";
  }
  return s + ")";
}

// "(rows,)" (cols < 0) or "(rows, cols)"; rows < 0 prints N
inline std::string shape_str(py::ssize_t rows, py::ssize_t cols) {
  const std::string r = rows < 0 ? "N" : std::to_string(rows);
  return "(" + r + (cols < 0 ? ",)" : ", " + std::to_string(cols) + ")");
}

// a Python error raised while converting an argument: a MemoryError (or KeyboardInterrupt) is
// rethrown, anything else is the argument's fault (the caller raises a ValueError)
inline void keep_fatal_error(py::error_already_set& e) {
  if (e.matches(PyExc_MemoryError) || e.matches(PyExc_KeyboardInterrupt)) throw;
}

// What an argument should be, for error messages: "an array of shape (rows,)" (cols < 0),
// "(rows, cols)", or with `either` "(rows,) or (N, rows)". Built into a string only when an
// error is raised: the hot path (a native float64 array of the right shape) formats nothing
// and allocates nothing.
struct Expect {
  py::ssize_t rows;
  py::ssize_t cols = -1;
  bool either = false;
  std::string shapes() const {
    return either ? shape_str(rows, -1) + " or " + shape_str(-1, rows) : shape_str(rows, cols);
  }
  std::string str() const { return "an array of shape " + shapes(); }
};

// The conversion path of as_f64 (h is not a C-contiguous native float64 array): out of line,
// so the fast path stays small.
inline py::object convert_f64(py::handle h, const char* name, const Expect& expect) {
  if (h.is_none()) bad(name, "expected " + expect.str() + ", got None");
  // the natural dtype first (a list of complex numbers is complex, not silently real)
  py::array arr;
  try {
    arr = py::array(py::reinterpret_borrow<py::object>(h));
  } catch (py::error_already_set& e) {
    keep_fatal_error(e);
    bad(name, "expected " + expect.str() + " (not convertible to an array)");
  }
  const char kind = arr.dtype().kind();
  if (kind != 'f' && kind != 'i' && kind != 'u' && kind != 'b')
    bad(name, "expected " + expect.str() + " of real numbers, got dtype kind '" + kind + "'");
  using F64 = py::array_t<double, py::array::c_style | py::array::forcecast>;
  F64 c;
  try {
    c = F64(arr);
  } catch (py::error_already_set& e) {
    keep_fatal_error(e);
    bad(name, "expected " + expect.str() + " of real numbers");
  }
  if (!aligned(c.data())) {
    // a float64 C-contiguous view at an odd address is used as is by NumPy: copy it
    F64 copy(std::vector<py::ssize_t>(c.shape(), c.shape() + c.ndim()));
    std::memcpy(copy.mutable_data(), c.data(), static_cast<size_t>(c.size()) * sizeof(double));
    return std::move(copy);
  }
  return std::move(c);
}

// h as a C-contiguous native float64 array (h itself when it already is one: no conversion,
// no reference-count traffic beyond the borrow). `expect` says what the argument should be,
// for the error message.
inline py::object as_f64(py::handle h, const char* name, const Expect& expect) {
  if (is_native_f64_c(h.ptr())) return py::reinterpret_borrow<py::object>(h);
  return convert_f64(h, name, expect);
}

inline const double* data_of(const py::object& a) {
  return static_cast<const double*>(array_of(a.ptr()).data());
}

// whether p[0..count) are all finite: x - x is a zero for a finite x (+0, or -0 when the
// rounding mode is downward) and NaN for an infinity or NaN, so the OR of the bits of every
// x - x but the sign is zero exactly when all are finite. No branch per element: the loop
// vectorises (a whole batch is one pass).
inline bool all_finite(const double* p, py::ssize_t count) {
  std::uint64_t acc = 0;
  for (py::ssize_t k = 0; k < count; ++k) {
    const double z = p[k] - p[k];
    std::uint64_t bits;
    std::memcpy(&bits, &z, sizeof bits);
    acc |= bits;
  }
  return (acc & 0x7fffffffffffffffULL) == 0;
}

// the error of check_finite: names the first non-finite value's row and entry (or index).
// Out of line, so the check itself inlines into its callers.
[[noreturn]] ROBODYN_BOUNDARY_COLD void not_finite(
    const double* p, py::ssize_t count, const char* name, const Expect& expect,
    py::ssize_t width) {
  py::ssize_t k = 0;
  while (k < count && std::isfinite(p[k])) ++k;
  const std::string where = width > 0 ? "row " + std::to_string(k / width) + ", entry " +
                                            std::to_string(k % width)
                                      : "index " + std::to_string(k);
  bad(name, "contains NaN or inf at " + where + " (expected finite values, shape " +
                expect.shapes() + ")");
}

// count values, rows of `width` (width 0: one flat array), all finite, else a ValueError
ROBODYN_BOUNDARY_INLINE void check_finite(const double* p, py::ssize_t count, const char* name,
                                          const Expect& expect, py::ssize_t width = 0) {
  if (!all_finite(p, count)) not_finite(p, count, name, expect, width);
}

// A float64 view of one state argument: (n,) (rows = 1, batch = false) or (N, n) (a batch).
struct Input {
  const double* p = nullptr;
  py::ssize_t rows = 1;
  bool batch = false;
  py::object keep;  // the array read: the caller's, or a converted copy
};

// q-like argument: shape (n,) or (N, n), finite float values
inline Input get_input(py::handle h, const char* name, int n) {
  const Expect expect{n, -1, true};
  Input in;
  in.keep = as_f64(h, name, expect);
  PyObject* o = in.keep.ptr();
  const py::array a = array_of(o);
  const py::ssize_t* dims = a.shape();
  if (a.ndim() == 1 && dims[0] == n) {
    in.rows = 1;
  } else if (a.ndim() == 2 && dims[1] == n) {
    in.rows = dims[0];
    in.batch = true;
  } else {
    bad(name, "expected shape " + expect.shapes() + ", got " + shape_str(o));
  }
  in.p = data_of(in.keep);
  check_finite(in.p, in.rows * n, name, expect, in.batch ? n : 0);
  return in;
}

// An input of exactly shape (rows,) (cols < 0) or (rows, cols), finite. None gives nullptr
// when allowed. The array read is kept in `keep`.
inline const double* get_fixed(py::handle h, const char* name, py::ssize_t rows,
                               py::ssize_t cols, py::object& keep, bool allow_none = false) {
  if (h.is_none() && allow_none) return nullptr;
  const Expect expect{rows, cols, false};
  keep = as_f64(h, name, expect);
  const py::array a = array_of(keep.ptr());
  const bool ok = cols < 0 ? (a.ndim() == 1 && a.shape(0) == rows)
                           : (a.ndim() == 2 && a.shape(0) == rows && a.shape(1) == cols);
  if (!ok) bad(name, "expected shape " + expect.shapes() + ", got " + shape_str(keep.ptr()));
  const double* p = data_of(keep);
  check_finite(p, cols < 0 ? rows : rows * cols, name, expect, cols < 0 ? 0 : cols);
  return p;
}

// A writeable C-contiguous float64 array of exactly `nd` dimensions `dims`, written in place.
inline double* get_writeable(py::handle h, const char* name, int nd, const Py_intptr_t* dims) {
  PyObject* o = h.ptr();
  if (!is_native_f64_c(o)) bad(name, "must be a C-contiguous float64 numpy array");
  py::array a = array_of(o);
  if (!a.writeable()) bad(name, "is not writeable");
  bool ok = a.ndim() == nd;
  for (int k = 0; ok && k < nd; ++k) ok = a.shape(k) == dims[k];
  if (!ok) {
    std::string s = "(";
    for (int k = 0; k < nd; ++k) s += std::to_string(dims[k]) + (k + 1 < nd ? ", " : nd == 1 ? "," : "");
    bad(name, "expected shape " + s + "), got " + shape_str(o));
  }
  return static_cast<double*>(a.mutable_data());
}

// whether the byte ranges [a, a + na) and [b, b + nb) share memory
inline bool overlaps(const double* a, py::ssize_t na, const double* b, py::ssize_t nb) {
  if (na <= 0 || nb <= 0) return false;
  const auto a0 = reinterpret_cast<std::uintptr_t>(a), b0 = reinterpret_cast<std::uintptr_t>(b);
  return a0 < b0 + static_cast<std::uintptr_t>(nb) * sizeof(double) &&
         b0 < a0 + static_cast<std::uintptr_t>(na) * sizeof(double);
}

}  // namespace boundary
}  // namespace robodyn
