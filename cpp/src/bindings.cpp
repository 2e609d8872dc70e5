// Python bindings: robodyn._core.
//
// The hot entry points read numpy buffers directly (no Eigen::Ref casters, no copies when the
// input already is a C-contiguous float64 array), check shape and finiteness once, and
// dispatch single states or (N, n) batches; batches run with the GIL released, optionally on
// several threads, each with its own Data.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "robodyn/aba.hpp"
#include "robodyn/centroidal.hpp"
#include "robodyn/codegen.hpp"
#include "robodyn/coriolis.hpp"
#include "robodyn/crba.hpp"
#include "robodyn/momentum.hpp"
#include "robodyn/joint.hpp"
#include "robodyn/kane.hpp"
#include "robodyn/kinematics.hpp"
#include "robodyn/model.hpp"
#include "robodyn/opcount.hpp"
#include "robodyn/regressor.hpp"
#include "robodyn/rnea.hpp"
#include "robodyn/rnea_derivatives.hpp"
#include "robodyn/simulate.hpp"
#include "instances.hpp"
#include "numpy_boundary.hpp"

// the algorithms are compiled in their own units (instances.hpp)
namespace robodyn {
ROBODYN_ALL_GROUPS(extern, double);
#if defined(ROBODYN_HAVE_D2)
ROBODYN_RNEA(extern, D2);
ROBODYN_ABA(extern, D2);
#endif
}  // namespace robodyn

namespace py = pybind11;
using namespace robodyn;
using boundary::bad;
using boundary::get_input;
using boundary::Input;

// simulate.cpp: _core._simulate_fixed; `view` gives a RobotCore's model and generated kernels
void register_simulation(py::module_& m, SimHeld (*view)(py::handle));
// constraints_bindings.cpp: _core.ConstraintSystem; `model_of` gives a RobotCore's model
void register_constraints(py::module_& m, std::shared_ptr<const Model> (*model_of)(py::handle));
void register_forces(py::module_& m, SimHeld (*view)(py::handle));  // forces_bindings.cpp
const robodyn::ForceSet* force_set_of(py::handle robot);            // forces_bindings.cpp

namespace {

std::atomic<int> g_threads{1};

// RobotCore::run without a two-row (D2) kernel
struct NoPair {};

// the fewest rows of a batch that runs two rows per sweep (RobotCore::run's `pair`): below
// it, making the two-row workspace (~2 us) costs more than the sweeps save (measured: 2 and
// 8 rows were 1.5-2.2x slower with it, 64 rows 1.5-1.9x faster)
constexpr py::ssize_t kPairRows = 16;

// a base quaternion q[3:7] whose norm is within this of 1 is normalised where it is used;
// farther is an error
constexpr double kQuaternionTolerance = 1e-6;

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
py::array_t<double> new_array(const Shape& shape) {
  if (PyObject* a = NumpyNew::get().empty(shape.nd, shape.dim))
    return py::reinterpret_steal<py::array_t<double>>(a);
  return py::array_t<double>(std::vector<py::ssize_t>(shape.dim, shape.dim + shape.nd));
}

// the output array: `out` checked against shape, or a new one
py::object get_output(py::handle out, const Shape& shape, double** p) {
  if (out.is_none()) {
    py::array_t<double> a = new_array(shape);
    *p = a.mutable_data();
    return std::move(a);
  }
  *p = boundary::get_writeable(out, "out", shape.nd, shape.dim);
  return py::reinterpret_borrow<py::object>(out);
}

// an expression graph (robodyn.codegen) as a dict of its arrays
py::dict graph_dict(const ExprGraph& g) {
  py::dict d;
  d["op"] = py::bytes(reinterpret_cast<const char*>(g.op.data()), g.op.size());
  d["a"] = g.a;
  d["b"] = g.b;
  d["c"] = g.c;
  d["outputs"] = g.outputs;
  d["assumptions"] = g.assumptions;
  return d;
}

bool str_is(py::handle h, const char* s) {
  return PyUnicode_Check(h.ptr()) && PyUnicode_CompareWithASCIIString(h.ptr(), s) == 0;
}

class RobotCore;

// The C++ object of each Robot the fast methods have been called on, by Python object.
// pybind11's public cast finds it through its type registry, about 350 instructions for a
// subclass such as robodyn.Robot; the fast methods look it up here (self_of). An entry is made
// by the first call on an object and erased by ~RobotCore, which pybind11 runs before the
// object's memory is freed, so an address is never found after it was reused. Used with the
// GIL held.
std::unordered_map<PyObject*, RobotCore*>& robots_by_object() {
  static auto* table = new std::unordered_map<PyObject*, RobotCore*>();
  return *table;
}

// the entry of robots_by_object() found last (self_of)
struct {
  PyObject* self = nullptr;
  RobotCore* core = nullptr;
} last_robot;

class RobotCore {
 public:
  RobotCore(Model m) : model_(std::make_shared<const Model>(std::move(m))), data_(*model_) {}
  RobotCore(const RobotCore&) = delete;
  RobotCore& operator=(const RobotCore&) = delete;
  ~RobotCore() {
    if (!self_) return;
    robots_by_object().erase(self_);
    if (last_robot.self == self_) last_robot = {nullptr, nullptr};
  }

  PyObject* self_ = nullptr;  // the Python object, once in robots_by_object()

  // the model, immutable once built and shared: changing the gravity makes a new one, so a
  // batch running on another thread keeps the model it started with
  std::shared_ptr<const Model> model_;
  Data data_;
  // generated robot-specific kernels (robodyn.codegen); null: the generic algorithms
  struct Kernels {
    IdKernel id = nullptr;
    MassKernel M = nullptr;
    GravityKernel g = nullptr;
    FdKernel fd = nullptr;
  } kernels_;

  int n() const { return model_->nv; }

  // the size of an argument: configurations (q, q0, q1) have nq entries, the rest nv
  int size_of(const char* name) const {
    return name[0] == 'q' && (name[1] == 0 || ((name[1] == '0' || name[1] == '1') && !name[2]))
               ? model_->nq
               : model_->nv;
  }

