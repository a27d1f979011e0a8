// Trace files: round trips, and one clear error for each kind of broken file.
#include "kvo/core/trace_io.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>

#include "kvo/core/error.hpp"
#include "kvo/core/memory_limit.hpp"
#include "test_support.hpp"

using namespace kvo;
using namespace kvo::test;
namespace fs = std::filesystem;

namespace {

fs::path tmp(const std::string& name) {
  const auto dir = fs::temp_directory_path() / ("kvo_trace_io_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / name;
}

void write_raw(const fs::path& p, const std::string& header, const std::string& data, std::int64_t hlen = -1) {
  std::ofstream f(p, std::ios::binary);
  const std::uint64_t n = hlen < 0 ? header.size() : static_cast<std::uint64_t>(hlen);
  f.write(reinterpret_cast<const char*>(&n), 8);
  f << header << data;
}

std::string error_of(const fs::path& p) {
  try {
    read_trace(p.string());
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

const std::string kMeta = R"("__metadata__":{"format":"kvoracle-trace","format_version":"1"})";

}  // namespace

TEST(TraceIO, RoundTripF32IsExact) {
  Trace tr = random_trace(2, 4, 2, 17, 8, 51, 0.35);
  tr.tokens.assign(17, 5);
  tr.prompt_len = 4;
  tr.metadata["model"] = "test";
  const auto p = tmp("rt.safetensors");
  write_trace(p.string(), tr);
  const Trace back = read_trace(p.string());
  EXPECT_EQ(back.n_layers, 2);
  EXPECT_EQ(back.n_heads, 4);
  EXPECT_EQ(back.n_kv_heads, 2);
  EXPECT_EQ(back.n_tokens, 17);
  EXPECT_EQ(back.head_dim, 8);
  EXPECT_EQ(back.prompt_len, 4);
  EXPECT_DOUBLE_EQ(back.attn_scale, 0.35);
  EXPECT_EQ(back.metadata.at("model"), "test");
  EXPECT_EQ(back.q, tr.q);
  EXPECT_EQ(back.k, tr.k);
  EXPECT_EQ(back.v, tr.v);
  EXPECT_EQ(back.tokens, tr.tokens);
  EXPECT_FALSE(fs::exists(p.string() + ".tmp." + std::to_string(::getpid())));
}

TEST(TraceIO, RoundTripF16IsWithinHalfPrecision) {
  const Trace tr = random_trace(1, 2, 1, 9, 4, 52);
  const auto p = tmp("rt16.safetensors");
  write_trace(p.string(), tr, DType::F16);
  const Trace back = read_trace(p.string());
  for (size_t x = 0; x < tr.q[0].size(); ++x)
    EXPECT_NEAR(back.q[0][x], tr.q[0][x], 2e-3 * std::fabs(tr.q[0][x]) + 1e-7);
}

TEST(TraceIO, RoundTripBF16IsWithinBFloatPrecision) {
  const Trace tr = random_trace(1, 2, 1, 9, 4, 55);
  const auto p = tmp("rtbf.safetensors");
  write_trace(p.string(), tr, DType::BF16);
  const Trace back = read_trace(p.string());
  for (size_t x = 0; x < tr.q[0].size(); ++x)
    EXPECT_NEAR(back.q[0][x], tr.q[0][x], 4e-3 * std::fabs(tr.q[0][x]) + 1e-30);
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16(bf16_to_float(0x4049)), 0x4049);  // exact values survive
}

TEST(TraceIO, HalfConversionsAreExactOnRepresentableValues) {
  for (float f : {0.0f, 1.0f, -2.5f, 65504.0f, 0.000061035156f, 5.9604645e-08f})
    EXPECT_EQ(half_to_float(float_to_half(f)), f) << f;
  EXPECT_TRUE(std::isinf(half_to_float(float_to_half(1e6f))));
  EXPECT_EQ(bf16_to_float(0x3f80), 1.0f);
}

// Every half decodes to sign * mantissa * 2^(exponent - 25) and encodes back to itself; every float
// between two neighbouring halves goes to the nearer one, and a midpoint to the one with an even
// mantissa: together that is round to nearest, ties to even, on the whole float range.
TEST(TraceIO, HalfConversionsRoundToNearestEvenEverywhere) {
  for (std::uint32_t h = 0; h < 0x10000u; ++h) {
    const std::uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 31) {
      EXPECT_EQ(std::isnan(half_to_float(static_cast<std::uint16_t>(h))), m != 0) << h;
      continue;
    }
    const float want = std::ldexp(static_cast<float>(e ? (m | 0x400u) : m), static_cast<int>(e ? e : 1) - 25);
    const float got = half_to_float(static_cast<std::uint16_t>(h));
    ASSERT_EQ(got, (h & 0x8000u) ? -want : want) << h;
    ASSERT_EQ(float_to_half(got), h == 0x8000u ? 0x8000u : h) << h;
  }
  for (const std::uint32_t sign : {0u, 0x8000u})
    for (std::uint32_t h = 0; h < 0x7c00u; ++h) {  // h and h + 1 (0x7c00: +-inf, above 65504 by one step)
      const auto lo = static_cast<std::uint16_t>(sign | h), hi = static_cast<std::uint16_t>(sign | (h + 1));
      const float a = std::fabs(half_to_float(lo));
      const float b = h + 1 == 0x7c00u ? 65536.0f : std::fabs(half_to_float(hi));
      const float mid = (a + b) / 2;  // exact: 12 significant bits
      const float s = sign ? -1.0f : 1.0f;
      ASSERT_EQ(float_to_half(s * mid), (h & 1u) ? hi : lo) << h;
      ASSERT_EQ(float_to_half(s * std::nextafter(mid, 0.0f)), lo) << h;
      ASSERT_EQ(float_to_half(s * std::nextafter(mid, 1e30f)), hi) << h;
    }
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::infinity()), 0x7c00u);
  EXPECT_EQ(float_to_half(-1e30f), 0xfc00u);
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::quiet_NaN()) & 0x7e00u, 0x7e00u);
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::denorm_min()), 0u);
}

