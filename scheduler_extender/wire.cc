// Extender v1 JSON parsing (simdjson, case-insensitive keys) and encoding.
#include "scheduler_extender/wire.h"

#include <algorithm>
#include <charconv>
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

absl::StatusOr<core::PodInfo> PodOf(simdjson::dom::object root) {
  std::optional<simdjson::dom::element> pod = Member(root, "Pod");
  if (!pod) return Invalid("missing Pod");
  absl::StatusOr<core::PodInfo> info = kube::DecodePod(*pod);
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

// Appends `s` as a JSON string; names that need no escaping (every valid node name) skip the
// general encoder.
void AppendString(std::string& out, absl::string_view s) {
  bool plain = std::all_of(s.begin(), s.end(), [](char c) {
    return c != '"' && c != '\\' && static_cast<unsigned char>(c) >= 0x20;
  });
  if (!plain) {
    out += EncodeJsonString(s);
    return;
  }
  out += '"';
  out.append(s.data(), s.size());
  out += '"';
}

// Appends `v` in decimal.
void AppendInt(std::string& out, int64_t v) {
  char buf[24];
  out.append(buf, std::to_chars(buf, buf + sizeof(buf), v).ptr);
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

absl::StatusOr<ExtenderArgs> ParseExtenderArgs(absl::string_view body) {
  absl::StatusOr<simdjson::dom::object> root = Root(body);
  if (!root.ok()) return root.status();
  ExtenderArgs args;
  absl::StatusOr<core::PodInfo> pod = PodOf(*root);
  if (!pod.ok()) return pod.status();
  args.pod = *std::move(pod);
  if (absl::Status st = ParseNodes(*root, args); !st.ok()) return st;
  return args;
}

absl::StatusOr<PreemptArgs> ParsePreemptArgs(absl::string_view body) {
  absl::StatusOr<simdjson::dom::object> root = Root(body);
  if (!root.ok()) return root.status();
  PreemptArgs args;
  absl::StatusOr<core::PodInfo> pod = PodOf(*root);
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
  // The brackets, then per host its name and the 22-23 bytes around it.
  size_t size = 2;
  for (const std::string& h : hosts) size += h.size() + 24;
  std::string out;
  out.reserve(size);
  out += '[';
  for (size_t i = 0; i < hosts.size(); ++i) {
    out += i > 0 ? ",{\"Host\":" : "{\"Host\":";
    AppendString(out, hosts[i]);
    out += ",\"Score\":";
    AppendInt(out, scores[i]);
    out += '}';
  }
  out += ']';
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
