// Argument parsing for the phalanx CLI: positionals, --flag VALUE / --flag=VALUE options, boolean
// switches, -h as --help, -f as --follow (where that is a switch), and everything after "--" kept
// verbatim. Only known option names parse.
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

  // `option_names` take a value, `switch_names` none ("help" is always a switch). Returns an error
  // message naming the option ("unknown option --stat"), or "" on success.
  static std::string Parse(const std::vector<std::string>& argv,
                           const std::set<std::string>& option_names,
                           const std::set<std::string>& switch_names, Args& out);
  std::optional<std::string> Option(const std::string& name) const;
  bool Has(const std::string& name) const { return switches.count(name) > 0; }
  // The first option or switch given that is not in `allowed`, as "--name"; "--" when words follow
  // "--" and "--" is not in `allowed`; "" when there is none.
  std::string FirstNotIn(const std::set<std::string>& allowed) const;
};

}  // namespace phalanx::cli

#endif  // PHALANX_CLI_ARGS_H_
