// Reading a password from the CLI's stdin: typed at a terminal with echo off, or one line of a
// pipe or file.
#ifndef PHALANX_CLI_PASSWORD_H_
#define PHALANX_CLI_PASSWORD_H_

#include <string>

#include "absl/status/statusor.h"

namespace phalanx::cli {

// One line of `fd` without its newline (the rest of the input when no newline comes); nothing
// after the newline is consumed.
//
// At a terminal, `prompt` is written to it and the line is read with echo off; with a `confirm`
// prompt the password is then asked again, and two different answers are an InvalidArgument
// error. The terminal's settings are restored before returning, and before SIGINT, SIGTERM,
// SIGHUP or SIGQUIT ends the process. Elsewhere one line is read, without prompts.
absl::StatusOr<std::string> ReadPassword(int fd, const std::string& prompt,
                                         const std::string& confirm = "");

}  // namespace phalanx::cli

#endif  // PHALANX_CLI_PASSWORD_H_
