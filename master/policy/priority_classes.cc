// Phalanx's priority classes and the seeds' names for them (see priority_classes.h).
#include "master/policy/priority_classes.h"

#include <array>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace phalanx::master {
namespace {

struct PriorityClass {
  absl::string_view level;  // "high" names phalanx-high-priority and determined-high-priority.
  int value;
};
// deploy/helm/phalanx/templates/priority-classes.yaml.
constexpr std::array<PriorityClass, 3> kPriorityClasses = {{
    {"high", 100},
    {"medium", 50},
    {"low", 1},
}};

std::string ClassName(absl::string_view owner, absl::string_view level) {
  return absl::StrCat(owner, "-", level, "-priority");
}

}  // namespace

std::string PriorityClassFor(int priority) {
  for (const PriorityClass& c : kPriorityClasses) {
    if (c.value == priority) return ClassName("phalanx", c.level);
  }
  return absl::StrCat(kPriorityClassPrefix, priority);
}

std::optional<int> PriorityOfClass(absl::string_view name) {
  for (const PriorityClass& c : kPriorityClasses) {
    if (ClassName("phalanx", c.level) == name) return c.value;
  }
  int value = 0;
  if (absl::ConsumePrefix(&name, kPriorityClassPrefix) && absl::SimpleAtoi(name, &value) &&
      PriorityClassFor(value) == absl::StrCat(kPriorityClassPrefix, name)) {
    return value;
  }
  return std::nullopt;
}

std::string MapSeedPriorityClass(absl::string_view name) {
  for (const PriorityClass& c : kPriorityClasses) {
    if (ClassName("determined", c.level) == name) return ClassName("phalanx", c.level);
  }
  return std::string(name);
}

}  // namespace phalanx::master
