// Extender v1 JSON parsing (simdjson, case-insensitive keys) and encoding.
#include "scheduler_extender/wire.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kube/decode.h"
#include "kube/json.h"
#include "simdjson.h"

namespace phalanx::extender {
namespace {

using kube::EncodeJsonString;
using kube::Sv;

simdjson::dom::parser& Parser() {
  thread_local simdjson::dom::parser parser;
  return parser;
}

absl::Status Invalid(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("malformed extender request: ", what));
}

// The member of `obj` whose key equals `name` ignoring case, or nullopt when absent or null.
std::optional<simdjson::dom::element> Member(simdjson::dom::object obj, absl::string_view name) {
  for (auto field : obj) {
    if (absl::EqualsIgnoreCase(Sv(field.key), name)) {
      if (field.value.is_null()) return std::nullopt;
      return field.value;
    }
  }
  return std::nullopt;
}

absl::StatusOr<simdjson::dom::object> Root(absl::string_view body) {
  simdjson::dom::element root;
  if (auto err = Parser().parse(body.data(), body.size()).get(root)) {
    return Invalid(absl::StrCat("invalid JSON: ", simdjson::error_message(err)));
  }
  simdjson::dom::object obj;
  if (root.get(obj)) return Invalid("the body is not a JSON object");
  return obj;
}

absl::StatusOr<core::PodInfo> PodOf(simdjson::dom::object root, const kube::PlacementKey* key) {
  std::optional<simdjson::dom::element> pod = Member(root, "Pod");
  if (!pod) return Invalid("missing Pod");
  absl::StatusOr<core::PodInfo> info = kube::DecodePod(*pod, key);
  if (!info.ok()) return Invalid(absl::StrCat("Pod: ", info.status().message()));
  return info;
}

absl::StatusOr<std::string> StringMember(simdjson::dom::object obj, absl::string_view name) {
  std::optional<simdjson::dom::element> v = Member(obj, name);
  if (!v) return std::string();
  std::string_view s;
  if (v->get(s)) return Invalid(absl::StrCat(name, " must be a string"));
  return std::string(s);
}

absl::Status ParseNodes(simdjson::dom::object root, ExtenderArgs& args) {
  if (std::optional<simdjson::dom::element> names = Member(root, "NodeNames")) {
    simdjson::dom::array arr;
    if (names->get(arr)) return Invalid("NodeNames must be an array of strings");
    args.nodes.reserve(arr.size());
    for (auto n : arr) {
      std::string_view s;
      if (n.get(s)) return Invalid("NodeNames must be an array of strings");
      args.nodes.emplace_back(s);
    }
    return absl::OkStatus();
  }
  std::optional<simdjson::dom::element> list = Member(root, "Nodes");
  if (!list) return Invalid("neither NodeNames nor Nodes is set");
  args.node_names_mode = false;
  simdjson::dom::array items;
  if (list->at_key("items").get(items)) return Invalid("Nodes.items must be an array");
  args.nodes.reserve(items.size());
  args.node_json.reserve(items.size());
  for (auto item : items) {
    std::string_view name;
    if (item.at_pointer("/metadata/name").get(name)) {
      return Invalid("Nodes.items[].metadata.name must be a string");
    }
    args.nodes.emplace_back(name);
    args.node_json.push_back(simdjson::minify(item));
  }
  return absl::OkStatus();
}

// Victim UIDs of one node: {"Pods":[{"UID":...}]} or {"Pods":[<v1.Pod>]}.
absl::StatusOr<NodeVictims> ParseVictims(simdjson::dom::element e, bool meta) {
  NodeVictims v;
  simdjson::dom::object obj;
  if (e.get(obj)) return Invalid("victims must be objects");
  if (std::optional<simdjson::dom::element> pods = Member(obj, "Pods")) {
    simdjson::dom::array arr;
    if (pods->get(arr)) return Invalid("victims' Pods must be an array");
    for (auto p : arr) {
      std::string_view uid;
      simdjson::dom::object po;
      if (p.get(po)) return Invalid("victim pods must be objects");
      std::optional<simdjson::dom::element> u;
      if (meta) {
        u = Member(po, "UID");
      } else if (simdjson::dom::element e; !p.at_pointer("/metadata/uid").get(e)) {
        u = e;
      }
      if (!u || u->get(uid)) return Invalid("a victim pod has no UID");
      v.uids.emplace_back(uid);
    }
  }
  if (std::optional<simdjson::dom::element> n = Member(obj, "NumPDBViolations")) {
    if (n->get(v.pdb_violations)) return Invalid("NumPDBViolations must be an integer");
  }
  return v;
}

// True when `s` can be written between quotes as it is: no '"', '\\' or control character. Eight
// bytes at a time (a 5000-host reply checks 50 KB of names): a byte is found by the classic
// "has a zero byte" bit trick on the word xor-ed with it, a control character by "has a byte
// below 0x20". Both tests are exact for the word as a whole. The last few bytes one by one.
bool IsPlainJsonString(absl::string_view s) {
  constexpr uint64_t kOnes = 0x0101010101010101ULL, kHigh = 0x8080808080808080ULL;
  auto below = [](uint64_t x, uint64_t n) { return (x - kOnes * n) & ~x & kHigh; };
  auto special = [&below](uint64_t x) {
    return below(x ^ (kOnes * '"'), 1) | below(x ^ (kOnes * '\\'), 1) | below(x, 0x20);
  };
  uint64_t found = 0;
  size_t i = 0;
  for (uint64_t x; i + 8 <= s.size(); i += 8) {
    std::memcpy(&x, s.data() + i, 8);
    found |= special(x);
  }
  for (; i < s.size(); ++i) {
    found |= s[i] == '"' || s[i] == '\\' || static_cast<unsigned char>(s[i]) < 0x20;
  }
  return found == 0;
}

// Copies `s` to `p` and returns the end. Node names of 8-16 bytes take two overlapping 8-byte
// moves instead of a call.
char* PutName(char* p, absl::string_view s) {
  const size_t n = s.size();
  if (n < 8 || n > 16) {
    std::memcpy(p, s.data(), n);
    return p + n;
  }
  uint64_t head, tail;
  std::memcpy(&head, s.data(), 8);
  std::memcpy(&tail, s.data() + n - 8, 8);
  std::memcpy(p, &head, 8);
  std::memcpy(p + n - 8, &tail, 8);
  return p + n;
}

// Appends `s` as a JSON string; names that need no escaping (every valid node name) skip the
// general encoder.
void AppendString(std::string& out, absl::string_view s) {
  if (!IsPlainJsonString(s)) {
    out += EncodeJsonString(s);
    return;
  }
  out += '"';
  out.append(s.data(), s.size());
  out += '"';
}

void AppendFailed(std::string& out, absl::string_view key, const NodeReasons& failed) {
  absl::StrAppend(&out, "\"", key, "\":{");
  bool first = true;
  failed.ForEach([&](const std::string& node, const std::string& why) {
    if (!first) out += ',';
    first = false;
    AppendString(out, node);
    out += ':';
    AppendString(out, why);
  });
  out += "}";
}

}  // namespace