  // a free-flyer's quaternion in each row of a configuration must be unit within
  // kQuaternionTolerance
  void check_quaternions(const Input& in, const char* name) const {
    if (!model_->floating || size_of(name) != model_->nq) return;
    const int nq = model_->nq, k0 = model_->iq[1] + 3;
    for (py::ssize_t r = 0; r < in.rows; ++r) {
      const double* x = in.p + r * nq + k0;
      const double norm = std::sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2] + x[3] * x[3]);
      if (!(std::abs(norm - 1) <= kQuaternionTolerance))
        bad(name, "the base quaternion (x, y, z, w) at entries " + std::to_string(k0) + ".." +
                      std::to_string(k0 + 3) + (in.batch ? " of row " + std::to_string(r) : "") +
                      " has norm " + std::to_string(norm) +
                      "; expected a unit quaternion (within 1e-6)");
    }
  }

  // Runs work(space, r0, r1, ok) over the rows [0, rows) of a batch with the GIL released,
  // split over up to set_num_threads() threads of at least min_rows rows, each with its own
  // workspace from make() (a std::unique_ptr; other Python threads may use data_ meanwhile).
  // Every workspace is made in the calling thread before any worker starts, so one that
  // cannot be allocated raises MemoryError (not std::terminate in a worker). Every thread
  // that started is joined; a thread that cannot start raises RuntimeError. Returns false
  // when a kernel reported a numerical failure.
  template <class Make, class Work>
  static bool for_rows(py::ssize_t rows, py::ssize_t min_rows, Make make, Work work) {
    bool ok = true;
    std::string failure;
    bool out_of_memory = false;
    {
      py::gil_scoped_release release;
      const int threads = static_cast<int>(std::max<py::ssize_t>(
          1, std::min<py::ssize_t>(g_threads.load(), rows / min_rows)));
      try {
        if (threads == 1) {
          auto space = make();
          work(*space, 0, rows, ok);
        } else {
          std::vector<decltype(make())> spaces;
          std::vector<std::thread> pool;
          std::vector<char> flags(threads, 1);
          // every thread that started is joined, whatever happens after (a thread that cannot
          // be started ends the call with an error)
          struct Joiner {
            std::vector<std::thread>& pool;
            ~Joiner() {
              for (auto& th : pool)
                if (th.joinable()) th.join();
            }
          } joiner{pool};
          spaces.reserve(threads);
          pool.reserve(threads);
          for (int t = 0; t < threads; ++t) spaces.push_back(make());
          for (int t = 0; t < threads; ++t) {
            const py::ssize_t r0 = rows * t / threads, r1 = rows * (t + 1) / threads;
            try {
              pool.emplace_back([&, t, r0, r1] {
                bool f = true;
                work(*spaces[t], r0, r1, f);
                flags[t] = f;
              });
            } catch (const std::system_error& e) {
              failure = "batch: could not start worker thread " + std::to_string(t + 1) +
                        " of " + std::to_string(threads) + " (" + e.what() +
                        "); use robodyn.set_num_threads() with fewer threads";
              break;
            }
          }
          for (auto& th : pool) th.join();
          for (char f : flags) ok = ok && f;
        }
      } catch (const std::bad_alloc&) {
        out_of_memory = true;
      }
    }
    if (out_of_memory) throw std::bad_alloc();
    if (!failure.empty()) throw std::runtime_error(failure);
    return ok;
  }

  // Runs kernel(model, data, inputs, outputs) on a single state or on every row of a batch.
  // K inputs, named `names` (configurations nq wide, the rest nv); O outputs, each of the
  // per-state shape row_out (a batch of N rows gives (N, *row_out)). O = 1: the kernel takes a
  // double* and `out` is None or the array to write (returned); O > 1: it takes an array of O
  // pointers and `out` is None or a tuple/list of O distinct arrays (returned as a tuple).
  // The kernel returns false on a numerical failure (ValueError `what`). A batch is split
  // over threads in runs of at least min_rows rows. `pair` (O = 1; NoPair: none) is the
  // kernel on the D2 scalar (simd.hpp): a batch of at least kPairRows rows then runs two rows
  // per call, every row (an odd row left over fills both lanes), so a row's result does not
  // depend on the thread split. Each lane takes the double steps of the algorithm: inverse
  // dynamics, bias and gravity rows equal `kernel`'s bit for bit; ABA's within ~1e-15 (Eigen
  // vectorises some of double's 6x6 products, in another order). Smaller batches run
  // `kernel` row by row (the two-row workspace costs ~2 us to make).
  template <size_t K, size_t O = 1, class Kernel, class Pair = NoPair>
  py::object run(const std::array<py::handle, K>& args, const std::array<const char*, K>& names,
                 py::handle out, const Shape& row_out, const char* what, Kernel kernel,
                 py::ssize_t min_rows = 64, Pair pair = Pair()) {
    static_assert(K >= 1 && O >= 1, "at least one input and one output");
    std::array<Input, K> in;
    std::array<int, K> size;
    for (size_t k = 0; k < K; ++k) {
      size[k] = size_of(names[k]);
      in[k] = get_input(args[k], names[k], size[k]);
      check_quaternions(in[k], names[k]);
    }
    const bool batch = in[0].batch;
    const py::ssize_t rows = in[0].rows;
    for (size_t k = 1; k < K; ++k)
      if (in[k].batch != batch || in[k].rows != rows)
        bad(names[k], std::string("must have the same number of rows as ") + names[0] +
                          ": expected (" +
                          (batch ? std::to_string(rows) + ", " : std::string()) +
                          std::to_string(size[k]) + (batch ? ")" : ",)") + ", got " +
                          (in[k].batch ? "(" + std::to_string(in[k].rows) + ", " +
                                             std::to_string(size[k]) + ")"
                                       : "(" + std::to_string(size[k]) + ",)"));
    const py::ssize_t row_size = row_out.prod();
    Shape shape;
    if (batch) shape.dim[shape.nd++] = rows;
    for (int k = 0; k < row_out.nd; ++k) shape.dim[shape.nd++] = row_out.dim[k];
    // the outputs: new arrays, or the caller's checked against the shape
    std::array<double*, O> po;
    py::object result;
    if constexpr (O == 1) {
      result = get_output(out, shape, &po[0]);
    } else {
      const bool given = !out.is_none();
      if (given && !((PyTuple_Check(out.ptr()) || PyList_Check(out.ptr())) && py::len(out) == O))
        bad("out", "expected a tuple of " + std::to_string(O) + " arrays");
      std::array<py::object, O> arrays;
      for (size_t o = 0; o < O; ++o) {
        py::handle oh = given ? py::handle(PySequence_Fast_GET_ITEM(out.ptr(), o))
                              : py::handle(Py_None);
        arrays[o] = get_output(oh, shape, &po[o]);
        for (size_t p = 0; p < o; ++p)
          if (po[p] == po[o]) bad("out", "the output arrays must be distinct");
      }
      // the caller's tuple comes back as is (nothing allocated with out=)
      if (given && PyTuple_Check(out.ptr())) {
        result = py::reinterpret_borrow<py::object>(out);
      } else {
        py::tuple t(O);
        for (size_t o = 0; o < O; ++o) t[o] = arrays[o];
        result = std::move(t);
      }
    }
    // an output sharing memory with an input (partly or wholly) is computed through a
    // temporary and copied at the end, as NumPy ufuncs do
    const std::array<double*, O> dest = po;
    std::array<py::object, O> scratch;
    for (size_t o = 0; o < O; ++o)
      for (size_t k = 0; k < K; ++k)
        if (boundary::overlaps(in[k].p, rows * size[k], po[o], rows * row_size)) {
          py::array_t<double> tmp = new_array(shape);
          po[o] = tmp.mutable_data();
          scratch[o] = std::move(tmp);
          break;
        }
    auto finish = [&] {
      for (size_t o = 0; o < O; ++o)
        if (po[o] != dest[o]) std::copy(po[o], po[o] + rows * row_size, dest[o]);
      return result;
    };
    auto call = [&kernel](const Model& m, Data& d, const std::array<const double*, K>& x,
                          const std::array<double*, O>& y) {
      if constexpr (O == 1)
        return kernel(m, d, x, y[0]);
      else
        return kernel(m, d, x, y);
    };
    std::array<const double*, K> ptr;
    if (!batch) {
      for (size_t k = 0; k < K; ++k) ptr[k] = in[k].p;
      if (!call(*model_, data_, ptr, po)) throw py::value_error(what);
      return finish();
    }
    // batch: GIL released, rows split over threads, each thread with its own workspace; the
    // model held for the whole batch (a gravity change makes a new one)
    const std::shared_ptr<const Model> held = model_;
    const Model& model = *held;
    struct Space {
      explicit Space(const Model& m) : d(m) {}
      Data d;
#if defined(ROBODYN_HAVE_D2)
      std::unique_ptr<DataTpl<D2>> d2;  // the two-row sweep's, when used
      std::array<AVec<D2>, K> x;        // its inputs, two rows interleaved into the lanes
      AVec<D2> y;                       // its output
#endif
    };
#if defined(ROBODYN_HAVE_D2)
    constexpr bool kHavePair = O == 1 && !std::is_same<Pair, NoPair>::value;
    const bool two = kHavePair && rows >= kPairRows;
#endif
    auto make = [&] {
      auto space = std::make_unique<Space>(model);
#if defined(ROBODYN_HAVE_D2)
      if (two) {
        space->d2 = std::make_unique<DataTpl<D2>>(model);
        for (size_t k = 0; k < K; ++k) space->x[k].resize(size[k]);
        space->y.resize(row_size);
      }
#endif
      return space;
    };
    auto work = [&](Space& s, py::ssize_t r0, py::ssize_t r1, bool& flag) {
#if defined(ROBODYN_HAVE_D2)
      if constexpr (kHavePair) {
        if (two) {
          // two rows at a time (the last one twice when r1 - r0 is odd): the inputs
          // interleaved into D2 lanes, the result split back
          std::array<const D2*, K> px;
          for (size_t k = 0; k < K; ++k) px[k] = s.x[k].data();
          for (py::ssize_t r = r0; r < r1; r += 2) {
            const bool both = r + 1 < r1;
            for (size_t k = 0; k < K; ++k) {
              const double* a = in[k].p + r * size[k];
              const double* b = both ? a + size[k] : a;
              for (int j = 0; j < size[k]; ++j) s.x[k][j] = D2::lanes(a[j], b[j]);
            }
            if (!pair(model, *s.d2, px, s.y.data())) flag = false;
            double* ya = po[0] + r * row_size;
            for (py::ssize_t j = 0; j < row_size; ++j) ya[j] = s.y[j].lane0();
            if (both) {
              double* yb = ya + row_size;
              for (py::ssize_t j = 0; j < row_size; ++j) yb[j] = s.y[j].lane1();
            }
          }
          return;
        }
      }
#endif
      std::array<const double*, K> pk;
      std::array<double*, O> pr;
      for (py::ssize_t r = r0; r < r1; ++r) {
        for (size_t k = 0; k < K; ++k) pk[k] = in[k].p + r * size[k];
        for (size_t o = 0; o < O; ++o) pr[o] = po[o] + r * row_size;
        if (!call(model, s.d, pk, pr)) flag = false;
      }
    };
    if (!for_rows(rows, min_rows, make, work)) throw py::value_error(what);
    return finish();
  }

  int frame_index(py::handle link) const {
    const int nf = static_cast<int>(model_->frame_body.size());
    if (PyUnicode_Check(link.ptr())) {
      const std::string name = link.cast<std::string>();
      std::string names;
      for (int f = 0; f < nf; ++f) {
        if (model_->link_names[f] == name) return f;
        names += (f ? ", " : "") + model_->link_names[f];
      }
      bad("link", "no link named '" + name + "'; the links: " + names);
    }
    if (PyIndex_Check(link.ptr()) && !PyBool_Check(link.ptr())) {
      const Py_ssize_t f0 = PyNumber_AsSsize_t(link.ptr(), nullptr);  // clips huge values
      if (f0 == -1 && PyErr_Occurred()) throw py::error_already_set();
      Py_ssize_t f = f0 < 0 ? f0 + nf : f0;
      if (f < 0 || f >= nf)
        bad("link", "index " + std::to_string(f0) + " out of range [-" + std::to_string(nf) +
                        ", " + std::to_string(nf) + ")");
      return static_cast<int>(f);
    }
    bad("link", "expected a link name or index");
  }
};

