# Project-wide warning and sanitizer flags, applied through the kvo_options interface target.
add_library(kvo_options INTERFACE)
target_compile_options(kvo_options INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion>)
# In a unity build a source file is no longer the main file of its translation unit, and GCC takes
# a class in it that holds a file-local type for one defined in a header (-Wsubobject-linkage).
if(CMAKE_UNITY_BUILD)
  target_compile_options(kvo_options INTERFACE
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>>:-Wno-subobject-linkage>)
endif()
# -fno-trapping-math (Clang's default): GCC otherwise keeps the branches of a floating-point select
# and leaves such loops scalar, among them every softmax's exp_fp64 (kvo/core/exp_fp64.hpp). It
# changes no value (rounding and evaluation order are untouched), only whether an FP exception flag
# may be raised by work done speculatively; nothing in kvoracle reads those flags.
target_compile_options(kvo_options INTERFACE
  $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>>:-fno-trapping-math>)
if(KVO_WERROR)
  target_compile_options(kvo_options INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
endif()
if(KVO_SANITIZE)
  # -g1: line tables are all a sanitizer report needs, and full debug information made this build
  # take a third longer (and its CLI 350 MB).
  # -ffp-contract=off: GCC fuses a * b + c into one FMA with -march=native at some levels and not
  # others, so a test's own arithmetic could round differently from the same expression in a
  # library; without contraction every file rounds as the portable Release build.
  # -Og (after the build type's -O2 on the command line, so it wins) for every C++ file: instrumented
  # -O2 cost half as much again as -O1 (19.8 s against 13.0 s for one of core's units), -Og a sixth
  # less than -O1, and the sanitizer pass's tests take the same few minutes (docs/reliability.md).
  # -fno-sanitize-address-use-after-scope: poisoning every temporary's stack slot between its uses
  # (nlohmann-json's and Eigen's expression temporaries, thousands per function) cost a fifth of
  # this build's compile time; ASan still finds overflows of the stack, heap and globals, use after
  # free, double frees and leaks, and UBSan runs every check it has.
  target_compile_options(kvo_options INTERFACE
    -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined -g1
    -fno-sanitize-address-use-after-scope
    $<$<COMPILE_LANGUAGE:CXX>:-ffp-contract=off> $<$<COMPILE_LANGUAGE:CXX>:-Og>)
  target_link_options(kvo_options INTERFACE -fsanitize=address,undefined)
endif()
if(KVO_BUILD_FUZZ)
  # Coverage feedback for libFuzzer in every library; the fuzz targets add -fsanitize=fuzzer.
  target_compile_options(kvo_options INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link>)
endif()
if(KVO_NATIVE)
  # GCC 12 reports false -Wmaybe-uninitialized inside its AVX-512 intrinsics as Eigen inlines them.
  target_compile_options(kvo_options INTERFACE
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>>:-Wno-maybe-uninitialized>)
endif()

# kvo_abi: the flags that must agree between kvoracle's libraries and everything compiled against
# their headers (Eigen's alignment and vector width follow -march). kvo_core links it PUBLIC, so
# every library, program, test and downstream project of the installed package gets the same.
add_library(kvo_abi INTERFACE)
set_target_properties(kvo_abi PROPERTIES EXPORT_NAME abi)
# The headers are C++20 (std::span, concepts): a usage requirement, so that a downstream project
# whose compiler defaults to C++17 (GCC 12) compiles them without setting a standard itself.
target_compile_features(kvo_abi INTERFACE cxx_std_20)
if(KVO_NATIVE)
  target_compile_options(kvo_abi INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-march=native>)
endif()
