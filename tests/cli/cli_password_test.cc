// Passwords at the command line: from --password, $PHALANX_PASSWORD or stdin; typed at a prompt
// with echo off when stdin is a terminal (a pseudo-terminal here), twice for a new one.
#include <poll.h>
#include <pty.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <csignal>
#include <thread>
#include <utility>

#include "cli/password.h"
#include "tests/master/testing/cli_fixture.h"

namespace phalanx::master {
namespace {

using ::testing::HasSubstr;

// A pseudo-terminal standing in for the user's: the CLI reads and prompts at tty(); the test reads
// the screen and types at the other end.
class FakeTerminal {
 public:
  FakeTerminal() { EXPECT_EQ(openpty(&keyboard_, &tty_, nullptr, nullptr, nullptr), 0); }
  ~FakeTerminal() {
    close(keyboard_);
    close(tty_);
  }
  int tty() const { return tty_; }
  bool Echoes() const {
    termios t;
    return tcgetattr(tty_, &t) == 0 && (t.c_lflag & ECHO) != 0;
  }
  // Waits up to 10 s until the screen shows `text` after what the last wait found; false when it
  // does not.
  bool WaitFor(const std::string& text) {
    size_t at;
    while ((at = screen_.find(text, seen_)) == std::string::npos) {
      pollfd ready = {.fd = keyboard_, .events = POLLIN, .revents = 0};
      char buf[256];
      const ssize_t n = poll(&ready, 1, 10000) == 1 ? read(keyboard_, buf, sizeof buf) : -1;
      if (n <= 0) return false;
      screen_.append(buf, n);
    }
    seen_ = at + text.size();
    return true;
  }
  // Everything the CLI wrote that the waits read.
  const std::string& screen() const { return screen_; }
  void Type(const std::string& line) {
    EXPECT_EQ(write(keyboard_, (line + "\n").data(), line.size() + 1),
              static_cast<ssize_t>(line.size() + 1));
  }

 private:
  int keyboard_ = -1, tty_ = -1;
  std::string screen_;
  size_t seen_ = 0;
};

// Answers the prompts on `terminal` one after another on its own thread: {prompt, line typed}.
// Notes whether the terminal echoed when each prompt came.
class Typist {
 public:
  Typist(FakeTerminal& terminal, std::vector<std::pair<std::string, std::string>> answers)
      : thread_([this, &terminal, answers] {
          for (const auto& [prompt, line] : answers) {
            if (!terminal.WaitFor(prompt)) {
              ADD_FAILURE() << "no prompt \"" << prompt << "\"";
              return;
            }
            echoed_ = echoed_ || terminal.Echoes();
            terminal.Type(line);
          }
        }) {}
  ~Typist() {
    if (thread_.joinable()) thread_.join();
  }
  // Waits for the typing to end; whether the terminal echoed at any prompt.
  bool Echoed() {
    thread_.join();
    return echoed_;
  }

