// RobotCore, the C++ object behind robodyn.Robot: the immutable Model, a per-call Data, the
// generated kernels, the batch runner (rows split over threads, two rows per sweep where the
// D2 scalar exists) and the registry that finds it from its Python object. Shared by the units
// of robodyn._core's bindings through bindings_common.hpp (one definition each across the
// units: inline), so the registry and the thread count are shared.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <array>
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
#include "robodyn/codegen/codegen.hpp"
#include "robodyn/codegen/opcount.hpp"
#include "robodyn/model/model.hpp"
#include "robodyn/simulation/simulate.hpp"
#include "robodyn/spatial/joint.hpp"
#include "instances.hpp"
#include "numpy_arrays.hpp"
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

namespace robodyn_py {

inline std::atomic<int> g_threads{1};

// RobotCore::run without a two-row (D2) kernel
struct NoPair {};

// the fewest rows of a batch that runs two rows per sweep (RobotCore::run's `pair`): below
// it, making the two-row workspace (~2 us) costs more than the sweeps save (measured: 2 and
// 8 rows were 1.5-2.2x slower with it, 64 rows 1.5-1.9x faster)
constexpr py::ssize_t kPairRows = 16;

// a base quaternion q[3:7] whose norm is within this of 1 is normalised where it is used;
// farther is an error
constexpr double kQuaternionTolerance = 1e-6;

class RobotCore;

// The C++ object of each Robot the fast methods have been called on, by Python object.
// pybind11's public cast finds it through its type registry, about 350 instructions for a
// subclass such as robodyn.Robot; the fast methods look it up here (self_of). An entry is made
// by the first call on an object and erased by ~RobotCore, which pybind11 runs before the
// object's memory is freed, so an address is never found after it was reused. Used with the
// GIL held.
inline std::unordered_map<PyObject*, RobotCore*>& robots_by_object() {
  static auto* table = new std::unordered_map<PyObject*, RobotCore*>();
  return *table;
}

// the entry of robots_by_object() found last (self_of)
struct LastRobot {
  PyObject* self = nullptr;
  RobotCore* core = nullptr;
};
inline LastRobot last_robot;

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

  // A call's inputs and outputs (run): K inputs read and checked, O outputs made or checked,
  // an output sharing memory with an input redirected to a temporary. None of it depends on
  // the kernel, so it is compiled once per (K, O) (begin, finish), not once per kernel.
  static constexpr size_t kMaxIn = 4;
  template <size_t K, size_t O>
  struct CallIO {
    std::array<Input, K> in;
    std::array<int, K> size;
    bool batch = false;
    py::ssize_t rows = 1, row_size = 1;
    std::array<double*, O> po;    // where the kernel writes
    std::array<double*, O> dest;  // the outputs' memory
    std::array<py::object, O> scratch;
    py::object result;
  };