using Ptrs1 = std::array<const double*, 1>;
using Ptrs2 = std::array<const double*, 2>;
using Ptrs3 = std::array<const double*, 3>;

// a batch's two-row kernel (RobotCore::run's `pair`), where the D2 scalar exists
#if defined(ROBODYN_HAVE_D2)
using Pairs1 = std::array<const D2*, 1>;
using Pairs2 = std::array<const D2*, 2>;
using Pairs3 = std::array<const D2*, 3>;
#define ROBODYN_PAIR(...) __VA_ARGS__
#else
#define ROBODYN_PAIR(...) NoPair()
#endif

const char* kFDFail =
    "forward dynamics failed: the mass matrix is not positive definite at this state";

BodySpec body_from_dict(const py::dict& b, size_t index) {
  BodySpec s;
  s.parent = b["parent"].cast<int>();
  const std::string t = b["joint_type"].cast<std::string>();
  if (t == "revolute")
    s.type = JointType::Revolute;
  else if (t == "prismatic")
    s.type = JointType::Prismatic;
  else if (t == "floating")
    s.type = JointType::FreeFlyer;
  else
    throw py::value_error("body " + std::to_string(index) + " ('" +
                          b["name"].cast<std::string>() + "', joint '" +
                          b["joint_name"].cast<std::string>() + "'): unknown joint type '" + t +
                          "' (expected revolute, prismatic or floating)");
  s.axis = b["axis"].cast<Vec3>();
  const Eigen::Matrix4d T = b["origin"].cast<Eigen::Matrix4d>();
  s.origin_R = T.topLeftCorner<3, 3>();
  s.origin_p = T.topRightCorner<3, 1>();
  s.mass = b["mass"].cast<double>();
  s.com = b["com"].cast<Vec3>();
  s.inertia = b["inertia"].cast<Mat3>();
  s.armature = b["armature"].cast<double>();
  s.damping = b["damping"].cast<double>();
  s.friction = b["friction"].cast<double>();
  s.lower = b["lower"].cast<double>();
  s.upper = b["upper"].cast<double>();
  s.velocity = b["velocity"].cast<double>();
  s.effort = b["effort"].cast<double>();
  s.name = b["name"].cast<std::string>();
  s.joint_name = b["joint_name"].cast<std::string>();
  return s;
}


// the hot methods, called through the fast-call entry points below
py::object inverse_dynamics_impl(RobotCore& r, py::handle q, py::handle qd, py::handle qdd,
                                 py::handle method, py::handle out) {
  const py::ssize_t n = r.n();
  if (r.kernels_.id && (method.is_none() || str_is(method, "rnea")))
    return r.run<3>({q, qd, qdd}, {"q", "qd", "qdd"}, out, {n}, "",
                    [k = r.kernels_.id](const Model&, Data&, const Ptrs3& x, double* o) {
                      k(x[0], x[1], x[2], o);
                      return true;
                    });
  if (method.is_none() || str_is(method, "rnea"))
    return r.run<3>({q, qd, qdd}, {"q", "qd", "qdd"}, out, {n}, "",
                    [](const Model& m, Data& d, const Ptrs3& x, double* o) {
                      rnea(m, d, x[0], x[1], x[2], o);
                      return true;
                    }, 64, ROBODYN_PAIR([](const Model& m, DataTpl<D2>& d, const Pairs3& x, D2* o) {
                      rnea(m, d, x[0], x[1], x[2], o);
                      return true;
                    }));
  if (str_is(method, "kane"))
    return r.run<3>({q, qd, qdd}, {"q", "qd", "qdd"}, out, {n}, "",
                    [](const Model& m, Data& d, const Ptrs3& x, double* o) {
                      kane(m, d, x[0], x[1], x[2], o);
                      return true;
                    });
  bad("method", "expected 'rnea' or 'kane'");
}

