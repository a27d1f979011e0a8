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
cp -r "$src/tests/install/downstream" "$tmp/downstream"
cmake -S "$tmp/downstream" -B "$tmp/downstream-build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$tmp/prefix" >"$tmp/configure.log" || { cat "$tmp/configure.log"; exit 1; }
grep "downstream: kvoracle" "$tmp/configure.log"
cmake --build "$tmp/downstream-build" >"$tmp/build.log" || { cat "$tmp/build.log"; exit 1; }
"$tmp/downstream-build/toy_decoder"
"$tmp/prefix/bin/kvoracle" --version
