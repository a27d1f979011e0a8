#include "channel.hpp"

#include <cstring>
#include <limits>

#include "kvo/core/error.hpp"
#include "kvo/scaleout/team.hpp"

#ifdef KVO_WITH_MPI
#include <mpi.h>
#endif

namespace kvo::scaleout::detail {

void send(int dest, int tag, const std::string& body) {
#ifdef KVO_WITH_MPI
  require(body.size() < static_cast<size_t>(std::numeric_limits<int>::max()),
          "a unit's result is over 2 GiB, too large for one MPI message");
  MPI_Send(body.data(), static_cast<int>(body.size()), MPI_BYTE, dest, tag, MPI_COMM_WORLD);
#else
  (void)dest;
  (void)tag;
  (void)body;
  throw Error("internal: a message between ranks in a build without MPI");
#endif
}

std::optional<Message> poll() {
#ifdef KVO_WITH_MPI
  if (!Team::world().distributed()) return std::nullopt;  // MPI may not even be initialised
  int flag = 0;
  MPI_Status st;
  MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
  if (!flag) return std::nullopt;
  int count = 0;
  MPI_Get_count(&st, MPI_BYTE, &count);
  Message m{st.MPI_SOURCE, st.MPI_TAG, std::string(static_cast<size_t>(count), '\0')};
  MPI_Recv(m.body.data(), count, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return m;
#else
  return std::nullopt;
#endif
}

std::string pack_int(std::int64_t v) {
  std::string s(8, '\0');
  std::memcpy(s.data(), &v, 8);
  return s;
}

std::int64_t unpack_int(const std::string& body, size_t at) {
  require(body.size() >= at + 8, "internal: a short message between ranks");
  std::int64_t v = 0;
  std::memcpy(&v, body.data() + at, 8);
  return v;
}

}  // namespace kvo::scaleout::detail
