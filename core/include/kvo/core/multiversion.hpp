// KVO_MULTIVERSION: a hot fp64 kernel compiled once per x86-64 level (v4: AVX-512, v3: AVX2 + FMA,
// and the baseline), one picked when the library loads, so that a portable build still runs its
// fused multiply-adds and exponentials in vector units instead of libm calls. Every version gives
// the same bits: the kernels it marks use explicit fma (exactly rounded on any hardware) and have no
// multiply-add left for the compiler to contract. GCC on x86-64 only, and only when the build does
// not already target FMA (-march=native); elsewhere it is empty.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__FMA__) && \
    !defined(KVO_NO_MULTIVERSION)
#define KVO_MULTIVERSION __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define KVO_MULTIVERSION
#endif