  // reads the K inputs named `names` (configurations nq wide, the rest nv) and makes or checks
  // the O outputs of per-state shape row_out (run)
  template <size_t K, size_t O>
  __attribute__((noinline)) void begin(CallIO<K, O>& io, const py::handle* args,
                                       const char* const* names, py::handle out,
                                       const Shape& row_out) const {
    for (size_t k = 0; k < K; ++k) {
      io.size[k] = size_of(names[k]);
      io.in[k] = get_input(args[k], names[k], io.size[k]);
      check_quaternions(io.in[k], names[k]);
    }
    io.batch = io.in[0].batch;
    io.rows = io.in[0].rows;
    for (size_t k = 1; k < K; ++k)
      if (io.in[k].batch != io.batch || io.in[k].rows != io.rows)
        rows_mismatch(io.batch, io.rows, io.in[k].batch, io.in[k].rows, io.size[k], names, k);
    io.row_size = row_out.prod();
    Shape shape;
    if (io.batch) shape.dim[shape.nd++] = io.rows;
    for (int k = 0; k < row_out.nd; ++k) shape.dim[shape.nd++] = row_out.dim[k];
    if constexpr (O == 1) {
      io.result = get_output(out, shape, &io.po[0]);
    } else {
      const bool given = !out.is_none();
      if (given && !((PyTuple_Check(out.ptr()) || PyList_Check(out.ptr())) &&
                     static_cast<size_t>(py::len(out)) == O))
        bad("out", "expected a tuple of " + std::to_string(O) + " arrays");
      std::array<py::object, O> arrays;
      for (size_t o = 0; o < O; ++o) {
        py::handle oh = given ? py::handle(PySequence_Fast_GET_ITEM(out.ptr(), o))
                              : py::handle(Py_None);
        arrays[o] = get_output(oh, shape, &io.po[o]);
        // outputs sharing memory (wholly or partly) would overwrite each other
        for (size_t p = 0; p < o; ++p)
          if (boundary::overlaps(io.po[p], io.rows * io.row_size, io.po[o],
                                 io.rows * io.row_size))
            bad("out", "the output arrays must not share memory");
      }
      // the caller's tuple comes back as is (nothing allocated with out=)
      if (given && PyTuple_Check(out.ptr())) {
        io.result = py::reinterpret_borrow<py::object>(out);
      } else {
        py::tuple t(O);
        for (size_t o = 0; o < O; ++o) t[o] = arrays[o];
        io.result = std::move(t);
      }
    }
    // an output sharing memory with an input (partly or wholly) is computed through a
    // temporary and copied at the end, as NumPy ufuncs do
    io.dest = io.po;
    for (size_t o = 0; o < O; ++o)
      for (size_t k = 0; k < K; ++k)
        if (boundary::overlaps(io.in[k].p, io.rows * io.size[k], io.po[o],
                               io.rows * io.row_size)) {
          py::array_t<double> tmp = new_array(shape);
          io.po[o] = tmp.mutable_data();
          io.scratch[o] = std::move(tmp);
          break;
        }
  }

  // the result of run: the outputs computed through a temporary copied to their arrays
  template <size_t K, size_t O>
  static py::object finish(CallIO<K, O>& io) {
    for (size_t o = 0; o < O; ++o)
      if (io.po[o] != io.dest[o])
        std::copy(io.po[o], io.po[o] + io.rows * io.row_size, io.dest[o]);
    return std::move(io.result);
  }

  [[noreturn]] static void rows_mismatch(bool batch, py::ssize_t rows, bool batch_k,
                                         py::ssize_t rows_k, int size_k,
                                         const char* const* names, size_t k) {
    bad(names[k], std::string("must have the same number of rows as ") + names[0] +
                      ": expected (" + (batch ? std::to_string(rows) + ", " : std::string()) +
                      std::to_string(size_k) + (batch ? ")" : ",)") + ", got " +
                      (batch_k ? "(" + std::to_string(rows_k) + ", " + std::to_string(size_k) + ")"
                               : "(" + std::to_string(size_k) + ",)"));
  }

  // A batch's workspace (one per thread): Data, and for the two-row sweep the D2 workspace
  // with its inputs (two rows interleaved into the lanes) and output
  struct Space {
    explicit Space(const Model& m) : d(m) {}
    Data d;
#if defined(ROBODYN_HAVE_D2)
    std::unique_ptr<DataTpl<D2>> d2;
    std::array<AVec<D2>, kMaxIn> x;
    AVec<D2> y;
#endif
  };

  // the rows [r0, r1) of a batch on one workspace (ok false on a numerical failure)
  using Rows = void (*)(const void* ctx, Space& s, py::ssize_t r0, py::ssize_t r1, bool& ok);