TEST(TraceIO, ReadsADenseAttentionOnlyFileLikeNumpyWritesIt) {
  // [H=1, n=2, n=2] float32 causal attention, as `safetensors.numpy.save_file` lays it out.
  const float a[4] = {1.0f, 0.0f, 0.25f, 0.75f};
  const std::string data(reinterpret_cast<const char*>(a), sizeof a);
  const auto p = tmp("dense.safetensors");
  write_raw(p, "{" + kMeta + R"(,"layers.0.attn":{"dtype":"F32","shape":[1,2,2],"data_offsets":[0,16]}})", data);
  const Trace tr = read_trace(p.string());
  EXPECT_EQ(tr.n_heads, 1);
  EXPECT_EQ(tr.n_kv_heads, 1);
  EXPECT_EQ(tr.attn[0][2], 0.25f);
}

TEST(TraceIO, BrokenFilesGiveOneClearError) {
  const std::string four(16, '\0'), eight(8, '\0'), one_float(4, '\0');
  struct Case {
    std::string name, header, data;
    std::int64_t hlen;
    std::string expect;
  };
  const std::string q = R"("layers.0.q":{"dtype":"F32","shape":[1,1,2],"data_offsets":[0,8]})";
  const std::string k = R"("layers.0.k":{"dtype":"F32","shape":[1,1,2],"data_offsets":[8,16]})";
  const std::vector<Case> cases = {
      {"hlen", "{}", "", 1000, "exceeds the file size"},
      {"json", "{not json", "", -1, "not valid JSON"},
      {"array", "[1,2]", "", -1, "not a JSON object"},
      {"format", R"({"layers.0.q":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", one_float, -1,
       "not a kvoracle trace"},
      {"version", R"({"__metadata__":{"format":"kvoracle-trace","format_version":"9"}})", "", -1, "version '9'"},
      {"dtype", "{" + kMeta + R"(,"layers.0.q":{"dtype":"C64","shape":[1],"data_offsets":[0,8]}})", four, -1,
       "unsupported dtype 'C64'"},
      {"range", "{" + kMeta + R"(,"layers.0.q":{"dtype":"F32","shape":[1,1,2],"data_offsets":[0,800]}})", four, -1,
       "outside the data section"},
      {"size", "{" + kMeta + R"(,"layers.0.q":{"dtype":"F32","shape":[1,1,3],"data_offsets":[0,8]}})", four, -1,
       "need 12"},
      {"overlap", "{" + kMeta + "," + q + R"(,"layers.0.k":{"dtype":"F32","shape":[1,1,2],"data_offsets":[4,12]}})",
       four, -1, "overlap"},
      {"negative", "{" + kMeta + R"(,"layers.0.q":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}})", four, -1,
       "negative"},
      {"rank", "{" + kMeta + R"(,"layers.0.q":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})", four, -1,
       "3 dimensions"},
      {"onlyq", "{" + kMeta + "," + q + "}", eight, -1, "only one of q and k"},
      {"gap", "{" + kMeta + R"(,"layers.1.attn":{"dtype":"F32","shape":[1,1,1],"data_offsets":[0,4]}})", one_float, -1,
       "without gaps"},
      // What Python's safetensors refuses: a name twice, a NUL after the JSON, bytes after the last
      // tensor, a hole between tensors.
      {"twice", "{" + kMeta + "," + q + "," + k + "," + q + "}", four, -1, "names 'layers.0.q' twice"},
      {"nul", "{" + kMeta + "," + q + "," + k + "}" + std::string(1, '\0') + "garbage}", four, -1,
       "NUL byte at offset"},
      {"trailing", "{" + kMeta + "," + q + "," + k + "}", four + "tail", -1, "4 bytes follow the last tensor"},
      {"hole", "{" + kMeta + "," + q + R"(,"layers.0.k":{"dtype":"F32","shape":[1,1,2],"data_offsets":[12,20]}})",
       four + "tail", -1, "starts at byte 12 of the data section, not at 8"},
      {"stranger", "{" + kMeta + "," + q + "," + k + R"(,"weights":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}})",
       four, -1, "unexpected tensor"},
  };
  for (const auto& c : cases) {
    const auto p = tmp(c.name + ".safetensors");
    write_raw(p, c.header, c.data, c.hlen);
    const std::string e = error_of(p);
    EXPECT_NE(e.find(c.expect), std::string::npos) << c.name << ": " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << c.name;
  }
  std::ofstream(tmp("short.safetensors")) << "abc";
  EXPECT_NE(error_of(tmp("short.safetensors")).find("too short"), std::string::npos);
  EXPECT_NE(error_of(tmp("missing.safetensors")).find("cannot open"), std::string::npos);
}

