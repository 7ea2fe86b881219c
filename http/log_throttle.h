// LogThrottle: lets a line a second through and counts the lines it drops in between, so that a
// flood of bad connections cannot flood the log.
#ifndef PHALANX_HTTP_LOG_THROTTLE_H_
#define PHALANX_HTTP_LOG_THROTTLE_H_

#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace phalanx::http {

// Not thread-safe: callers hold their own lock.
class LogThrottle {
 public:
  // The line to write for `line` logged at `now`, or nullopt when it is dropped. A line written
  // after dropped ones says how many were dropped.
  std::optional<std::string> Admit(absl::Time now, absl::string_view line) {
    if (now - written_at_ < absl::Seconds(1)) {
      ++dropped_;
      return std::nullopt;
    }
    std::string out(line);
    if (dropped_ > 0) {
      absl::StrAppend(&out, " (", dropped_, dropped_ == 1 ? " line" : " lines",
                      " before it dropped)");
    }
    written_at_ = now;
    dropped_ = 0;
    return out;
  }

 private:
  absl::Time written_at_ = absl::InfinitePast();
  int dropped_ = 0;
};

}  // namespace phalanx::http

#endif  // PHALANX_HTTP_LOG_THROTTLE_H_
