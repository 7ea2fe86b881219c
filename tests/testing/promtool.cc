// PromtoolCheck: writes the exposition to a temporary file and pipes it into promtool.
#include "tests/testing/promtool.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"

namespace phalanx::testing {

absl::Status PromtoolCheck(const std::string& exposition) {
  char path[] = "/tmp/phalanx-metrics-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return absl::InternalError("mkstemp failed");
  const bool written =
      write(fd, exposition.data(), exposition.size()) == static_cast<ssize_t>(exposition.size());
  close(fd);
  std::string output;
  int status = -1;
  if (written) {
    FILE* out = popen(absl::StrCat("promtool check metrics < ", path, " 2>&1").c_str(), "r");
    if (out != nullptr) {
      char buf[512];
      while (size_t n = fread(buf, 1, sizeof buf, out)) output.append(buf, n);
      status = pclose(out);
    }
  }
  unlink(path);
  if (!written) return absl::InternalError("cannot write the exposition to a temporary file");
  if (status != 0 || !output.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("promtool check metrics (wait status ", status, "): ", output));
  }
  return absl::OkStatus();
}

}  // namespace phalanx::testing
