// Internal: byte messages between the ranks of MPI_COMM_WORLD, for the unit scheduler. Without
// MPI there is one rank and nothing is ever sent.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace kvo::scaleout::detail {

enum Tag : int {
  kRequest = 7101,  // worker -> 0: "ready", body: int64 threads (slots), int64 plan fingerprint
  kResult,          // worker -> 0: int64 unit, then the result bytes (frees a slot)
  kFail,            // worker -> 0: int64 unit, then the error text
  kAssign,          // 0 -> worker: int64 unit to compute
  kDone,            // 0 -> worker: every unit is finished; the call ends
  kStop,            // 0 -> worker: the job failed; body: the error text
  kStopped,         // worker -> 0: acknowledges kStop; nothing follows from that worker
};

struct Message {
  int source = 0, tag = 0;
  std::string body;
};

void send(int dest, int tag, const std::string& body);
std::optional<Message> poll();  // a waiting message from any rank; does not block

std::string pack_int(std::int64_t v);
std::int64_t unpack_int(const std::string& body, size_t at = 0);  // 8 bytes at `at`

}  // namespace kvo::scaleout::detail