absl::StatusOr<ExtenderArgs> ParseExtenderArgs(absl::string_view body,
                                               const kube::PlacementKey* key) {
  absl::StatusOr<simdjson::dom::object> root = Root(body);
  if (!root.ok()) return root.status();
  ExtenderArgs args;
  absl::StatusOr<core::PodInfo> pod = PodOf(*root, key);
  if (!pod.ok()) return pod.status();
  args.pod = *std::move(pod);
  if (absl::Status st = ParseNodes(*root, args); !st.ok()) return st;
  return args;
}

absl::StatusOr<PreemptArgs> ParsePreemptArgs(absl::string_view body,
                                             const kube::PlacementKey* key) {
  absl::StatusOr<simdjson::dom::object> root = Root(body);
  if (!root.ok()) return root.status();
  PreemptArgs args;
  absl::StatusOr<core::PodInfo> pod = PodOf(*root, key);
  if (!pod.ok()) return pod.status();
  args.pod = *std::move(pod);
  bool meta = true;
  std::optional<simdjson::dom::element> map = Member(*root, "NodeNameToMetaVictims");
  if (!map) {
    map = Member(*root, "NodeNameToVictims");
    meta = false;
  }
  if (!map) return args;
  simdjson::dom::object nodes;
  if (map->get(nodes)) return Invalid("the victims map must be an object");
  for (auto field : nodes) {
    absl::StatusOr<NodeVictims> v = ParseVictims(field.value, meta);
    if (!v.ok()) return v.status();
    args.victims[std::string(field.key)] = *std::move(v);
  }
  return args;
}

absl::StatusOr<BindArgs> ParseBindArgs(absl::string_view body) {
  absl::StatusOr<simdjson::dom::object> root = Root(body);
  if (!root.ok()) return root.status();
  BindArgs args;
  std::pair<std::string*, absl::string_view> fields[] = {{&args.pod_name, "PodName"},
                                                         {&args.pod_namespace, "PodNamespace"},
                                                         {&args.pod_uid, "PodUID"},
                                                         {&args.node, "Node"}};
  for (auto& [dst, name] : fields) {
    absl::StatusOr<std::string> s = StringMember(*root, name);
    if (!s.ok()) return s.status();
    *dst = *std::move(s);
  }
  if (args.pod_name.empty() || args.pod_namespace.empty() || args.node.empty()) {
    return Invalid("PodName, PodNamespace and Node are required");
  }
  return args;
}

