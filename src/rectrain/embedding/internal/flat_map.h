// rectrain/embedding/internal/flat_map.h: private. Open-addressing hash map from a 64-bit id to
// a small value, used as the per-shard row index (id -> row pointer) and the pending-admission
// counter map (id -> sightings). Linear probing over a power-of-two array of 16-byte slots;
// deletion by backward shift (no tombstones), so probe chains stay short under eviction.
// The caller passes h = Mix64(id) (computed once per id per call); the home slot is h & mask.
// `V{}` marks an empty slot, so a stored value is never V{} (non-null pointer, count >= 1).
// Thread safety: none; one shard is used by one thread at a time.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>

#include "rectrain/base/check.h"
#include "rectrain/base/random.h"

namespace rectrain::embedding::internal {

template <typename V>
class FlatMap {
 public:
  struct Slot {
    uint64_t key;
    V value;
  };
  static constexpr int64_t kMinCapacity = 16;

  FlatMap() { Allocate(kMinCapacity); }

  int64_t size() const { return size_; }
  int64_t capacity() const { return static_cast<int64_t>(mask_ + 1); }
  int64_t bytes() const { return capacity() * static_cast<int64_t>(sizeof(Slot)); }
  // Max load factor 3/4.
  bool NeedsGrow() const { return (size_ + 1) * 4 > capacity() * 3; }
  // Bytes that one Grow() adds to bytes().
  int64_t GrowBytes() const { return bytes(); }
  // Capacity that holds n entries under the load limit.
  static int64_t CapacityFor(int64_t n) {
    int64_t cap = kMinCapacity;
    while (n * 4 > cap * 3) cap *= 2;
    return cap;
  }

  void Prefetch(uint64_t h) const { __builtin_prefetch(&slots_[h & mask_]); }

  V Find(uint64_t key, uint64_t h) const {
    for (uint64_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.value == V{}) return V{};
      if (s.key == key) return s.value;
    }
  }
  V* FindMutable(uint64_t key, uint64_t h) {
    for (uint64_t i = h & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.value == V{}) return nullptr;
      if (s.key == key) return &s.value;
    }
  }
  // Precondition: key absent, value != V{}, !NeedsGrow() (or capacity left).
  void Insert(uint64_t key, uint64_t h, V value) {
    RECTRAIN_DCHECK(!(value == V{}));
    uint64_t i = h & mask_;
    while (!(slots_[i].value == V{})) i = (i + 1) & mask_;
    slots_[i].key = key;
    slots_[i].value = value;
    ++size_;
  }
  // Removes key if present; returns whether it was.
  bool Erase(uint64_t key, uint64_t h) {
    uint64_t i = h & mask_;
    for (;; i = (i + 1) & mask_) {
      if (slots_[i].value == V{}) return false;
      if (slots_[i].key == key) break;
    }
    // Backward-shift deletion: move later entries of the chain into the hole when their home
    // slot does not lie cyclically in (hole, j].
    uint64_t hole = i;
    for (uint64_t j = (hole + 1) & mask_; !(slots_[j].value == V{}); j = (j + 1) & mask_) {
      const uint64_t home = Mix64(slots_[j].key) & mask_;
      const bool home_in_range = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
      if (!home_in_range) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    slots_[hole].value = V{};
    --size_;
    return true;
  }
  // Removes every entry for which pred(key, value) is true; returns how many. pred may be called
  // more than once for an entry (a backward shift can move one into a slot already visited), so
  // it must not have side effects that count calls.
  template <typename P>
  int64_t EraseIf(P&& pred) {
    int64_t erased = 0;
    for (uint64_t i = 0; i <= mask_; ++i) {
      // The erase shifts a later entry of the chain into slot i: look at slot i again.
      while (!(slots_[i].value == V{}) && pred(slots_[i].key, slots_[i].value)) {
        Erase(slots_[i].key, Mix64(slots_[i].key));
        ++erased;
      }
    }
    return erased;
  }
  void Grow() { Rehash(capacity() * 2); }
  // Grows (never shrinks) to hold n entries.
  void Reserve(int64_t n) {
    const int64_t cap = CapacityFor(n);
    if (cap > capacity()) Rehash(cap);
  }
  // Removes every entry; keeps the capacity (memory is reused).
  void Clear() {
    for (uint64_t i = 0; i <= mask_; ++i) slots_[i].value = V{};
    size_ = 0;
  }
  // Calls f(key, value) for every entry, in slot order.
  template <typename F>
  void ForEach(F&& f) const {
    for (uint64_t i = 0; i <= mask_; ++i) {
      if (!(slots_[i].value == V{})) f(slots_[i].key, slots_[i].value);
    }
  }

 private:
  void Allocate(int64_t cap) {
    slots_ = std::make_unique<Slot[]>(static_cast<size_t>(cap));  // value-initialised: empty
    mask_ = static_cast<uint64_t>(cap) - 1;
    size_ = 0;
  }
  void Rehash(int64_t cap) {
    std::unique_ptr<Slot[]> old = std::move(slots_);
    const uint64_t old_mask = mask_;
    const int64_t n = size_;
    Allocate(cap);
    for (uint64_t i = 0; i <= old_mask; ++i) {
      if (!(old[i].value == V{})) Insert(old[i].key, Mix64(old[i].key), old[i].value);
    }
    RECTRAIN_DCHECK(size_ == n);
    (void)n;
  }

  std::unique_ptr<Slot[]> slots_;
  uint64_t mask_ = 0;
  int64_t size_ = 0;
};

}  // namespace rectrain::embedding::internal
