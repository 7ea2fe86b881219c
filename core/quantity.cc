// Exact Kubernetes quantity parsing: mantissa digits and a power of ten or two, in 128-bit
// integers.
#include "core/quantity.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace phalanx::core {
namespace {

using Int128 = __int128;
constexpr Int128 kLimit = static_cast<Int128>(INT64_MAX);
constexpr int kMaxDigits = 30;

// A parsed quantity: sign * mantissa * 10^exp10 * 2^exp2.
struct Parsed {
  bool negative = false;
  Int128 mantissa = 0;
  int exp10 = 0;
  int exp2 = 0;
};

absl::Status Malformed(absl::string_view text, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("invalid quantity \"", text, "\": ", why));
}

// Applies a suffix (everything after the number) to `p`.
absl::Status ApplySuffix(absl::string_view text, absl::string_view suffix, Parsed& p) {
  struct Unit {
    absl::string_view name;
    int exp10;
    int exp2;
  };
  static constexpr Unit kUnits[] = {{"", 0, 0},    {"n", -9, 0},  {"u", -6, 0},  {"m", -3, 0},
                                    {"k", 3, 0},   {"M", 6, 0},   {"G", 9, 0},   {"T", 12, 0},
                                    {"P", 15, 0},  {"E", 18, 0},  {"Ki", 0, 10}, {"Mi", 0, 20},
                                    {"Gi", 0, 30}, {"Ti", 0, 40}, {"Pi", 0, 50}, {"Ei", 0, 60}};
  for (const Unit& u : kUnits) {
    if (suffix == u.name) {
      p.exp10 += u.exp10;
      p.exp2 += u.exp2;
      return absl::OkStatus();
    }
  }
  if (suffix.size() >= 2 && (suffix[0] == 'e' || suffix[0] == 'E')) {
    absl::string_view digits = suffix.substr(1);
    bool neg = false;
    if (digits[0] == '+' || digits[0] == '-') {
      neg = digits[0] == '-';
      digits.remove_prefix(1);
    }
    if (digits.empty() || digits.size() > 3) return Malformed(text, "bad exponent");
    int e = 0;
    for (char c : digits) {
      if (c < '0' || c > '9') return Malformed(text, "bad exponent");
      e = e * 10 + (c - '0');
    }
    p.exp10 += neg ? -e : e;
    return absl::OkStatus();
  }
  return Malformed(text, absl::StrCat("unknown suffix \"", suffix, "\""));
}

absl::StatusOr<Parsed> Parse(absl::string_view text) {
  Parsed p;
  absl::string_view s = text;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    p.negative = s[0] == '-';
    s.remove_prefix(1);
  }
  int digits = 0;
  bool seen_dot = false;
  size_t i = 0;
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (c == '.' && !seen_dot) {
      seen_dot = true;
      continue;
    }
    if (c < '0' || c > '9') break;
    if (++digits > kMaxDigits) return Malformed(text, "too many digits");
    p.mantissa = p.mantissa * 10 + (c - '0');
    if (seen_dot) --p.exp10;
  }
  if (digits == 0) return Malformed(text, "no digits");
  absl::Status st = ApplySuffix(text, s.substr(i), p);
  if (!st.ok()) return st;
  return p;
}

// ceil(p * 10^scale10) as int64, or an error when it does not fit.
absl::StatusOr<int64_t> Scale(absl::string_view text, const Parsed& p, int scale10) {
  Int128 v = p.mantissa;
  int e10 = p.exp10 + scale10;
  auto too_large = [&] { return Malformed(text, "out of range"); };
  for (int k = 0; k < p.exp2; ++k) {
    v <<= 1;
    if (v > kLimit * 1000000000000000000LL) return too_large();
  }
  for (; e10 > 0; --e10) {
    v *= 10;
    if (v > kLimit) return too_large();
  }
  bool remainder = false;
  for (; e10 < 0 && v != 0; ++e10) {
    remainder |= (v % 10) != 0;
    v /= 10;
  }
  if (v > kLimit) return too_large();
  int64_t out = static_cast<int64_t>(v);
  if (p.negative) return -out;  // Rounding toward +inf: dropping digits of a negative raises it.
  if (!remainder) return out;
  if (out == INT64_MAX) return too_large();  // Rounding up would overflow.
  return out + 1;
}

}  // namespace

absl::StatusOr<int64_t> ParseQuantityMilli(absl::string_view text) {
  absl::StatusOr<Parsed> p = Parse(text);
  if (!p.ok()) return p.status();
  return Scale(text, *p, 3);
}

absl::StatusOr<int64_t> ParseQuantity(absl::string_view text) {
  absl::StatusOr<Parsed> p = Parse(text);
  if (!p.ok()) return p.status();
  return Scale(text, *p, 0);
}

}  // namespace phalanx::core
