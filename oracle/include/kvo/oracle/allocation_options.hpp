// The one table of `kvoracle oracle allocation` options: each option's name (Python's keyword and
// the JSON key), CLI flag, help, and how its text sets the request. The CLI's flags, Python's
// keywords and the defaults shown in help are all generated from it; kvpress's press parameters
// (press_parameters.hpp) join it, read by the allocating presses (--presses).
#pragma once
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "kvo/oracle/allocation.hpp"

namespace kvo {

struct AllocationOptionEntry {
  std::string_view name;  // "compression_ratio"
  std::string_view flag;  // "--compression-ratio"
  std::string_view help;
  bool required;                                                               // no default (prompt_len)
  std::function<void(AllocationRequest& request, std::string_view text)> set;  // kvo::Error naming the option
  std::function<std::string(const AllocationRequest& request)> get;            // the value as text
};

std::span<const AllocationOptionEntry> allocation_option_table();
// Sets one option by name from its text; kvo::Error for an unknown name (listing the known ones).
void set_allocation_option(AllocationRequest& request, std::string_view name, std::string_view text);

}  // namespace kvo
