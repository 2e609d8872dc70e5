// Shared by the units of robodyn._core's bindings (bindings.cpp, fast_calls.cpp): RobotCore
// (robot_core.hpp) with the NumPy boundary (numpy_boundary.hpp, numpy_arrays.hpp), the other
// units' registration functions, and the small helpers of the bindings. One definition each
// across the units (inline).
#pragma once

#include <pybind11/pybind11.h>

#include <array>
#include <string>

#include "robot_core.hpp"

// simulate.cpp: _core._simulate_fixed; `view` gives a RobotCore's model and generated kernels
void register_simulation(py::module_& m, SimHeld (*view)(py::handle));
// constraints_bindings.cpp: _core.ConstraintSystem; `model_of` gives a RobotCore's model
void register_constraints(py::module_& m, std::shared_ptr<const Model> (*model_of)(py::handle));
void register_forces(py::module_& m, SimHeld (*view)(py::handle));  // forces_bindings.cpp
const robodyn::ForceSet* force_set_of(py::handle robot);            // forces_bindings.cpp

namespace robodyn_py {

// runs fn (returning a py::object) for a METH_FASTCALL entry point: its result, or nullptr
// with the Python error set from what it threw
template <class Fn>
inline PyObject* guarded(Fn&& fn) {
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

// an expression graph (robodyn.codegen) as a dict of its arrays
inline py::dict graph_dict(const ExprGraph& g) {
  py::dict d;
  d["op"] = py::bytes(reinterpret_cast<const char*>(g.op.data()), g.op.size());
  d["a"] = g.a;
  d["b"] = g.b;
  d["c"] = g.c;
  d["outputs"] = g.outputs;
  d["assumptions"] = g.assumptions;
  return d;
}

inline bool str_is(py::handle h, const char* s) {
  return PyUnicode_Check(h.ptr()) && PyUnicode_CompareWithASCIIString(h.ptr(), s) == 0;
}

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

inline const char* kFDFail =
    "forward dynamics failed: the mass matrix is not positive definite at this state";

inline BodySpec body_from_dict(const py::dict& b, size_t index) {
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



using Outs2 = std::array<double*, 2>;
using Outs3 = std::array<double*, 3>;
using Ptrs4 = std::array<const double*, 4>;

// fast_calls.cpp: the fast-call entry points (METH_FASTCALL) of the hot methods
extern PyMethodDef kFastMethods[];

}  // namespace robodyn_py
using namespace robodyn_py;
