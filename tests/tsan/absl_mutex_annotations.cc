// ThreadSanitizer annotations for Debian's abseil, which is built without TSan: its absl::Mutex
// synchronises through atomics and futexes TSan cannot see, so every datum phalanx guards with one
// would read as a race. PHALANX_TSAN links each program with --wrap for the Mutex calls phalanx
// makes (top-level CMakeLists.txt); each wrapper calls the real one and tells TSan the mutex's
// address was released before it is unlocked and acquired once it is locked (as abseil's own
// ABSL_TSAN_MUTEX_* annotations do in an instrumented build). The names are the mangled ones of
// Debian 12's abseil (inline namespace debian3).
#include <sanitizer/tsan_interface.h>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

using absl::Condition;
using absl::Duration;
using absl::Mutex;

#define PHALANX_REAL(sym) __real_##sym
#define PHALANX_WRAP(sym) __wrap_##sym

// void Mutex::F() that acquires (kAcquire) or releases (kRelease) the mutex.
#define PHALANX_ACQUIRE(sym)           \
  void PHALANX_REAL(sym)(Mutex * mu);  \
  void PHALANX_WRAP(sym)(Mutex * mu) { \
    PHALANX_REAL(sym)(mu);             \
    __tsan_acquire(mu);                \
  }
#define PHALANX_RELEASE(sym)           \
  void PHALANX_REAL(sym)(Mutex * mu);  \
  void PHALANX_WRAP(sym)(Mutex * mu) { \
    __tsan_release(mu);                \
    PHALANX_REAL(sym)(mu);             \
  }

extern "C" {

PHALANX_ACQUIRE(_ZN4absl7debian35Mutex4LockEv)           // Lock
PHALANX_ACQUIRE(_ZN4absl7debian35Mutex10ReaderLockEv)    // ReaderLock
PHALANX_RELEASE(_ZN4absl7debian35Mutex6UnlockEv)         // Unlock
PHALANX_RELEASE(_ZN4absl7debian35Mutex12ReaderUnlockEv)  // ReaderUnlock

// TryLock
bool PHALANX_REAL(_ZN4absl7debian35Mutex7TryLockEv)(Mutex* mu);
bool PHALANX_WRAP(_ZN4absl7debian35Mutex7TryLockEv)(Mutex* mu) {
  const bool locked = PHALANX_REAL(_ZN4absl7debian35Mutex7TryLockEv)(mu);
  if (locked) __tsan_acquire(mu);
  return locked;
}

// LockWhen: returns holding the mutex.
void PHALANX_REAL(_ZN4absl7debian35Mutex8LockWhenERKNS0_9ConditionE)(Mutex* mu, const Condition& c);
void PHALANX_WRAP(_ZN4absl7debian35Mutex8LockWhenERKNS0_9ConditionE)(Mutex* mu,
                                                                     const Condition& c) {
  PHALANX_REAL(_ZN4absl7debian35Mutex8LockWhenERKNS0_9ConditionE)(mu, c);
  __tsan_acquire(mu);
}

// LockWhenWithTimeout: returns holding the mutex, whatever the condition.
bool PHALANX_REAL(_ZN4absl7debian35Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE)(
    Mutex* mu, const Condition& c, Duration timeout);
bool PHALANX_WRAP(_ZN4absl7debian35Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE)(
    Mutex* mu, const Condition& c, Duration timeout) {
  const bool met = PHALANX_REAL(
      _ZN4absl7debian35Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE)(mu, c, timeout);
  __tsan_acquire(mu);
  return met;
}

// Await: called holding the mutex; releases it while waiting and returns holding it again.
void PHALANX_REAL(_ZN4absl7debian35Mutex5AwaitERKNS0_9ConditionE)(Mutex* mu, const Condition& c);
void PHALANX_WRAP(_ZN4absl7debian35Mutex5AwaitERKNS0_9ConditionE)(Mutex* mu, const Condition& c) {
  __tsan_release(mu);
  PHALANX_REAL(_ZN4absl7debian35Mutex5AwaitERKNS0_9ConditionE)(mu, c);
  __tsan_acquire(mu);
}

// AwaitWithTimeout: as Await.
bool PHALANX_REAL(_ZN4absl7debian35Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE)(
    Mutex* mu, const Condition& c, Duration timeout);
bool PHALANX_WRAP(_ZN4absl7debian35Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE)(
    Mutex* mu, const Condition& c, Duration timeout) {
  __tsan_release(mu);
  const bool met = PHALANX_REAL(
      _ZN4absl7debian35Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE)(mu, c, timeout);
  __tsan_acquire(mu);
  return met;
}

// CondVar::Wait(mu): releases `mu` while waiting and returns holding it again.
void PHALANX_REAL(_ZN4absl7debian37CondVar4WaitEPNS0_5MutexE)(absl::CondVar* cv, Mutex* mu);
void PHALANX_WRAP(_ZN4absl7debian37CondVar4WaitEPNS0_5MutexE)(absl::CondVar* cv, Mutex* mu) {
  __tsan_release(mu);
  PHALANX_REAL(_ZN4absl7debian37CondVar4WaitEPNS0_5MutexE)(cv, mu);
  __tsan_acquire(mu);
}

}  // extern "C"