py::object forward_dynamics_impl(RobotCore& r, py::handle q, py::handle qd, py::handle tau,
                                 py::handle method, py::handle out) {
  const py::ssize_t n = r.n();
  if (r.kernels_.fd && (method.is_none() || str_is(method, "aba") || str_is(method, "crba")))
    return r.run<3>({q, qd, tau}, {"q", "qd", "tau"}, out, {n}, kFDFail,
                    [k = r.kernels_.fd, crba = str_is(method, "crba")](
                        const Model& m, Data& d, const Ptrs3& x, double* o) {
                      k(x[0], x[1], x[2], o);
                      // a non-finite result (overflow, or M not positive definite): the
                      // generic algorithm decides, so both give the same answer or error
                      for (int i = 0; i < m.nv; ++i)
                        if (!std::isfinite(o[i]))
                          return crba ? forward_dynamics_crba(m, d, x[0], x[1], x[2], o)
                                      : aba(m, d, x[0], x[1], x[2], o);
                      return true;
                    });
  if (method.is_none() || str_is(method, "aba"))
    return r.run<3>({q, qd, tau}, {"q", "qd", "tau"}, out, {n}, kFDFail,
                    [](const Model& m, Data& d, const Ptrs3& x, double* o) {
                      return aba(m, d, x[0], x[1], x[2], o);
                    }, 64, ROBODYN_PAIR([](const Model& m, DataTpl<D2>& d, const Pairs3& x, D2* o) {
                      return aba(m, d, x[0], x[1], x[2], o);
                    }));
  if (str_is(method, "crba"))
    return r.run<3>({q, qd, tau}, {"q", "qd", "tau"}, out, {n}, kFDFail,
                    [](const Model& m, Data& d, const Ptrs3& x, double* o) {
                      return forward_dynamics_crba(m, d, x[0], x[1], x[2], o);
                    });
  if (str_is(method, "kane"))
    return r.run<3>({q, qd, tau}, {"q", "qd", "tau"}, out, {n}, kFDFail,
                    [](const Model& m, Data& d, const Ptrs3& x, double* o) {
                      return kane_forward(m, d, x[0], x[1], x[2], o);
                    });
  bad("method", "expected 'aba', 'crba' or 'kane'");
}

py::object mass_matrix_impl(RobotCore& r, py::handle q, py::handle out) {
  const py::ssize_t n = r.n();
  if (r.kernels_.M)
    return r.run<1>({q}, {"q"}, out, {n, n}, "",
                    [k = r.kernels_.M](const Model&, Data&, const Ptrs1& x, double* o) {
                      k(x[0], o);
                      return true;
                    });
  return r.run<1>({q}, {"q"}, out, {n, n}, "",
                  [](const Model& m, Data& d, const Ptrs1& x, double* o) {
                    crba(m, d, x[0], o);  // both triangles straight into the result
                    return true;
                  });
}

py::object bias_torques_impl(RobotCore& r, py::handle q, py::handle qd, py::handle out) {
  return r.run<2>({q, qd}, {"q", "qd"}, out, {r.n()}, "",
                  [](const Model& m, Data& d, const Ptrs2& x, double* o) {
                    bias_torques(m, d, x[0], x[1], o);
                    return true;
                  }, 64, ROBODYN_PAIR([](const Model& m, DataTpl<D2>& d, const Pairs2& x, D2* o) {
                    bias_torques(m, d, x[0], x[1], o);
                    return true;
                  }));
}

py::object gravity_torques_impl(RobotCore& r, py::handle q, py::handle out) {
  if (r.kernels_.g)
    return r.run<1>({q}, {"q"}, out, {r.n()}, "",
                    [k = r.kernels_.g](const Model&, Data&, const Ptrs1& x, double* o) {
                      k(x[0], o);
                      return true;
                    });
  return r.run<1>({q}, {"q"}, out, {r.n()}, "",
                  [](const Model& m, Data& d, const Ptrs1& x, double* o) {
                    gravity_torques(m, d, x[0], o);
                    return true;
                  }, 64, ROBODYN_PAIR([](const Model& m, DataTpl<D2>& d, const Pairs1& x, D2* o) {
                    gravity_torques(m, d, x[0], o);
                    return true;
                  }));
}

using Outs2 = std::array<double*, 2>;
using Outs3 = std::array<double*, 3>;
using Ptrs4 = std::array<const double*, 4>;

py::object inverse_dynamics_derivatives_impl(RobotCore& r, py::handle q, py::handle qd,
                                             py::handle qdd, py::handle out) {
  const py::ssize_t n = r.n();
  return r.run<3, 2>({q, qd, qdd}, {"q", "qd", "qdd"}, out, {n, n}, "",
                     [](const Model& m, Data& d, const Ptrs3& x, const Outs2& o) {
                       rnea_derivatives(m, d, x[0], x[1], x[2], o[0], o[1]);
                       return true;
                     }, 16);
}

py::object forward_dynamics_derivatives_impl(RobotCore& r, py::handle q, py::handle qd,
                                             py::handle tau, py::handle out) {
  const py::ssize_t n = r.n();
  return r.run<3, 3>({q, qd, tau}, {"q", "qd", "tau"}, out, {n, n}, kFDFail,
                     [](const Model& m, Data& d, const Ptrs3& x, const Outs3& o) {
                       // qdd lands in d.tmp (nv)
                       return forward_dynamics_derivatives(m, d, x[0], x[1], x[2],
                                                           d.tmp.data(), o[0], o[1], o[2]);
                     }, 16);
}

py::object regressor_impl(RobotCore& r, py::handle q, py::handle qd, py::handle qdd,
                          py::handle out) {
  const py::ssize_t n = r.n(), bodies = r.model_->n;
  return r.run<3>({q, qd, qdd}, {"q", "qd", "qdd"}, out, {n, 10 * bodies}, "",
                  [](const Model& m, Data& d, const Ptrs3& x, double* o) {
                    regressor(m, d, x[0], x[1], x[2], o);
                    return true;
                  });
}

// METH_FASTCALL | METH_KEYWORDS argument parsing: positional or keyword, defaults None
template <size_t N>
std::array<py::handle, N> parse_args(const char* fname, const std::array<const char*, N>& names,
                                     size_t required, PyObject* const* args, Py_ssize_t nargs,
                                     PyObject* kwnames) {
  std::array<py::handle, N> v;
  if (nargs > static_cast<Py_ssize_t>(N))
    throw py::type_error(std::string(fname) + "() takes at most " + std::to_string(N) +
                         " arguments");
  for (Py_ssize_t k = 0; k < nargs; ++k) v[k] = args[k];
  const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t j = 0; j < nkw; ++j) {
    PyObject* key = PyTuple_GET_ITEM(kwnames, j);
    size_t k = 0;
    while (k < N && PyUnicode_CompareWithASCIIString(key, names[k]) != 0) ++k;
    if (k == N)
      throw py::type_error(std::string(fname) + "() got an unexpected keyword argument '" +
                           py::str(key).cast<std::string>() + "'");
    if (v[k]) throw py::type_error(std::string(fname) + "() got multiple values for '" +
                                   names[k] + "'");
    v[k] = args[nargs + j];
  }
  for (size_t k = 0; k < N; ++k) {
    if (v[k]) continue;
    if (k < required)
      throw py::type_error(std::string(fname) + "() missing required argument '" + names[k] +
                           "'");
    v[k] = Py_None;
  }
  return v;
}

