// commands_admin.cpp: retry, forget, cancel, clear, pause, resume.
#include "commands.hpp"

namespace jobqueue::cli {

namespace {

// Prints the outcome of a counting command: a sentence, or {"<key>": n}.
void print_count(const Context& context, const char* key, std::int64_t count, const std::string& sentence) {
    if (context.json)
        std::cout << nlohmann::json{{key, count}}.dump() << "\n";
    else
        std::cout << sentence << "\n";
}

std::string jobs(std::int64_t n) { return std::to_string(n) + (n == 1 ? " job" : " jobs"); }

}  // namespace

void add_admin_commands(CLI::App& app, Context& context) {
    auto* retry = app.add_subcommand("retry", "Requeue a failed job (or all of them) under its original id");
    static std::int64_t retry_id = 0;
    static bool retry_all = false;
    static int tries = 3;
    auto* retry_id_option = retry->add_option("ID", retry_id, "The failed job's id");
    auto* retry_all_flag = retry->add_flag("--all", retry_all, "Requeue every failed job");
    retry_id_option->excludes(retry_all_flag);
    retry->add_option("--tries", tries, "Attempts it gets (default 3)")->check(CLI::Range(1, 1000000));
    add_json_flag(retry, context);
    retry->footer("Example:\n  jobqueue retry 42\n  jobqueue retry --all --tries 5" "\n");
    retry->callback([&context, retry_id_option] {
        if (!retry_all && retry_id_option->count() == 0) throw UsageError("retry: give a job ID or --all");
        auto client = context.connect();
        auto moved = client.retry_failed(retry_all ? std::nullopt : std::optional<std::int64_t>(retry_id), tries);
        if (!retry_all && moved == 0) throw NotDone("no failed job with id " + std::to_string(retry_id));
        print_count(context, "requeued", moved, "requeued " + jobs(moved));
    });

    auto* forget = app.add_subcommand("forget", "Delete failed jobs: one, those failed before a time, or all");
    static std::int64_t forget_id = 0;
    static std::string before;
    static bool forget_all = false;
    auto* forget_id_option = forget->add_option("ID", forget_id, "The failed job's id");
    auto* before_option =
        forget->add_option("--before", before, "Failed before this time (2030-01-31, 2030-01-31T12:00Z) or age (7d)");
    auto* forget_all_flag = forget->add_flag("--all", forget_all, "Every failed job");
    forget_id_option->excludes(before_option)->excludes(forget_all_flag);
    before_option->excludes(forget_all_flag);
    add_json_flag(forget, context);
    forget->footer("Example:\n  jobqueue forget 42\n  jobqueue forget --before 30d\n  jobqueue forget --all" "\n");
    forget->callback([&context, forget_id_option, before_option] {
        std::int64_t deleted;
        if (forget_id_option->count()) {
            auto client = context.connect();
            deleted = client.forget_failed(forget_id);
            if (deleted == 0) throw NotDone("no failed job with id " + std::to_string(forget_id));
        } else if (before_option->count()) {
            auto when = parse_time(before, "--before", false);
            auto client = context.connect();
            deleted = client.forget_failed_before(when);
        } else if (forget_all) {
            auto client = context.connect();
            deleted = client.forget_all_failed();
        } else {
            throw UsageError("forget: give a job ID, --before TIME or --all");
        }
        print_count(context, "forgotten", deleted, "forgot " + jobs(deleted));
    });

    auto* cancel = app.add_subcommand("cancel", "Delete a job that is not running (--force: even if it is)");
    static std::int64_t cancel_id = 0;
    static bool force = false;
    cancel->add_option("ID", cancel_id, "The job's id")->required();
    cancel->add_flag("--force", force, "Also when a worker holds it");
    add_json_flag(cancel, context);
    cancel->footer("Example:\n  jobqueue cancel 42" "\n");
    cancel->callback([&context] {
        auto client = context.connect();
        if (!client.cancel(cancel_id, force))
            throw NotDone("job " + std::to_string(cancel_id) +
                          " was not cancelled: no such job, or a worker holds it (--force to cancel anyway)");
        print_count(context, "cancelled", 1, "cancelled job " + std::to_string(cancel_id));
    });

    auto* clear = app.add_subcommand("clear", "Delete every job of a queue");
    static std::string clear_queue;
    static bool yes = false;
    clear->add_option("QUEUE", clear_queue, "The queue")->required();
    clear->add_flag("--yes", yes, "Confirm: the jobs are deleted, not failed");
    add_json_flag(clear, context);
    clear->footer("Example:\n  jobqueue clear email --yes" "\n");
    clear->callback([&context] {
        if (!yes) throw UsageError("clear: refusing to delete every job of \"" + clear_queue + "\" without --yes");
        auto client = context.connect();
        auto deleted = client.clear(clear_queue);
        print_count(context, "deleted", deleted, "deleted " + jobs(deleted) + " from " + clear_queue);
    });

    for (const char* verb : {"pause", "resume"}) {
        bool pausing = std::string(verb) == "pause";
        auto* command = app.add_subcommand(verb, pausing ? "Hand out no more jobs of a queue (its jobs stay)"
                                                         : "Hand out jobs of a paused queue again");
        auto* queue = new std::string;  // lives as long as the program
        command->add_option("QUEUE", *queue, "The queue")->required();
        add_json_flag(command, context);
        command->footer(std::string("Example:\n  jobqueue ") + verb + " email" + "\n");
        command->callback([&context, queue, pausing] {
            auto client = context.connect();
            if (pausing)
                client.pause(*queue);
            else
                client.resume(*queue);
            if (context.json)
                std::cout << nlohmann::json{{"queue", *queue}, {"paused", pausing}}.dump() << "\n";
            else
                std::cout << (pausing ? "paused " : "resumed ") << *queue << "\n";
        });
    }
}

}  // namespace jobqueue::cli
