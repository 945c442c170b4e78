// commands_flow.cpp: limit set | remove | list (concurrency limits per key
// prefix) and rate set | remove | list (claims per period of a queue).
#include "commands.hpp"
#include "table.hpp"

namespace jobqueue::cli {

namespace {

struct LimitSetOptions {
    std::string queue, prefix;
    int max_running = 0;
};

void add_limit_set(CLI::App& limit, Context& context) {
    auto* set = limit.add_subcommand("set", "Run at most N jobs at once of each concurrency key starting with PREFIX");
    auto o = std::make_shared<LimitSetOptions>();
    set->add_option("QUEUE", o->queue, "The queue")->required();
    set->add_option("PREFIX", o->prefix, "Key prefix; '' for every key of the queue (the longest prefix wins)")
        ->required();
    set->add_option("N", o->max_running, "Jobs of one key that may run at once")->required();
    add_json_flag(set, context);
    set->footer("Example:\n  jobqueue limit set email tenant: 2\n  jobqueue limit set email '' 1\n");
    set->callback([&context, o] {
        auto client = context.connect();
        client.set_concurrency(o->queue, o->prefix, o->max_running);
        print_result(context, {{"queue", o->queue}, {"key_prefix", o->prefix}, {"max_running", o->max_running}},
                     "queue " + o->queue + ": at most " + std::to_string(o->max_running) +
                         " running per key starting with \"" + o->prefix + "\"");
    });
}

void add_limit_remove(CLI::App& limit, Context& context) {
    auto* remove =
        limit.add_subcommand("remove", "Remove a concurrency limit (its keys fall back to 1 or a shorter prefix)");
    auto o = std::make_shared<LimitSetOptions>();
    remove->add_option("QUEUE", o->queue, "The queue")->required();
    remove->add_option("PREFIX", o->prefix, "The limit's key prefix")->required();
    add_json_flag(remove, context);
    remove->footer("Example:\n  jobqueue limit remove email tenant:\n");
    remove->callback([&context, o] {
        auto client = context.connect();
        if (!client.remove_concurrency(o->queue, o->prefix))
            throw NotDone("queue " + o->queue + " has no concurrency limit for prefix \"" + o->prefix + "\"");
        print_result(context, {{"queue", o->queue}, {"key_prefix", o->prefix}, {"removed", true}},
                     "removed the limit of queue " + o->queue + " for prefix \"" + o->prefix + "\"");
    });
}

void add_limit_list(CLI::App& limit, Context& context) {
    auto* list =
        limit.add_subcommand("list", "The concurrency limits per key prefix (the keys in use: jobqueue status)");
    add_json_flag(list, context);
    list->footer("Example:\n  jobqueue limit list --json\n");
    list->callback([&context] {
        auto client = context.connect();
        auto limits = client.concurrency_limits();
        if (context.json) {
            std::cout << nlohmann::json(limits).dump() << "\n";
            return;
        }
        if (limits.empty()) {
            std::cout << "no concurrency limits (every key: 1 at a time)\n";
            return;
        }
        Table table({"QUEUE", "KEY PREFIX", "MAX RUNNING"});
        table.align_right({2});
        for (const auto& l : limits)
            table.row({l.queue, l.key_prefix.empty() ? "''" : l.key_prefix, std::to_string(l.max_running)});
        table.print(std::cout);
    });
}

struct RateSetOptions {
    std::string queue, period;
    int max_claims = 0;
};

void add_rate_set(CLI::App& rate, Context& context) {
    auto* set = rate.add_subcommand("set", "Claim at most N jobs of QUEUE per PERIOD, across every worker");
    auto o = std::make_shared<RateSetOptions>();
    set->add_option("QUEUE", o->queue, "The queue")->required();
    set->add_option("N", o->max_claims, "Claims per period")->required();
    set->add_option("PERIOD", o->period, "The period: 1s, 500ms, 1m, 1h")->required();
    add_json_flag(set, context);
    set->footer("Example:\n  jobqueue rate set webhooks 10 1s\n");
    set->callback([&context, o] {
        auto per = parse_duration(o->period, "PERIOD");
        auto client = context.connect();
        client.set_rate_limit(o->queue, o->max_claims, per);
        print_result(
            context, {{"queue", o->queue}, {"max_claims", o->max_claims}, {"per_ms", per.count()}},
            "queue " + o->queue + ": at most " + std::to_string(o->max_claims) + " claims per " + duration_text(per));
    });
}

void add_rate_remove(CLI::App& rate, Context& context) {
    auto* remove = rate.add_subcommand("remove", "Remove a queue's rate limit");
    auto queue = std::make_shared<std::string>();
    remove->add_option("QUEUE", *queue, "The queue")->required();
    add_json_flag(remove, context);
    remove->footer("Example:\n  jobqueue rate remove webhooks\n");
    remove->callback([&context, queue] {
        auto client = context.connect();
        if (!client.remove_rate_limit(*queue)) throw NotDone("queue " + *queue + " has no rate limit");
        print_result(context, {{"queue", *queue}, {"removed", true}}, "removed the rate limit of queue " + *queue);
    });
}

void add_rate_list(CLI::App& rate, Context& context) {
    auto* list = rate.add_subcommand("list", "The rate limits, with when each queue's next claim slot opens");
    add_json_flag(list, context);
    list->footer("Example:\n  jobqueue rate list\n");
    list->callback([&context] {
        auto client = context.connect();
        auto limits = client.rate_limits();
        print_rows(context, limits, "no rate limits", [&] {
            Table table({"QUEUE", "CLAIMS", "PER", "NEXT SLOT"});
            table.align_right({1});
            for (const auto& l : limits)
                table.row({l.queue, std::to_string(l.max_claims), duration_text(l.per),
                           l.next_slot ? format_time(*l.next_slot) : "now"});
            table.print(std::cout);
        });
    });
}

}  // namespace

void add_flow_commands(CLI::App& app, Context& context) {
    auto* limit = app.add_subcommand("limit", "Concurrency limits per key prefix: set, remove, list");
    limit->require_subcommand(1);
    limit->footer("Example:\n  jobqueue limit set email tenant: 2\n  jobqueue limit list\n");
    add_limit_set(*limit, context);
    add_limit_remove(*limit, context);
    add_limit_list(*limit, context);
    auto* rate = app.add_subcommand("rate", "Rate limits per queue: set, remove, list");
    rate->require_subcommand(1);
    rate->footer("Example:\n  jobqueue rate set webhooks 10 1s\n  jobqueue rate list\n");
    add_rate_set(*rate, context);
    add_rate_remove(*rate, context);
    add_rate_list(*rate, context);
}

}  // namespace jobqueue::cli
