// commands_admin.cpp: retry, forget, cancel, clear, pause, resume.
#include "commands.hpp"

namespace jobqueue::cli {

namespace {

std::string jobs(std::int64_t n) { return std::to_string(n) + (n == 1 ? " job" : " jobs"); }

struct RetryOptions {
    std::int64_t id = 0;
    bool all = false;
    std::optional<int> tries;
};

void add_retry(CLI::App& app, Context& context) {
    auto* retry = app.add_subcommand("retry", "Requeue a failed job (or all of them) under its original id");
    auto o = std::make_shared<RetryOptions>();
    auto* id_option = retry->add_option("ID", o->id, "The failed job's id");
    id_option->excludes(retry->add_flag("--all", o->all, "Requeue every failed job"));
    add_tries_option(retry, o->tries, "it gets");
    add_json_flag(retry, context);
    retry->footer("Example:\n  jobqueue retry 42\n  jobqueue retry --all --tries 5" "\n");
    retry->callback([&context, o, id_option] {
        if (!o->all && id_option->count() == 0) throw UsageError("retry: give a job ID or --all");
        auto client = context.connect();
        auto moved = client.retry_failed(o->all ? std::nullopt : std::optional<std::int64_t>(o->id), o->tries);
        if (!o->all && moved == 0) throw NotDone("no failed job with id " + std::to_string(o->id));
        print_result(context, {{"requeued", moved}}, "requeued " + jobs(moved));
    });
}

struct ForgetOptions {
    std::int64_t id = 0;
    std::string before;
    bool all = false;
};

void add_forget(CLI::App& app, Context& context) {
    auto* forget = app.add_subcommand("forget", "Delete failed jobs: one, those failed before a time, or all");
    auto o = std::make_shared<ForgetOptions>();
    auto* id_option = forget->add_option("ID", o->id, "The failed job's id");
    auto* before_option =
        forget->add_option("--before", o->before, "Failed before this time (2030-01-31, 2030-01-31T12:00Z) or age (7d)");
    auto* all_flag = forget->add_flag("--all", o->all, "Every failed job");
    id_option->excludes(before_option)->excludes(all_flag);
    before_option->excludes(all_flag);
    add_json_flag(forget, context);
    forget->footer("Example:\n  jobqueue forget 42\n  jobqueue forget --before 30d\n  jobqueue forget --all" "\n");
    forget->callback([&context, o, id_option, before_option] {
        if (!id_option->count() && !before_option->count() && !o->all)
            throw UsageError("forget: give a job ID, --before TIME or --all");
        std::optional<TimePoint> before;
        if (before_option->count()) before = parse_time(o->before, "--before", false);
        auto client = context.connect();
        std::int64_t deleted;
        if (id_option->count()) {
            deleted = client.forget_failed(o->id);
            if (deleted == 0) throw NotDone("no failed job with id " + std::to_string(o->id));
        } else if (before) {
            deleted = client.forget_failed_before(*before);
        } else {
            deleted = client.forget_all_failed();
        }
        print_result(context, {{"forgotten", deleted}}, "forgot " + jobs(deleted));
    });
}

struct CancelOptions {
    std::int64_t id = 0;
    bool force = false;
};

void add_cancel(CLI::App& app, Context& context) {
    auto* cancel = app.add_subcommand("cancel", "Delete a job that is not running (--force: even if it is)");
    auto o = std::make_shared<CancelOptions>();
    cancel->add_option("ID", o->id, "The job's id")->required();
    cancel->add_flag("--force", o->force, "Also when a worker holds it");
    add_json_flag(cancel, context);
    cancel->footer("Example:\n  jobqueue cancel 42" "\n");
    cancel->callback([&context, o] {
        auto client = context.connect();
        if (!client.cancel(o->id, o->force))
            throw NotDone("job " + std::to_string(o->id) +
                          " was not cancelled: no such job, or a worker holds it (--force to cancel anyway)");
        print_result(context, {{"cancelled", 1}}, "cancelled job " + std::to_string(o->id));
    });
}

struct ClearOptions {
    std::string queue;
    bool yes = false;
};

void add_clear(CLI::App& app, Context& context) {
    auto* clear = app.add_subcommand("clear", "Delete every job of a queue");
    auto o = std::make_shared<ClearOptions>();
    clear->add_option("QUEUE", o->queue, "The queue")->required();
    clear->add_flag("--yes", o->yes, "Confirm: the jobs are deleted, not failed");
    add_json_flag(clear, context);
    clear->footer("Example:\n  jobqueue clear email --yes" "\n");
    clear->callback([&context, o] {
        if (!o->yes) throw UsageError("clear: refusing to delete every job of \"" + o->queue + "\" without --yes");
        auto client = context.connect();
        auto deleted = client.clear(o->queue);
        print_result(context, {{"deleted", deleted}}, "deleted " + jobs(deleted) + " from " + o->queue);
    });
}

// pause or resume: the same command but for the verb.
void add_pause_or_resume(CLI::App& app, Context& context, bool pausing) {
    const std::string verb = pausing ? "pause" : "resume";
    auto* command = app.add_subcommand(verb, pausing ? "Hand out no more jobs of a queue (its jobs stay)"
                                                     : "Hand out jobs of a paused queue again");
    auto queue = std::make_shared<std::string>();
    command->add_option("QUEUE", *queue, "The queue")->required();
    add_json_flag(command, context);
    command->footer("Example:\n  jobqueue " + verb + " email" + "\n");
    command->callback([&context, queue, pausing] {
        auto client = context.connect();
        if (pausing)
            client.pause(*queue);
        else
            client.resume(*queue);
        print_result(context, {{"queue", *queue}, {"paused", pausing}}, (pausing ? "paused " : "resumed ") + *queue);
    });
}

}  // namespace

void add_admin_commands(CLI::App& app, Context& context) {
    add_retry(app, context);
    add_forget(app, context);
    add_cancel(app, context);
    add_clear(app, context);
    add_pause_or_resume(app, context, true);
    add_pause_or_resume(app, context, false);
}

}  // namespace jobqueue::cli