template <class Fn>
PyObject* guarded(Fn&& fn) {
  try {
    return fn().release().ptr();
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (py::builtin_exception& e) {
    e.set_error();
  } catch (std::bad_alloc&) {
    PyErr_NoMemory();
  } catch (std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

// the C++ object of a Robot (the method descriptors guarantee self is a RobotCore instance):
// the last one found, else from robots_by_object(), else by pybind11's cast
RobotCore& self_of(PyObject* self) {
  if (self == last_robot.self) return *last_robot.core;
  auto& table = robots_by_object();
  auto it = table.find(self);
  RobotCore* r = it != table.end() ? it->second : nullptr;
  if (!r) {
    r = py::handle(self).cast<RobotCore*>();
    if (r == nullptr)
      throw py::type_error("Robot is not initialised (a subclass must call Robot.__init__)");
    table.emplace(self, r);
    r->self_ = self;
  }
  last_robot = {self, r};
  return *r;
}

PyObject* fast_inverse_dynamics(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                                PyObject* kw) {
  return guarded([&] {
    auto v = parse_args<5>("inverse_dynamics", {"q", "qd", "qdd", "method", "out"}, 3, args,
                           nargs, kw);
    return inverse_dynamics_impl(self_of(self), v[0], v[1], v[2], v[3], v[4]);
  });
}

PyObject* fast_forward_dynamics(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                                PyObject* kw) {
  return guarded([&] {
    auto v = parse_args<5>("forward_dynamics", {"q", "qd", "tau", "method", "out"}, 3, args,
                           nargs, kw);
    return forward_dynamics_impl(self_of(self), v[0], v[1], v[2], v[3], v[4]);
  });
}

PyObject* fast_mass_matrix(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                           PyObject* kw) {
  return guarded([&] {
    auto v = parse_args<2>("mass_matrix", {"q", "out"}, 1, args, nargs, kw);
    return mass_matrix_impl(self_of(self), v[0], v[1]);
  });
}

PyObject* fast_bias_torques(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                            PyObject* kw) {
  return guarded([&] {
    auto v = parse_args<3>("bias_torques", {"q", "qd", "out"}, 2, args, nargs, kw);
    return bias_torques_impl(self_of(self), v[0], v[1], v[2]);
  });
}

PyObject* fast_gravity_torques(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                               PyObject* kw) {
  return guarded([&] {
    auto v = parse_args<2>("gravity_torques", {"q", "out"}, 1, args, nargs, kw);
    return gravity_torques_impl(self_of(self), v[0], v[1]);
  });
}

PyObject* fast_inverse_dynamics_derivatives(PyObject* self, PyObject* const* args,
                                            Py_ssize_t nargs, PyObject* kw) {
  return guarded([&] {
    auto v = parse_args<4>("inverse_dynamics_derivatives", {"q", "qd", "qdd", "out"}, 3, args,
                           nargs, kw);
    return inverse_dynamics_derivatives_impl(self_of(self), v[0], v[1], v[2], v[3]);
  });
}

PyObject* fast_forward_dynamics_derivatives(PyObject* self, PyObject* const* args,
                                            Py_ssize_t nargs, PyObject* kw) {
  return guarded([&] {
    auto v = parse_args<4>("forward_dynamics_derivatives", {"q", "qd", "tau", "out"}, 3, args,
                           nargs, kw);
    return forward_dynamics_derivatives_impl(self_of(self), v[0], v[1], v[2], v[3]);
  });
}

PyObject* fast_regressor(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                         PyObject* kw) {
  return guarded([&] {
    auto v = parse_args<4>("regressor", {"q", "qd", "qdd", "out"}, 3, args, nargs, kw);
    return regressor_impl(self_of(self), v[0], v[1], v[2], v[3]);
  });
}

#define ROBODYN_FAST(name, doc) \
  {#name, reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(fast_##name)), \
   METH_FASTCALL | METH_KEYWORDS, doc}

PyMethodDef kFastMethods[] = {
    ROBODYN_FAST(inverse_dynamics,
                 "inverse_dynamics(q, qd, qdd, method='rnea', out=None) -> tau, shape (n,)\n\n"
                 "Joint torques (N m; N for prismatic joints) that give acceleration qdd at "
                 "(q, qd): (M(q) + diag(armature)) qdd + C(q, qd) qd + g(q) + damping qd + "
                 "friction sign(qd). method: 'rnea' (recursive Newton-Euler) or 'kane' "
                 "(recursive Kane); the same numbers. q, qd, qdd: (n,) or (N, n) batches "
                 "(C++ loop, GIL released). out: a C-contiguous float64 array of the result's "
                 "shape, written in place."),
    ROBODYN_FAST(forward_dynamics,
                 "forward_dynamics(q, qd, tau, method='aba', out=None) -> qdd, shape (n,)\n\n"
                 "Joint accelerations under torques tau: solves the inverse_dynamics equation "
                 "(armature, damping and friction included) for qdd. method: 'aba' "
                 "(articulated-body), 'crba' (mass matrix + Cholesky) or 'kane' (Kane's "
                 "equations + Cholesky). ValueError if the mass matrix is not positive "
                 "definite. Shapes and out= as inverse_dynamics."),
    ROBODYN_FAST(mass_matrix,
                 "mass_matrix(q, out=None) -> M, shape (n, n)\n\n"
                 "Joint-space inertia matrix M(q) + diag(armature) (composite rigid bodies), "
                 "symmetric positive definite. (N, n) batches give (N, n, n)."),
    ROBODYN_FAST(bias_torques,
                 "bias_torques(q, qd, out=None) -> C(q, qd) qd + g(q), shape (n,)\n\n"
                 "Coriolis, centrifugal and gravity torques: inverse_dynamics at qdd = 0 "
                 "without damping and friction."),
    ROBODYN_FAST(gravity_torques,
                 "gravity_torques(q, out=None) -> g(q), shape (n,)\n\n"
                 "Torques that hold the robot still against gravity at q."),
    ROBODYN_FAST(inverse_dynamics_derivatives,
                 "inverse_dynamics_derivatives(q, qd, qdd, out=None) -> (dtau_dq, dtau_dqd)\n\n"
                 "Partial derivatives of inverse_dynamics with respect to q and qd, each (n, n) "
                 "(n = nv). With a free-floating base the q derivative is taken in the tangent "
                 "space: along integrate(q, dv) at dv = 0, one column per entry of v."),
    ROBODYN_FAST(forward_dynamics_derivatives,
                 "forward_dynamics_derivatives(q, qd, tau, out=None) -> "
                 "(dqdd_dq, dqdd_dqd, dqdd_dtau)\n\n"
                 "Partial derivatives of forward_dynamics with respect to q, qd and tau, each "
                 "(n, n) (n = nv; q in the tangent space with a free-floating base, as for "
                 "inverse_dynamics_derivatives)."),
    ROBODYN_FAST(regressor, "regressor(q, qd, qdd, out=None) -> Y, shape (n, 10 bodies)\n\n"
                 "The torque regressor: tau_rigid = Y @ robot.dynamic_parameters()."),
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

#include <pybind11/eigen.h>

PYBIND11_MODULE(_core, m) {
  m.doc() = "robodyn C++ core (private; use the robodyn package)";
  // the one inertia tolerance (robodyn.urdf checks files with the same numbers)
  m.attr("INERTIA_RTOL") = kInertiaRtol;
  m.attr("INERTIA_ATOL") = kInertiaAtol;

  m.def("set_num_threads", [](int k) {
    if (k < 1) throw py::value_error("threads: must be >= 1");
    g_threads = k;
  }, "Threads used by batch calls (each thread has its own workspace).");
  m.def("get_num_threads", [] { return g_threads.load(); },
        "Threads used by batch calls (set_num_threads; default 1).");

  py::class_<RobotCore> cls(m, "RobotCore");
  cls
      .def(py::init([](const py::list& bodies, const py::list& frames, const Vec3& gravity,
                       bool check_inertia, bool check_singular) {
             std::vector<BodySpec> bs;
             for (auto b : bodies) bs.push_back(body_from_dict(b.cast<py::dict>(), bs.size()));
             std::vector<FrameSpec> fs;
             for (auto f : frames) {
               auto d = f.cast<py::dict>();
               FrameSpec s;
               s.parent = d["parent"].cast<int>();
               const Eigen::Matrix4d T = d["pose"].cast<Eigen::Matrix4d>();
               s.R = T.topLeftCorner<3, 3>();
               s.p = T.topRightCorner<3, 1>();
               s.name = d["name"].cast<std::string>();
               fs.push_back(s);
             }
             Model model;
             try {
               model = build_model(bs, fs, gravity, check_inertia, check_singular);
             } catch (const std::invalid_argument& e) {
               throw py::value_error(e.what());
             }
             return new RobotCore(std::move(model));
           }),
           py::arg("bodies"), py::arg("frames"), py::arg("gravity"),
           py::arg("check_inertia") = true, py::arg("check_singular") = true)
      .def_property_readonly("n", &RobotCore::n,
                             "Degrees of freedom: the velocity size nv, the length of qd, qdd "
                             "and tau (and of q without a free-floating base).")
      .def_property_readonly("nq", [](const RobotCore& r) { return r.model_->nq; },
                             "configuration size (nv + 1 with a free-floating base)")
      .def_property_readonly("nv", [](const RobotCore& r) { return r.model_->nv; },
                             "velocity size")
      .def_property_readonly("floating_base",
                             [](const RobotCore& r) { return r.model_->floating; },
                             "True when the first body moves on a free-flyer joint")
      .def(
          "momentum",
          [](RobotCore& r, py::handle q, py::handle v, py::handle out) {
            return r.run<2>({q, v}, {"q", "v"}, out, {6}, "",
                            [](const Model& m, Data& d, const Ptrs2& x, double* o) {
                              momentum(m, d, x[0], x[1], o);
                              return true;
                            });
          },
          py::arg("q"), py::arg("v"), py::arg("out") = py::none(),
          R"doc(momentum(q, v, out=None) -> h = [L; p], shape (6,)

The total momentum of the bodies at configuration q (nq,) with velocity v (nv,), in world axes
(the base frame of a fixed-base model): L (entries 0-2, N m s) the angular momentum about the
world origin (not about the centre of mass: centroidal_momentum_matrix gives that one), p
(entries 3-5, N s) the linear momentum, m times the velocity of the centre of mass. With a
free-floating base, v = [base angular; base linear velocity (both in the base frame); joints],
as everywhere. Rigid bodies only: rotor inertia (armature) is not counted. Without external
forces h is constant; gravity changes p by m g per second and L by c x m g
(c = center_of_mass(q)). (N, nq) and (N, nv) batches give (N, 6); out: a C-contiguous float64
array of the result's shape, written in place.)doc")
      .def(
          "center_of_mass",
          [](RobotCore& r, py::handle q, py::handle out) {
            return r.run<1>({q}, {"q"}, out, {3}, "center_of_mass: the model has no mass",
                            [](const Model& m, Data& d, const Ptrs1& x, double* o) {
                              return center_of_mass(m, d, x[0], o);
                            });
          },
          py::arg("q"), py::arg("out") = py::none(),
          R"doc(center_of_mass(q, out=None) -> c, shape (3,)

The centre of mass of all the bodies at configuration q (nq,), in metres in world coordinates
(the base frame of a fixed-base model; a free-floating base's world frame is the one its
position q[0:3] and quaternion q[3:7] are given in). The mass-weighted mean of the bodies'
centres of mass; massless links count for nothing. (N, nq) batches give (N, 3); out: a
C-contiguous float64 array of the result's shape, written in place. ValueError if the bodies
have no mass.)doc")
      .def(
          "centroidal_momentum_matrix",
          [](RobotCore& r, py::handle q, py::handle out) {
            const py::ssize_t nv = r.model_->nv;
            return r.run<1>({q}, {"q"}, out, {6, nv},
                            "centroidal_momentum_matrix: the model has no mass",
                            [](const Model& m, Data& d, const Ptrs1& x, double* o) {
                              return centroidal_momentum_matrix(m, d, x[0], o);
                            });
          },
          py::arg("q"), py::arg("out") = py::none(),
          R"doc(centroidal_momentum_matrix(q, out=None) -> A_G, shape (6, nv)

The centroidal momentum matrix (Orin, Lee & Goswami 2013): A_G(q) v is the spatial momentum of
the bodies [angular about the centre of mass; linear] in world axes (the base frame of a
fixed-base model), for any velocity v. Row block 0-2: N m s per unit of v, rows 3-5: N s.
The same momentum as robot.momentum(q, v), whose angular part is about the world origin:
A_G v = [L - c x p; p] with (L, p) = momentum(q, v), c = center_of_mass(q). Rigid bodies only
(no rotor inertia). A free base's six columns are its angular and linear velocity in its own
frame, like v. q: (nq,); (N, nq) batches give (N, 6, nv). out: a C-contiguous float64 (6, nv)
array written in place. ValueError if the bodies have no mass.)doc")
      .def(
          "integrate",
          [](RobotCore& r, py::handle q, py::handle v, double dt, py::handle out) {
            if (!std::isfinite(dt)) bad("dt", "must be a finite number");
            const py::ssize_t nq = r.model_->nq;
            return r.run<2>({q, v}, {"q", "v"}, out, {nq}, "",
                            [dt](const Model& m, Data&, const Ptrs2& x, double* o) {
                              integrate(m, x[0], x[1], dt, o);
                              return true;
                            });
          },
          py::arg("q"), py::arg("v"), py::arg("dt") = 1.0, py::arg("out") = py::none(),
          R"doc(integrate(q, v, dt=1.0, out=None) -> q1, shape (nq,)

The configuration reached from q (nq,) by moving with the constant velocity v (nv,) for dt
seconds. Each joint: q1 = q + dt v (rad or m). A free-floating base, q[0:7] = [position of
its origin in the world (m); unit quaternion x, y, z, w of its orientation, base to world]
and v[0:6] = [angular velocity; velocity of its origin], both in the base frame (body
twist), moves on SE(3): pose1 = pose0 exp(dt v^) (the twist held constant in the moving
frame; not q + dt v), its quaternion renormalised. The inverse of difference:
integrate(q0, difference(q0, q1)) = q1. (N, nq) and (N, nv) batches give (N, nq); out (may
be q): a C-contiguous float64 array of the result's shape, written in place. ValueError for
a non-finite dt or a base quaternion farther than 1e-6 from unit norm.)doc")
      .def(
          "difference",
          [](RobotCore& r, py::handle q0, py::handle q1, py::handle out) {
            return r.run<2>({q0, q1}, {"q0", "q1"}, out, {r.n()}, "",
                            [](const Model& m, Data&, const Ptrs2& x, double* o) {
                              difference(m, x[0], x[1], o);
                              return true;
                            });
          },
          py::arg("q0"), py::arg("q1"), py::arg("out") = py::none(),
          R"doc(difference(q0, q1, out=None) -> v, shape (nv,)

The velocity v (nv,) that moves q0 to q1 (both (nq,)) in unit time: integrate(q0, v, 1) = q1.
Each joint: q1 - q0. A free-floating base's block (the first six entries) is the body twist
log(pose0^-1 pose1) = [rotation vector; translation] in the frame of pose0 (the rotation the
shorter way, under pi), the layout of v. Divide by a time step for a velocity;
difference(q, q + dq) is the tangent-space displacement used by the floating derivatives.
(N, nq) batches give (N, nv); out: a C-contiguous float64 array of the result's shape,
written in place.)doc")
      .def_property_readonly(
          "joint_names", [](const RobotCore& r) { return r.model_->joint_names; },
          "Names of the moving joints, in q order.")
      .def_property_readonly(
          "link_names", [](const RobotCore& r) { return r.model_->link_names; },
          "Names of the frames forward_kinematics and jacobian know, in their order: the "
          "link moved by each joint (q order), then the links merged into them through fixed "
          "joints (end effectors, tool frames).")
      .def_property(
          "gravity", [](const RobotCore& r) { return Vec3(r.model_->gravity); },
          [](RobotCore& r, py::handle g) {
            Input in = get_input(g, "gravity", 3);
            if (in.batch) bad("gravity", "expected shape (3,)");
            const Vec3 grav = checked_gravity(Vec3(in.p[0], in.p[1], in.p[2]));
            // generated kernels have the gravity they were generated with built in
            if (grav == r.model_->gravity) return;
            // a new model with the new gravity (checked before anything changes); the old
            // one lives on while a batch on another thread still uses it
            auto next = std::make_shared<Model>(*r.model_);
            set_gravity(*next, grav);
            // generated kernels have the gravity they were generated with built in
            r.kernels_ = RobotCore::Kernels();
            r.model_ = std::move(next);
          },
          "Gravity acceleration (3,) in m/s^2, base-frame axes (e.g. (0, 0, -9.81) for a "
          "z-up base). Assignable, also while a batch runs on another thread (which keeps the "
          "model it started with).")
      .def(
          "coriolis_matrix",
          [](RobotCore& r, py::handle q, py::handle qd, py::handle out) {
            const int n = r.n();
            return r.run<2>({q, qd}, {"q", "qd"}, out, {n, n}, "",
                            [](const Model& m, Data& d, const Ptrs2& x, double* o) {
                              coriolis_matrix(m, d, x[0], x[1], o);
                              return true;
                            });
          },
          py::arg("q"), py::arg("qd"), py::arg("out") = py::none(),
          R"doc(coriolis_matrix(q, qd, out=None) -> C, shape (n, n)

The Coriolis/centrifugal matrix C(q, qd) with C(q, qd) qd = bias_torques(q, qd) -
gravity_torques(q) and dM/dt - 2 C skew-symmetric (the Christoffel-symbol choice). Rigid-body
terms only: no armature (it is constant), damping or friction. q, qd: (n,) in rad or m and
rad/s or m/s; (N, n) batches give (N, n, n). out: a C-contiguous float64 (n, n) array written
in place (nothing allocated).)doc")
      .def(
          "slotine_li_regressor",
          [](RobotCore& r, py::handle q, py::handle qd, py::handle v, py::handle a,
             py::handle out) {
            const int n = r.n(), bodies = r.model_->n;
            return r.run<4>({q, qd, v, a}, {"q", "qd", "v", "a"}, out, {n, 10 * bodies}, "",
                            [](const Model& m, Data& d, const Ptrs4& x, double* o) {
                              regressor_slotine_li(m, d, x[0], x[1], x[2], x[3], o);
                              return true;
                            });
          },
          py::arg("q"), py::arg("qd"), py::arg("v"), py::arg("a"), py::arg("out") = py::none(),
          "slotine_li_regressor(q, qd, v, a, out=None) -> Y, shape (n, 10 bodies)\n\n"
          "The Slotine-Li regressor: Y @ robot.dynamic_parameters() = M(q) a + C(q, qd) v + "
          "g(q) (rigid-body terms), for adaptive control.")
      .def(
          "kinetic_energy",
          [](RobotCore& r, py::handle q, py::handle qd) -> py::object {
            py::object res = r.run<2>({q, qd}, {"q", "qd"}, py::none(), {}, "",
                                      [](const Model& m, Data& d, const Ptrs2& x, double* o) {
                                        *o = kinetic_energy(m, d, x[0], x[1]);
                                        return true;
                                      });
            if (boundary::array_of(res.ptr()).ndim() == 0) return py::float_(res);
            return res;
          },
          py::arg("q"), py::arg("qd"),
          R"doc(kinetic_energy(q, qd) -> float (J)

0.5 qd' (M(q) + diag(armature)) qd: the links' kinetic energy plus the rotors' (armature).
q, qd: (n,); (N, n) batches give (N,).)doc")
      .def(
          "potential_energy",
          [](RobotCore& r, py::handle q) -> py::object {
            py::object res = r.run<1>({q}, {"q"}, py::none(), {}, "",
                                      [](const Model& m, Data& d, const Ptrs1& x, double* o) {
                                        *o = potential_energy(m, d, x[0]);
                                        return true;
                                      });
            if (boundary::array_of(res.ptr()).ndim() == 0) return py::float_(res);
            return res;
          },
          py::arg("q"),
          R"doc(potential_energy(q) -> float (J)

Gravity potential energy -sum_i m_i g . c_i of the moving links (c_i the centre of mass in the
base frame, g the robot's gravity), zero with every mass centre at the base origin; so
d/dt (kinetic + potential) is the power of the joint torques in a passive, frictionless
system. q: (n,); (N, n) batches give (N,).)doc")
      .def(
          "forward_kinematics",
          [](RobotCore& r, py::handle q, py::handle out) {
            const py::ssize_t nf = static_cast<py::ssize_t>(r.model_->frame_body.size());
            return r.run<1>({q}, {"q"}, out, {nf, 4, 4}, "",
                            [](const Model& m, Data& d, const Ptrs1& x, double* o) {
                              forward_kinematics(m, d, x[0], o);
                              return true;
                            });
          },
          py::arg("q"), py::arg("out") = py::none(),
          R"doc(forward_kinematics(q, out=None) -> poses, shape (len(link_names), 4, 4)

Base-to-link homogeneous transforms of every frame in link_names order: poses[i] maps
coordinates in frame i to the base frame ([R p; 0 1], p the frame origin in metres). The
frames are the user's link frames (URDF child-link frames or DH frames), not the internal
ones the dynamics use. q: (n,); (N, n) batches give (N, frames, 4, 4). out: a C-contiguous
float64 array of the result's shape, written in place.)doc")
      .def(
          "jacobian",
          [](RobotCore& r, py::handle q, py::handle link, py::handle out) {
            const int f = r.frame_index(link);
            return r.run<1>({q}, {"q"}, out, {6, r.n()}, "",
                            [f](const Model& m, Data& d, const Ptrs1& x, double* o) {
                              jacobian(m, d, x[0], f, o);
                              return true;
                            });
          },
          py::arg("q"), py::arg("link"), py::arg("out") = py::none(),
          R"doc(jacobian(q, link, out=None) -> J, shape (6, n)

Geometric Jacobian of the origin of frame `link` (a name of link_names or an index into it;
negative indices count from the end): [omega; v] = J(q) qd, rows 0-2 the angular velocity of
the frame and rows 3-5 the linear velocity of its origin, both in base-frame axes; column j
belongs to joint j (q order). Row order [angular; linear] is robodyn's spatial convention and
the opposite of Pinocchio's: J = vstack((J_pin[3:], J_pin[:3])) with J_pin =
pin.getFrameJacobian(..., pin.LOCAL_WORLD_ALIGNED) (tests/test_pinocchio.py). q: (n,);
(N, n) batches give (N, 6, n). out: a C-contiguous float64 (6, n) array written in place.)doc")
      .def("_op_counts",
           [](const RobotCore& r, const std::string& algorithm) {
             std::array<long, 3> c;
             try {
               c = count_ops(*r.model_, algorithm);
             } catch (const std::invalid_argument& e) {
               throw py::value_error(e.what());
             }
             py::dict d;
             d["mul"] = c[0];
             d["add"] = c[1];
             d["trig"] = c[2];
             return d;
           })
      .def("_cache_stats",
           [](const RobotCore& r) {
             return py::make_tuple(r.data_.cache_hits, r.data_.cache_misses);
           })
      .def("_model_arrays", [](const RobotCore& r) {
        const Model& m = *r.model_;
        py::dict d;
        // per coordinate: limits of q (nq,), the rest per velocity coordinate (nv,); a
        // free-flyer has no limits (infinite) and no rotor or friction (0)
        auto expand = [&](const std::vector<double>& v, bool config, double free_value) {
          std::vector<double> out;
          for (int i = 1; i <= m.n; ++i) {
            const bool free = m.type[i] == JointType::FreeFlyer;
            const int k = free ? (config ? 7 : 6) : 1;
            out.insert(out.end(), k, free ? free_value : v[i]);
          }
          return out;
        };
        const double inf = std::numeric_limits<double>::infinity();
        d["lower"] = expand(m.lower, true, -inf);
        d["upper"] = expand(m.upper, true, inf);
        d["velocity"] = expand(m.velocity, false, inf);
        d["effort"] = expand(m.effort, false, inf);
        d["armature"] = expand(m.armature, false, 0.0);
        d["damping"] = expand(m.damping, false, 0.0);
        d["friction"] = expand(m.friction, false, 0.0);
        d["mass"] = std::vector<double>(m.mass.begin() + 1, m.mass.end());
        std::vector<int> parent(m.parent.begin() + 1, m.parent.end());
        for (auto& p : parent) p -= 1;
        d["parent"] = parent;
        return d;
      });

  // ---- generated robot-specific kernels (robodyn.codegen) ----
  cls.def("_trace", [](const RobotCore& r, const std::string& algorithm) {
       ExprGraph g;
       try {
         g = trace_algorithm(*r.model_, algorithm);
       } catch (const std::invalid_argument& e) {
         throw py::value_error(e.what());
       }
       return graph_dict(g);
     }, "Expression graph of one algorithm traced on this model (robodyn.codegen).");
  cls.def("_set_kernels", [](RobotCore& r, std::uintptr_t id, std::uintptr_t M, std::uintptr_t g,
                             std::uintptr_t fd) {
       r.kernels_.id = reinterpret_cast<IdKernel>(id);
       r.kernels_.M = reinterpret_cast<MassKernel>(M);
       r.kernels_.g = reinterpret_cast<GravityKernel>(g);
       r.kernels_.fd = reinterpret_cast<FdKernel>(fd);
     }, "Use generated kernels (C function addresses; 0: the generic algorithm).");
  cls.def("_kernels", [](const RobotCore& r) {
    return py::make_tuple(reinterpret_cast<std::uintptr_t>(r.kernels_.id),
                          reinterpret_cast<std::uintptr_t>(r.kernels_.M),
                          reinterpret_cast<std::uintptr_t>(r.kernels_.g),
                          reinterpret_cast<std::uintptr_t>(r.kernels_.fd));
  });
  m.def("_simplify", [](const py::bytes& op, std::vector<std::int32_t> a, std::vector<std::int32_t> b,
                        std::vector<double> c, std::vector<std::int32_t> outputs) {
    ExprGraph g;
    const std::string ops = op;
    g.op.assign(ops.begin(), ops.end());
    g.a = std::move(a);
    g.b = std::move(b);
    g.c = std::move(c);
    g.outputs = std::move(outputs);
    try {
      return graph_dict(simplify(g));
    } catch (const std::invalid_argument& e) {
      throw py::value_error(e.what());
    }
  }, "The expression graph simplified (robodyn.codegen.simplify).");
  m.def("_builtin_kernels", [] {
    py::list l;
    for (const BuiltinKernels& k : builtin_kernels())
      l.append(py::make_tuple(k.name, k.sha256,
                              reinterpret_cast<std::uintptr_t>(k.inverse_dynamics),
                              reinterpret_cast<std::uintptr_t>(k.mass_matrix),
                              reinterpret_cast<std::uintptr_t>(k.gravity),
                              reinterpret_cast<std::uintptr_t>(k.forward_dynamics)));
    return l;
  }, "Kernels compiled into the extension: (name, source sha256, id, M, g, fd addresses).");

  // the hot methods bypass pybind11's dispatcher: METH_FASTCALL descriptors on the class
  for (PyMethodDef* def = kFastMethods; def->ml_name; ++def) {
    PyObject* descr = PyDescr_NewMethod(reinterpret_cast<PyTypeObject*>(cls.ptr()), def);
    if (!descr || PyObject_SetAttrString(cls.ptr(), def->ml_name, descr) < 0)
      throw py::error_already_set();
    Py_DECREF(descr);
  }

  SimHeld (*view)(py::handle) = [](py::handle h) {
    RobotCore& r = h.cast<RobotCore&>();
    return SimHeld{SimRobot{r.model_.get(), r.kernels_.id, r.kernels_.g, r.kernels_.fd,
                            force_set_of(h)},
                   r.model_};
  };
  register_simulation(m, view);
  register_forces(m, view);
  register_constraints(m, [](py::handle h) { return h.cast<RobotCore&>().model_; });
}
