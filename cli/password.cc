// Passwords typed at a terminal with echo off, or read as a line of a pipe (see password.h).
#include "cli/password.h"

#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <iterator>
#include <string>

#include "absl/status/status.h"

namespace phalanx::cli {
namespace {

constexpr int kFatalSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

// The terminal whose echo is off and its settings before, for RestoreAndDie.
int quiet_fd = -1;
termios quiet_saved;

// A fatal signal while echo is off: restores the terminal, then dies of the signal.
void RestoreAndDie(int sig) {
  tcsetattr(quiet_fd, TCSANOW, &quiet_saved);
  signal(sig, SIG_DFL);
  raise(sig);
}

// Echo off at a terminal (the newline still echoed) for its lifetime. Fatal signals that would
// end the process as they are (not caught, not ignored) restore the terminal first.
class EchoOff {
 public:
  explicit EchoOff(int fd) : fd_(fd) {
    saved_ok_ = tcgetattr(fd, &saved_) == 0;
    if (!saved_ok_) return;
    quiet_fd = fd;
    quiet_saved = saved_;
    struct sigaction restore = {};
    restore.sa_handler = RestoreAndDie;
    sigemptyset(&restore.sa_mask);
    for (size_t i = 0; i < std::size(kFatalSignals); ++i) {
      sigaction(kFatalSignals[i], nullptr, &before_[i]);
      if (before_[i].sa_handler == SIG_DFL) sigaction(kFatalSignals[i], &restore, nullptr);
    }
    termios quiet = saved_;
    quiet.c_lflag = (quiet.c_lflag & ~ECHO) | ECHONL;
    ok_ = tcsetattr(fd, TCSAFLUSH, &quiet) == 0;
  }
  ~EchoOff() {
    if (!saved_ok_) return;
    tcsetattr(fd_, TCSANOW, &saved_);
    for (size_t i = 0; i < std::size(kFatalSignals); ++i) {
      sigaction(kFatalSignals[i], &before_[i], nullptr);
    }
  }
  EchoOff(const EchoOff&) = delete;
  EchoOff& operator=(const EchoOff&) = delete;
  bool ok() const { return ok_; }

 private:
  int fd_;
  termios saved_ = {};
  bool saved_ok_ = false;
  struct sigaction before_[std::size(kFatalSignals)] = {};
  bool ok_ = false;
};

// One line of `fd`, a byte at a time so that nothing after the newline is consumed.
absl::StatusOr<std::string> ReadLine(int fd) {
  std::string line;
  char c;
  while (true) {
    const ssize_t n = read(fd, &c, 1);
    if (n == 0 || (n == 1 && c == '\n')) return line;
    if (n == 1) {
      line += c;
    } else if (errno != EINTR) {
      return absl::ErrnoToStatus(errno, "cannot read the password");
    }
  }
}

// Writes `prompt` to the terminal `fd`, then reads the answer with echo off.
absl::StatusOr<std::string> Ask(int fd, const std::string& prompt) {
  const EchoOff quiet(fd);
  if (!quiet.ok()) return absl::ErrnoToStatus(errno, "cannot turn the terminal's echo off");
  if (write(fd, prompt.data(), prompt.size()) != static_cast<ssize_t>(prompt.size())) {
    return absl::ErrnoToStatus(errno, "cannot write the password prompt to the terminal");
  }
  return ReadLine(fd);
}

}  // namespace

absl::StatusOr<std::string> ReadPassword(int fd, const std::string& prompt,
                                         const std::string& confirm) {
  if (!isatty(fd)) return ReadLine(fd);
  absl::StatusOr<std::string> password = Ask(fd, prompt);
  if (!password.ok() || confirm.empty()) return password;
  absl::StatusOr<std::string> again = Ask(fd, confirm);
  if (!again.ok()) return again.status();
  if (*again != *password) return absl::InvalidArgumentError("the passwords do not match");
  return password;
}

}  // namespace phalanx::cli
