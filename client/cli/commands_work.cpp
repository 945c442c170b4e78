// commands_work.cpp: the worker runtime running a shell command per job.
#include <sstream>

#include "commands.hpp"
#include "run_command.hpp"

namespace jobqueue::cli {

namespace {

constexpr int kExitTempFail = 75;       // EX_TEMPFAIL: try again later
constexpr size_t kErrorBytes = 8000;     // of the command's stderr kept as the error

std::vector<std::string> split_queues(const std::string& text) {
    std::vector<std::string> out;
    std::stringstream in(text);
    std::string item;
    while (std::getline(in, item, ','))
        if (!item.empty()) out.push_back(item);
    return out;
}

Outcome run_job(const std::string& command, const Job& job) {
    std::vector<std::string> env = {
        "JOBQUEUE_JOB_ID=" + std::to_string(job.id),
        "JOBQUEUE_JOB_NAME=" + job.name,
        "JOBQUEUE_JOB_QUEUE=" + job.queue,
        "JOBQUEUE_JOB_ATTEMPT=" + std::to_string(job.attempts),
        "JOBQUEUE_JOB_MAX_ATTEMPTS=" + std::to_string(job.max_attempts),
    };
    auto result = run_command(command, job.payload.dump(), env, kErrorBytes);
    std::string error = result.error_output;
    while (!error.empty() && (error.back() == '\n' || error.back() == ' ')) error.pop_back();
    if (!result.exited)
        return Outcome::retry("command killed by signal " + std::to_string(result.signal) +
                              (error.empty() ? "" : ": " + error));
    if (result.exit_status == 0) return Outcome::done();
    std::string reason = "command exited with status " + std::to_string(result.exit_status) +
                         (error.empty() ? "" : ": " + error);
    if (result.exit_status == kExitTempFail) return Outcome::retry(reason);
    return Outcome::fail(reason);
}

}  // namespace

void add_work_command(CLI::App& app, Context& context) {
    auto* work = app.add_subcommand("work", "Run a shell command for every job of some queues");
    static std::string queues = "default", command, lease = "60s", poll = "1s", grace = "30s";
    static int concurrency = 1;
    static bool quiet = false;
    work->add_option("--queues", queues, "Queues in precedence order, comma-separated (default: default)");
    work->add_option("--exec", command, "Shell command run per job: payload on stdin, job in JOBQUEUE_JOB_* variables")
        ->required();
    work->add_option("--concurrency", concurrency, "Jobs run at once (default 1)")->check(CLI::Range(1, 256));
    work->add_option("--lease", lease, "Lease of a claim, renewed while the command runs (default 60s)");
    work->add_option("--poll", poll, "Longest wait between claims when idle (default 1s)");
    work->add_option("--grace", grace, "On SIGINT/SIGTERM, how long running commands may finish (default 30s)");
    work->add_flag("--quiet", quiet, "Do not log each job on stderr");
    add_json_flag(work, context);
    work->footer(
        "Exit status of the command: 0 completes the job, 75 (EX_TEMPFAIL) retries it with backoff,\n"
        "anything else fails it with the command's stderr as the error. A command killed by a signal\n"
        "is retried. Environment: JOBQUEUE_JOB_ID, JOBQUEUE_JOB_NAME, JOBQUEUE_JOB_QUEUE,\n"
        "JOBQUEUE_JOB_ATTEMPT, JOBQUEUE_JOB_MAX_ATTEMPTS.\n\n"
        "Example:\n  jobqueue work --queues email,default --exec './send-mail.sh' --concurrency 4" "\n");
    work->callback([&context] {
        WorkerOptions options;
        options.connection = context.client_options();
        options.queues = split_queues(queues);
        options.threads = concurrency;
        options.lease = parse_duration(lease, "--lease");
        options.poll_interval = parse_duration(poll, "--poll");
        options.grace_period = parse_duration(grace, "--grace");
        try {
            options.validate();
        } catch (const InvalidArgument& e) {
            throw UsageError(std::string(e.what()).substr(std::string("jobqueue: ").size()));
        }
        // Fail fast on a bad connection rather than retrying forever.
        (void)context.connect();

        Worker worker(options);
        worker.on_any([](const Job& job, JobContext&) {
            auto outcome = run_job(command, job);
            if (!quiet) {
                const char* word = outcome.kind() == Outcome::Kind::done    ? "done"
                                   : outcome.kind() == Outcome::Kind::retry ? "retry"
                                                                            : "failed";
                std::cerr << "jobqueue work: job " << job.id << " (" << job.name << ", attempt " << job.attempts
                          << ") " << word << (outcome.message().empty() ? "" : ": " + outcome.message().substr(0, 200))
                          << "\n";
            }
            return outcome;
        });
        if (!quiet) std::cerr << "jobqueue work: waiting for jobs on " << queues << " (Ctrl-C to stop)\n";
        worker.run_until_signal();
        auto c = worker.counters();
        if (context.json)
            std::cout << nlohmann::json{{"claimed", c.claimed},   {"completed", c.completed}, {"retried", c.retried},
                                        {"failed", c.failed},     {"lost", c.lost},           {"reconnects", c.reconnects}}
                             .dump()
                      << "\n";
        else
            std::cerr << "jobqueue work: stopped; " << c.completed << " completed, " << c.retried << " retried, "
                      << c.failed << " failed\n";
    });
}

}  // namespace jobqueue::cli
