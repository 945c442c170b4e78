// commands_read.cpp: status, failed, show.
#include <unistd.h>

#include <chrono>
#include <thread>

#include "commands.hpp"
#include "table.hpp"

namespace jobqueue::cli {

namespace {

// What flow control holds back (extension 1.5): the concurrency keys in use
// and the jobs waiting for a key's slot or for their parents. Empty with an
// older extension (no such functions: 42883).
struct FlowState {
    std::vector<ConcurrencyKey> keys;
    std::vector<BlockedJobs> blocked;
};

FlowState flow_state(Client& client) {
    FlowState state;
    try {
        state.keys = client.concurrency_keys();
        state.blocked = client.blocked();
    } catch (const Error& e) {
        if (e.sqlstate() != "42883") throw;
        return {};
    }
    return state;
}

// --json: each queue's object also holds its keys in use and its blocked jobs.
nlohmann::json status_json(const std::vector<QueueInfo>& queues, const FlowState& flow) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& q : queues) {
        nlohmann::json item = q;
        item["concurrency_keys"] = nlohmann::json::array();
        for (const auto& k : flow.keys)
            if (k.queue == q.stats.queue)
                item["concurrency_keys"].push_back(
                    {{"key", k.key}, {"max_running", k.max_running}, {"running", k.running}, {"waiting", k.waiting}});
        item["waiting_for_key"] = 0;
        item["waiting_for_parents"] = 0;
        for (const auto& b : flow.blocked)
            if (b.queue == q.stats.queue) {
                item["waiting_for_key"] = b.waiting_for_key;
                item["waiting_for_parents"] = b.waiting_for_parents;
            }
        out.push_back(std::move(item));
    }
    return out;
}

void print_status(Client& client, const Context& context) {
    auto queues = client.queues();
    auto flow = flow_state(client);
    if (context.json) {
        std::cout << status_json(queues, flow).dump() << "\n";
        return;
    }
    print_rows(context, queues, "no queues", [&] {
        Table table({"QUEUE", "PENDING", "DELAYED", "RESERVED", "TOTAL", "PAUSED", "LEASE", "NOTIFY"});
        table.align_right({1, 2, 3, 4});
        for (const auto& q : queues)
            table.row({q.stats.queue, std::to_string(q.stats.pending), std::to_string(q.stats.delayed),
                       std::to_string(q.stats.reserved), std::to_string(q.stats.total), q.paused ? "yes" : "no",
                       q.default_lease ? duration_text(*q.default_lease) : "-", q.notify ? "on" : "off"});
        table.print(std::cout);
    });
    // the flow-control tables only when there is something to show
    if (!flow.keys.empty()) {
        std::cout << "\n";
        Table table({"QUEUE", "CONCURRENCY KEY", "RUNNING", "WAITING"});
        table.align_right({2, 3});
        for (const auto& k : flow.keys)
            table.row({k.queue, k.key, std::to_string(k.running) + "/" + std::to_string(k.max_running),
                       std::to_string(k.waiting)});
        table.print(std::cout);
    }
    bool blocked = false;
    for (const auto& b : flow.blocked) blocked = blocked || b.waiting_for_key > 0 || b.waiting_for_parents > 0;
    if (blocked) {
        std::cout << "\n";
        Table table({"QUEUE", "WAITING FOR KEY", "WAITING FOR PARENTS"});
        table.align_right({1, 2});
        for (const auto& b : flow.blocked)
            if (b.waiting_for_key > 0 || b.waiting_for_parents > 0)
                table.row({b.queue, std::to_string(b.waiting_for_key), std::to_string(b.waiting_for_parents)});
        table.print(std::cout);
    }
}

void add_status(CLI::App& app, Context& context) {
    auto* status = app.add_subcommand("status", "The backlog per queue, with its settings, concurrency keys in use and blocked jobs");
    auto watch = std::make_shared<bool>(false);
    status->add_flag("--watch", *watch, "Refresh every second until Ctrl-C");
    add_json_flag(status, context);
    status->footer("Example:\n  jobqueue status\n  jobqueue status --watch\n  jobqueue status --json" "\n");
    status->callback([&context, watch] {
        auto client = context.connect();
        if (!*watch) {
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
}

struct FailedOptions {
    std::optional<int> limit;
    std::string queue;  // "": every queue
};

void add_failed(CLI::App& app, Context& context) {
    auto* failed = app.add_subcommand("failed", "Failed jobs, newest first (error cut to one line)");
    auto o = std::make_shared<FailedOptions>();
    failed->add_option("--limit", o->limit, "How many rows (default: the server's)");
    failed->add_option("--queue", o->queue, "Only this queue");
    add_json_flag(failed, context);
    failed->footer("Example:\n  jobqueue failed --limit 10 --queue email" "\n");
    failed->callback([&context, o] {
        auto client = context.connect();
        auto rows = client.failed(o->limit, o->queue.empty() ? std::nullopt : std::optional<std::string>(o->queue));
        print_rows(context, rows, "no failed jobs", [&] {
            Table table({"ID", "QUEUE", "NAME", "ATTEMPTS", "FAILED AT", "ERROR"});
            table.align_right({0, 3});
            for (const auto& f : rows)
                table.row({std::to_string(f.id), f.queue, f.name,
                           std::to_string(f.attempts) + "/" + std::to_string(f.max_attempts),
                           format_time(f.failed_at).substr(0, 19) + "Z", one_line(f.error, 60)});
            table.print(std::cout);
        });
    });
}

void add_show(CLI::App& app, Context& context) {
    auto* show = app.add_subcommand("show", "One failed job in full: payload and whole error");
    auto id = std::make_shared<std::int64_t>(0);
    show->add_option("ID", *id, "The failed job's id")->required();
    add_json_flag(show, context);
    show->footer("Example:\n  jobqueue show 42" "\n");
    show->callback([&context, id] {
        auto client = context.connect();
        auto job = client.failed_job(*id);
        if (!job) throw NotDone("no failed job with id " + std::to_string(*id));
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

}  // namespace

void add_read_commands(CLI::App& app, Context& context) {
    add_status(app, context);
    add_failed(app, context);
    add_show(app, context);
}

}  // namespace jobqueue::cli
