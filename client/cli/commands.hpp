// commands.hpp: the subcommands of the jobqueue tool.
//
// Each add_*_command builds its subcommands the way CLI11's own examples
// do: a subcommand's options live in a struct of its own, held by a
// shared_ptr that its callback captures, so they live exactly as long as
// the App that owns the callback.
#pragma once

#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>
#include <optional>
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
void add_flow_commands(CLI::App& app, Context& context);     // limit set|remove|list, rate set|remove|list
#ifdef JOBQUEUE_WITH_DASHBOARD
void add_dashboard_command(CLI::App& app, Context& context);  // dashboard
#endif

// Adds --json to a subcommand.
inline void add_json_flag(CLI::App* command, Context& context) {
    command->add_flag("--json", context.json, "Print JSON instead of a table, for scripts");
}

// Adds --tries (max_attempts). Left out, nothing is sent and the server's
// default applies; the server alone judges the value (22023).
inline void add_tries_option(CLI::App* command, std::optional<int>& tries, const std::string& what) {
    command->add_option("--tries", tries, "Attempts " + what + " (default: the server's)");
}

// Prints the outcome of a command: json with --json, else the sentence.
inline void print_result(const Context& context, const nlohmann::json& json, const std::string& sentence) {
    std::cout << (context.json ? json.dump() : sentence) << "\n";
}

// Prints a listing: a JSON array with --json, the words for none when it
// is empty, else the table print_table writes.
template <typename Rows, typename PrintTable>
void print_rows(const Context& context, const Rows& rows, const char* none, PrintTable&& print_table) {
    if (context.json)
        std::cout << nlohmann::json(rows).dump() << "\n";
    else if (rows.empty())
        std::cout << none << "\n";
    else
        print_table();
}

}  // namespace jobqueue::cli
