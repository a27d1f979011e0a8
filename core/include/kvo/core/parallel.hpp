// Runs body(0..count-1) on a few threads; the first exception thrown is rethrown to the caller.
#pragma once
#include <functional>

namespace kvo {

// The workers parallel_for runs for `count` items: min(threads, count), at least 1, where
// threads <= 0 means std::thread::hardware_concurrency().
int worker_count(int threads, int count);

// threads <= 0 means std::thread::hardware_concurrency().
void parallel_for(int count, int threads, const std::function<void(int)>& body);

}  // namespace kvo
