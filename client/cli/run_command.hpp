// run_command.hpp: run a shell command for one job.
#pragma once

#include <string>
#include <vector>

namespace jobqueue::cli {

struct CommandResult {
    bool exited = false;   // false: killed by a signal
    int exit_status = 0;   // when exited
    int signal = 0;        // when killed
    std::string error_output;  // the command's stderr, at most stderr_limit bytes
};

// Runs `/bin/sh -c command` with input on its stdin, extra_env ("NAME=value")
// added to the environment, stdout shared with ours and stderr captured.
// The command gets its own process group, so a Ctrl-C meant for the worker
// does not kill the jobs it lets finish.
CommandResult run_command(const std::string& command, const std::string& input,
                          const std::vector<std::string>& extra_env, size_t stderr_limit);

}  // namespace jobqueue::cli
