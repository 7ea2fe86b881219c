// Kubernetes resource quantities ("500m", "1.5Gi", "1e3") parsed into exact integers.
#ifndef PHALANX_CORE_QUANTITY_H_
#define PHALANX_CORE_QUANTITY_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace phalanx::core {

// The quantity in thousandths of its unit, rounded up (as resource.Quantity.MilliValue does).
// Suffixes: n u m "" k M G T P E, Ki Mi Gi Ti Pi Ei, and decimal exponents (e3, E-2).
// Malformed or out-of-range input is an InvalidArgument error that quotes the value.
absl::StatusOr<int64_t> ParseQuantityMilli(absl::string_view text);

// The quantity in whole units, rounded up (as resource.Quantity.Value does).
absl::StatusOr<int64_t> ParseQuantity(absl::string_view text);

}  // namespace phalanx::core

#endif  // PHALANX_CORE_QUANTITY_H_
