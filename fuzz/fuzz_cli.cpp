// Fuzz target: the kvoracle command line. The input, split at NUL bytes, is argv after the
// program name: it is parsed by the real CLI11 app (every subcommand and option, validators
// included) and each argument is handed to the option parsers the commands use (budgets,
// budget overrides, policies and their parameters, concave transforms, GQA modes, scorer devices,
// trace dtypes). Nothing is run: commands read and write files, and the file readers have their
// own targets. Any input must end in success, a CLI11 parse error or one kvo::Error.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cli.hpp"
#include "fuzz_support.hpp"
#include "kvo/core/concave.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/replay.hpp"
#include "kvo/core/run_options.hpp"
#include "kvo/core/text_list.hpp"
#include "kvo/gpu/scorer.hpp"
#include "options.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> args(1);
  for (std::size_t x = 0; x < size && args.size() <= 24; ++x) {
    if (data[x] == 0)
      args.emplace_back();
    else
      args.back() += static_cast<char>(data[x]);
  }
  {
    kvo::cli::Cli cli;
    std::vector<const char*> argv{"kvoracle"};
    for (const auto& a : args) argv.push_back(a.c_str());
    try {
      cli.app.parse(static_cast<int>(argv.size()), argv.data());
    } catch (const CLI::Error&) {
    }
  }
  for (const auto& a : args) {
    using namespace kvo::cli;
    using kvo::fuzz::expect_clean;
    expect_clean([&] { (void)kvo::Budget::parse(a); });
    expect_clean([&] { (void)kvo::Budget::parse("20%", a); });
    expect_clean([&] { (void)kvo::Budget::parse("20%", "", {a}).resolve(97, 1, 2); });
    expect_clean([&] { (void)kvo::parse_policy_list(a); });
    for (const auto& f : kvo::run_options_schema().fields())  // every run option's text through the one parser
      expect_clean([&] {
        kvo::RunOptions o;
        f.set(o, a);
        (void)o.build(kvo::PolicyId::Greedy);
      });
    expect_clean([&] { (void)kvo::parse_concave(a); });
    expect_clean([&] { (void)kvo::parse_gqa(a); });
    expect_clean([&] { (void)kvo::parse_scorer_device(a); });
    expect_clean([&] { (void)trace_dtype(a); });
    expect_clean([&] { (void)kvo::parse_number_list(a, "list"); });
    std::vector<std::string> items;
    expect_clean([&] { items = kvo::split_list(a, "list"); });
    for (const auto& item : items) expect_clean([&] { (void)kvo::Amount::parse(item); });
  }
  return 0;
}
