// Test databases on scripts/pg-temp servers (see pg_fixture.h).
#include "tests/master/testing/pg_fixture.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "pqxx/pqxx"

namespace phalanx::master::testing {
namespace {

// PHALANX_TEST_PG_URL from `dir`/env.
std::string UrlFromEnvFile(const std::string& dir) {
  std::ifstream in(dir + "/env");
  std::string line;
  const std::string key = "export PHALANX_TEST_PG_URL=";
  while (std::getline(in, line)) {
    if (absl::StartsWith(line, key)) return line.substr(key.size());
  }
  return "";
}

}  // namespace

std::string FreshDatabaseUrl() {
  const char* dir = std::getenv("PHALANX_TEST_PG_DIR");
  if (dir == nullptr) {
    ADD_FAILURE() << "PHALANX_TEST_PG_DIR is unset: run through ctest (fixture postgres)";
    return "";
  }
  const std::string url = UrlFromEnvFile(dir);
  if (url.empty()) {
    ADD_FAILURE() << "no PHALANX_TEST_PG_URL in " << dir << "/env: is the postgres fixture up?";
    return "";
  }
  static std::atomic<int> counter{0};
  const std::string name = absl::StrCat("t_", getpid(), "_", counter++);
  try {
    pqxx::connection conn(url);
    pqxx::nontransaction tx(conn);
    tx.exec(absl::StrCat("DROP DATABASE IF EXISTS ", name));
    tx.exec(absl::StrCat("CREATE DATABASE ", name));
  } catch (const std::exception& e) {
    ADD_FAILURE() << "creating database " << name << ": " << e.what();
    return "";
  }
  return url.substr(0, url.rfind('/') + 1) + name;
}

bool WaitForALockWaiter(const std::string& url) {
  pqxx::connection watcher(url);
  for (int i = 0; i < 1000; ++i) {
    pqxx::nontransaction q(watcher);
    if (q.exec1("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'")[0]
            .as<int>() > 0) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

PrivatePostgres::PrivatePostgres() {
  char tmpl[] = "/tmp/phalanx-pg-XXXXXX";
  dir_ = mkdtemp(tmpl);
  if (Run("up")) url_ = UrlFromEnvFile(dir_);
  EXPECT_FALSE(url_.empty()) << "pg-temp up failed in " << dir_;
}

PrivatePostgres::~PrivatePostgres() { Run("down"); }

bool PrivatePostgres::Stop() { return Run("stop"); }
bool PrivatePostgres::Start() { return Run("start"); }

bool PrivatePostgres::Run(const std::string& command) {
  const std::string cmd =
      absl::StrCat(PHALANX_PG_TEMP, " ", command, " --dir ", dir_, " >/dev/null 2>&1");
  return std::system(cmd.c_str()) == 0;
}

}  // namespace phalanx::master::testing
