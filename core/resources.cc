// Arithmetic and parsing for Resources.
#include "core/resources.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "core/quantity.h"

namespace phalanx::core {

absl::StatusOr<Resources> Resources::FromQuantities(
    const std::vector<std::pair<std::string, std::string>>& list) {
  Resources r;
  for (const auto& [name, text] : list) {
    absl::StatusOr<int64_t> v = name == kCpu ? ParseQuantityMilli(text) : ParseQuantity(text);
    if (!v.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("resource ", name, ": ", v.status().message()));
    }
    if (*v < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("resource ", name, ": negative quantity \"", text, "\""));
    }
    r.Set(name, *v);
  }
  return r;
}

int64_t Resources::GetScalar(absl::string_view name) const {
  for (const Scalar& s : scalars_) {
    if (s.name == name) return s.value;
  }
  return 0;
}

void Resources::Set(absl::string_view name, int64_t value) {
  if (name == kCpu) {
    milli_cpu_ = value;
  } else if (name == kMemory) {
    memory_ = value;
  } else if (name == kNvidiaGpu) {
    gpu_ = value;
  } else if (name == kPods) {
    pods_ = value;
  } else {
    auto it = std::lower_bound(scalars_.begin(), scalars_.end(), name,
                               [](const Scalar& s, absl::string_view n) { return s.name < n; });
    if (it != scalars_.end() && it->name == name) {
      if (value == 0) {
        scalars_.erase(it);
      } else {
        it->value = value;
      }
    } else if (value != 0) {
      scalars_.insert(it, Scalar{std::string(name), value});
    }
  }
}

template <typename Op>
void Resources::Combine(const Resources& o, Op op) {
  milli_cpu_ = op(milli_cpu_, o.milli_cpu_);
  memory_ = op(memory_, o.memory_);
  gpu_ = op(gpu_, o.gpu_);
  pods_ = op(pods_, o.pods_);
  if (o.scalars_.empty() && scalars_.empty()) return;
  absl::InlinedVector<Scalar, 1> merged;
  auto a = scalars_.begin();
  auto b = o.scalars_.begin();
  while (a != scalars_.end() || b != o.scalars_.end()) {
    Scalar s;
    if (b == o.scalars_.end() || (a != scalars_.end() && a->name < b->name)) {
      s = Scalar{a->name, op(a->value, 0)};
      ++a;
    } else if (a == scalars_.end() || b->name < a->name) {
      s = Scalar{b->name, op(0, b->value)};
      ++b;
    } else {
      s = Scalar{a->name, op(a->value, b->value)};
      ++a;
      ++b;
    }
    if (s.value != 0) merged.push_back(std::move(s));
  }
  scalars_ = std::move(merged);
}

Resources& Resources::operator+=(const Resources& o) {
  Combine(o, [](int64_t x, int64_t y) { return x + y; });
  return *this;
}

Resources& Resources::operator-=(const Resources& o) {
  Combine(o, [](int64_t x, int64_t y) { return x - y; });
  return *this;
}

Resources Resources::Min(const Resources& a, const Resources& b) {
  Resources r = a;
  r.Combine(b, [](int64_t x, int64_t y) { return std::min(x, y); });
  return r;
}

Resources Resources::Max(const Resources& a, const Resources& b) {
  Resources r = a;
  r.Combine(b, [](int64_t x, int64_t y) { return std::max(x, y); });
  return r;
}

Resources Resources::Where(const Resources& mask) const {
  Resources r = *this;
  r.Combine(mask, [](int64_t x, int64_t m) { return m > 0 ? x : 0; });
  return r;
}

bool Resources::ScalarsFitIn(const Resources& avail) const {
  return std::none_of(scalars_.begin(), scalars_.end(),
                      [&](const Scalar& s) { return Exceeds(s.value, avail.Get(s.name)); });
}

int64_t Resources::CopiesThatFit(const Resources& avail) const {
  int64_t n = std::numeric_limits<int32_t>::max();
  auto limit = [&n](int64_t need, int64_t have) {
    if (need > 0) n = std::min(n, have <= 0 ? 0 : have / need);
  };
  limit(milli_cpu_, avail.milli_cpu_);
  limit(memory_, avail.memory_);
  limit(gpu_, avail.gpu_);
  limit(pods_, avail.pods_);
  for (const Scalar& s : scalars_) limit(s.value, avail.Get(s.name));
  return n;
}

bool Resources::IsZero() const {
  return milli_cpu_ == 0 && memory_ == 0 && gpu_ == 0 && pods_ == 0 && scalars_.empty();
}

bool Resources::IsNonNegative() const {
  if (milli_cpu_ < 0 || memory_ < 0 || gpu_ < 0 || pods_ < 0) return false;
  return std::all_of(scalars_.begin(), scalars_.end(),
                     [](const Scalar& s) { return s.value >= 0; });
}

std::string Resources::ToString() const {
  std::string out = absl::StrCat("cpu=", milli_cpu_, "m memory=", memory_);
  if (gpu_ != 0) absl::StrAppend(&out, " ", kNvidiaGpu, "=", gpu_);
  if (pods_ != 0) absl::StrAppend(&out, " ", kPods, "=", pods_);
  for (const Scalar& s : scalars_) absl::StrAppend(&out, " ", s.name, "=", s.value);
  return out;
}

}  // namespace phalanx::core
