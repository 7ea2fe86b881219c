// NameIndex (see name_index.h).
#include "core/name_index.h"

#include <algorithm>
#include <cstring>

#include "absl/numeric/int128.h"

namespace phalanx::core {
namespace {

using Key = NameIndex::Key;

// Names of up to this many bytes are whole in their key.
constexpr size_t kWholeInKey = 16;

uint64_t Load8(const char* p) {
  uint64_t x;
  std::memcpy(&x, p, 8);
  return x;
}

uint32_t Load4(const char* p) {
  uint32_t x;
  std::memcpy(&x, p, 4);
  return x;
}

// The first and last 8 bytes of `s` (4 when shorter; 3 chosen bytes below 4), overlapping when
// `s` is shorter than 16: two names of up to 16 bytes are equal exactly when their keys are.
inline Key KeyOf(absl::string_view s) {
  const char* p = s.data();
  const size_t n = s.size();
  const uint32_t size = static_cast<uint32_t>(n);
  if (n >= 8) return {Load8(p), Load8(p + n - 8), size, 0};
  if (n >= 4) return {Load4(p), Load4(p + n - 4), size, 0};
  if (n > 0) {
    auto byte = [p](size_t i) { return uint64_t{static_cast<unsigned char>(p[i])}; };
    return {byte(0) | byte(n / 2) << 8 | byte(n - 1) << 16, 0, size, 0};
  }
  return {};
}

// The high and low halves of a * b, folded: a fast mix with good low bits (wyhash's).
uint64_t Mix(uint64_t a, uint64_t b) {
  const absl::uint128 r = absl::uint128(a) * b;
  return absl::Uint128Low64(r) ^ absl::Uint128High64(r);
}

uint64_t Hash(absl::string_view s, const Key& key) {
  uint64_t h = Mix(key.head ^ 0xa0761d6478bd642fULL, key.tail ^ key.size ^ 0xe7037ed1a0b428dbULL);
  for (size_t i = 8; i + 8 < s.size(); i += 8) {
    h = Mix(h ^ Load8(s.data() + i), 0x8ebc6af09c88c6e3ULL);
  }
  return h;
}

bool SameKey(const Key& a, const Key& b) {
  return a.head == b.head && a.tail == b.tail && a.size == b.size;
}

}  // namespace

NameIndex::NameIndex(const std::vector<absl::string_view>& names) {
  size_t size = 16;
  while (size < 2 * names.size()) size *= 2;
  slots_.assign(size, Key{});
  mask_ = size - 1;
  offsets_.reserve(names.size() + 1);
  for (uint32_t i = 0; i < names.size(); ++i) {
    offsets_.push_back(static_cast<uint32_t>(names_.size()));
    names_.append(names[i].data(), names[i].size());
    Key key = KeyOf(names[i]);
    uint64_t s = Hash(names[i], key) & mask_;
    while (slots_[s].position != 0) s = (s + 1) & mask_;
    key.position = i + 1;
    slots_[s] = key;
  }
  offsets_.push_back(static_cast<uint32_t>(names_.size()));
}

int NameIndex::Probe(absl::string_view name, const Key& key, uint64_t s) const {
  for (;; s = (s + 1) & mask_) {
    const Key& slot = slots_[s];
    if (slot.position == 0) return -1;
    if (SameKey(slot, key) && (name.size() <= kWholeInKey || Name(slot.position - 1) == name)) {
      return static_cast<int>(slot.position - 1);
    }
  }
}

int NameIndex::Position(absl::string_view name) const {
  const Key key = KeyOf(name);
  return Probe(name, key, Hash(name, key) & mask_);
}

void NameIndex::Positions(absl::Span<const std::string> names, absl::Span<int> out) const {
  constexpr size_t kBlock = 16;  // Enough misses in flight to cover memory latency.
  Key keys[kBlock];
  uint64_t first[kBlock];
  for (size_t b = 0; b < names.size(); b += kBlock) {
    const size_t n = std::min(kBlock, names.size() - b);
    for (size_t j = 0; j < n; ++j) {
      keys[j] = KeyOf(names[b + j]);
      first[j] = Hash(names[b + j], keys[j]) & mask_;
      __builtin_prefetch(&slots_[first[j]]);
    }
    for (size_t j = 0; j < n; ++j) out[b + j] = Probe(names[b + j], keys[j], first[j]);
  }
}

}  // namespace phalanx::core
