// Arena: a bump allocator for byte strings that share one lifetime (the string
// cells of a Row, unescaped key strings). Memory is freed all at once by Reset()
// or the destructor; bytes handed out stay at their address until then, also
// when the Arena itself is moved.
//
// Thread-compatible: one Arena must not be used by two threads at once.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "nyala/export.h"
#include "nyala/slice.h"

namespace nyala {

NYALA_EXPORT_BEGIN

class Arena {
 public:
  explicit Arena(size_t first_chunk_size = 256) : next_chunk_size_(first_chunk_size) {}
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  Arena(Arena&&) noexcept = default;
  Arena& operator=(Arena&&) noexcept = default;

  // Returns `n` uninitialized bytes owned by the arena.
  uint8_t* Allocate(size_t n) {
    if (n > remaining_) NewChunk(n);
    uint8_t* p = pos_;
    pos_ += n;
    remaining_ -= n;
    return p;
  }

  // Copies `s` into the arena and returns a Slice of the copy.
  Slice Copy(Slice s) {
    if (s.empty()) return Slice();
    uint8_t* p = Allocate(s.size());
    memcpy(p, s.data(), s.size());
    return Slice(p, s.size());
  }

  // Frees everything handed out; keeps the most recent chunk for reuse.
  void Reset() {
    if (chunks_.empty()) return;
    std::unique_ptr<uint8_t[]> keep = std::move(chunks_.back());
    const size_t keep_size = last_chunk_size_;
    chunks_.clear();
    chunks_.push_back(std::move(keep));
    pos_ = chunks_.back().get();
    remaining_ = keep_size;
    total_bytes_ = keep_size;
  }

  // Bytes of chunks held (not the bytes handed out).
  size_t memory_footprint() const { return total_bytes_; }

 private:
  void NewChunk(size_t min_size) {
    size_t size = std::max(next_chunk_size_, min_size);
    chunks_.push_back(std::make_unique_for_overwrite<uint8_t[]>(size));
    pos_ = chunks_.back().get();
    remaining_ = size;
    last_chunk_size_ = size;
    total_bytes_ += size;
    next_chunk_size_ = std::min<size_t>(next_chunk_size_ * 2, 1 << 20);
  }

  std::vector<std::unique_ptr<uint8_t[]>> chunks_;
  uint8_t* pos_ = nullptr;
  size_t remaining_ = 0;
  size_t next_chunk_size_;
  size_t last_chunk_size_ = 0;
  size_t total_bytes_ = 0;
};

NYALA_EXPORT_END

}  // namespace nyala
