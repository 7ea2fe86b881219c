// UTF-8 validation, for submitted text and for the strings YAML escapes produce.
#ifndef PHALANX_MASTER_YAML_UTF8_H_
#define PHALANX_MASTER_YAML_UTF8_H_

#include <cstddef>

#include "absl/strings/string_view.h"

namespace phalanx::master {

// The length of the UTF-8 sequence at `s[i]`, or 0 when it is not a valid one (overlong forms,
// surrogates and code points past U+10FFFF included).
size_t Utf8Length(absl::string_view s, size_t i);

// The index of the first byte of `s` that does not begin a valid UTF-8 sequence, or npos.
size_t FirstInvalidUtf8(absl::string_view s);

}  // namespace phalanx::master

#endif  // PHALANX_MASTER_YAML_UTF8_H_
