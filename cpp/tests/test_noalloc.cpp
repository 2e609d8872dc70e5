// No heap allocation inside the algorithms (STYLE.md rule 7).
//
// Every global operator new / new[] is replaced by a counting version, and on glibc malloc,
// calloc, realloc, posix_memalign, aligned_alloc and memalign are interposed too (forwarding to
// __libc_*), so an allocation by Eigen, the standard library or the code under test is seen
// whichever way it is made. EIGEN_RUNTIME_NO_MALLOC plus set_is_malloc_allowed(false) makes
// every Eigen heap allocation fail an eigen_assert, which is redirected here to a recording
// handler (so it works with or without NDEBUG and names the failed check).
//
// Three models are built from BodySpec: a free-floating random tree (a free-flyer base, nq = 14,
// nv = 13, every joint kind of joint.hpp), and two 7-DOF models: a random tree (random axes, origins, inertias,
// revolute and prismatic joints, armature, damping, Coulomb friction, extra frames) and a
// structured chain (coordinate axes, signed-permutation origins, principal inertias: the
// special-cased paths). For each, Data is created and warmed up, then every algorithm runs at
// several new configurations (cache misses) and again at the same configuration (cache hits)
// while the counters are armed. A few identities (FD(ID(qdd)) = qdd, kane = rnea,
// ID = M qdd + bias + joint terms) check that the calls really computed something.
//
// Usage: test_noalloc                    exit 0 if no allocation happened, 1 otherwise
//        test_noalloc --self-check-new     allocates with operator new inside the guard
//        test_noalloc --self-check-malloc  allocates with malloc inside the guard
//        test_noalloc --self-check-eigen   allocates an Eigen::VectorXd inside the guard
// The self-check modes must report failure (exit 1): they show the test can fail.
//
// One translation unit in parts (noalloc/): harness.hpp the counting allocators and the headers
// under test, models.hpp the three models, tree_check.hpp every algorithm of a fixed-base
// model (with simulation_check.hpp, the C++ simulation loop), floating_check.hpp the
// free-floating model, constraint_check.hpp the constrained algorithms.
#include "noalloc/harness.hpp"
#include "noalloc/models.hpp"
#include "noalloc/tree_check.hpp"
#include "noalloc/floating_check.hpp"
#include "noalloc/constraint_check.hpp"

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (!mode.empty() && mode != "--self-check-new" && mode != "--self-check-malloc" &&
      mode != "--self-check-eigen") {
    std::printf("usage: %s [--self-check-new|--self-check-malloc|--self-check-eigen]\n", argv[0]);
    return 2;
  }
  std::printf("malloc hook: %s\n", ROBODYN_NOALLOC_MALLOC_HOOK ? "on" : "off");
  int failures = 0;
  failures += check_model("random tree", random_tree_model(20080101u), mode);
  failures += check_model("structured chain", structured_chain_model(7u), mode);
  failures += check_floating("floating tree", floating_tree_model(17u), mode);
  failures += check_constraints("random tree", random_tree_model(20080101u));
  failures += check_constraints("floating tree", floating_tree_model(17u));
  for (const auto& [label, model] :
       {std::pair<const char*, Model>{"random tree", random_tree_model(20080101u)},
        {"floating tree", floating_tree_model(17u)}}) {
    const std::string e = check_pattern_reuse(model);
    if (!e.empty()) {
      std::printf("FAIL %s: %s\n", label, e.c_str());
      ++failures;
    }
  }
  if (failures) {
    std::printf("test_noalloc: FAILED (%d)\n", failures);
    return 1;
  }
  std::printf("test_noalloc: OK, no heap allocation inside the algorithms\n");
  return 0;
}
