// CRC-32C (Castagnoli, polynomial 0x1EDC6F41, reflected 0x82F63B78): the checksum of
// the consensus log's records (consensus/log.h). Crc32c() uses the SSE4.2 crc32
// instruction when the CPU has it and a table-driven software loop otherwise; both
// give the same values.
//
// Crc32c(0, data, n) is the standard CRC-32C of the bytes (initial value and final
// XOR with 0xFFFFFFFF are applied inside), and a CRC extends: Crc32c(Crc32c(0, a), b)
// equals the CRC of a followed by b.
//
// Thread-safety: pure functions, callable from any thread.
#pragma once

#include <cstddef>
#include <cstdint>

namespace nyala {

// The CRC-32C of `n` bytes at `data`, continuing `crc` (0 to start).
uint32_t Crc32c(uint32_t crc, const void* data, size_t n);

namespace crc32c_internal {

// Whether this CPU runs the hardware path (SSE4.2).
bool HasHardwareCrc32c();
// The two implementations behind Crc32c(), exposed for tests.
uint32_t Crc32cSoftware(uint32_t crc, const void* data, size_t n);
// REQUIRES: HasHardwareCrc32c().
uint32_t Crc32cHardware(uint32_t crc, const void* data, size_t n);

}  // namespace crc32c_internal
}  // namespace nyala
