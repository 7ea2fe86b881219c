// The `phalanx` command line: a gRPC client of phalanx-master.
//
//   phalanx [--master [http[s]://]HOST:PORT] [--tls] [--ca FILE] COMMAND ...
//     login USER [--password P]     (token kept in $PHALANX_TOKEN_FILE, else ~/.phalanx-token)
//     logout | whoami
//     user create NAME [--password P] [--admin] | set-password [NAME] [--password P]
//     experiment create FILE [--paused] | list [--state S] [--limit N] [--offset N] | describe ID
//         | pause ID | activate ID | kill ID | set-priority ID P
//     job list [--pool P] [--limit N] [--offset N] | move JOB (--ahead-of J | --behind-of J)
//         | set-priority JOB P | set-pool JOB POOL | stats
//     cmd|notebook|shell|tensorboard start [--config FILE] [-- ENTRYPOINT...]
//         | list [--limit N] [--offset N] | kill ID | set-priority ID P
//     trial preemption|checkpoint|ack|complete ALLOCATION ...
// --help or -h prints the usage (of the command, when one is given). An option or argument the
// command does not take is an error. The master defaults to $PHALANX_MASTER, else localhost:8080;
// https://, --tls or --ca connect with TLS; --help and usage errors connect to nothing. Without
// --password or $PHALANX_PASSWORD the password is read from `in`: typed at the prompt when it is a
// terminal (twice for user create and set-password), else its first line; login takes an empty
// one, user create and set-password do not. set-password's NAME defaults to the logged-in user.
// Exit codes: 0 ok, 1 the master refused (or login could not save the token, or logout remove
// it), 2 bad usage, 3 trial preemption: continue (it exits 0 on preempt).
#ifndef PHALANX_CLI_CLI_H_
#define PHALANX_CLI_CLI_H_

#include <ostream>
#include <string>
#include <vector>

namespace phalanx::cli {

// `in` is stdin's descriptor.
int RunCli(const std::vector<std::string>& args, int in, std::ostream& out, std::ostream& err);

}  // namespace phalanx::cli

#endif  // PHALANX_CLI_CLI_H_
