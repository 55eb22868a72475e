// rectrain/dist/mpi_transport.h (internal to dist/): the Transport over MPI point-to-point
// messages (MPI_Isend/MPI_Irecv on a duplicate of MPI_COMM_WORLD with MPI_ERRORS_RETURN), polled
// against the deadline so a silent peer is named instead of waited for forever. Only built with
// RECTRAIN_WITH_MPI; launch.cc is its one user.
// Thread safety: MPI is initialised with MPI_THREAD_SERIALIZED; one thread uses the transport.
#pragma once

#include <memory>
#include <string>

#include "rectrain/base/result.h"
#include "rectrain/dist/transport.h"

namespace rectrain::dist::internal {

// Initialises MPI (once per process; finalised at exit) and returns the world's transport.
Result<std::unique_ptr<Transport>> StartMpi();
std::string MpiVersion();

}  // namespace rectrain::dist::internal
