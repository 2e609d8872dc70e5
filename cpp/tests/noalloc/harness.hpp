// The counting allocators of test_noalloc.cpp, and the headers under test included after
// Eigen's eigen_assert is redirected to them (see test_noalloc.cpp).
// Part of test_noalloc.cpp (one translation unit: these definitions are included once, by it).
#pragma once

#ifndef EIGEN_RUNTIME_NO_MALLOC
#define EIGEN_RUNTIME_NO_MALLOC
#endif

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

void noalloc_eigen_assert_failed(const char* what, const char* file, int line);
#define eigen_assert(x)                                          \
  do {                                                           \
    if (!(x)) ::noalloc_eigen_assert_failed(#x, __FILE__, __LINE__); \
  } while (false)

#include <Eigen/Core>
#include <Eigen/Geometry>
#include <cerrno>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>
#include <string>
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
#include "robodyn/constraints/dynamics.hpp"
#include "robodyn/constraints/loop.hpp"
#include "robodyn/model/data.hpp"
#include "robodyn/model/model.hpp"
#include "robodyn/simulation/simulate.hpp"
#include "robodyn/spatial/joint.hpp"

// ---------------------------------------------------------------- counting allocators

namespace {

bool g_armed = false;        // count only while the algorithms run
long g_news = 0;             // operator new / new[] calls while armed
long g_mallocs = 0;          // malloc family calls while armed (glibc only)
long g_eigen_asserts = 0;    // failed eigen_asserts while armed (includes forbidden mallocs)
const char* g_eigen_what = "";
const char* g_eigen_file = "";
int g_eigen_line = 0;
void* volatile g_sink = nullptr;  // keeps deliberate allocations from being optimised away

inline void note_new() {
  if (g_armed) ++g_news;
}

void* counted_new(std::size_t n) {
  note_new();
  void* p = std::malloc(n ? n : 1);
  if (!p) throw std::bad_alloc();
  return p;
}

void* counted_new_aligned(std::size_t n, std::size_t a) {
  note_new();
  if (a < sizeof(void*)) a = sizeof(void*);
  void* p = nullptr;
  if (posix_memalign(&p, a, n ? n : 1) != 0) throw std::bad_alloc();
  return p;
}

}  // namespace

void noalloc_eigen_assert_failed(const char* what, const char* file, int line) {
  ++g_eigen_asserts;
  g_eigen_what = what;
  g_eigen_file = file;
  g_eigen_line = line;
}

void* operator new(std::size_t n) { return counted_new(n); }
void* operator new[](std::size_t n) { return counted_new(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  note_new();
  return std::malloc(n ? n : 1);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  note_new();
  return std::malloc(n ? n : 1);
}
void* operator new(std::size_t n, std::align_val_t a) {
  return counted_new_aligned(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return counted_new_aligned(n, static_cast<std::size_t>(a));
}
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  try {
    return counted_new_aligned(n, static_cast<std::size_t>(a));
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  try {
    return counted_new_aligned(n, static_cast<std::size_t>(a));
  } catch (...) {
    return nullptr;
  }
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  std::free(p);
}

#if defined(__GLIBC__) && !defined(ROBODYN_NOALLOC_NO_MALLOC_HOOK)
// glibc supports replacing malloc in the executable; these forward to its implementation
#define ROBODYN_NOALLOC_MALLOC_HOOK 1
extern "C" {
void* __libc_malloc(std::size_t);
void* __libc_calloc(std::size_t, std::size_t);
void* __libc_realloc(void*, std::size_t);
void* __libc_memalign(std::size_t, std::size_t);
void __libc_free(void*);

static inline void note_malloc() {
  if (g_armed) ++g_mallocs;
}

void* malloc(std::size_t n) noexcept {
  note_malloc();
  return __libc_malloc(n);
}
void* calloc(std::size_t k, std::size_t n) noexcept {
  note_malloc();
  return __libc_calloc(k, n);
}
void* realloc(void* p, std::size_t n) noexcept {
  note_malloc();
  return __libc_realloc(p, n);
}
void free(void* p) noexcept { __libc_free(p); }
void* memalign(std::size_t a, std::size_t n) noexcept {
  note_malloc();
  return __libc_memalign(a, n);
}
void* aligned_alloc(std::size_t a, std::size_t n) noexcept {
  note_malloc();
  return __libc_memalign(a, n);
}
int posix_memalign(void** p, std::size_t a, std::size_t n) noexcept {
  note_malloc();
  void* r = __libc_memalign(a, n);
  if (!r) return ENOMEM;
  *p = r;
  return 0;
}
}
#else
#define ROBODYN_NOALLOC_MALLOC_HOOK 0
#endif
