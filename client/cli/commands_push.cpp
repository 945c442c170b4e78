// commands_push.cpp: push one job, or one job per line of a JSON-lines file.
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <sstream>

#include "commands.hpp"

namespace jobqueue::cli {

namespace {

constexpr size_t kBatchSize = 500;

nlohmann::json parse_payload(const std::string& text, const std::string& where) {
    try {
        return nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
        throw UsageError(where + ": not valid JSON: " + e.what());
    }
}

void draw_progress(size_t done, size_t total) {
    const int width = 30;
    int filled = total ? static_cast<int>(width * done / total) : width;
    std::cerr << "\r[" << std::string(filled, '#') << std::string(width - filled, ' ') << "] " << done << "/" << total
              << std::flush;
}

struct PushCommand {
    std::string name, payload_text, delay, unique, deadline, file;
    std::optional<std::string> queue;
    std::optional<int> priority, tries;
    std::optional<std::string> concurrency_key, on_duplicate, after_failed;
    std::vector<std::int64_t> after;

    // The options of every job pushed, checked before connecting.
    [[nodiscard]] PushOptions push_options() const {
        PushOptions options;
        options.queue = queue;
        if (!delay.empty()) options.delay = parse_duration(delay, "--delay");
        options.priority = priority;
        if (!unique.empty()) options.unique_key = unique;
        options.max_attempts = tries;
        if (!deadline.empty()) options.deadline = parse_time(deadline, "--deadline", true);
        options.concurrency_key = concurrency_key;
        // the option's validator let only the words of a mode through
        if (on_duplicate) options.on_duplicate = parse_on_duplicate(*on_duplicate);
        options.after = after;
        if (after_failed) options.after_failed = parse_after_failed(*after_failed);
        return options;
    }
};

// One job per line of the file, all in one transaction: a failed push
// leaves nothing of the file queued.
void push_file(const Context& context, const PushCommand& o, const PushOptions& options) {
    if (!o.payload_text.empty()) throw UsageError("push: give a JSON payload or --file, not both");
    if (!o.unique.empty()) throw UsageError("push: --unique cannot apply to every line of --file");
    std::ifstream in(o.file);
    if (!in) throw UsageError("push: cannot read " + o.file);
    std::vector<NewJob> jobs;
    std::string line;
    for (size_t number = 1; std::getline(in, line); ++number) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        jobs.push_back({o.name, parse_payload(line, o.file + ":" + std::to_string(number)), options});
    }
    auto client = context.connect();
    bool progress = isatty(STDERR_FILENO) && !context.json;
    client.execute("BEGIN");
    size_t pushed = 0;
    for (size_t start = 0; start < jobs.size(); start += kBatchSize) {
        std::vector<NewJob> batch(jobs.begin() + start, jobs.begin() + std::min(jobs.size(), start + kBatchSize));
        pushed += client.push_many(batch).size();
        if (progress) draw_progress(pushed, jobs.size());
    }
    client.execute("COMMIT");
    if (progress) std::cerr << "\n";
    print_result(context, {{"pushed", pushed}},
                 "pushed " + std::to_string(pushed) + " jobs to " + o.queue.value_or("the default queue"));
}

void push_one(const Context& context, const PushCommand& o, const PushOptions& options) {
    std::string text = o.payload_text.empty() ? "{}" : o.payload_text;
    if (o.payload_text == "-") {
        std::stringstream all;
        all << std::cin.rdbuf();
        text = all.str();
    }
    auto payload = parse_payload(text, "payload");
    auto client = context.connect();
    auto id = client.push(o.name, payload, options);
    print_result(context, {{"id", id}}, std::to_string(id));
}

}  // namespace

void add_push_command(CLI::App& app, Context& context) {
    auto* push = app.add_subcommand("push", "Queue a job (or one job per line of a JSON-lines file)");
    auto o = std::make_shared<PushCommand>();
    push->add_option("NAME", o->name, "The job's name")->required();
    push->add_option("JSON", o->payload_text, "The payload, as JSON; - reads it from stdin (default {})");
    push->add_option("--queue", o->queue, "Queue (default: the server's)");
    push->add_option("--delay", o->delay, "Not before this long from now: 30s, 5m, 2h, 1d");
    push->add_option("--priority", o->priority, "Higher is claimed first (default: the server's)");
    push->add_option("--unique", o->unique, "Unique key: a job already holding it is returned instead");
    add_tries_option(push, o->tries, "it gets");
    push->add_option("--deadline", o->deadline, "Fail it if not run by then: a time (2030-01-31T12:00Z) or 1h from now");
    push->add_option("--concurrency-key", o->concurrency_key,
                     "Run at most the key's limit of the queue's jobs with this key at once (default limit 1)");
    push->add_option("--on-duplicate", o->on_duplicate,
                     "With --unique, when a job holds the key: keep it (default), replace its payload and "
                     "run-at, or debounce (replace, and --delay starts again)")
        ->check(CLI::IsMember({"keep", "replace", "debounce"}));
    push->add_option("--after", o->after, "Run only after these jobs completed: ID[,ID...]")->delimiter(',');
    push->add_option("--after-failed", o->after_failed,
                     "With --after, when a parent fails or is cancelled: fail this job too (default) or run it")
        ->check(CLI::IsMember({"fail", "run"}));
    push->add_option("--file", o->file, "Push one job per line of this JSON-lines file (each line the payload)");
    add_json_flag(push, context);
    push->footer(
        "Examples:\n"
        "  jobqueue push send_email '{\"to\": \"ada@example.com\"}' --queue email\n"
        "  echo '{\"file\": \"a.png\"}' | jobqueue push resize - --delay 30s --priority 5\n"
        "  jobqueue push import_row --file rows.jsonl --queue imports\n"
        "  jobqueue push sync_account '{\"id\": 7}' --concurrency-key account:7\n"
        "  jobqueue push reindex '{}' --unique reindex --on-duplicate debounce --delay 10s\n"
        "  jobqueue push report '{}' --after 41,42 --after-failed run" "\n");
    push->callback([&context, o] {
        auto options = o->push_options();
        if (o->file.empty())
            push_one(context, *o, options);
        else
            push_file(context, *o, options);
    });
}

}  // namespace jobqueue::cli