  // Runs rows(ctx, space, r0, r1, ok) over the rows [0, io.rows) of a batch with the GIL
  // released, split over up to set_num_threads() threads of at least min_rows rows, each with
  // its own workspace (other Python threads may use data_ meanwhile); `two`: with the two-row
  // sweep's. Every workspace is made in the calling thread before any worker starts, so one
  // that cannot be allocated raises MemoryError (not std::terminate in a worker). Every thread
  // that started is joined; a thread that cannot start raises RuntimeError. Returns false
  // when a kernel reported a numerical failure.
  static bool for_rows(const Model& model, py::ssize_t rows, const int* size, size_t K,
                       py::ssize_t row_size, bool two, py::ssize_t min_rows, const void* ctx,
                       Rows rows_fn) {
    auto make = [&] {
      auto space = std::make_unique<Space>(model);
#if defined(ROBODYN_HAVE_D2)
      if (two) {
        space->d2 = std::make_unique<DataTpl<D2>>(model);
        for (size_t k = 0; k < K; ++k) space->x[k].resize(size[k]);
        space->y.resize(row_size);
      }
#else
      (void)two;
      (void)size;
      (void)K;
      (void)row_size;
#endif
      return space;
    };
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
          rows_fn(ctx, *space, 0, rows, ok);
        } else {
          std::vector<std::unique_ptr<Space>> spaces;
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
                rows_fn(ctx, *spaces[t], r0, r1, f);
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
  // `kernel` row by row (the two-row workspace costs ~2 us to make). Only the kernel loops
  // are compiled per kernel; the rest is begin, finish and for_rows.
  template <size_t K, size_t O = 1, class Kernel, class Pair = NoPair>
  py::object run(const std::array<py::handle, K>& args, const std::array<const char*, K>& names,
                 py::handle out, const Shape& row_out, const char* what, Kernel kernel,
                 py::ssize_t min_rows = 64, Pair pair = Pair()) {
    static_assert(K >= 1 && O >= 1 && K <= kMaxIn, "one to kMaxIn inputs, at least one output");
    CallIO<K, O> io;
    begin(io, args.data(), names.data(), out, row_out);
    auto call = [&kernel](const Model& m, Data& d, const std::array<const double*, K>& x,
                          double* const* y) {
      if constexpr (O == 1) {
        return kernel(m, d, x, y[0]);
      } else {
        std::array<double*, O> ys;
        for (size_t o = 0; o < O; ++o) ys[o] = y[o];
        return kernel(m, d, x, ys);
      }
    };
    if (!io.batch) {
      std::array<const double*, K> ptr;
      for (size_t k = 0; k < K; ++k) ptr[k] = io.in[k].p;
      if (!call(*model_, data_, ptr, io.po.data())) throw py::value_error(what);
      return finish(io);
    }
    // batch: GIL released, rows split over threads, each thread with its own workspace; the
    // model held for the whole batch (a gravity change makes a new one)
    const std::shared_ptr<const Model> held = model_;
    const Model& model = *held;
#if defined(ROBODYN_HAVE_D2)
    constexpr bool kHavePair = O == 1 && !std::is_same<Pair, NoPair>::value;
    const bool two = kHavePair && io.rows >= kPairRows;
#else
    const bool two = false;
#endif
    auto work = [&](Space& s, py::ssize_t r0, py::ssize_t r1, bool& flag) {
#if defined(ROBODYN_HAVE_D2)
      if constexpr (kHavePair) {
        if (two) {
          // two rows at a time (the last one twice when r1 - r0 is odd): the inputs
          // interleaved into D2 lanes, the result split back
          const py::ssize_t row_size = io.row_size;
          std::array<const D2*, K> px;
          for (size_t k = 0; k < K; ++k) px[k] = s.x[k].data();
          for (py::ssize_t r = r0; r < r1; r += 2) {
            const bool both = r + 1 < r1;
            for (size_t k = 0; k < K; ++k) {
              const double* a = io.in[k].p + r * io.size[k];
              const double* b = both ? a + io.size[k] : a;
              for (int j = 0; j < io.size[k]; ++j) s.x[k][j] = D2::lanes(a[j], b[j]);
            }
            if (!pair(model, *s.d2, px, s.y.data())) flag = false;
            double* ya = io.po[0] + r * row_size;
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
        for (size_t k = 0; k < K; ++k) pk[k] = io.in[k].p + r * io.size[k];
        for (size_t o = 0; o < O; ++o) pr[o] = io.po[o] + r * io.row_size;
        if (!call(model, s.d, pk, pr.data())) flag = false;
      }
    };
    using Work = decltype(work);
    const Rows rows_fn = [](const void* ctx, Space& s, py::ssize_t r0, py::ssize_t r1,
                            bool& ok) { (*static_cast<const Work*>(ctx))(s, r0, r1, ok); };
    if (!for_rows(model, io.rows, io.size.data(), K, io.row_size, two, min_rows, &work, rows_fn))
      throw py::value_error(what);
    return finish(io);
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

}  // namespace robodyn_py
