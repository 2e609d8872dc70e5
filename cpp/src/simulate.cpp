// Python bindings of the simulation and control code: the fixed-step loop (robodyn/simulation/simulate.hpp,
// _core._simulate_fixed, robodyn.simulation.simulate's engine "cpp"), and the pieces the Python
// layers call so that each exists once: the control laws, measurement and saturation
// (robodyn/simulation/control.hpp: _control_law, _measure, _saturate; robodyn.control's controllers) and
// the integrator step (robodyn/simulation/integrator.hpp: _fixed_step; robodyn.simulation.FixedStep, used
// by the Python loop and robodyn-ros2-sim). Registered from bindings.cpp, which passes a
// function giving the model and generated kernels of a RobotCore object.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <chrono>
#include <cmath>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>

#include "instances.hpp"
#include "numpy_boundary.hpp"

// the algorithms are compiled in their own units (instances.hpp)
namespace robodyn {
ROBODYN_RNEA(extern, double);
ROBODYN_ABA(extern, double);
ROBODYN_CRBA(extern, double);
ROBODYN_CRBA_LOWER(extern, double);
ROBODYN_KANE(extern, double);
ROBODYN_KINEMATICS(extern, double);
}  // namespace robodyn

#include "robodyn/simulation/simulate.hpp"

namespace py = pybind11;
using namespace robodyn;

namespace {

using boundary::bad;

const double* input(py::handle h, const char* name, py::ssize_t rows, py::ssize_t cols,
                    py::object& keep, bool allow_none = false) {
  return boundary::get_fixed(h, name, rows, cols, keep, allow_none);
}

double* output(py::handle h, const char* name, py::ssize_t rows, py::ssize_t cols) {
  const Py_intptr_t dims[2] = {rows, cols};
  return boundary::get_writeable(h, name, 2, dims);
}

// A C-contiguous float64 array of exactly `size` elements (any shape), written in place or
// read; no conversion: these are the hot-path entries of Python code that owns its buffers.
double* buffer(py::handle h, const char* name, py::ssize_t size, bool writeable) {
  PyObject* o = h.ptr();
  if (!boundary::is_native_f64_c(o)) bad(name, "must be a C-contiguous float64 numpy array");
  const py::array a = boundary::array_of(o);
  if (writeable && !a.writeable()) bad(name, "is not writeable");
  const py::ssize_t count = a.size();
  if (count != size)
    bad(name, "expected " + std::to_string(size) + " values, got shape " +
                  boundary::shape_str(o));
  // read-only when !writeable: the callers only read through it then
  return const_cast<double*>(static_cast<const double*>(a.data()));
}

// ValueError naming `name` unless the `size` values at p are all finite (a measured state or
// a reference given to a control law: a NaN there would become a silent NaN torque)
void finite(const double* p, py::ssize_t size, const char* name) {
  for (py::ssize_t i = 0; i < size; ++i)
    if (!std::isfinite(p[i]))
      bad(name, "contains NaN or inf at index " + std::to_string(i) +
                    " (expected finite values)");
}

// fn(args..., name=value...) by the vectorcall protocol: no argument tuple or keyword dict is
// built when fn supports it (a Python function does). kwnames: the keyword names (a tuple),
// the last entries of args. Throws the Python error fn raises.
void call(py::handle fn, PyObject* const* args, size_t positional, PyObject* kwnames) {
  PyObject* r = PyObject_Vectorcall(fn.ptr(), args, positional, kwnames);
  if (!r) throw py::error_already_set();
  Py_DECREF(r);
}

PyObject* names(std::initializer_list<const char*> keys) {
  PyObject* t = PyTuple_New(static_cast<py::ssize_t>(keys.size()));
  py::ssize_t i = 0;
  for (const char* k : keys) PyTuple_SET_ITEM(t, i++, PyUnicode_InternFromString(k));
  return t;  // kept for the life of the process
}

const char* status_name(SimStatus s) {
  switch (s) {
    case SimStatus::Ok: return "ok";
    case SimStatus::Diverged: return "diverged";
    case SimStatus::ForwardDynamicsFailed: return "fd_failed";
    case SimStatus::Stopped: return "stopped";
  }
  return "?";
}

}  // namespace

