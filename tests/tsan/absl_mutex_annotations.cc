// ThreadSanitizer annotations for Debian's abseil, which is built without TSan: its absl::Mutex
// synchronises through atomics and futexes TSan cannot see, so every datum phalanx guards with one
// would read as a race. PHALANX_TSAN links each program with --wrap for the Mutex calls phalanx
// makes (top-level CMakeLists.txt); each wrapper calls the real one and tells TSan the mutex's
// address was released before it is let go and acquired once it is held, as abseil's own
// ABSL_TSAN_MUTEX_* annotations do in an instrumented build. A Condition runs inside abseil with
// the mutex held, in whichever thread abseil picks, so the wrappers hand abseil one that acquires
// the mutex around it. The symbols are those of Debian 12's abseil (inline namespace debian3).
#include <sanitizer/tsan_interface.h>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

using absl::Condition;
using absl::CondVar;
using absl::Duration;
using absl::Mutex;

// The mangled names: __wrap_<name> is the wrapper, __real_<name> the real call.
#define LOCK _ZN4absl7debian35Mutex4LockEv
#define READER_LOCK _ZN4absl7debian35Mutex10ReaderLockEv
#define UNLOCK _ZN4absl7debian35Mutex6UnlockEv
#define READER_UNLOCK _ZN4absl7debian35Mutex12ReaderUnlockEv
#define TRY_LOCK _ZN4absl7debian35Mutex7TryLockEv
#define LOCK_WHEN _ZN4absl7debian35Mutex8LockWhenERKNS0_9ConditionE
#define LOCK_WHEN_WITH_TIMEOUT \
  _ZN4absl7debian35Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE
#define AWAIT _ZN4absl7debian35Mutex5AwaitERKNS0_9ConditionE
#define AWAIT_WITH_TIMEOUT _ZN4absl7debian35Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE
#define COND_VAR_WAIT _ZN4absl7debian37CondVar4WaitEPNS0_5MutexE
#define CAT(a, b) a##b
#define REAL(sym) CAT(__real_, sym)
#define WRAP(sym) CAT(__wrap_, sym)

namespace {

// `cond` for abseil to evaluate with `mu` held: published to the evaluating thread by a release
// of `mu` once built, and evaluated between an acquire and a release of `mu`.
class AnnotatedCondition {
 public:
  AnnotatedCondition(Mutex* mu, const Condition& cond)
      : mu_(mu), cond_(&cond), annotated_(&Eval, this) {
    __tsan_release(mu_);
  }
  const Condition& get() const { return annotated_; }

 private:
  static bool Eval(AnnotatedCondition* self) {
    __tsan_acquire(self->mu_);
    const bool met = self->cond_->Eval();
    __tsan_release(self->mu_);
    return met;
  }

  Mutex* mu_;
  const Condition* cond_;
  Condition annotated_;
};

}  // namespace

extern "C" {

void REAL(LOCK)(Mutex* mu);
void WRAP(LOCK)(Mutex* mu) {
  REAL(LOCK)(mu);
  __tsan_acquire(mu);
}

void REAL(READER_LOCK)(Mutex* mu);
void WRAP(READER_LOCK)(Mutex* mu) {
  REAL(READER_LOCK)(mu);
  __tsan_acquire(mu);
}

void REAL(UNLOCK)(Mutex* mu);
void WRAP(UNLOCK)(Mutex* mu) {
  __tsan_release(mu);
  REAL(UNLOCK)(mu);
}

void REAL(READER_UNLOCK)(Mutex* mu);
void WRAP(READER_UNLOCK)(Mutex* mu) {
  __tsan_release(mu);
  REAL(READER_UNLOCK)(mu);
}

bool REAL(TRY_LOCK)(Mutex* mu);
bool WRAP(TRY_LOCK)(Mutex* mu) {
  const bool locked = REAL(TRY_LOCK)(mu);
  if (locked) __tsan_acquire(mu);
  return locked;
}

// LockWhen*: return holding the mutex (the timeout ones whether or not the condition holds).
void REAL(LOCK_WHEN)(Mutex* mu, const Condition& c);
void WRAP(LOCK_WHEN)(Mutex* mu, const Condition& c) {
  AnnotatedCondition cond(mu, c);
  REAL(LOCK_WHEN)(mu, cond.get());
  __tsan_acquire(mu);
}

bool REAL(LOCK_WHEN_WITH_TIMEOUT)(Mutex* mu, const Condition& c, Duration timeout);
bool WRAP(LOCK_WHEN_WITH_TIMEOUT)(Mutex* mu, const Condition& c, Duration timeout) {
  AnnotatedCondition cond(mu, c);
  const bool met = REAL(LOCK_WHEN_WITH_TIMEOUT)(mu, cond.get(), timeout);
  __tsan_acquire(mu);
  return met;
}

// Await*, CondVar::Wait: called holding the mutex; let it go while waiting and return holding it.
void REAL(AWAIT)(Mutex* mu, const Condition& c);
void WRAP(AWAIT)(Mutex* mu, const Condition& c) {
  AnnotatedCondition cond(mu, c);
  REAL(AWAIT)(mu, cond.get());
  __tsan_acquire(mu);
}

bool REAL(AWAIT_WITH_TIMEOUT)(Mutex* mu, const Condition& c, Duration timeout);
bool WRAP(AWAIT_WITH_TIMEOUT)(Mutex* mu, const Condition& c, Duration timeout) {
  AnnotatedCondition cond(mu, c);
  const bool met = REAL(AWAIT_WITH_TIMEOUT)(mu, cond.get(), timeout);
  __tsan_acquire(mu);
  return met;
}

void REAL(COND_VAR_WAIT)(CondVar* cv, Mutex* mu);
void WRAP(COND_VAR_WAIT)(CondVar* cv, Mutex* mu) {
  __tsan_release(mu);
  REAL(COND_VAR_WAIT)(cv, mu);
  __tsan_acquire(mu);
}

}  // extern "C"
