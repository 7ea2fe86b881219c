// CLI argument parsing (see args.h).
#include "cli/args.h"

namespace phalanx::cli {

std::string Args::Parse(const std::vector<std::string>& argv,
                        const std::set<std::string>& switch_names, Args& out) {
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "--") {
      out.rest.assign(argv.begin() + static_cast<long>(i) + 1, argv.end());
      break;
    }
    if (a.rfind("--", 0) != 0 || a.size() == 2) {
      out.positional.push_back(a);
      continue;
    }
    std::string name = a.substr(2);
    if (size_t eq = name.find('='); eq != std::string::npos) {
      out.options[name.substr(0, eq)] = name.substr(eq + 1);
    } else if (switch_names.count(name)) {
      out.switches.insert(name);
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

}  // namespace phalanx::cli
