// commands.hpp: the subcommands of the jobqueue tool.
#pragma once

#include <CLI/CLI.hpp>

#include <iostream>
#include <string>

#include "jobqueue/jobqueue.hpp"
#include "parse.hpp"

namespace jobqueue::cli {

// What every subcommand shares: the connection and the output form.
struct Context {
    std::string dsn;     // "" = the PG* environment
    std::string schema;  // "" = the search_path
    std::string pooler = "detect";  // checked by --pooler's validator
    bool json = false;

    [[nodiscard]] ClientOptions client_options() const {
        return ClientOptions{dsn, schema, parse_pooler_mode(pooler).value_or(PoolerMode::detect)};
    }
    [[nodiscard]] Client connect() const { return Client(client_options()); }
};

// A failure the database reported that is not an exception of its own
// (e.g. "no such failed job"): exit status 2.
struct NotDone : std::runtime_error {
    using std::runtime_error::runtime_error;
};

void add_read_commands(CLI::App& app, Context& context);   // status, failed, show
void add_admin_commands(CLI::App& app, Context& context);  // retry, forget, cancel, clear, pause, resume
void add_push_command(CLI::App& app, Context& context);    // push
void add_work_command(CLI::App& app, Context& context);    // work
void add_schedule_command(CLI::App& app, Context& context);  // schedule add|remove|list|tick

// Adds --json to a subcommand.
inline void add_json_flag(CLI::App* command, Context& context) {
    command->add_flag("--json", context.json, "Print JSON instead of a table, for scripts");
}

}  // namespace jobqueue::cli
