// Fuzzes core::ParseQuantityMilli and core::ParseQuantity (Kubernetes quantities from pod specs,
// node status and master.yaml). Beyond no crash and no undefined behaviour it asserts: a quantity
// that parses to milli-units re-parses from "<milli>m" to the same value, and ParseQuantity agrees
// with it (whole units, rounded up); an error is InvalidArgument.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/quantity.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<int64_t> milli = phalanx::core::ParseQuantityMilli(text);
  absl::StatusOr<int64_t> units = phalanx::core::ParseQuantity(text);
  if (!milli.ok()) {
    if (!absl::IsInvalidArgument(milli.status())) std::abort();
    return 0;
  }
  absl::StatusOr<int64_t> again = phalanx::core::ParseQuantityMilli(absl::StrCat(*milli, "m"));
  if (!again.ok() || *again != *milli) std::abort();
  if (units.ok()) {
    // Whole units rounded up: ceil(milli / 1000), computed without overflow.
    const int64_t want = *milli / 1000 + (*milli % 1000 > 0 ? 1 : 0);
    if (*units != want) std::abort();
  }
  return 0;
}
