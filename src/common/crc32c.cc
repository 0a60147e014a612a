#include "common/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace nyala {
namespace crc32c_internal {

namespace {

constexpr uint32_t kReflectedPoly = 0x82F63B78;

// kTables[0][b] is the CRC of the byte b; kTables[k][b] that of b followed by k zero
// bytes, so the software loop folds 8 bytes per step (slicing-by-8).
constexpr std::array<std::array<uint32_t, 256>, 8> MakeTables() {
  std::array<std::array<uint32_t, 256>, 8> t{};
  for (uint32_t b = 0; b < 256; b++) {
    uint32_t c = b;
    for (int bit = 0; bit < 8; bit++) c = (c & 1) ? (c >> 1) ^ kReflectedPoly : c >> 1;
    t[0][b] = c;
  }
  for (int k = 1; k < 8; k++) {
    for (uint32_t b = 0; b < 256; b++) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xFF];
  }
  return t;
}

constexpr auto kTables = MakeTables();

inline uint32_t SoftwareByte(uint32_t c, uint8_t b) {
  return (c >> 8) ^ kTables[0][(c ^ b) & 0xFF];
}

}  // namespace

uint32_t Crc32cSoftware(uint32_t crc, const void* data, size_t n) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  uint32_t c = ~crc;
  for (; n >= 8; p += 8, n -= 8) {
    uint32_t lo;
    uint32_t hi;
    memcpy(&lo, p, 4);  // little-endian hosts only (x86-64, aarch64 Linux)
    memcpy(&hi, p + 4, 4);
    lo ^= c;
    c = kTables[7][lo & 0xFF] ^ kTables[6][(lo >> 8) & 0xFF] ^ kTables[5][(lo >> 16) & 0xFF] ^
        kTables[4][lo >> 24] ^ kTables[3][hi & 0xFF] ^ kTables[2][(hi >> 8) & 0xFF] ^
        kTables[1][(hi >> 16) & 0xFF] ^ kTables[0][hi >> 24];
  }
  for (; n > 0; p++, n--) c = SoftwareByte(c, *p);
  return ~c;
}

#if defined(__x86_64__)

bool HasHardwareCrc32c() {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}

__attribute__((target("sse4.2"))) uint32_t Crc32cHardware(uint32_t crc, const void* data,
                                                          size_t n) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  uint64_t c = ~crc;
  // Single bytes up to an 8-byte boundary, then 8 bytes per instruction.
  for (; n > 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0; p++, n--) {
    c = _mm_crc32_u8(uint32_t(c), *p);
  }
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t word;
    memcpy(&word, p, 8);
    c = _mm_crc32_u64(c, word);
  }
  for (; n > 0; p++, n--) c = _mm_crc32_u8(uint32_t(c), *p);
  return ~uint32_t(c);
}

#else

bool HasHardwareCrc32c() { return false; }
uint32_t Crc32cHardware(uint32_t crc, const void* data, size_t n) {
  return Crc32cSoftware(crc, data, n);
}

#endif

}  // namespace crc32c_internal

uint32_t Crc32c(uint32_t crc, const void* data, size_t n) {
  static const bool hardware = crc32c_internal::HasHardwareCrc32c();
  return hardware ? crc32c_internal::Crc32cHardware(crc, data, n)
                  : crc32c_internal::Crc32cSoftware(crc, data, n);
}

}  // namespace nyala
