#include "rectrain/dist/launch.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "rectrain/base/random.h"

#if RECTRAIN_WITH_MPI
#include "rectrain/dist/mpi_transport.h"
#endif

namespace rectrain::dist {
namespace {

bool EnvInt(const char* name, int* out) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return false;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (end == v || *end != '\0' || x < 0 || x > 1 << 20) return false;
  *out = static_cast<int>(x);
  return true;
}

}  // namespace

LaunchInfo DetectLaunch() {
  LaunchInfo info;
  int w = 0, r = 0;
  if (EnvInt("OMPI_COMM_WORLD_SIZE", &w) && EnvInt("OMPI_COMM_WORLD_RANK", &r)) {
    info = {"openmpi", w, r};
  } else if (EnvInt("PMI_SIZE", &w) && EnvInt("PMI_RANK", &r)) {
    info = {"mpich", w, r};
  } else if (EnvInt("PMIX_RANK", &r)) {
    info = {"pmix", EnvInt("SLURM_NTASKS", &w) ? w : 0, r};  // PMIx alone does not say the size
  } else if (EnvInt("SLURM_NTASKS", &w) && EnvInt("SLURM_PROCID", &r) && std::getenv("SLURM_STEP_ID") != nullptr) {
    info = {"slurm", w, r};
  }
  return info;
}

std::string BuildId() {
  static const std::string id = [] {
    // Read in blocks: a sanitizer build's binary is ~150 MB, too slow for a byte iterator.
    std::ifstream in("/proc/self/exe", std::ios::binary);
    std::string bytes;
    for (std::string block(1 << 20, '\0'); in.read(block.data(), static_cast<std::streamsize>(block.size())) || in.gcount() > 0;) {
      bytes.append(block.data(), static_cast<size_t>(in.gcount()));
    }
    char hex[24];
    std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(HashBytes(bytes, 0x6275696c64ULL)));
    return std::string("rectrain ") + RECTRAIN_VERSION + " " + hex;
  }();
  return id;
}

std::string MpiLibraryVersion() {
#if RECTRAIN_WITH_MPI
  return internal::MpiVersion();
#else
  return "";
#endif
}

Result<std::unique_ptr<Communicator>> Connect() {
  const LaunchInfo info = DetectLaunch();
  // PMIx without SLURM_NTASKS: the size is only known once MPI is up.
  if (info.launcher == "none" || info.world == 1) return Communicator::Single();
#if RECTRAIN_WITH_MPI
  RECTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<Transport> t, internal::StartMpi());
  if (info.world > 0 && t->world() != info.world) {
    return FailedPreconditionError("MPI reports " + std::to_string(t->world()) + " ranks but the " + info.launcher +
                                   " environment says " + std::to_string(info.world) +
                                   " (is this rectrain linked against the MPI of the launcher?)");
  }
  if (t->world() == 1) return Communicator::Single();
  return std::make_unique<Communicator>(std::move(t));
#else
  return FailedPreconditionError("launched as rank " + std::to_string(info.rank) + " of " + std::to_string(info.world) +
                                 " by " + info.launcher +
                                 ", but this rectrain was built without MPI; rebuild with -DRECTRAIN_WITH_MPI=ON "
                                 "(scripts/install_deps.sh installs OpenMPI)");
#endif
}

int EndRank(Communicator& comm, int exit_code) {
  if (comm.distributed() && !comm.status().ok()) {
    std::fflush(stdout);
    std::fflush(stderr);
    comm.Abort(exit_code == 0 ? 1 : exit_code);
  }
  return exit_code;
}

}  // namespace rectrain::dist
