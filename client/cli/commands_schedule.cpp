// commands_schedule.cpp: schedule add | remove | list | tick.
#include "commands.hpp"
#include "table.hpp"

namespace jobqueue::cli {

namespace {

// A window to the second, or "-".
std::string window_text(const std::optional<TimePoint>& t) { return t ? format_time(*t).substr(0, 19) + "Z" : "-"; }

struct ScheduleAddOptions {
    Schedule spec;
    std::string payload_text;
    bool disabled = false;
    bool catch_up = false;
};

void add_schedule_add(CLI::App& schedule, Context& context) {
    auto* add = schedule.add_subcommand("add", "Create or replace a schedule");
    auto o = std::make_shared<ScheduleAddOptions>();
    add->add_option("NAME", o->spec.name, "The schedule's name")->required();
    add->add_option("CRON", o->spec.cron, "Cron expression: \"*/5 9-17 * * mon-fri\", @daily, \"@every 10 minutes\"")
        ->required();
    add->add_option("JOB", o->spec.job_name, "Name of the job it enqueues")->required();
    add->add_option("JSON", o->payload_text, "The jobs' payload (default {})");
    add->add_option("--queue", o->spec.queue, "Queue (default: the server's)");
    add->add_option("--priority", o->spec.priority, "Priority of its jobs (default: the server's)");
    add_tries_option(add, o->spec.max_attempts, "each job gets");
    add->add_option("--tz", o->spec.time_zone, "Time zone the expression is read in (default: the server's, UTC)");
    add->add_flag("--disabled", o->disabled, "Create it switched off");
    add->add_flag("--catch-up", o->catch_up, "After a pause in ticking, enqueue every missed window");
    add_json_flag(add, context);
    add->footer("Example:\n  jobqueue schedule add nightly-report '0 3 * * *' send_report '{\"kind\": \"daily\"}' --tz Europe/Berlin\n");
    add->callback([&context, o] {
        Schedule spec = o->spec;
        // the flags only ever switch away from the server's defaults
        if (o->disabled) spec.enabled = false;
        if (o->catch_up) spec.catch_up = true;
        if (!o->payload_text.empty()) {
            try {
                spec.payload = nlohmann::json::parse(o->payload_text);
            } catch (const nlohmann::json::parse_error& e) {
                throw UsageError(std::string("payload: not valid JSON: ") + e.what());
            }
        }
        auto client = context.connect();
        auto next = client.schedule_set(spec);
        print_result(context, {{"name", spec.name}, {"next_due", format_time(next)}},
                     "schedule " + spec.name + ": next window " + format_time(next));
    });
}

void add_schedule_remove(CLI::App& schedule, Context& context) {
    auto* remove = schedule.add_subcommand("remove", "Remove a schedule (jobs already queued stay)");
    auto name = std::make_shared<std::string>();
    remove->add_option("NAME", *name, "The schedule's name")->required();
    add_json_flag(remove, context);
    remove->footer("Example:\n  jobqueue schedule remove nightly-report\n");
    remove->callback([&context, name] {
        auto client = context.connect();
        if (!client.schedule_remove(*name)) throw NotDone("no schedule named \"" + *name + "\"");
        print_result(context, {{"removed", *name}}, "removed schedule " + *name);
    });
}

}  // namespace

void add_schedule_command(CLI::App& app, Context& context) {
    auto* schedule = app.add_subcommand("schedule", "Recurring schedules: a job per window of a cron expression");
    schedule->require_subcommand(1);
    add_schedule_add(*schedule, context);
    add_schedule_remove(*schedule, context);

    auto* list = schedule->add_subcommand("list", "Every schedule with its next and last window");
    add_json_flag(list, context);
    list->footer("Example:\n  jobqueue schedule list\n");
    list->callback([&context] {
        auto client = context.connect();
        auto schedules = client.schedules();
        print_rows(context, schedules, "no schedules", [&] {
            // schedules() fills every setting
            Table table({"NAME", "CRON", "TZ", "JOB", "QUEUE", "ENABLED", "NEXT WINDOW", "LAST WINDOW"});
            for (const auto& s : schedules)
                table.row({s.name, s.cron, s.time_zone.value_or(""), s.job_name, s.queue.value_or(""),
                           s.enabled == true ? "yes" : "no", window_text(s.next_due), window_text(s.last_window)});
            table.print(std::cout);
        });
    });

    auto* tick = schedule->add_subcommand("tick", "Enqueue the jobs of every due window now (workers do this too)");
    add_json_flag(tick, context);
    tick->footer("Example:\n  jobqueue schedule tick\n");
    tick->callback([&context] {
        auto client = context.connect();
        auto ticks = client.tick();
        if (context.json) {
            nlohmann::json out = nlohmann::json::array();
            for (const auto& t : ticks)
                out.push_back({{"schedule", t.schedule}, {"due_at", format_time(t.due_at)}, {"job_id", t.job_id}});
            std::cout << out.dump() << "\n";
            return;
        }
        for (const auto& t : ticks)
            std::cout << "schedule " << t.schedule << ": window " << format_time(t.due_at) << " -> job " << t.job_id
                      << "\n";
        std::cout << "enqueued " << ticks.size() << (ticks.size() == 1 ? " job\n" : " jobs\n");
    });
}

}  // namespace jobqueue::cli
