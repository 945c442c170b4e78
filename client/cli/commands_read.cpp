// commands_read.cpp: status, failed, show.
#include <unistd.h>

#include <chrono>
#include <thread>

#include "commands.hpp"
#include "table.hpp"

namespace jobqueue::cli {

namespace {

std::string lease_text(const std::optional<std::chrono::milliseconds>& lease) {
    if (!lease) return "-";
    auto ms = lease->count();
    if (ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
    return std::to_string(ms) + "ms";
}

void print_status(Client& client, const Context& context) {
    auto queues = client.queues();
    if (context.json) {
        std::cout << nlohmann::json(queues).dump() << "\n";
        return;
    }
    if (queues.empty()) {
        std::cout << "no queues\n";
        return;
    }
    Table table({"QUEUE", "PENDING", "DELAYED", "RESERVED", "TOTAL", "PAUSED", "LEASE", "NOTIFY"});
    table.align_right({1, 2, 3, 4});
    for (const auto& q : queues)
        table.row({q.stats.queue, std::to_string(q.stats.pending), std::to_string(q.stats.delayed),
                   std::to_string(q.stats.reserved), std::to_string(q.stats.total), q.paused ? "yes" : "no",
                   lease_text(q.default_lease), q.notify ? "on" : "off"});
    table.print(std::cout);
}

}  // namespace

void add_read_commands(CLI::App& app, Context& context) {
    auto* status = app.add_subcommand("status", "The backlog per queue, with its settings");
    static bool watch = false;
    status->add_flag("--watch", watch, "Refresh every second until Ctrl-C");
    add_json_flag(status, context);
    status->footer("Example:\n  jobqueue status\n  jobqueue status --watch\n  jobqueue status --json" "\n");
    status->callback([&context] {
        auto client = context.connect();
        if (!watch) {
            print_status(client, context);
            return;
        }
        // the screen is cleared only for a person at a terminal; JSON is one line per refresh
        bool screen = isatty(STDOUT_FILENO) && !context.json;
        for (;;) {
            if (screen) std::cout << "\033[H\033[2J";
            if (!context.json)
                std::cout << "jobqueue status, " << format_time(Clock::now()) << " (Ctrl-C to stop)\n\n";
            print_status(client, context);
            std::cout.flush();
            std::this_thread::sleep_for(std::chrono::seconds(1));
        }
    });

    auto* failed = app.add_subcommand("failed", "Failed jobs, newest first (error cut to one line)");
    static int limit = 50;
    static std::string queue;
    failed->add_option("--limit", limit, "How many rows (default 50)")->check(CLI::Range(1, 1000000));
    failed->add_option("--queue", queue, "Only this queue");
    add_json_flag(failed, context);
    failed->footer("Example:\n  jobqueue failed --limit 10 --queue email" "\n");
    failed->callback([&context] {
        auto client = context.connect();
        auto rows = client.failed(limit, queue.empty() ? std::nullopt : std::optional<std::string>(queue));
        if (context.json) {
            std::cout << nlohmann::json(rows).dump() << "\n";
            return;
        }
        if (rows.empty()) {
            std::cout << "no failed jobs\n";
            return;
        }
        Table table({"ID", "QUEUE", "NAME", "ATTEMPTS", "FAILED AT", "ERROR"});
        table.align_right({0, 3});
        for (const auto& f : rows)
            table.row({std::to_string(f.id), f.queue, f.name,
                       std::to_string(f.attempts) + "/" + std::to_string(f.max_attempts),
                       format_time(f.failed_at).substr(0, 19) + "Z", one_line(f.error, 60)});
        table.print(std::cout);
    });

    auto* show = app.add_subcommand("show", "One failed job in full: payload and whole error");
    static std::int64_t id = 0;
    show->add_option("ID", id, "The failed job's id")->required();
    add_json_flag(show, context);
    show->footer("Example:\n  jobqueue show 42" "\n");
    show->callback([&context] {
        auto client = context.connect();
        auto job = client.failed_job(id);
        if (!job) throw NotDone("no failed job with id " + std::to_string(id));
        if (context.json) {
            std::cout << nlohmann::json(*job).dump() << "\n";
            return;
        }
        std::cout << "id:         " << job->id << "\n"
                  << "queue:      " << job->queue << "\n"
                  << "name:       " << job->name << "\n"
                  << "priority:   " << job->priority << "\n"
                  << "attempts:   " << job->attempts << " of " << job->max_attempts << "\n"
                  << "created at: " << format_time(job->created_at) << "\n"
                  << "failed at:  " << format_time(job->failed_at) << "\n"
                  << "payload:\n" << job->payload.dump(2) << "\n"
                  << "error:\n" << job->error << "\n";
    });
}

}  // namespace jobqueue::cli
