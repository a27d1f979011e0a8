#!/usr/bin/env bash
# The install test: `cmake --install` of the build tree into a temporary prefix, then a downstream
# project (tests/install/downstream, copied outside the source tree) that finds the package with
# find_package(kvoracle CONFIG REQUIRED), links kvo::core and kvo::oracle, builds and runs a toy
# decoder loop driving KvEvictionManager. Usage: run_install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log"
# The package holds headers, libraries, the CLI, the licence and the config; no source paths.
for f in include/kvo/version.hpp include/kvo/core/cache_manager.hpp bin/kvoracle \
  share/doc/kvoracle/LICENSE lib/cmake/kvoracle/kvoracleConfig.cmake; do
  [ -e "$tmp/prefix/$f" ] || { echo "install test: $f is not installed"; exit 1; }
done
if grep -rq "$src" "$tmp/prefix/lib/cmake/kvoracle"; then
  echo "install test: the installed package config names the source tree $src"
  exit 1
fi
# The downstream project does what docs/library.md shows, and nothing more: its CMakeLists.txt
# holds the page's cmake block line for line, and sets no language standard.
python3 - "$src/docs/library.md" "$src/tests/install/downstream/CMakeLists.txt" <<'PY'
import re, sys
block = re.findall(r"```cmake\n(.*?)```", open(sys.argv[1]).read(), flags=re.S)[0]
project = open(sys.argv[2]).read()
if block not in project or "CMAKE_CXX_STANDARD" in project:
    sys.exit("install test: tests/install/downstream/CMakeLists.txt is not docs/library.md's cmake block")
PY
cp -r "$src/tests/install/downstream" "$tmp/downstream"
# Configured as on a machine without MPI and the CUDA toolkit: kvo::core and kvo::oracle need
# neither (only kvo::scaleout and kvo::gpu do), and the compiler's default standard (C++17 in
# GCC 12) is raised by the package's own usage requirement.
cmake -S "$tmp/downstream" -B "$tmp/downstream-build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON \
  -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON >"$tmp/configure.log" || { cat "$tmp/configure.log"; exit 1; }
grep "downstream: kvoracle" "$tmp/configure.log"
cmake --build "$tmp/downstream-build" >"$tmp/build.log" || { cat "$tmp/build.log"; exit 1; }
"$tmp/downstream-build/toy_decoder"
"$tmp/prefix/bin/kvoracle" --version
# Where the package was built with MPI, asking for kvo::scaleout on a machine without it fails at
# find_package, with the reason.
if grep -A1 "^if(ON)" "$tmp/prefix/lib/cmake/kvoracle/kvoracleConfig.cmake" | grep -q "find_package(MPI"; then
  mkdir -p "$tmp/wants-mpi"
  printf '%s\n' 'cmake_minimum_required(VERSION 3.25)' 'project(wants_mpi LANGUAGES CXX)' \
    'find_package(kvoracle CONFIG REQUIRED COMPONENTS scaleout)' >"$tmp/wants-mpi/CMakeLists.txt"
  if cmake -S "$tmp/wants-mpi" -B "$tmp/wants-mpi-build" -G Ninja -DCMAKE_PREFIX_PATH="$tmp/prefix" \
    -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON >"$tmp/wants-mpi.log" 2>&1; then
    echo "install test: COMPONENTS scaleout was found without MPI"
    exit 1
  fi
  grep -q "libopenmpi-dev" "$tmp/wants-mpi.log" || { cat "$tmp/wants-mpi.log"; exit 1; }
fi