void register_simulation(py::module_& m, SimHeld (*view)(py::handle)) {
  m.attr("CONTROL_LAWS") = py::make_tuple("none", "computed_torque", "pd_gravity", "feedforward");

  m.def(
      "_control_law",
      [](int law, py::handle kp, py::handle kd, bool feedback, py::handle q, py::handle qd,
         py::handle q_ref, py::handle qd_ref, py::handle qdd_ref, py::handle tau, py::handle v,
         py::handle g, py::handle inverse_dynamics, py::handle gravity_torques) {
        if (law < 0 || law > 3) bad("law", "expected an index into CONTROL_LAWS");
        if (!boundary::is_array(kp.ptr()) || boundary::array_of(kp.ptr()).ndim() != 1)
          bad("kp", "expected an (n,) array");
        const py::ssize_t n = boundary::array_of(kp.ptr()).shape(0);
        const ControlGains gains{buffer(kp, "kp", n, false), buffer(kd, "kd", n, false),
                                 feedback};
        const py::handle arrays[8] = {q, qd, q_ref, qd_ref, qdd_ref, tau, v, g};
        const double* p[8];
        const char* labels[8] = {"q", "qd", "q_ref", "qd_ref", "qdd_ref", "tau", "v", "g"};
        for (int i = 0; i < 8; ++i) p[i] = buffer(arrays[i], labels[i], n, i >= 5);
        // the measured state and the reference: finite, before anything is written
        for (int i = 0; i < 5; ++i) finite(p[i], n, labels[i]);
        // the law calls back with its arguments' pointers: back to the caller's arrays
        auto object = [&](const double* x) {
          for (int i = 0; i < 8; ++i)
            if (x == p[i]) return arrays[i].ptr();
          throw std::logic_error("control_law passed a pointer it was not given");
        };
        static PyObject* out_kw = names({"out"});
        auto id = [&](const double* a, const double* b, const double* c, double* out) {
          PyObject* args[4] = {object(a), object(b), object(c), object(out)};
          call(inverse_dynamics, args, 3, out_kw);
        };
        auto gravity = [&](const double* a, double* out) {
          PyObject* args[2] = {object(a), object(out)};
          call(gravity_torques, args, 1, out_kw);
        };
        control_law(static_cast<ControlLaw>(law), static_cast<int>(n), gains, p[0], p[1], p[2],
                    p[3], p[4], const_cast<double*>(p[5]), const_cast<double*>(p[6]),
                    const_cast<double*>(p[7]), id, gravity);
      },
      py::arg("law"), py::arg("kp"), py::arg("kd"), py::arg("feedback"), py::arg("q"),
      py::arg("qd"), py::arg("q_ref"), py::arg("qd_ref"), py::arg("qdd_ref"), py::arg("tau"),
      py::arg("v"), py::arg("g"), py::arg("inverse_dynamics"), py::arg("gravity_torques"),
      "tau = law(q, qd; q_ref, qd_ref, qdd_ref) (robodyn/simulation/control.hpp), law an index into "
      "CONTROL_LAWS, with inverse_dynamics(q, qd, qdd, out=) and gravity_torques(q, out=) "
      "called back (only with the arrays given). All arrays C-contiguous float64 (n,); tau, v "
      "(commanded acceleration or feedback torque) and g (gravity torques) are written. A NaN "
      "or inf in q, qd or the reference is a ValueError naming it, before anything is "
      "written.");

  m.def(
      "_measure",
      [](py::handle ring, long call, int delay, py::handle q, py::handle qd, py::handle noise_q,
         py::handle noise_qd) {
        if (delay < 0) bad("delay", "must be >= 0");
        if (call < 0) bad("call", "must be >= 0");
        const py::ssize_t n = py::len(q);
        // (counted in py::ssize_t: (delay + 1) * 2 in int wraps to 0 for delay = INT_MAX)
        double* r = buffer(ring, "ring", (static_cast<py::ssize_t>(delay) + 1) * 2 * n, true);
        const double* nq = noise_q.is_none() ? nullptr : buffer(noise_q, "noise_q", n, false);
        const double* nqd = noise_qd.is_none() ? nullptr : buffer(noise_qd, "noise_qd", n, false);
        const double* pq = buffer(q, "q", n, false);
        const double* pqd = buffer(qd, "qd", n, false);
        // a non-finite measurement is refused before it enters the ring
        finite(pq, n, "q");
        finite(pqd, n, "qd");
        return measure(static_cast<int>(n), r, delay, call, pq, pqd, nq, nqd);
      },
      py::arg("ring"), py::arg("call"), py::arg("delay"), py::arg("q"), py::arg("qd"),
      py::arg("noise_q"), py::arg("noise_qd"),
      "Stores control call number `call`'s measurement (q + noise_q, qd + noise_qd; None adds "
      "nothing) in the (delay + 1, 2, n) ring and returns the slot the law sees, the one taken "
      "`delay` calls earlier (robodyn/simulation/control.hpp measure). A NaN or inf in q or qd is a "
      "ValueError naming it, before the ring is written.");

  m.def(
      "_control_inputs",
      [](py::handle q, py::handle qd, py::handle q_ref, py::handle qd_ref, py::handle qdd_ref) {
        const py::handle arrays[5] = {q, qd, q_ref, qd_ref, qdd_ref};
        const char* labels[5] = {"q", "qd", "q_ref", "qd_ref", "qdd_ref"};
        const py::ssize_t n = py::len(q);
        for (int i = 0; i < 5; ++i) finite(buffer(arrays[i], labels[i], n, false), n, labels[i]);
      },
      py::arg("q"), py::arg("qd"), py::arg("q_ref"), py::arg("qd_ref"), py::arg("qdd_ref"),
      "Checks a control call's inputs (C-contiguous float64 arrays of q's size) without "
      "changing anything: a NaN or inf is a ValueError naming the argument, as _control_law "
      "and _measure check them. A controller with a measurement model calls it before it "
      "draws the call's noise, so that a refused call leaves the generator where it was.");

  m.def(
      "_solve",
      [](py::handle A, py::handle B) {
        if (!boundary::is_array(A.ptr()) || boundary::array_of(A.ptr()).ndim() != 2 ||
            boundary::array_of(A.ptr()).shape(0) != boundary::array_of(A.ptr()).shape(1))
          bad("A", "expected a square (k, k) array");
        const py::ssize_t k = boundary::array_of(A.ptr()).shape(0);
        if (!boundary::is_array(B.ptr()) || boundary::array_of(B.ptr()).ndim() < 1 ||
            boundary::array_of(B.ptr()).ndim() > 2 || boundary::array_of(B.ptr()).shape(0) != k)
          bad("B", "expected a (k,) or (k, r) array, k = " + std::to_string(k));
        const py::array b = boundary::array_of(B.ptr());
        const py::ssize_t r = b.ndim() == 2 ? b.shape(1) : 1;
        double* a = buffer(A, "A", k * k, true);
        if (!lu_solve(static_cast<int>(k), a, static_cast<int>(r), buffer(B, "B", k * r, true)))
          bad("A", "singular or not finite (a zero or non-finite pivot)");
      },
      py::arg("A"), py::arg("B"),
      "B <- A^-1 B in place (robodyn/simulation/simulate.hpp lu_solve: LU with partial pivoting), for a "
      "C-contiguous float64 (k, k) A, overwritten by its factors, and (k,) or (k, r) B. "
      "Allocates nothing. A singular A is a ValueError.");

  m.def(
      "_saturate",
      [](py::handle tau, py::handle limit) {
        const py::ssize_t n = py::len(limit);
        return saturate(static_cast<int>(n), buffer(tau, "tau", n, true),
                        buffer(limit, "limit", n, false));
      },
      py::arg("tau"), py::arg("limit"),
      "Clips tau in place to [-limit, limit]; True if any joint was beyond its bound.");

  m.def(
      "_joint_stops",
      [](py::handle q, py::handle qd, py::handle lower, py::handle upper, bool stops,
         double restitution, py::handle hits, py::handle excess) {
        const py::ssize_t n = py::len(lower);
        SimLimits L;
        L.lower = buffer(lower, "lower", n, false);
        L.upper = buffer(upper, "upper", n, false);
        L.stops = stops;
        L.restitution = restitution;
        L.hits = buffer(hits, "hits", n, true);
        L.excess = buffer(excess, "excess", n, true);
        joint_stops(static_cast<int>(n), buffer(q, "q", n, true), buffer(qd, "qd", n, true), L);
      },
      py::arg("q"), py::arg("qd"), py::arg("lower"), py::arg("upper"), py::arg("stops"),
      py::arg("restitution"), py::arg("hits"), py::arg("excess"),
      "The joint limits at the end of a step (robodyn/simulation/simulate.hpp joint_stops): a joint "
      "beyond [lower, upper] (+-inf: none) is counted in hits and its largest excess kept and, "
      "with stops, put back on the bound with its outward velocity times -restitution. All "
      "arrays C-contiguous float64 (n,); q, qd, hits, excess written in place.");

  m.def(
      "_fixed_step",
      [](py::handle Z, py::handle tmp, py::tuple q_s, py::tuple qd_s, py::tuple qdd_s,
         py::handle tau, double h, bool rk4, py::handle forward_dynamics, py::handle method,
         double t, py::handle control) {
        if (!boundary::is_array(Z.ptr())) bad("Z", "expected a (4, 3n) array");
        const py::array za = boundary::array_of(Z.ptr());
        if (za.ndim() != 2 || za.shape(0) != 4 || za.shape(1) % 3 != 0)
          bad("Z", "expected a (4, 3n) array");
        const py::ssize_t n = za.shape(1) / 3;
        double* z = buffer(Z, "Z", 12 * n, true);
        double* scratch = buffer(tmp, "tmp", 2 * n, true);
        buffer(tau, "tau", n, false);
        // the views of Z's rows the callbacks receive: q_s[s], qd_s[s], qdd_s[s]
        const py::tuple* views[3] = {&q_s, &qd_s, &qdd_s};
        for (int part = 0; part < 3; ++part) {
          if (views[part]->size() != 4) bad("views", "expected 4 views per part");
          for (int s = 0; s < 4; ++s)
            if (buffer((*views[part])[s], "views", n, true) != z + s * 3 * n + part * n)
              bad("views", "must be the rows of Z: Z[s, :n], Z[s, n:2n], Z[s, 2n:]");
        }
        static PyObject* fd_kw = names({"method", "out"});
        auto fd = [&](int s, const double*, const double*, double*) {
          PyObject* args[5] = {PyTuple_GET_ITEM(q_s.ptr(), s), PyTuple_GET_ITEM(qd_s.ptr(), s),
                               tau.ptr(), method.ptr(), PyTuple_GET_ITEM(qdd_s.ptr(), s)};
          call(forward_dynamics, args, 3, fd_kw);
          return true;
        };
        auto stage = [&](int s, double dt, const double*, const double*) {
          if (control.is_none()) return true;
          py::object ts = py::float_(t + dt);
          PyObject* args[3] = {ts.ptr(), PyTuple_GET_ITEM(q_s.ptr(), s),
                               PyTuple_GET_ITEM(qd_s.ptr(), s)};
          call(control, args, 3, nullptr);
          return true;
        };
        if (rk4)
          rk4_step(static_cast<int>(n), z, scratch, h, fd, stage);
        else
          euler_step(static_cast<int>(n), z, h, fd);
      },
      py::arg("Z"), py::arg("tmp"), py::arg("q_s"), py::arg("qd_s"), py::arg("qdd_s"),
      py::arg("tau"), py::arg("h"), py::arg("rk4"), py::arg("forward_dynamics"),
      py::arg("method"), py::arg("t") = 0.0, py::arg("control") = py::none(),
      "One RK4 (rk4=True) or semi-implicit Euler step of size h (robodyn/simulation/integrator.hpp) of "
      "the state Z[0, :2n] in the (4, 3n) stage workspace Z, calling back "
      "forward_dynamics(q_s[s], qd_s[s], tau, method=method, out=qdd_s[s]) per stage and, "
      "before RK4 stages 1-3, control(t + c_s h, q_s[s], qd_s[s]); the views must be Z's rows. "
      "tmp: (2n,) scratch.");

  m.def(
      "_simulate_fixed",
      [view](py::handle plant, py::handle grid, py::handle control, py::handle q0,
             py::handle qd0, py::handle q_out, py::handle qd_out, py::handle tau_out,
             const std::string& integrator, const std::string& method, bool continuous,
             py::handle controller, const std::string& law, py::handle kp, py::handle kd,
             bool feedback, bool kane, py::handle limit, py::handle q_ref, py::handle qd_ref,
             py::handle qdd_ref, py::handle noise_q, py::handle noise_qd, int delay,
             py::handle ring, py::handle progress, long every, py::handle lower,
             py::handle upper, bool stops, double restitution, py::handle hits_out,
             py::handle excess_out) {
        // the plant and the options
        const SimHeld plant_held = view(plant);
        const SimRobot p = plant_held.robot;
        if (p.model->floating)
          bad("robot", "the C++ loop simulates fixed-base models only (a free-floating base "
                       "runs in the Python loop)");
        const py::ssize_t n = p.model->n;
        SimIntegrator integ;
        if (integrator == "rk4")
          integ = SimIntegrator::RK4;
        else if (integrator == "euler")
          integ = SimIntegrator::SemiImplicitEuler;
        else
          bad("integrator", "expected 'rk4' or 'euler', got '" + integrator + "'");
        SimForward fd;
        if (method == "aba")
          fd = SimForward::Aba;
        else if (method == "crba")
          fd = SimForward::Crba;
        else if (method == "kane")
          fd = SimForward::Kane;
        else
          bad("method", "expected 'aba', 'crba' or 'kane', got '" + method + "'");

        // the grid and the record
        py::object keep_t, keep_c, keep[12];
        const py::ssize_t points = py::len(grid);
        if (points < 2) bad("grid", "expected at least two time points");
        SimGrid g;
        g.t = input(grid, "grid", points, -1, keep_t);
        g.N = points - 1;
        g.continuous = continuous;
        using U8 = py::array_t<unsigned char, py::array::c_style | py::array::forcecast>;
        keep_c = U8::ensure(control);
        if (!keep_c || py::len(keep_c) != points) bad("control", "expected (len(grid),) flags");
        g.control = static_cast<const unsigned char*>(
            py::reinterpret_borrow<py::array>(keep_c).data());
        for (py::ssize_t k = 0; k + 1 < points; ++k)
          if (!(g.t[k + 1] > g.t[k])) bad("grid", "times must be strictly increasing");
        const double* pq0 = input(q0, "q0", n, -1, keep[0]);
        const double* pqd0 = input(qd0, "qd0", n, -1, keep[1]);
        SimOutput out;
        out.q = output(q_out, "q_out", points, n);
        out.qd = output(qd_out, "qd_out", points, n);
        out.tau = output(tau_out, "tau_out", points, n);

        // the controller
        SimController c;
        if (law == "none")
          c.law = SimLaw::None;
        else if (law == "computed_torque")
          c.law = SimLaw::ComputedTorque;
        else if (law == "pd_gravity")
          c.law = SimLaw::PDGravity;
        else if (law == "feedforward")
          c.law = SimLaw::Feedforward;
        else
          bad("law", "expected 'none', 'computed_torque', 'pd_gravity' or 'feedforward'");
        SimReference ref;
        SimHeld controller_held;
        if (c.law != SimLaw::None) {
          controller_held = view(controller);
          c.robot = controller_held.robot;
          if (c.robot.model->n != n)
            bad("controller", "its model has " + std::to_string(c.robot.model->n) +
                                  " joints, the plant " + std::to_string(n));
          c.kane = kane;
          c.feedback = feedback;
          c.kp = input(kp, "kp", n, -1, keep[2]);
          c.kd = input(kd, "kd", n, -1, keep[3]);
          if (!limit.is_none()) {
            using Arr = py::array_t<double, py::array::c_style | py::array::forcecast>;
            keep[4] = Arr::ensure(limit);
            if (!keep[4] || py::len(keep[4]) != n) bad("limit", "expected shape (n,)");
            c.limit = static_cast<const double*>(py::reinterpret_borrow<py::array>(keep[4]).data());
          }
          const long calls = sim_control_calls(g, integ);
          ref.rows = calls;
          ref.q = input(q_ref, "q_ref", calls, n, keep[5]);
          ref.qd = input(qd_ref, "qd_ref", calls, n, keep[6]);
          ref.qdd = input(qdd_ref, "qdd_ref", calls, n, keep[7]);
          c.noise_q = input(noise_q, "noise_q", calls, n, keep[8], true);
          c.noise_qd = input(noise_qd, "noise_qd", calls, n, keep[9], true);
          if (delay < 0) bad("delay", "must be >= 0");
          c.delay = delay;
          if (c.noise_q || c.noise_qd || delay > 0) {
            if (continuous) bad("continuous", "noise and delay need a control rate");
            if (!py::array::check_(ring)) bad("ring", "expected a numpy array");
            auto r = py::reinterpret_borrow<py::array>(ring);
            if (!(r.flags() & py::array::c_style) || !r.dtype().is(py::dtype::of<double>()) ||
                !r.writeable() || r.size() != (static_cast<py::ssize_t>(delay) + 1) * 2 * n)
              bad("ring", "expected a writeable C-contiguous float64 array of shape "
                          "(delay + 1, 2, n)");
            c.ring = static_cast<double*>(r.mutable_data());
          }
        }

        // the plant's joint limits (no bound: +-DBL_MAX)
        SimLimits lim;
        if (!lower.is_none()) {
          lim.lower = input(lower, "lower", n, -1, keep[10]);
          lim.upper = input(upper, "upper", n, -1, keep[11]);
          if (!(restitution >= 0.0 && restitution <= 1.0))
            bad("restitution", "expected a number in [0, 1]");
          lim.stops = stops;
          lim.restitution = restitution;
          const Py_intptr_t dims[1] = {n};
          lim.hits = boundary::get_writeable(hits_out, "hits_out", 1, dims);
          lim.excess = boundary::get_writeable(excess_out, "excess_out", 1, dims);
        }

        // the loop, without the GIL. After every interval: the progress callback (every
        // `every` intervals) and, every few milliseconds, Python's signal handlers (Ctrl-C
        // raises KeyboardInterrupt), both with the GIL taken back briefly
        if (every < 1) bad("every", "must be >= 1");
        bool py_error = false;
        long interval = 0;
        using Clock = std::chrono::steady_clock;
        auto last_check = Clock::now();
        const auto check_period = std::chrono::milliseconds(5);
        auto report = [&](double t) {
          const bool call = !progress.is_none() && interval++ % every == 0;
          const auto now = Clock::now();
          const bool signals = now - last_check >= check_period;
          if (!call && !signals) return true;
          py::gil_scoped_acquire acquire;
          if (signals) {
            last_check = now;
            if (PyErr_CheckSignals() != 0) {
              py_error = true;
              return false;
            }
          }
          if (call) {
            try {
              progress(t);
            } catch (py::error_already_set& e) {
              e.restore();
              py_error = true;
              return false;
            }
          }
          return true;
        };
        SimResult r;
        {
          Simulator sim(p, fd, integ, c, lim);
          py::gil_scoped_release release;
          r = sim.run(g, ref, pq0, pqd0, out, 1, report);
        }
        if (py_error) throw py::error_already_set();
        py::dict d;
        d["status"] = status_name(r.status);
        d["t"] = r.t;
        d["fd_calls"] = r.fd_calls;
        d["control_calls"] = r.control_calls;
        d["saturated_calls"] = r.saturated_calls;
        return d;
      },
      py::arg("plant"), py::arg("grid"), py::arg("control"), py::arg("q0"), py::arg("qd0"),
      py::arg("q_out"), py::arg("qd_out"), py::arg("tau_out"), py::kw_only(),
      py::arg("integrator") = "rk4", py::arg("method") = "aba", py::arg("continuous") = false,
      py::arg("controller") = py::none(), py::arg("law") = "none", py::arg("kp") = py::none(),
      py::arg("kd") = py::none(), py::arg("feedback") = true, py::arg("kane") = false,
      py::arg("limit") = py::none(), py::arg("q_ref") = py::none(),
      py::arg("qd_ref") = py::none(), py::arg("qdd_ref") = py::none(),
      py::arg("noise_q") = py::none(), py::arg("noise_qd") = py::none(), py::arg("delay") = 0,
      py::arg("ring") = py::none(), py::arg("progress") = py::none(), py::arg("every") = 1,
      py::arg("lower") = py::none(), py::arg("upper") = py::none(), py::arg("stops") = true,
      py::arg("restitution") = 0.0, py::arg("hits_out") = py::none(),
      py::arg("excess_out") = py::none(),
      "Fixed-step closed-loop simulation (robodyn.simulation.simulate, engine 'cpp'): RK4 or "
      "semi-implicit Euler over `grid`, the control law at the flagged instants (zero-order "
      "hold) or at every stage (continuous), the reference one row per control call; with "
      "`lower`/`upper`, hard stops (or with stops=False only a record) at the joint limits "
      "after every step, counted into hits_out and excess_out (n,). Writes "
      "q_out, qd_out, tau_out (len(grid), n) and returns {status, t, fd_calls, control_calls, "
      "saturated_calls}.");
}
