// Child processes of the e2e tests (phalanx-extender, phalanx-master, scripts): started with their
// output appended to a log file and killed with the test (PR_SET_PDEATHSIG), stopped by signal.
#ifndef PHALANX_TESTS_EXTENDER_E2E_PROCESS_H_
#define PHALANX_TESTS_EXTENDER_E2E_PROCESS_H_

#include <sys/types.h>

#include <string>
#include <vector>

namespace phalanx::e2e {

// A free loopback port in the kernel's ephemeral range (bound once, then released).
int FreePort();

// Starts args[0] with `args`, stdout and stderr appended to `log_path`. -1 on failure.
pid_t SpawnLogged(const std::vector<std::string>& args, const std::string& log_path);

// Sends `signal` and reaps `pid`; SIGKILL after 10 s. Returns "" when it ended as `signal` asks
// (killed by SIGKILL; otherwise exit status 0), else what happened instead: it had exited before
// the signal, ignored it for 10 s, exited non-zero or died of another signal.
std::string StopProcess(pid_t pid, int signal);

// What `command` (run by the shell) prints on stdout; its wait status in `status` if given.
std::string Command(const std::string& command, int* status = nullptr);

// The last `lines` lines of a file.
std::string Tail(const std::string& path, int lines);

}  // namespace phalanx::e2e

#endif  // PHALANX_TESTS_EXTENDER_E2E_PROCESS_H_
