// Extender configuration: YAML plus flags, and errors that name the field.
#include "scheduler_extender/config.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace phalanx::extender {
namespace {

TEST(ConfigTest, YamlAsTheChartRendersIt) {
  ExtenderConfig c;
  ASSERT_TRUE(ApplyYaml("listen: 127.0.0.1:8888\nstatus_listen: 0.0.0.0:9091\n"
                        "max_slots_per_pod: 4\npool_max_slots_per_pod:\n"
                        "  a100: 8\nslot_resource: nvidia.com/gpu\nslot_type: gpu\n",
                        "extender.yaml", c)
                  .ok());
  EXPECT_EQ(c.listen_port, 8888);
  EXPECT_EQ(c.status_host, "0.0.0.0");
  EXPECT_EQ(c.status_port, 9091);
  EXPECT_EQ(c.slots.max_slots_per_pod, 4);
  EXPECT_EQ(c.slots.MaxSlotsPerPod("a100"), 8);
  EXPECT_EQ(c.slots.MaxSlotsPerPod("t4"), 4);
  EXPECT_EQ(c.slots.MaxSlotsPerPod(""), 4);
  ASSERT_TRUE(ApplyYaml("slot_type: cpu\nslot_resource: cpu\ncpus_per_slot: 7.5\n", "x", c).ok());
  EXPECT_EQ(c.slots.type, gang::SlotPolicy::Type::kCpu);
  EXPECT_EQ(c.slots.milli_cpu_per_slot, 7500);
}

TEST(ConfigTest, ErrorsNameTheField) {
  struct Case {
    const char* yaml;
    const char* message;
  };
  for (const Case& k : {
           Case{"max_slots_per_pod: four\n",
                "extender.yaml: max_slots_per_pod: must be an integer >= 0, got \"four\""},
           Case{"colour: blue\n", "extender.yaml: unknown setting \"colour\""},
           // Past 30 days, victim costs in slot-seconds could overflow.
           Case{"restart_overhead_ms: 9223372036854775807\n",
                "extender.yaml: restart_overhead_ms: must be an integer from 0 to 2592000000, "
                "got \"9223372036854775807\""},
           Case{"preemption_window_ms: -1\n",
                "extender.yaml: preemption_window_ms: must be an integer from 0 to 2592000000, "
                "got \"-1\""},
           // Pods carry the newest 16 preemption times: a larger count could never be reached.
           Case{"preemption_limit: 17\n",
                "extender.yaml: preemption_limit: must be an integer from 0 to 16, got \"17\""},
           Case{"max_preemptions: 100\n",
                "extender.yaml: max_preemptions: must be an integer from 0 to 16, got \"100\""},
           // Each forecast runs many admission rounds: not more often than once a second.
           Case{"forecast_interval_ms: 1\n",
                "extender.yaml: forecast_interval_ms: must be 0 or an integer from 1000 to "
                "2592000000, got \"1\""},
           Case{"what_if_gangs: 65\n",
                "extender.yaml: what_if_gangs: must be an integer from 0 to 64, got \"65\""},
           Case{"listen: 8888\n", "extender.yaml: listen: must be host:port, got \"8888\""},
           Case{"status_listen: :99999\n",
                "extender.yaml: status_listen: must be host:port, got \":99999\""},
           Case{"slot_type: tpu\n", "extender.yaml: slot_type: must be gpu or cpu, got \"tpu\""},
           Case{"cpus_per_slot: -2\n",
                "extender.yaml: cpus_per_slot: must be a positive number, got \"-2\""},
           Case{"cpus_per_slot: 0.0001\n",
                "extender.yaml: cpus_per_slot: must be at least 0.001, got \"0.0001\""},
           Case{"pool_max_slots_per_pod: {a100: eight}\n",
                "extender.yaml: pool_max_slots_per_pod.a100: must be an integer >= 0, got "
                "\"eight\""},
           Case{"pool_max_slots_per_pod: {a100: -1}\n",
                "extender.yaml: pool_max_slots_per_pod.a100: must be an integer >= 0, got \"-1\""},
           Case{"pool_max_slots_per_pod: {a100: [8]}\n",
                "extender.yaml: pool_max_slots_per_pod.a100: must be an integer >= 0, got \"[8]\""},
           Case{"pool_max_slots_per_pod: {\"\": 8}\n",
                "extender.yaml: pool_max_slots_per_pod: resource pool names must be non-empty "
                "strings"},
           Case{"pool_max_slots_per_pod: 8\n",
                "extender.yaml: pool_max_slots_per_pod: must be a mapping of resource pool to "
                "integer, got \"8\""},
           Case{"bind: maybe\n", "extender.yaml: bind: must be true or false, got \"maybe\""},
           Case{"listen: [a, b]\n", "extender.yaml: listen: must be a scalar"},
           Case{"- just\n- a list\n", "extender.yaml: must be a mapping"},
       }) {
    ExtenderConfig c;
    absl::Status st = ApplyYaml(k.yaml, "extender.yaml", c);
    EXPECT_EQ(st.message(), k.message) << k.yaml;
  }
  ExtenderConfig c;
  EXPECT_NE(ApplyYaml("a: [", "extender.yaml", c).message().find("invalid YAML"),
            std::string::npos);
}

// follow_lease names a Lease as NAMESPACE/NAME of DNS names; a hostile or mistyped one is refused
// naming the key, and the poll stays within 50 ms to a minute.
TEST(ConfigTest, TheFollowedLeaseIsNamespaceSlashName) {
  ExtenderConfig c;
  EXPECT_TRUE(ApplySetting("follow_lease", "kube-system/phalanx-scheduler", c).ok());
  EXPECT_EQ(c.follow_lease, "kube-system/phalanx-scheduler");
  for (const char* bad : {"kube-system", "/x", "x/", "a/b/c", "Kube/x", "a/b?watch=1", "../x",
                          "x/..", "a.b/x", "-a/x"}) {
    absl::Status st = ApplySetting("follow_lease", bad, c);
    EXPECT_FALSE(st.ok()) << bad;
    EXPECT_NE(st.message().find("follow_lease"), absl::string_view::npos) << st;
  }
  EXPECT_TRUE(ApplySetting("follow_lease", "", c).ok()) << "empty: always lead";
  EXPECT_FALSE(ApplySetting("lease_poll_ms", "10", c).ok());
  EXPECT_FALSE(ApplySetting("lease_poll_ms", "60001", c).ok());
  EXPECT_TRUE(ApplySetting("lease_poll_ms", "100", c).ok());
}

TEST(ConfigTest, FlagsOverrideTheFile) {
  absl::StatusOr<ExtenderConfig> c =
      LoadConfig({"--max-slots-per-pod=8", "--listen", "0.0.0.0:9999", "--preemption=false"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->slots.max_slots_per_pod, 8);
  EXPECT_EQ(c->listen_host, "0.0.0.0");
  EXPECT_FALSE(c->preemption);
  EXPECT_EQ(LoadConfig({"--max-slots-per-pod=-1"}).status().message(),
            "flag --max_slots_per_pod: max_slots_per_pod: must be an integer >= 0, got \"-1\"");
  EXPECT_EQ(LoadConfig({"--config", "/nonexistent.yaml"}).status().message(),
            "config file /nonexistent.yaml cannot be read");
  EXPECT_EQ(LoadConfig({"--tls-cert-file=a.pem"}).status().message(),
            "tls_cert_file and tls_key_file must be set together");
  EXPECT_EQ(LoadConfig({"--bogus", "x"}).status().message(),
            "flag --bogus: unknown setting \"bogus\"");
  // Last, without a value: unknown, or known and missing its value.
  EXPECT_EQ(LoadConfig({"--max-slots-per-pod=4", "--no-such-flag"}).status().message(),
            "flag --no-such-flag: unknown setting \"no_such_flag\"");
  EXPECT_EQ(LoadConfig({"--max-slots-per-pod"}).status().message(),
            "flag --max-slots-per-pod needs a value");
}

TEST(ConfigTest, PoolMaxSlotsPerPodFlagTakesAYamlMapping) {
  absl::StatusOr<ExtenderConfig> c =
      LoadConfig({"--max-slots-per-pod=4", "--pool-max-slots-per-pod={a100: 8, t4: 2}"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->slots.MaxSlotsPerPod("a100"), 8);
  EXPECT_EQ(c->slots.MaxSlotsPerPod("t4"), 2);
  EXPECT_EQ(c->slots.MaxSlotsPerPod("v100"), 4);
  EXPECT_EQ(LoadConfig({"--pool-max-slots-per-pod", "{a100: x}"}).status().message(),
            "flag --pool_max_slots_per_pod: pool_max_slots_per_pod.a100: must be an integer >= 0, "
            "got \"x\"");
}

TEST(ConfigTest, CpuSlotsNeedCpusPerSlot) {
  EXPECT_EQ(LoadConfig({"--slot-type=cpu"}).status().message(),
            "cpus_per_slot: required when slot_type is cpu");
  absl::StatusOr<ExtenderConfig> c = LoadConfig({"--slot-type=cpu", "--cpus-per-slot=2"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->slots.milli_cpu_per_slot, 2000);
  EXPECT_TRUE(LoadConfig({"--slot-type=gpu"}).ok());
}

// --help lists the keys from the settings table; docs/operators.md documents each of them.
TEST(ConfigTest, HelpListsEveryKeyAndTheOperatorsDocDocumentsThem) {
  EXPECT_TRUE(WantsHelp({"--help"}));
  EXPECT_TRUE(WantsHelp({"--config", "extender.yaml", "-h"}));
  EXPECT_FALSE(WantsHelp({"--config", "extender.yaml"}));
  const std::string usage = Usage();
  EXPECT_EQ(usage.rfind("usage: phalanx-extender", 0), 0u) << usage;
  std::ifstream in(PHALANX_OPERATORS_DOC);
  std::stringstream doc;
  doc << in.rdbuf();
  std::vector<std::string> keys;
  std::istringstream lines(usage.substr(usage.find("\nkeys:\n") + 7));
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("  ", 0) != 0) continue;
    const std::string key = line.substr(2, line.find(' ', 2) - 2);
    keys.push_back(key);
    EXPECT_NE(doc.str().find(absl::StrCat("`", key, "`")), std::string::npos)
        << key << " is not in docs/operators.md";
    ExtenderConfig c;
    EXPECT_FALSE(absl::StrContains(ApplySetting(key, "", c).message(), "unknown setting")) << key;
  }
  EXPECT_GE(keys.size(), 17u) << usage;
}

// --help shows the defaults of a default ExtenderConfig, and none for keys that are unset.
TEST(ConfigTest, HelpShowsTheDefaults) {
  const std::string usage = Usage();
  for (const char* shown :
       {"where to serve the extender verbs (default: 127.0.0.1:8888)\n",
        "serve the bind verb (default: false)\n", "for the queue head (default: true)\n",
        "not reserved for it (default: true)\n", "after its last use (default: 30000)\n",
        "at least this often (default: 1000)\n", "every fitting node) (default: 8)\n",
        "request body accepted (default: 67108864 (64 MiB))\n", "what one slot is (default: gpu)\n",
        "as GPU slots (default: nvidia.com/gpu)\n", "must equal the master's (default: 0)\n"}) {
    EXPECT_TRUE(absl::StrContains(usage, shown)) << shown << " not in\n" << usage;
  }
  for (const char* unset : {"  status_listen ", "  kubeconfig ", "  tls_cert_file ",
                            "  cpus_per_slot ", "  pool_max_slots_per_pod "}) {
    const size_t at = usage.find(unset);
    ASSERT_NE(at, std::string::npos) << unset;
    EXPECT_FALSE(absl::StrContains(usage.substr(at, usage.find('\n', at) - at), "(default:"))
        << unset;
  }
}

}  // namespace
}  // namespace phalanx::extender
