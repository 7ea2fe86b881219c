// Argument parsing for the phalanx CLI: positionals, --flag VALUE / --flag=VALUE options, boolean
// switches, and everything after "--" kept verbatim.
#ifndef PHALANX_CLI_ARGS_H_
#define PHALANX_CLI_ARGS_H_

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace phalanx::cli {

struct Args {
  std::vector<std::string> positional;
  std::map<std::string, std::string> options;
  std::set<std::string> switches;
  std::vector<std::string> rest;  // After "--".

  // `switch_names` take no value. Returns an error message, or "" on success.
  static std::string Parse(const std::vector<std::string>& argv,
                           const std::set<std::string>& switch_names, Args& out);
  std::optional<std::string> Option(const std::string& name) const;
  bool Has(const std::string& name) const { return switches.count(name) > 0; }
};

}  // namespace phalanx::cli

#endif  // PHALANX_CLI_ARGS_H_
