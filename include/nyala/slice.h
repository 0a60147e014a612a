// Slice: a borrowed, non-owning view of bytes (pointer + length). The bytes must
// outlive the Slice. Compares as unsigned bytes (memcmp order).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "nyala/export.h"

namespace nyala {

NYALA_EXPORT_BEGIN

class Slice {
 public:
  Slice() = default;
  Slice(const uint8_t* d, size_t n) : data_(d), size_(n) {}
  Slice(const char* d, size_t n) : data_(reinterpret_cast<const uint8_t*>(d)), size_(n) {}
  Slice(const std::string& s) : Slice(s.data(), s.size()) {}  // NOLINT(runtime/explicit)
  Slice(std::string_view s) : Slice(s.data(), s.size()) {}    // NOLINT(runtime/explicit)
  Slice(const char* s) : Slice(s, strlen(s)) {}               // NOLINT(runtime/explicit)

  const uint8_t* data() const { return data_; }
  const char* cdata() const { return reinterpret_cast<const char*>(data_); }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  uint8_t operator[](size_t i) const { return data_[i]; }

  // REQUIRES: n <= size().
  void remove_prefix(size_t n) {
    data_ += n;
    size_ -= n;
  }
  bool starts_with(const Slice& p) const {
    return size_ >= p.size_ && memcmp(data_, p.data_, p.size_) == 0;
  }

  std::string ToString() const { return std::string(cdata(), size_); }
  std::string_view view() const { return std::string_view(cdata(), size_); }

  // <0, 0, >0 like memcmp, shorter-is-less on a common prefix.
  int compare(const Slice& b) const {
    const size_t n = size_ < b.size_ ? size_ : b.size_;
    int r = n == 0 ? 0 : memcmp(data_, b.data_, n);
    if (r == 0) r = size_ < b.size_ ? -1 : (size_ > b.size_ ? 1 : 0);
    return r;
  }
  friend bool operator==(const Slice& a, const Slice& b) {
    return a.size_ == b.size_ && (a.size_ == 0 || memcmp(a.data_, b.data_, a.size_) == 0);
  }
  friend bool operator<(const Slice& a, const Slice& b) { return a.compare(b) < 0; }

 private:
  const uint8_t* data_ = reinterpret_cast<const uint8_t*>("");
  size_t size_ = 0;
};

NYALA_EXPORT_END

}  // namespace nyala
