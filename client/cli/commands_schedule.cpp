// commands_schedule.cpp: schedule add | remove | list | tick.
#include "commands.hpp"
#include "table.hpp"

namespace jobqueue::cli {

void add_schedule_command(CLI::App& app, Context& context) {
    auto* schedule = app.add_subcommand("schedule", "Recurring schedules: a job per window of a cron expression");
    schedule->require_subcommand(1);

    auto* add = schedule->add_subcommand("add", "Create or replace a schedule");
    static Schedule spec;
    static std::string payload_text;
    static bool disabled = false;
    add->add_option("NAME", spec.name, "The schedule's name")->required();
    add->add_option("CRON", spec.cron, "Cron expression: \"*/5 9-17 * * mon-fri\", @daily, \"@every 10 minutes\"")
        ->required();
    add->add_option("JOB", spec.job_name, "Name of the job it enqueues")->required();
    add->add_option("JSON", payload_text, "The jobs' payload (default {})");
    add->add_option("--queue", spec.queue, "Queue (default: default)");
    add->add_option("--priority", spec.priority, "Priority of its jobs (default 0)");
    add->add_option("--tries", spec.max_attempts, "Attempts each job gets (default 3)");
    add->add_option("--tz", spec.time_zone, "Time zone the expression is read in (default UTC)");
    add->add_flag("--disabled", disabled, "Create it switched off");
    add->add_flag("--catch-up", spec.catch_up, "After a pause in ticking, enqueue every missed window");
    add_json_flag(add, context);
    add->footer("Example:\n  jobqueue schedule add nightly-report '0 3 * * *' send_report '{\"kind\": \"daily\"}' --tz Europe/Berlin\n");
    add->callback([&context] {
        spec.enabled = !disabled;
        if (!payload_text.empty()) {
            try {
                spec.payload = nlohmann::json::parse(payload_text);
            } catch (const nlohmann::json::parse_error& e) {
                throw UsageError(std::string("payload: not valid JSON: ") + e.what());
            }
        }
        auto client = context.connect();
        auto next = client.schedule_set(spec);
        if (context.json)
            std::cout << nlohmann::json{{"name", spec.name}, {"next_due", format_time(next)}}.dump() << "\n";
        else
            std::cout << "schedule " << spec.name << ": next window " << format_time(next) << "\n";
    });

    auto* remove = schedule->add_subcommand("remove", "Remove a schedule (jobs already queued stay)");
    static std::string remove_name;
    remove->add_option("NAME", remove_name, "The schedule's name")->required();
    add_json_flag(remove, context);
    remove->footer("Example:\n  jobqueue schedule remove nightly-report\n");
    remove->callback([&context] {
        auto client = context.connect();
        if (!client.schedule_remove(remove_name)) throw NotDone("no schedule named \"" + remove_name + "\"");
        if (context.json)
            std::cout << nlohmann::json{{"removed", remove_name}}.dump() << "\n";
        else
            std::cout << "removed schedule " << remove_name << "\n";
    });

    auto* list = schedule->add_subcommand("list", "Every schedule with its next and last window");
    add_json_flag(list, context);
    list->footer("Example:\n  jobqueue schedule list\n");
    list->callback([&context] {
        auto client = context.connect();
        auto schedules = client.schedules();
        if (context.json) {
            std::cout << nlohmann::json(schedules).dump() << "\n";
            return;
        }
        if (schedules.empty()) {
            std::cout << "no schedules\n";
            return;
        }
        Table table({"NAME", "CRON", "TZ", "JOB", "QUEUE", "ENABLED", "NEXT WINDOW", "LAST WINDOW"});
        for (const auto& s : schedules)
            table.row({s.name, s.cron, s.time_zone, s.job_name, s.queue, s.enabled ? "yes" : "no",
                       s.next_due ? format_time(*s.next_due).substr(0, 19) + "Z" : "-",
                       s.last_window ? format_time(*s.last_window).substr(0, 19) + "Z" : "-"});
        table.print(std::cout);
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
