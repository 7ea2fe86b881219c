// Configuration parsing and validation, and the usage text built from the same table of keys.
#include "scheduler_extender/config.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <sstream>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "core/pod.h"
#include "http/server.h"
#include "yaml-cpp/yaml.h"

namespace phalanx::extender {
namespace {

using Setter = std::function<absl::Status(absl::string_view, ExtenderConfig&)>;

constexpr absl::string_view kPoolMaxSlots = "pool_max_slots_per_pod";
constexpr int64_t kMaxRuleDurationMs = 30LL * 24 * 3600 * 1000;

absl::Status Bad(absl::string_view key, absl::string_view what, absl::string_view value) {
  return absl::InvalidArgumentError(absl::StrCat(key, ": ", what, ", got \"", value, "\""));
}

Setter Int(int64_t min, int64_t ExtenderConfig::*field, absl::string_view key,
           int64_t max = std::numeric_limits<int64_t>::max()) {
  return [=](absl::string_view v, ExtenderConfig& c) {
    int64_t n;
    if (!absl::SimpleAtoi(v, &n) || n < min || n > max) {
      return Bad(key,
                 max == std::numeric_limits<int64_t>::max()
                     ? absl::StrCat("must be an integer >= ", min)
                     : absl::StrCat("must be an integer from ", min, " to ", max),
                 v);
    }
    c.*field = n;
    return absl::OkStatus();
  };
}

// 0 (off), or at least a second: each forecast runs many admission rounds.
absl::Status ForecastInterval(absl::string_view v, ExtenderConfig& c) {
  int64_t n;
  if (!absl::SimpleAtoi(v, &n) || (n != 0 && (n < 1000 || n > kMaxRuleDurationMs))) {
    return Bad("forecast_interval_ms", "must be 0 or an integer from 1000 to 2592000000", v);
  }
  c.forecast_interval_ms = n;
  return absl::OkStatus();
}

// NAMESPACE/NAME of a Lease: both DNS-1123 names.
absl::Status SetFollowLease(absl::string_view v, ExtenderConfig& c) {
  const size_t slash = v.find('/');
  // DNS-1123: lowercase alphanumerics, '-' and (names only) '.', each part starting and ending
  // alphanumeric; so no ".." can reach the request path.
  auto alnum = [](char ch) { return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9'); };
  auto name_ok = [&](absl::string_view n, bool dots) {
    return !n.empty() && n.size() <= 253 && alnum(n.front()) && alnum(n.back()) &&
           n.find("..") == absl::string_view::npos && std::all_of(n.begin(), n.end(), [&](char ch) {
             return alnum(ch) || ch == '-' || (dots && ch == '.');
           });
  };
  if (!v.empty() && (slash == absl::string_view::npos || !name_ok(v.substr(0, slash), false) ||
                     !name_ok(v.substr(slash + 1), true))) {
    return Bad("follow_lease", "must be NAMESPACE/NAME of a Lease (lowercase DNS names) or empty",
               v);
  }
  c.follow_lease = std::string(v);
  return absl::OkStatus();
}

Setter Bool(bool ExtenderConfig::*field, absl::string_view key) {
  return [=](absl::string_view v, ExtenderConfig& c) {
    if (!absl::SimpleAtob(v, &(c.*field))) return Bad(key, "must be true or false", v);
    return absl::OkStatus();
  };
}

Setter Str(std::string ExtenderConfig::*field) {
  return [=](absl::string_view v, ExtenderConfig& c) {
    c.*field = std::string(v);
    return absl::OkStatus();
  };
}

// A setter of `key`, a host:port, into `host` and `port`.
Setter HostPort(absl::string_view key, std::string ExtenderConfig::*host,
                int ExtenderConfig::*port) {
  return [key, host, port](absl::string_view v, ExtenderConfig& c) {
    absl::StatusOr<std::pair<std::string, int>> address = http::ParseListenAddress(v);
    if (!address.ok()) return Bad(key, "must be host:port", v);
    std::tie(c.*host, c.*port) = *std::move(address);
    return absl::OkStatus();
  };
}

absl::Status SetSlotType(absl::string_view v, ExtenderConfig& c) {
  if (v == "gpu") {
    c.slots.type = gang::SlotPolicy::Type::kGpu;
  } else if (v == "cpu") {
    c.slots.type = gang::SlotPolicy::Type::kCpu;
  } else {
    return Bad("slot_type", "must be gpu or cpu", v);
  }
  return absl::OkStatus();
}

absl::Status SetCpusPerSlot(absl::string_view v, ExtenderConfig& c) {
  double cpus;
  if (!absl::SimpleAtod(v, &cpus) || !(cpus > 0) || std::isinf(cpus)) {
    return Bad("cpus_per_slot", "must be a positive number", v);
  }
  int64_t milli = static_cast<int64_t>(std::llround(cpus * 1000));
  if (milli < 1) return Bad("cpus_per_slot", "must be at least 0.001", v);
  c.slots.milli_cpu_per_slot = milli;
  return absl::OkStatus();
}

// A maxSlotsPerPod value of `field`: an integer >= 0 (0: no limit).
absl::StatusOr<int32_t> MaxSlots(absl::string_view field, absl::string_view v) {
  int32_t n;
  if (!absl::SimpleAtoi(v, &n) || n < 0) return Bad(field, "must be an integer >= 0", v);
  return n;
}

absl::Status SetMaxSlots(absl::string_view v, ExtenderConfig& c) {
  absl::StatusOr<int32_t> n = MaxSlots("max_slots_per_pod", v);
  if (!n.ok()) return n.status();
  c.slots.max_slots_per_pod = *n;
  return absl::OkStatus();
}

// `v`: a YAML mapping of resource pool to maxSlotsPerPod ("{a100: 8}"); replaces the previous one.
absl::Status SetPoolMaxSlots(absl::string_view v, ExtenderConfig& c) {
  YAML::Node pools;
  try {
    pools = YAML::Load(std::string(v));
  } catch (const YAML::Exception&) {
    // Not YAML: reported as not a mapping below.
  }
  if (!pools.IsMap()) return Bad(kPoolMaxSlots, "must be a mapping of resource pool to integer", v);
  absl::flat_hash_map<std::string, int32_t> limits;
  for (const auto& kv : pools) {
    if (!kv.first.IsScalar() || kv.first.Scalar().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(kPoolMaxSlots, ": resource pool names must be non-empty strings"));
    }
    const std::string& pool = kv.first.Scalar();
    absl::StatusOr<int32_t> n =
        MaxSlots(absl::StrCat(kPoolMaxSlots, ".", pool),
                 kv.second.IsScalar() ? kv.second.Scalar() : YAML::Dump(kv.second));
    if (!n.ok()) return n.status();
    limits[pool] = *n;
  }
  c.slots.pool_max_slots_per_pod = std::move(limits);
  return absl::OkStatus();
}

// For --help: what `key` holds in a config, "" when it is unset.
using Shower = std::function<std::string(const ExtenderConfig&)>;

Shower ShowInt(int64_t ExtenderConfig::*field) {
  return [=](const ExtenderConfig& c) { return absl::StrCat(c.*field); };
}

Shower ShowBool(bool ExtenderConfig::*field) {
  return [=](const ExtenderConfig& c) { return std::string(c.*field ? "true" : "false"); };
}

Shower ShowStr(std::string ExtenderConfig::*field) {
  return [=](const ExtenderConfig& c) { return c.*field; };
}

Shower ShowHostPort(std::string ExtenderConfig::*host, int ExtenderConfig::*port) {
  return [=](const ExtenderConfig& c) {
    return c.*port < 0 ? std::string() : absl::StrCat(c.*host, ":", c.*port);
  };
}

struct Setting {
  Setter set;
  const char* help;  // For --help: the value, then what it sets.
  Shower show;       // For --help: the default, shown from a default ExtenderConfig.
};
using Entry = std::pair<const std::string, Setting>;

// Table entries of a field set from its key's value as is.
Entry IntEntry(const char* key, int64_t min, int64_t ExtenderConfig::*field, const char* help) {
  return {key, {Int(min, field, key), help, ShowInt(field)}};
}

// A duration of the preemption rules: at most 30 days, so that costs in slot-seconds stay far
// from int64 overflow.
Entry RuleDurationEntry(const char* key, int64_t min, int64_t ExtenderConfig::*field,
                        const char* help) {
  return {key, {Int(min, field, key, kMaxRuleDurationMs), help, ShowInt(field)}};
}

// A count of preemptions: pods carry at most the newest core::kMaxPreemptionHistory.
Entry CountEntry(const char* key, int64_t ExtenderConfig::*field, const char* help) {
  return {key, {Int(0, field, key, core::kMaxPreemptionHistory), help, ShowInt(field)}};
}

Entry BoolEntry(const char* key, bool ExtenderConfig::*field, const char* help) {
  return {key, {Bool(field, key), help, ShowBool(field)}};
}

Entry StrEntry(const char* key, std::string ExtenderConfig::*field, const char* help) {
  return {key, {Str(field), help, ShowStr(field)}};
}

Entry HostPortEntry(const char* key, std::string ExtenderConfig::*host, int ExtenderConfig::*port,
                    const char* help) {
  return {key, {HostPort(key, host, port), help, ShowHostPort(host, port)}};
}

const std::map<std::string, Setting, std::less<>>& Settings() {
  static const auto* settings = new std::map<std::string, Setting, std::less<>>{
      HostPortEntry("listen", &ExtenderConfig::listen_host, &ExtenderConfig::listen_port,
                    "HOST:PORT: where to serve the extender verbs"),
      HostPortEntry("status_listen", &ExtenderConfig::status_host, &ExtenderConfig::status_port,
                    "HOST:PORT: also serve GET /metrics /healthz /readyz /debug/queue here, plain "
                    "HTTP (for Prometheus and probes when listen is on localhost)"),
      StrEntry("tls_cert_file", &ExtenderConfig::tls_cert_file,
               "FILE: PEM certificate; serve HTTPS (with tls_key_file)"),
      StrEntry("tls_key_file", &ExtenderConfig::tls_key_file, "FILE: PEM key of tls_cert_file"),
      {"max_body_bytes",
       {Int(1024, &ExtenderConfig::max_body_bytes, "max_body_bytes"),
        "N >= 1024: largest request body accepted",
        [](const ExtenderConfig& c) {
          const int64_t mib = int64_t{1} << 20;
          return c.max_body_bytes % mib == 0
                     ? absl::StrCat(c.max_body_bytes, " (", c.max_body_bytes / mib, " MiB)")
                     : absl::StrCat(c.max_body_bytes);
        }}},
      IntEntry("max_inflight_body_bytes", 1024, &ExtenderConfig::max_inflight_body_bytes,
               "N >= 1024: the bodies of all requests in flight together; a request past it is "
               "answered 503 before its body is read"),
      IntEntry("max_connections", 1, &ExtenderConfig::max_connections,
               "N >= 1: open connections in total (each holds a thread); more are closed at once"),
      IntEntry("max_connections_per_peer", 1, &ExtenderConfig::max_connections_per_peer,
               "N >= 1: open connections from one client address; more are closed at once"),
      IntEntry("idle_timeout_seconds", 1, &ExtenderConfig::idle_timeout_seconds,
               "S >= 1: a connection idle this long is closed (keep it above Go's 90 s)"),
      StrEntry("placement_key_file", &ExtenderConfig::placement_key_file,
               "FILE: secret key (>= 32 bytes, e.g. a mounted Secret) that signs placements; "
               "unset: a random key per start, so placements written before a restart are "
               "planned again"),
      StrEntry("kubeconfig", &ExtenderConfig::kubeconfig,
               "FILE: API server access (else $KUBECONFIG, else in-cluster, else ~/.kube/config)"),
      BoolEntry("bind", &ExtenderConfig::bind, "true|false: serve the bind verb"),
      BoolEntry("preemption", &ExtenderConfig::preemption,
                "true|false: preempt lower-priority gangs for the queue head"),
      BoolEntry("backfill", &ExtenderConfig::backfill,
                "true|false: run gangs behind a blocked head on capacity not reserved for it"),
      BoolEntry("provisional_backfill", &ExtenderConfig::provisional_backfill,
                "true|false: work of a blocked head's priority may backfill on the nodes held for "
                "it, as its to take back when it can start"),
      RuleDurationEntry("restart_overhead_ms", 0, &ExtenderConfig::restart_overhead_ms,
                        "MS up to 30 days: work a victim loses to restarting, added to the work "
                        "since its last checkpoint when victims are costed"),
      RuleDurationEntry("min_run_before_preemption_ms", 0,
                        &ExtenderConfig::min_run_before_preemption_ms,
                        "MS up to 30 days: a run younger than this is a victim only when no other "
                        "set frees enough"),
      CountEntry("max_preemptions", &ExtenderConfig::max_preemptions,
                 "N from 0 to 16: a gang preempted N times (within preemption_window_ms) is a "
                 "victim only when no other set frees enough, and keeps off nodes held for "
                 "blocked gangs (0: no such rule)"),
      CountEntry("preemption_limit", &ExtenderConfig::preemption_limit,
                 "N from 0 to 16: a gang preempted N times (within preemption_window_ms) is "
                 "never a victim again (0: no limit)"),
      RuleDurationEntry("preemption_window_ms", 0, &ExtenderConfig::preemption_window_ms,
                        "MS up to 30 days: the window max_preemptions and preemption_limit count "
                        "over (0: the job's whole life)"),
      RuleDurationEntry("preemption_patience_ms", 0, &ExtenderConfig::preemption_patience_ms,
                        "MS up to 30 days: a gang younger than this does not take victims that "
                        "would lose more than preemption_patience_loss_ms of work; it waits for "
                        "capacity or their checkpoints (0: it never waits)"),
      RuleDurationEntry("preemption_patience_loss_ms", 0,
                        &ExtenderConfig::preemption_patience_loss_ms,
                        "MS up to 30 days: work since a run's start or last checkpoint beyond "
                        "which a victim is taken only once its preemptor's patience is over"),
      IntEntry("reservation_ttl_ms", 1, &ExtenderConfig::reservation_ttl_ms,
               "MS >= 1: a filter-time reservation lives this long after its last use"),
      IntEntry("refused_placement_timeout_ms", 0, &ExtenderConfig::refused_placement_timeout_ms,
               "MS: re-plan a gang off a node where kube-scheduler refuses a member this long "
               "although it fits (0: never)"),
      IntEntry("avoid_node_memory_ms", 1, &ExtenderConfig::avoid_node_memory_ms,
               "MS >= 1: work stays off a node that refused it this long after the last refusal"),
      IntEntry("resync_ms", 10, &ExtenderConfig::resync_ms,
               "MS >= 10: admission rounds run at least this often"),
      IntEntry("best_fit_candidates", 0, &ExtenderConfig::best_fit_candidates,
               "N: filter passes at most N best-fitting nodes (0: every fitting node)"),
      {"forecast_interval_ms",
       {ForecastInterval,
        "0, or MS from 1000 to 30 days: estimate every waiting gang's start this often "
        "(phalanx.io/eta, /debug/queue, the forecast gauges; 0: never)",
        ShowInt(&ExtenderConfig::forecast_interval_ms)}},
      {"what_if_gangs",
       {Int(0, &ExtenderConfig::what_if_gangs, "what_if_gangs", 64),
        "N from 0 to 64: each forecast also asks what would start the first N waiting gangs now "
        "(phalanx.io/what-if)",
        ShowInt(&ExtenderConfig::what_if_gangs)}},
      {"follow_lease",
       {SetFollowLease,
        "NAMESPACE/NAME: kube-scheduler's leader-election Lease; with several scheduler replicas, "
        "admission rounds run only in the one whose kube-scheduler holds it (empty: always)",
        ShowStr(&ExtenderConfig::follow_lease)}},
      StrEntry("lease_holder_prefix", &ExtenderConfig::lease_holder_prefix,
               "TEXT: how the Lease names this replica's kube-scheduler, a prefix of its "
               "holderIdentity (empty: this host's name and \"_\", as kube-scheduler names "
               "itself)"),
      {"lease_poll_ms",
       {Int(50, &ExtenderConfig::lease_poll_ms, "lease_poll_ms", 60'000),
        "MS from 50 to 60000: how often follow_lease is read",
        ShowInt(&ExtenderConfig::lease_poll_ms)}},
      {"slot_type",
       {SetSlotType, "gpu|cpu: what one slot is",
        [](const ExtenderConfig& c) {
          return std::string(c.slots.type == gang::SlotPolicy::Type::kCpu ? "cpu" : "gpu");
        }}},
      {"slot_resource",
       {[](absl::string_view v, ExtenderConfig& c) {
          if (v.empty()) return Bad("slot_resource", "must not be empty", v);
          if (v != "cpu") c.slots.gpu_resource = std::string(v);
          return absl::OkStatus();
        },
        "NAME: the resource counted as GPU slots",
        [](const ExtenderConfig& c) { return c.slots.gpu_resource; }}},
      {"cpus_per_slot",
       {SetCpusPerSlot, "CPUS > 0: CPUs of one slot; required when slot_type is cpu",
        [](const ExtenderConfig& c) {
          const int64_t milli = c.slots.milli_cpu_per_slot;
          return milli == 0 ? std::string() : absl::StrCat(static_cast<double>(milli) / 1000);
        }}},
      {"max_slots_per_pod",
       {SetMaxSlots,
        "N >= 0: largest pod in slots; larger gangs must total a multiple of N (0: no limit); "
        "must equal the master's",
        [](const ExtenderConfig& c) { return absl::StrCat(c.slots.max_slots_per_pod); }}},
      {std::string(kPoolMaxSlots),
       {SetPoolMaxSlots,
        "{POOL: N, ...}: max_slots_per_pod for pods labelled phalanx.io/resource-pool=POOL",
        [](const ExtenderConfig& c) {
          std::map<std::string, int32_t> sorted(c.slots.pool_max_slots_per_pod.begin(),
                                                c.slots.pool_max_slots_per_pod.end());
          std::string out;
          for (const auto& [pool, n] : sorted) {
            absl::StrAppend(&out, out.empty() ? "{" : ", ", pool, ": ", n);
          }
          return out.empty() ? out : out + "}";
        }}},
  };
  return *settings;
}

// Checks that need every setting applied.
absl::Status Validate(const ExtenderConfig& config) {
  if (config.tls_cert_file.empty() != config.tls_key_file.empty()) {
    return absl::InvalidArgumentError("tls_cert_file and tls_key_file must be set together");
  }
  for (auto [key, value, most] :
       {std::tuple<const char*, int64_t, int64_t>{"max_connections", config.max_connections,
                                                  1'000'000},
        {"max_connections_per_peer", config.max_connections_per_peer, config.max_connections},
        {"idle_timeout_seconds", config.idle_timeout_seconds, 86'400}}) {
    if (value > most) {
      return absl::InvalidArgumentError(
          absl::StrCat(key, ": must be at most ", most, ", got ", value));
    }
  }
  if (config.slots.type == gang::SlotPolicy::Type::kCpu && config.slots.milli_cpu_per_slot == 0) {
    return absl::InvalidArgumentError("cpus_per_slot: required when slot_type is cpu");
  }
  return absl::OkStatus();
}

absl::Status UnknownSetting(absl::string_view key) {
  return absl::InvalidArgumentError(absl::StrCat("unknown setting \"", key, "\""));
}

}  // namespace

absl::Status ApplySetting(absl::string_view key, absl::string_view value, ExtenderConfig& config) {
  auto it = Settings().find(key);
  if (it == Settings().end()) return UnknownSetting(key);
  return it->second.set(value, config);
}

bool WantsHelp(const std::vector<std::string>& args) {
  return std::any_of(args.begin(), args.end(),
                     [](const std::string& a) { return a == "--help" || a == "-h"; });
}

std::string Usage() {
  std::string out =
      "usage: phalanx-extender [--config FILE] [--KEY=VALUE | --KEY VALUE ...] [--check-config] |\n"
      "       --help\n"
      "--check-config validates the configuration and exits.\n"
      "--config FILE is a YAML mapping of the keys below; each key is also a flag, with dashes\n"
      "for underscores (--max-slots-per-pod=4), and flags override the file. A key without a\n"
      "default is unset.\n\nkeys:\n";
  const ExtenderConfig defaults;
  for (const auto& [key, setting] : Settings()) {
    const std::string shown = setting.show(defaults);
    absl::StrAppend(&out, "  ", absl::StrFormat("%-23s ", key), setting.help,
                    shown.empty() ? "" : absl::StrCat(" (default: ", shown, ")"), "\n");
  }
  return out;
}

absl::Status ApplyYaml(absl::string_view yaml, absl::string_view source, ExtenderConfig& config) {
  try {
    YAML::Node root = YAML::Load(std::string(yaml));
    if (root.IsNull()) return absl::OkStatus();
    if (!root.IsMap()) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": must be a mapping"));
    }
    for (const auto& kv : root) {
      std::string key = kv.first.as<std::string>();
      const bool mapping = key == kPoolMaxSlots;  // Its setter reads the value's YAML text.
      if (!mapping && !kv.second.IsScalar()) {
        return absl::InvalidArgumentError(absl::StrCat(source, ": ", key, ": must be a scalar"));
      }
      absl::Status st =
          ApplySetting(key, mapping ? YAML::Dump(kv.second) : kv.second.Scalar(), config);
      if (!st.ok()) return absl::InvalidArgumentError(absl::StrCat(source, ": ", st.message()));
    }
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": invalid YAML: ", e.what()));
  }
  return absl::OkStatus();
}