std::string EncodeFilterResult(const ExtenderArgs& args, const FilterOutcome& outcome) {
  std::string out = "{";
  if (args.node_names_mode) {
    out.reserve(64 + 24 * outcome.passed.size());
    out += "\"Nodes\":null,\"NodeNames\":[";
    for (size_t i = 0; i < outcome.passed.size(); ++i) {
      if (i > 0) out += ',';
      AppendString(out, outcome.passed[i]);
    }
    out += "],";
  } else {
    std::vector<absl::string_view> items;
    size_t next = 0;
    for (const std::string& n : outcome.passed) {
      while (next < args.nodes.size() && args.nodes[next] != n) ++next;
      if (next < args.nodes.size()) items.push_back(args.node_json[next++]);
    }
    absl::StrAppend(&out, "\"Nodes\":{\"metadata\":{},\"items\":[", absl::StrJoin(items, ","),
                    "]},\"NodeNames\":null,");
  }
  AppendFailed(out, "FailedNodes", outcome.failed);
  out += ",";
  AppendFailed(out, "FailedAndUnresolvableNodes", outcome.unresolvable);
  out += ",\"Error\":\"\"}";
  return out;
}

std::string EncodeFilterError(absl::string_view error) {
  return absl::StrCat("{\"Nodes\":null,\"NodeNames\":null,\"FailedNodes\":{},",
                      "\"FailedAndUnresolvableNodes\":{},\"Error\":", EncodeJsonString(error), "}");
}

std::string EncodeHostPriorities(const std::vector<std::string>& hosts,
                                 const std::vector<int64_t>& scores) {
  // Written straight into a buffer sized for the longest reply (a 5000-host reply is 150 KB, and
  // appending piece by piece cost several times the writing): per host its name, quoted and
  // escaped when it needs to be, and at most 10 + 20 bytes around it.
  constexpr absl::string_view kHost = "{\"Host\":", kScore = ",\"Score\":";
  std::vector<char> plain(hosts.size());
  std::vector<std::string> escaped;  // Of the hosts that are not plain, in order.
  size_t size = 2;
  for (size_t i = 0; i < hosts.size(); ++i) {
    plain[i] = IsPlainJsonString(hosts[i]);
    if (!plain[i]) escaped.push_back(EncodeJsonString(hosts[i]));
    size += (plain[i] ? hosts[i].size() + 2 : escaped.back().size()) + 40;
  }
  std::string out(size, '\0');
  char* p = out.data();
  auto put = [&p](absl::string_view piece) {
    std::memcpy(p, piece.data(), piece.size());
    p += piece.size();
  };
  size_t next_escaped = 0;
  *p++ = '[';
  for (size_t i = 0; i < hosts.size(); ++i) {
    if (i > 0) *p++ = ',';
    put(kHost);
    if (plain[i]) {
      *p++ = '"';
      p = PutName(p, hosts[i]);
      *p++ = '"';
    } else {
      put(escaped[next_escaped++]);
    }
    put(kScore);
    if (scores[i] >= 0 && scores[i] <= 9) {
      *p++ = static_cast<char>('0' + scores[i]);
    } else {
      p = std::to_chars(p, p + 20, scores[i]).ptr;
    }
    *p++ = '}';
  }
  *p++ = ']';
  out.resize(p - out.data());
  return out;
}

std::string EncodePreemptResult(const VictimMap& victims) {
  std::vector<std::string> nodes;
  for (const auto& [node, v] : victims) {
    std::vector<std::string> pods;
    for (const std::string& uid : v.uids) {
      pods.push_back(absl::StrCat("{\"UID\":", EncodeJsonString(uid), "}"));
    }
    nodes.push_back(absl::StrCat(EncodeJsonString(node), ":{\"Pods\":[", absl::StrJoin(pods, ","),
                                 "],\"NumPDBViolations\":", v.pdb_violations, "}"));
  }
  return absl::StrCat("{\"NodeNameToMetaVictims\":{", absl::StrJoin(nodes, ","), "}}");
}

std::string EncodeBindResult(absl::string_view error) {
  return absl::StrCat("{\"Error\":", EncodeJsonString(error), "}");
}

}  // namespace phalanx::extender
