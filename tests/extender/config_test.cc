// Extender configuration: YAML plus flags, and errors that name the field.
#include "scheduler_extender/config.h"

#include <gtest/gtest.h>

namespace phalanx::extender {
namespace {

TEST(ConfigTest, YamlAsTheChartRendersIt) {
  ExtenderConfig c;
  ASSERT_TRUE(ApplyYaml("listen: 127.0.0.1:8888\nmax_slots_per_pod: 4\nslot_resource: "
                        "nvidia.com/gpu\nslot_type: gpu\n",
                        "extender.yaml", c)
                  .ok());
  EXPECT_EQ(c.listen_port, 8888);
  EXPECT_EQ(c.slots.max_slots_per_pod, 4);
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
           Case{"listen: 8888\n", "extender.yaml: listen: must be host:port, got \"8888\""},
           Case{"slot_type: tpu\n", "extender.yaml: slot_type: must be gpu or cpu, got \"tpu\""},
           Case{"cpus_per_slot: -2\n",
                "extender.yaml: cpus_per_slot: must be a positive number, got \"-2\""},
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
}

}  // namespace
}  // namespace phalanx::extender
