// rectrain/dist/launch.h: how a rectrain process finds out whether it is one rank of a job and
// connects to its peers. `rectrain train` calls Connect() once; everything else receives the
// Communicator it returns.
//
// Detection, from the environment the launchers set:
//   mpirun/mpiexec (OpenMPI)   OMPI_COMM_WORLD_SIZE / OMPI_COMM_WORLD_RANK
//   mpiexec (MPICH hydra)      PMI_SIZE / PMI_RANK
//   srun (Slurm, PMIx or PMI2) PMIX_RANK, or SLURM_NTASKS / SLURM_PROCID
//   Kubernetes MPIJob          runs mpirun in its launcher pod: as OpenMPI above
// A world of 1 (no launcher, or `mpirun -np 1`) gets Communicator::Single() without starting
// MPI at all, so a single process pays nothing. A larger world starts MPI (MPI_Init_thread) in a
// build with RECTRAIN_WITH_MPI=ON and fails with a clear message in one without.
//
// Thread safety: Connect() once per process, from the main thread.
#pragma once

#include <memory>
#include <string>

#include "rectrain/base/result.h"
#include "rectrain/dist/communicator.h"

namespace rectrain::dist {

struct LaunchInfo {
  std::string launcher;  // "none" | "openmpi" | "mpich" | "slurm" | "pmix"
  int world = 1;         // as the environment says (1 when unknown)
  int rank = 0;
};

// Reads the launcher's environment (see the top comment); never starts anything.
LaunchInfo DetectLaunch();

// The MPI library's version line ("Open MPI v4.1.4, ..."), or "" without MPI.
std::string MpiLibraryVersion();

// "rectrain <version> <16 hex digits of a hash of this executable's bytes>": equal on two hosts
// exactly when they run the same binary (the ranks of a job must). Computed once per process.
std::string BuildId();

// The communicator of this process: Single() for a world of 1, else MPI. FailedPrecondition when
// a launcher asks for several ranks but MPI is not compiled in (naming RECTRAIN_WITH_MPI), or
// MPI reports another world size than the launcher's environment.
Result<std::unique_ptr<Communicator>> Connect();

// How a rank process ends after its command returned `exit_code`: when `comm` is still in step
// with the job (status() OK: every rank knows the outcome), it returns `exit_code` and the
// process exits normally. When it is not (a peer hung or died, or this rank failed alone), it
// ends the whole job at once with Abort(exit_code) and does not return: exiting would wait in
// MPI_Finalize for every peer, for a stopped one forever. Print the error first. For Single()
// (and in-process ranks) Abort ends nothing and it returns `exit_code`.
int EndRank(Communicator& comm, int exit_code);

}  // namespace rectrain::dist