 private:
  bool echoed_ = false;
  std::thread thread_;
};

// user create takes the password from --password, else $PHALANX_PASSWORD, else stdin, and refuses
// an empty one.
TEST_F(CliTest, UserCreateNeedsAPassword) {
  ASSERT_EQ(Run({"login", "admin", "--password", "pw"}), 0) << err_;
  unsetenv("PHALANX_PASSWORD");
  EXPECT_EQ(Run({"user", "create", "bob"}), 2);
  EXPECT_THAT(err_, HasSubstr("user create: empty password; type one, pipe one line to stdin, or "
                              "give --password P or $PHALANX_PASSWORD"));
  EXPECT_EQ(Run({"user", "create", "bob", "--password="}, "from-stdin\n"), 2);
  setenv("PHALANX_PASSWORD", "from-env", 1);
  ASSERT_EQ(Run({"user", "create", "bob"}, "from-stdin\n"), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("Created user bob"));
  ASSERT_EQ(Run({"user", "create", "carol", "--password", "from-flag"}), 0) << err_;
  unsetenv("PHALANX_PASSWORD");
  EXPECT_EQ(Run({"login", "bob", "--password", "from-env"}), 0) << err_;
  EXPECT_EQ(Run({"login", "carol", "--password", "from-flag"}), 0) << err_;
}

// Without --password or $PHALANX_PASSWORD, the password is the first line of a piped stdin, read
// once (no second line for a new password) and without prompts; --password and $PHALANX_PASSWORD
// still win over stdin.
TEST_F(CliTest, PasswordsFromAPipe) {
  unsetenv("PHALANX_PASSWORD");
  EXPECT_EQ(Run({"login", "admin"}, "wrong\n"), 1);
  EXPECT_THAT(err_, HasSubstr("UNAUTHENTICATED"));
  ASSERT_EQ(Run({"login", "admin"}, "pw\n"), 0) << err_;
  EXPECT_EQ(out_, "Logged in as admin (admin)\n");
  EXPECT_EQ(err_, "");

  ASSERT_EQ(Run({"user", "create", "bob"}, "bob-pw\nnot-bob-pw\n"), 0) << err_;
  ASSERT_EQ(Run({"login", "bob"}, "bob-pw\n"), 0) << err_;
  EXPECT_EQ(out_, "Logged in as bob\n");
  ASSERT_EQ(Run({"user", "set-password"}, "last-line-unended"), 0) << err_;
  EXPECT_EQ(Run({"user", "set-password"}, "\nsecond\n"), 2);
  EXPECT_THAT(err_, HasSubstr("user set-password: empty password"));
  ASSERT_EQ(Run({"login", "bob"}, "last-line-unended\n"), 0) << err_;

  ASSERT_EQ(Run({"login", "admin", "--password", "pw"}, "wrong\n"), 0) << err_;
  EXPECT_EQ(Run({"login", "admin", "--password="}, "pw\n"), 1);  // An empty --password is one.
  setenv("PHALANX_PASSWORD", "pw", 1);
  ASSERT_EQ(Run({"login", "admin"}, "wrong\n"), 0) << err_;
  EXPECT_EQ(Run({"login", "admin", "--password", "wrong"}, "pw\n"), 1);
  unsetenv("PHALANX_PASSWORD");
}

// At a terminal, login asks for the password with echo off and restores the terminal; an empty
// line logs in with an empty password.
TEST_F(CliTest, LoginAsksAtATerminal) {
  unsetenv("PHALANX_PASSWORD");
  RecordingAuth auth;
  std::string address;
  const std::unique_ptr<grpc::Server> fake = FakeMaster({&auth}, address);
  setenv("PHALANX_MASTER", address.c_str(), 1);
  FakeTerminal terminal;
  Typist typist(terminal, {{"Password for admin: ", "s3cret"}});
  ASSERT_EQ(RunAt(terminal.tty(), {"login", "admin"}), 0) << err_;
  EXPECT_FALSE(typist.Echoed());
  EXPECT_EQ(auth.password, "s3cret");
  // The typed newline is echoed, the password is not.
  EXPECT_TRUE(terminal.WaitFor("\r\n"));
  EXPECT_EQ(terminal.screen(), "Password for admin: \r\n");
  EXPECT_TRUE(terminal.Echoes());

  Typist empty(terminal, {{"Password for root: ", ""}});
  ASSERT_EQ(RunAt(terminal.tty(), {"login", "root"}), 0) << err_;
  EXPECT_FALSE(empty.Echoed());
  EXPECT_EQ(auth.password, "");
  EXPECT_TRUE(terminal.Echoes());
}

// At a terminal, a new password is asked twice; two different answers, or an empty one, are
// refused before the master is called, and the terminal is restored either way.
TEST_F(CliTest, NewPasswordsAreAskedTwiceAtATerminal) {
  unsetenv("PHALANX_PASSWORD");
  ASSERT_EQ(Run({"login", "admin", "--password", "pw"}), 0) << err_;
  FakeTerminal terminal;
  Typist mistyped(terminal, {{"Password for bob: ", "one"}, {"Retype password for bob: ", "two"}});
  EXPECT_EQ(RunAt(terminal.tty(), {"user", "create", "bob"}), 2);
  EXPECT_FALSE(mistyped.Echoed());
  EXPECT_THAT(err_, HasSubstr("user create: the passwords do not match"));
  EXPECT_TRUE(terminal.Echoes());

  Typist blank(terminal, {{"Password for carol: ", ""}, {"Retype password for carol: ", ""}});
  EXPECT_EQ(RunAt(terminal.tty(), {"user", "create", "carol"}), 2);
  blank.Echoed();
  EXPECT_THAT(err_, HasSubstr("user create: empty password"));

  Typist typed(terminal,
               {{"Password for bob: ", "bob-pw"}, {"Retype password for bob: ", "bob-pw"}});
  ASSERT_EQ(RunAt(terminal.tty(), {"user", "create", "bob"}), 0) << err_;
  EXPECT_FALSE(typed.Echoed());
  EXPECT_TRUE(terminal.Echoes());
  Typist reset(terminal,
               {{"New password for bob: ", "new"}, {"Retype new password for bob: ", "new"}});
  ASSERT_EQ(RunAt(terminal.tty(), {"user", "set-password", "bob"}), 0) << err_;
  reset.Echoed();
  ASSERT_EQ(Run({"login", "bob"}, "new\n"), 0) << err_;
  Typist own(terminal, {{"New password: ", "newer"}, {"Retype new password: ", "newer"}});
  ASSERT_EQ(RunAt(terminal.tty(), {"user", "set-password"}), 0) << err_;
  own.Echoed();
  EXPECT_FALSE(Login("bob", "newer").empty());
}

// A signal that ends the CLI at the prompt restores the terminal's echo first.
TEST(PasswordPromptTest, ASignalAtThePromptRestoresTheTerminal) {
  FakeTerminal terminal;
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    signal(SIGINT, SIG_DFL);  // Not ignored, whatever the test inherited.
    (void)cli::ReadPassword(terminal.tty(), "Password: ");
    _exit(0);
  }
  const bool prompted = terminal.WaitFor("Password: ");
  const bool echoed = terminal.Echoes();
  kill(pid, SIGINT);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(prompted);
  EXPECT_FALSE(echoed);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT) << status;
  EXPECT_TRUE(terminal.Echoes());
}

// A piped password is read up to its newline and no further, so the rest of stdin is left.
TEST(PasswordPromptTest, APipeIsReadALineAtATime) {
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  ASSERT_EQ(write(pipe_fds[1], "first\nsecond", 12), 12);
  close(pipe_fds[1]);
  EXPECT_EQ(cli::ReadPassword(pipe_fds[0], "unused: ", "unused: ").value_or("?"), "first");
  EXPECT_EQ(cli::ReadPassword(pipe_fds[0], "unused: ").value_or("?"), "second");
  EXPECT_EQ(cli::ReadPassword(pipe_fds[0], "unused: ").value_or("?"), "");
  close(pipe_fds[0]);
}

}  // namespace
}  // namespace phalanx::master
