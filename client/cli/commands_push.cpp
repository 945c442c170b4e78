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

}  // namespace

void add_push_command(CLI::App& app, Context& context) {
    auto* push = app.add_subcommand("push", "Queue a job (or one job per line of a JSON-lines file)");
    static std::string name, payload_text, queue = "default", delay, unique, deadline, file;
    static int priority = 0, tries = 3;
    push->add_option("NAME", name, "The job's name")->required();
    push->add_option("JSON", payload_text, "The payload, as JSON; - reads it from stdin (default {})");
    push->add_option("--queue", queue, "Queue (default: default)");
    push->add_option("--delay", delay, "Not before this long from now: 30s, 5m, 2h, 1d");
    push->add_option("--priority", priority, "Higher is claimed first (default 0)");
    push->add_option("--unique", unique, "Unique key: a job already holding it is returned instead");
    push->add_option("--tries", tries, "Attempts it gets (default 3)");
    push->add_option("--deadline", deadline, "Fail it if not run by then: a time (2030-01-31T12:00Z) or 1h from now");
    push->add_option("--file", file, "Push one job per line of this JSON-lines file (each line the payload)");
    add_json_flag(push, context);
    push->footer(
        "Examples:\n"
        "  jobqueue push send_email '{\"to\": \"ada@example.com\"}' --queue email\n"
        "  echo '{\"file\": \"a.png\"}' | jobqueue push resize - --delay 30s --priority 5\n"
        "  jobqueue push import_row --file rows.jsonl --queue imports" "\n");
    push->callback([&context] {
        PushOptions options;
        options.queue = queue;
        if (!delay.empty()) options.delay = parse_duration(delay, "--delay");
        options.priority = priority;
        if (!unique.empty()) options.unique_key = unique;
        options.max_attempts = tries;
        if (!deadline.empty()) options.deadline = parse_time(deadline, "--deadline", true);

        if (!file.empty()) {
            if (!payload_text.empty()) throw UsageError("push: give a JSON payload or --file, not both");
            if (!unique.empty()) throw UsageError("push: --unique cannot apply to every line of --file");
            std::ifstream in(file);
            if (!in) throw UsageError("push: cannot read " + file);
            std::vector<NewJob> jobs;
            std::string line;
            for (size_t number = 1; std::getline(in, line); ++number) {
                if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
                jobs.push_back({name, parse_payload(line, file + ":" + std::to_string(number)), options});
            }
            auto client = context.connect();
            bool progress = isatty(STDERR_FILENO) && !context.json;
            // one transaction: a failed push leaves nothing of the file queued
            client.execute("BEGIN");
            size_t pushed = 0;
            for (size_t start = 0; start < jobs.size(); start += kBatchSize) {
                std::vector<NewJob> batch(jobs.begin() + start,
                                          jobs.begin() + std::min(jobs.size(), start + kBatchSize));
                pushed += client.push_many(batch).size();
                if (progress) draw_progress(pushed, jobs.size());
            }
            client.execute("COMMIT");
            if (progress) std::cerr << "\n";
            if (context.json)
                std::cout << nlohmann::json{{"pushed", pushed}}.dump() << "\n";
            else
                std::cout << "pushed " << pushed << " jobs to " << queue << "\n";
            return;
        }

        std::string text = payload_text.empty() ? "{}" : payload_text;
        if (payload_text == "-") {
            std::stringstream all;
            all << std::cin.rdbuf();
            text = all.str();
        }
        auto payload = parse_payload(text, "payload");
        auto client = context.connect();
        auto id = client.push(name, payload, options);
        if (context.json)
            std::cout << nlohmann::json{{"id", id}}.dump() << "\n";
        else
            std::cout << id << "\n";
    });
}

}  // namespace jobqueue::cli
