// CallMap: the calls of one client connection awaiting their responses, by call id.
// Every call is inserted once and taken once, on the hot path of each RPC, so the
// table is flat: open addressing with linear probing in a power-of-two array of
// slots, deletion by shifting the following entries back (no tombstones), growth at
// half full. Unlike std::unordered_map it allocates nothing per call and does not
// divide by a prime to find a bucket.
//
// Thread-safety: none; the owner locks (Connection::calls_mu_).
#pragma once

#include <glog/logging.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace nyala::rpc {

template <typename T>
class CallMap {
 public:
  CallMap() : slots_(kInitialSlots) {}
  CallMap(const CallMap&) = delete;
  CallMap& operator=(const CallMap&) = delete;

  size_t size() const { return size_; }

  // Takes *value under `id` (>= 0) and returns true, or, if `id` is there already,
  // leaves both alone and returns false.
  bool Insert(int32_t id, std::unique_ptr<T>* value) {
    DCHECK_GE(id, 0);
    if ((size_ + 1) * 2 > slots_.size()) Grow();
    size_t i = Home(id);
    while (slots_[i].id != kEmpty) {
      if (slots_[i].id == id) return false;
      i = (i + 1) & Mask();
    }
    slots_[i].id = id;
    slots_[i].value = std::move(*value);
    size_++;
    return true;
  }

  // Removes the entry of `id` and returns its value; null if there is none.
  std::unique_ptr<T> Take(int32_t id) {
    if (id < 0) return nullptr;
    for (size_t i = Home(id); slots_[i].id != kEmpty; i = (i + 1) & Mask()) {
      if (slots_[i].id == id) {
        std::unique_ptr<T> v = std::move(slots_[i].value);
        EraseAt(i);
        return v;
      }
    }
    return nullptr;
  }

  // Calls visit(id, const T&) for every entry, in no particular order.
  template <typename Visit>
  void ForEach(Visit visit) const {
    for (const Slot& s : slots_) {
      if (s.id != kEmpty) visit(s.id, *s.value);
    }
  }

  // Removes every entry for which pred(const T&) holds and appends its value to *out.
  template <typename Pred>
  void TakeIf(Pred pred, std::vector<std::unique_ptr<T>>* out) {
    std::vector<int32_t> ids;  // erasing shifts entries, so choose first, then take
    ForEach([&](int32_t id, const T& v) {
      if (pred(v)) ids.push_back(id);
    });
    for (int32_t id : ids) out->push_back(Take(id));
  }

  // Removes every entry and appends its value to *out.
  void TakeAll(std::vector<std::unique_ptr<T>>* out) {
    for (Slot& s : slots_) {
      if (s.id != kEmpty) out->push_back(std::move(s.value));
      s.id = kEmpty;
    }
    size_ = 0;
  }

 private:
  static constexpr int32_t kEmpty = -1;
  static constexpr size_t kInitialSlots = 64;
  struct Slot {
    int32_t id = kEmpty;
    std::unique_ptr<T> value;
  };

  size_t Mask() const { return slots_.size() - 1; }
  // Fibonacci hashing: consecutive ids (a messenger numbers its calls in order) land
  // far apart, from the multiplier's high bits.
  size_t Home(int32_t id) const {
    return size_t((uint64_t(uint32_t(id)) * 0x9E3779B97F4A7C15ull) >> 32) & Mask();
  }

  // Empties slot i, then moves back each following entry of the same run that may not
  // stay where it is: one whose home is not cyclically within (i, j].
  void EraseAt(size_t i) {
    for (size_t j = (i + 1) & Mask(); slots_[j].id != kEmpty; j = (j + 1) & Mask()) {
      const size_t home = Home(slots_[j].id);
      const bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
      if (!stays) {
        slots_[i] = std::move(slots_[j]);
        i = j;
      }
    }
    slots_[i].id = kEmpty;
    slots_[i].value.reset();
    size_--;
  }

  void Grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    size_ = 0;
    for (Slot& s : old) {
      if (s.id != kEmpty) CHECK(Insert(s.id, &s.value));
    }
  }

  std::vector<Slot> slots_;
  size_t size_ = 0;
};

}  // namespace nyala::rpc
