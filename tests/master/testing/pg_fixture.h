// Postgres for tests: the shared server of the ctest fixture `postgres` (scripts/pg-temp, its
// directory in $PHALANX_TEST_PG_DIR) with a fresh database per test, and private servers for tests
// that stop and start their own.
#ifndef PHALANX_TESTS_MASTER_TESTING_PG_FIXTURE_H_
#define PHALANX_TESTS_MASTER_TESTING_PG_FIXTURE_H_

#include <string>

namespace phalanx::master::testing {

// A URL of a new, empty database on the fixture's server. Fails the test (and returns "") when
// PHALANX_TEST_PG_DIR is unset or the server is down.
std::string FreshDatabaseUrl();

// Waits up to 10 s until a session on the server of `url` waits for a lock; false if none did.
bool WaitForALockWaiter(const std::string& url);

// A private server in a temp directory: Up() on construction, Down() on destruction.
class PrivatePostgres {
 public:
  PrivatePostgres();
  ~PrivatePostgres();
  const std::string& url() const { return url_; }
  bool Stop();
  bool Start();

 private:
  bool Run(const std::string& command);
  std::string dir_;
  std::string url_;
};

}  // namespace phalanx::master::testing

#endif  // PHALANX_TESTS_MASTER_TESTING_PG_FIXTURE_H_
