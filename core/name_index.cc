// NameIndex (see name_index.h).
#include "core/name_index.h"

#include "absl/hash/hash.h"

namespace phalanx::core {
namespace {

// The slot to start probing at comes from the low bits of the hash, the tag from the high ones.
uint64_t Tag(uint64_t hash) { return hash >> 32; }

}  // namespace

NameIndex::NameIndex(const std::vector<absl::string_view>& names) {
  size_t size = 16;
  while (size < 2 * names.size()) size *= 2;
  slots_.assign(size, 0);
  mask_ = size - 1;
  offsets_.reserve(names.size() + 1);
  for (uint32_t i = 0; i < names.size(); ++i) {
    offsets_.push_back(static_cast<uint32_t>(names_.size()));
    names_.append(names[i].data(), names[i].size());
    const uint64_t hash = absl::HashOf(names[i]);
    uint64_t s = hash & mask_;
    while (slots_[s] != 0) s = (s + 1) & mask_;
    slots_[s] = Tag(hash) << 32 | (i + 1);
  }
  offsets_.push_back(static_cast<uint32_t>(names_.size()));
}

std::optional<int> NameIndex::Find(absl::string_view name) const {
  const uint64_t hash = absl::HashOf(name);
  for (uint64_t s = hash & mask_;; s = (s + 1) & mask_) {
    const uint64_t slot = slots_[s];
    if (slot == 0) return std::nullopt;
    const uint32_t position = static_cast<uint32_t>(slot) - 1;
    if (slot >> 32 == Tag(hash) && Name(position) == name) return static_cast<int>(position);
  }
}

}  // namespace phalanx::core
