// NameIndex: name -> position for a fixed list of distinct names (a snapshot's nodes), built once
// per node set. The names sit back to back in one buffer and the table holds 8-byte slots (a hash
// tag and the position), so that a request's thousands of lookups touch a couple of hundred KB
// that stays in cache, instead of a hash map of strings several times that size.
#ifndef PHALANX_CORE_NAME_INDEX_H_
#define PHALANX_CORE_NAME_INDEX_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace phalanx::core {

class NameIndex {
 public:
  // `names[i]` is found at position i; names must be distinct.
  explicit NameIndex(const std::vector<absl::string_view>& names);

  std::optional<int> Find(absl::string_view name) const;

 private:
  absl::string_view Name(uint32_t i) const {
    return absl::string_view(names_).substr(offsets_[i], offsets_[i + 1] - offsets_[i]);
  }

  std::string names_;              // Every name, back to back.
  std::vector<uint32_t> offsets_;  // Name i is names_[offsets_[i], offsets_[i + 1]).
  // Open addressing, linear probing, at most half full: (hash tag << 32) | (position + 1), 0 when
  // empty.
  std::vector<uint64_t> slots_;
  uint64_t mask_ = 0;
};

}  // namespace phalanx::core

#endif  // PHALANX_CORE_NAME_INDEX_H_
