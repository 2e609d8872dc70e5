#!/usr/bin/env bash
# Build the C++ harnesses of bench/ (not part of the wheel) into build/bench/:
#
#   bench_vs_pinocchio      robodyn and Pinocchio's algorithms compiled from their headers in
#                           one translation unit with the same flags (-O3 -DNDEBUG, no -march)
#   bench_vs_pinocchio_lib  the same, Pinocchio's algorithms taken from the wheel's compiled
#                           library (PINOCCHIO_ENABLE_TEMPLATE_INSTANTIATION), as shipped
#
# and write the case files (robodyn's model of each URDF + the stripped URDF) for
# bench/run_all.py. Needs the pin wheel (headers and libraries under cmeel.prefix) and the
# header-only cmeel-urdfdom-headers wheel (pip install cmeel-urdfdom-headers) for Pinocchio's
# URDF parser.
#
#   bash bench/build_cpp.sh            # build + cases
#   CXX=clang++ bash bench/build_cpp.sh
#   build/bench/bench_vs_pinocchio build/bench/cases/ur5.model
#
# Robot-specific kernels: if build/bench/kernels/kernels.hpp exists (written by
# bench/cpp_cases.py from robodyn.codegen, when that module exists), it is compiled in.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PY="${PYTHON:-python}"
CXX="${CXX:-g++}"
OUT="$ROOT/build/bench"
mkdir -p "$OUT"

PREFIX="$("$PY" -c 'import cmeel, pathlib; print(pathlib.Path(cmeel.__file__).parent.parent / "cmeel.prefix")' 2>/dev/null || true)"
if [ ! -d "$PREFIX/include/pinocchio" ]; then
  echo "build_cpp.sh: Pinocchio headers not found under cmeel.prefix (pip install pin)" >&2
  exit 1
fi
if [ ! -d "$PREFIX/include/urdfdom_headers/urdf_model" ]; then
  echo "build_cpp.sh: urdf_model headers not found (pip install cmeel-urdfdom-headers)" >&2
  exit 1
fi

# cases first: the kernels header (if any) is written with them
"$PY" "$ROOT/bench/cpp_cases.py" --out "$OUT/cases" --kernels "$OUT/kernels"

# -g only for the callgrind profiles: it does not change the generated code
FLAGS=(-O3 -DNDEBUG -std=c++17 -g)
INCLUDES=(-I "$ROOT/cpp/include" -isystem "$PREFIX/include" -isystem "$PREFIX/include/eigen3"
          -isystem "$PREFIX/include/urdfdom_headers" -isystem "$PREFIX/include/urdfdom")
# the compile definitions of the pinocchio::pinocchio_headers and pinocchio_parsers targets
DEFS=(-DBOOST_MPL_LIMIT_LIST_SIZE=30 -DBOOST_MPL_LIMIT_VECTOR_SIZE=30
      -DBOOST_MPL_CFG_NO_PREPROCESSED_HEADERS -DBOOST_FUSION_INVOKE_MAX_ARITY=12
      -DPINOCCHIO_WITH_URDFDOM -DPINOCCHIO_URDFDOM_HEADERS_MAJOR_VERSION=3
      -DPINOCCHIO_URDFDOM_HEADERS_MINOR_VERSION=0 -DPINOCCHIO_URDFDOM_HEADERS_PATCH_VERSION=0)
LIBS=(-L "$PREFIX/lib" "-Wl,-rpath,$PREFIX/lib" -lpinocchio_parsers -lpinocchio_default
      -lurdfdom_model -lboost_filesystem -lboost_serialization)
KERNEL_SRC=()
KERNEL_DEF=()
if [ -f "$OUT/kernels/kernels.hpp" ]; then
  KERNEL_DEF=("-DROBODYN_BENCH_KERNELS=\"$OUT/kernels/kernels.hpp\"")
  for f in "$OUT"/kernels/*.cpp; do
    [ -e "$f" ] || continue
    "$CXX" "${FLAGS[@]}" -I "$ROOT/cpp/include" -isystem "$PREFIX/include/eigen3" -c "$f" \
      -o "${f%.cpp}.o"
    KERNEL_SRC+=("${f%.cpp}.o")
  done
  echo "build_cpp.sh: robot-specific kernels: ${#KERNEL_SRC[@]} object(s)"
fi

"$CXX" "${FLAGS[@]}" -I "$ROOT/cpp/include" -isystem "$PREFIX/include/eigen3" \
  -c "$ROOT/cpp/src/model.cpp" -o "$OUT/model.o"
"$CXX" "${FLAGS[@]}" "${INCLUDES[@]}" "${DEFS[@]}" "${KERNEL_DEF[@]}" \
  "$ROOT/bench/cpp/bench_vs_pinocchio.cpp" "$OUT/model.o" "${KERNEL_SRC[@]}" "${LIBS[@]}" \
  -o "$OUT/bench_vs_pinocchio" &
P1=$!
"$CXX" "${FLAGS[@]}" "${INCLUDES[@]}" "${DEFS[@]}" "${KERNEL_DEF[@]}" \
  -DPINOCCHIO_ENABLE_TEMPLATE_INSTANTIATION \
  "$ROOT/bench/cpp/bench_vs_pinocchio.cpp" "$OUT/model.o" "${KERNEL_SRC[@]}" "${LIBS[@]}" \
  -o "$OUT/bench_vs_pinocchio_lib" &
P2=$!
wait "$P1"
wait "$P2"
echo "build_cpp.sh: built $OUT/bench_vs_pinocchio and $OUT/bench_vs_pinocchio_lib ($("$CXX" --version | head -1))"
