// phalanx: the command line client of phalanx-master (see cli.h).
#include <unistd.h>

#include <iostream>
#include <string>
#include <vector>

#include "cli/cli.h"

int main(int argc, char** argv) {
  return phalanx::cli::RunCli(std::vector<std::string>(argv + 1, argv + argc), STDIN_FILENO,
                              std::cout, std::cerr);
}