TEST(TraceIO, NonFiniteValuesAreReportedWithTheirLocation) {
  Trace tr = random_trace(2, 2, 1, 5, 4, 53);
  const auto p = tmp("nan.safetensors");
  write_trace(p.string(), tr);
  tr.q[1][(1 * 5 + 3) * 4 + 2] = std::nanf("");
  EXPECT_THROW(write_trace(tmp("nan2.safetensors").string(), tr), Error);
  // Bypass the writer's check: patch the file in place.
  {
    SafetensorsFile f(p.string());
    (void)f;
  }
  std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
  std::uint64_t hlen;
  f.read(reinterpret_cast<char*>(&hlen), 8);
  std::string header(hlen, ' ');
  f.read(header.data(), static_cast<std::streamsize>(hlen));
  const auto pos = header.find("\"layers.1.q\"");
  ASSERT_NE(pos, std::string::npos);
  const auto off = header.find("data_offsets", pos);
  const size_t begin = std::stoul(header.substr(header.find('[', off) + 1));
  const float nan = std::nanf("");
  f.seekp(static_cast<std::streamoff>(8 + hlen + begin + ((1 * 5 + 3) * 4 + 2) * 4));
  f.write(reinterpret_cast<const char*>(&nan), 4);
  f.close();
  const std::string e = error_of(p);
  EXPECT_NE(e.find("NaN in q at layer 1, head 1, position 3, dimension 2"), std::string::npos) << e;
  tr.q[1][(1 * 5 + 3) * 4 + 2] = 0.0f;
  tr.k[0][7] = -std::numeric_limits<float>::infinity();
  try {
    tr.validate();
    ADD_FAILURE() << "an Inf passed validation";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("Inf in k at layer 0, head 0, position 1, dimension 3"), std::string::npos)
        << err.what();
  }
}

// A trace larger than the memory limit is refused from its header, before any tensor is read.
TEST(TraceIO, ATraceLargerThanTheMemoryLimitIsRefusedFromItsHeader) {
  const Trace tr = random_trace(2, 2, 1, 64, 16, 55);
  const auto p = tmp("big.safetensors");
  write_trace(p.string(), tr);
  ::setenv("KVO_MEMORY_LIMIT", "4K", 1);
  const std::string e = error_of(p);
  ::setenv("KVO_MEMORY_LIMIT", "bogus", 1);
  const std::string bad = error_of(p);
  ::unsetenv("KVO_MEMORY_LIMIT");
  EXPECT_NE(e.find("needs about 32.0 KiB in memory, more than the 4.0 KiB available (KVO_MEMORY_LIMIT)"),
            std::string::npos)
      << e;
  EXPECT_NE(bad.find("KVO_MEMORY_LIMIT='bogus' is not a byte count"), std::string::npos) << bad;
  EXPECT_EQ(read_trace(p.string()).n_tokens, 64);
  EXPECT_GT(memory_limit().bytes, 0u);
}

// Reading from bytes in memory is reading the file.
TEST(TraceIO, ReadingFromBytesEqualsReadingTheFile) {
  const Trace tr = random_trace(2, 2, 1, 9, 4, 56);
  const auto p = tmp("bytes.safetensors");
  write_trace(p.string(), tr);
  std::ifstream in(p, std::ios::binary);
  const std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const Trace a = read_trace(p.string()), b = read_trace(bytes, "in-memory");
  EXPECT_EQ(a.q, b.q);
  EXPECT_EQ(a.k, b.k);
  EXPECT_EQ(a.n_tokens, b.n_tokens);
  try {
    read_trace(std::span<const unsigned char>(bytes.data(), 5), "short");
    ADD_FAILURE();
  } catch (const Error& err) {
    EXPECT_STREQ(err.what(), "'short' is too short to be a safetensors file");
  }
}

TEST(TraceIO, WriterLeavesNoFileWhenTheFolderIsMissing) {
  const Trace tr = random_trace(1, 1, 1, 3, 2, 54);
  EXPECT_THROW(write_trace("/nonexistent-dir/x.safetensors", tr), Error);
}
