// Bounds on a YAML document before it is loaded, so that hostile input costs bounded time and
// memory: yaml-cpp keeps an alias as a shared node, but every reader of the loaded tree (duplicate
// keys, YAML -> JSON) walks it expanded, so an alias cycle (`a: &a [*a]`) would recurse forever and
// nested aliases (the "billion laughs") would expand exponentially. One pass over yaml-cpp's parse
// events, before anything is built, checks in this order:
//   1. nesting: no node deeper than kMaxYamlDepth levels, counting what aliases expand to (the
//      pass stops at the first node too deep, before yaml-cpp's own parser recurses further);
//   2. alias cycles: an alias to a node that is still open (contains the alias) is refused;
//   3. expansion: the document with every alias expanded counts at most kMaxYamlExpandedSize
//      units (one per node, plus the bytes of each scalar);
//   4. scalars: none holds a NUL character (Postgres text cannot store one).
// Errors are InvalidArgument naming the node's path ("data[0]: ...").
#ifndef PHALANX_MASTER_YAML_YAML_BOUNDS_H_
#define PHALANX_MASTER_YAML_YAML_BOUNDS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace phalanx::master {

inline constexpr int kMaxYamlDepth = 100;
inline constexpr int64_t kMaxYamlExpandedSize = 1'000'000;

// OK when the first document of `text` keeps the bounds above; syntax errors are left to the
// loader (they are OK here unless they come after a bound is crossed).
absl::Status CheckYamlBounds(absl::string_view text);

}  // namespace phalanx::master

#endif  // PHALANX_MASTER_YAML_YAML_BOUNDS_H_
