// Child processes of the e2e tests (see process.h).
#include "tests/extender_e2e/process.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"

namespace phalanx::e2e {

int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

pid_t SpawnLogged(const std::vector<std::string>& args, const std::string& log_path) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const int log = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log < 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // Never outlive the test: ports are shared.
    dup2(log, 1);
    dup2(log, 2);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(log);
  return pid;
}

namespace {

// "exited with status 1", "killed by signal 11 (Segmentation fault)".
std::string WaitStatusText(int status) {
  if (WIFEXITED(status)) return absl::StrCat("exited with status ", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    return absl::StrCat("killed by signal ", WTERMSIG(status), " (", strsignal(WTERMSIG(status)),
                        ")");
  }
  return absl::StrCat("ended with wait status ", status);
}

}  // namespace

std::string StopProcess(pid_t pid, int signal) {
  int status = 0;
  if (const pid_t r = waitpid(pid, &status, WNOHANG); r != 0) {
    return r == pid ? absl::StrCat("had ended before signal ", signal, ": ", WaitStatusText(status))
                    : absl::StrCat("cannot wait for pid ", pid, ": ", strerror(errno));
  }
  kill(pid, signal);
  bool reaped = false;
  for (int i = 0; i < 100 && !reaped; ++i) {
    reaped = waitpid(pid, &status, WNOHANG) == pid;
    if (!reaped) absl::SleepFor(absl::Milliseconds(100));
  }
  if (!reaped) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return absl::StrCat("ignored signal ", signal, " for 10 s");
  }
  const bool as_asked = signal == SIGKILL ? WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL
                                          : WIFEXITED(status) && WEXITSTATUS(status) == 0;
  return as_asked ? "" : absl::StrCat(WaitStatusText(status), " on signal ", signal);
}

std::string Command(const std::string& command, int* status) {
  std::string text;
  FILE* out = popen(command.c_str(), "r");
  if (out == nullptr) return "(cannot run " + command + ")";
  char buf[512];
  while (size_t n = fread(buf, 1, sizeof buf, out)) text.append(buf, n);
  const int exit_status = pclose(out);
  if (status != nullptr) *status = exit_status;
  return text;
}

std::string Tail(const std::string& path, int lines) {
  std::ifstream in(path);
  std::vector<std::string> all;
  for (std::string line; std::getline(in, line);) all.push_back(line);
  size_t from = all.size() > static_cast<size_t>(lines) ? all.size() - lines : 0;
  return absl::StrJoin(all.begin() + from, all.end(), "\n");
}

}  // namespace phalanx::e2e