absl::StatusOr<ExtenderConfig> LoadConfig(const std::vector<std::string>& args) {
  ExtenderConfig config;
  std::vector<std::pair<std::string, std::string>> flags;
  for (size_t i = 0; i < args.size(); ++i) {
    absl::string_view a = args[i];
    if (a.substr(0, 2) != "--") {
      return absl::InvalidArgumentError(absl::StrCat("unexpected argument \"", a, "\""));
    }
    a.remove_prefix(2);
    size_t eq = a.find('=');
    std::string key = absl::StrReplaceAll(a.substr(0, eq), {{"-", "_"}});
    if (eq != absl::string_view::npos) {
      flags.push_back({key, std::string(a.substr(eq + 1))});
    } else if (i + 1 < args.size()) {
      flags.push_back({key, args[++i]});
    } else if (key != "config" && !Settings().contains(key)) {
      return absl::InvalidArgumentError(
          absl::StrCat("flag --", a, ": ", UnknownSetting(key).message()));
    } else {
      return absl::InvalidArgumentError(absl::StrCat("flag --", a, " needs a value"));
    }
  }
  for (const auto& [key, value] : flags) {
    if (key != "config") continue;
    std::ifstream in(value);
    if (!in) return absl::NotFoundError(absl::StrCat("config file ", value, " cannot be read"));
    std::stringstream text;
    text << in.rdbuf();
    if (absl::Status st = ApplyYaml(text.str(), value, config); !st.ok()) return st;
  }
  for (const auto& [key, value] : flags) {
    if (key == "config") continue;
    if (absl::Status st = ApplySetting(key, value, config); !st.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("flag --", key, ": ", st.message()));
    }
  }
  if (absl::Status st = Validate(config); !st.ok()) return st;
  return config;
}

}  // namespace phalanx::extender
