// NameIndex: name -> position for a fixed list of distinct names (a snapshot's nodes), built once
// per node set. A request resolves thousands of names, so a lookup is one table access with no
// call and no pointer to follow: each slot holds the name's length, its first and last 8 bytes
// (which overlap in short names and together are the whole name up to 16 bytes) and its position.
// Longer names are also compared with a copy kept back to back in one buffer. The hash mixes the
// same words, plus the middle of longer names, inline.
#ifndef PHALANX_CORE_NAME_INDEX_H_
#define PHALANX_CORE_NAME_INDEX_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace phalanx::core {

class NameIndex {
 public:
  // `names[i]` is found at position i; names must be distinct.
  explicit NameIndex(const std::vector<absl::string_view>& names);

  // The position of `name`, -1 when it is not in the index.
  int Position(absl::string_view name) const;
  // Position of each of `names`, into `out` (as long). The slots of a block of names are fetched
  // from memory together before any is compared: when the table is not in cache (a request after
  // the extender sat idle), lookups one by one would wait for one miss after another.
  void Positions(absl::Span<const std::string> names, absl::Span<int> out) const;
  std::optional<int> Find(absl::string_view name) const {
    const int i = Position(name);
    return i < 0 ? std::nullopt : std::optional<int>(i);
  }

  // A name's length and its first and last bytes, as a slot holds them, with the position + 1 of
  // the name in the slot (0 when empty).
  struct Key {
    uint64_t head = 0;
    uint64_t tail = 0;
    uint32_t size = 0;
    uint32_t position = 0;
  };

 private:
  // Position of `name`, whose key is `key`, probing from slot `s`.
  int Probe(absl::string_view name, const Key& key, uint64_t s) const;
  absl::string_view Name(uint32_t i) const {
    return absl::string_view(names_).substr(offsets_[i], offsets_[i + 1] - offsets_[i]);
  }

  std::string names_;              // Every name, back to back.
  std::vector<uint32_t> offsets_;  // Name i is names_[offsets_[i], offsets_[i + 1]).
  std::vector<Key> slots_;         // Open addressing, linear probing, at most half full.
  uint64_t mask_ = 0;
};

}  // namespace phalanx::core

#endif  // PHALANX_CORE_NAME_INDEX_H_
