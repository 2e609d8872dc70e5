// The case files of the C++ benchmarks (written by bench/cpp_cases.py from robodyn's model of a
// URDF): "key value..." lines, '#' comments. Keys: name, urdf (the stripped URDF's path, the
// rest of the line), gravity (three numbers) and one "body" line per joint in robodyn's order:
//
//   body PARENT TYPE AXIS(3) ORIGIN_R(9, row-major) ORIGIN_P(3) MASS COM(3) INERTIA(9)
//        ARMATURE LOWER UPPER JOINT_NAME
//
// with TYPE 0 revolute, 1 prismatic, 2 free-flyer (the first body only). Read by
// bench_vs_pinocchio.cpp and count_core.cpp.
#pragma once

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "robodyn/model/model.hpp"

namespace bench {

struct CaseFile {
  std::string name, urdf;
  robodyn::Vec3 gravity{0, 0, -9.81};
  std::vector<robodyn::BodySpec> bodies;
};

// reads path into c; on failure returns false with the reason in error
inline bool read_case_file(const std::string& path, CaseFile& c, std::string& error) {
  using robodyn::JointType;
  std::ifstream f(path);
  if (!f) {
    error = "cannot read " + path;
    return false;
  }
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream s(line);
    std::string key;
    if (!(s >> key) || key[0] == '#') continue;
    if (key == "name") {
      s >> c.name;
    } else if (key == "urdf") {
      std::getline(s >> std::ws, c.urdf);
    } else if (key == "gravity") {
      s >> c.gravity[0] >> c.gravity[1] >> c.gravity[2];
    } else if (key == "body") {
      robodyn::BodySpec b;
      int type;
      s >> b.parent >> type >> b.axis[0] >> b.axis[1] >> b.axis[2];
      if (type < 0 || type > 2) {
        error = path + ": bad joint type in: " + line;
        return false;
      }
      b.type = type == 0 ? JointType::Revolute
                         : type == 1 ? JointType::Prismatic : JointType::FreeFlyer;
      for (int r = 0; r < 3; ++r)
        for (int k = 0; k < 3; ++k) s >> b.origin_R(r, k);
      s >> b.origin_p[0] >> b.origin_p[1] >> b.origin_p[2] >> b.mass;
      s >> b.com[0] >> b.com[1] >> b.com[2];
      for (int r = 0; r < 3; ++r)
        for (int k = 0; k < 3; ++k) s >> b.inertia(r, k);
      s >> b.armature >> b.lower >> b.upper >> b.joint_name;
      if (!s) {
        error = path + ": bad body line: " + line;
        return false;
      }
      b.name = b.joint_name + "_link";
      c.bodies.push_back(b);
    }
  }
  if (c.bodies.empty()) {
    error = path + ": no body lines";
    return false;
  }
  return true;
}

}  // namespace bench
