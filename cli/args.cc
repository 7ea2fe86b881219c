// CLI argument parsing (see args.h).
#include "cli/args.h"

namespace phalanx::cli {

std::string Args::Parse(const std::vector<std::string>& argv,
                        const std::set<std::string>& option_names,
                        const std::set<std::string>& switch_names, Args& out) {
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "--") {
      out.rest.assign(argv.begin() + static_cast<long>(i) + 1, argv.end());
      break;
    }
    if (a == "-h" || (a == "-f" && switch_names.count("follow"))) {
      out.switches.insert(a == "-h" ? "help" : "follow");
      continue;
    }
    if (a.rfind("--", 0) != 0) {
      out.positional.push_back(a);
      continue;
    }
    const size_t eq = a.find('=');
    const std::string name = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    if (name == "help" || switch_names.count(name)) {
      if (eq != std::string::npos) return "--" + name + " takes no value";
      out.switches.insert(name);
    } else if (!option_names.count(name)) {
      return "unknown option --" + name;
    } else if (eq != std::string::npos) {
      out.options[name] = a.substr(eq + 1);
    } else if (i + 1 < argv.size()) {
      out.options[name] = argv[++i];
    } else {
      return "--" + name + " needs a value";
    }
  }
  return "";
}

std::optional<std::string> Args::Option(const std::string& name) const {
  auto it = options.find(name);
  if (it == options.end()) return std::nullopt;
  return it->second;
}

std::string Args::FirstNotIn(const std::set<std::string>& allowed) const {
  for (const auto& [name, value] : options) {
    if (!allowed.count(name)) return "--" + name;
  }
  for (const std::string& name : switches) {
    if (!allowed.count(name)) return "--" + name;
  }
  return rest.empty() || allowed.count("--") ? "" : "--";
}

}  // namespace phalanx::cli
