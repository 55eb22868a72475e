// rectrain/base/memory.h: the machine's memory, for checks of a setting against it (a buffer a
// config key sizes must fit before it is reserved), and bytes as a person reads them.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>

namespace rectrain {

// Physical memory of this machine (sysconf), in bytes; 0 when the system does not say.
int64_t PhysicalMemoryBytes();

// "512 B", "3.0 KiB", "23.4 GiB", "1.9e+06 TiB" (one decimal, binary units).
std::string FormatBytes(double bytes);

}  // namespace rectrain
