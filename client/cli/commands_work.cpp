// commands_work.cpp: the worker runtime running a shell command per job.
#include <sstream>

#include "commands.hpp"
#include "run_command.hpp"
#include "utf8.hpp"

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

struct WorkCommand {
    std::string queues, command, lease, poll, grace = "30s";
    int concurrency = 1;
    bool quiet = false;

    [[nodiscard]] WorkerOptions worker_options(const Context& context) const {
        WorkerOptions options;
        options.connection = context.client_options();
        options.queues = split_queues(queues);
        options.threads = concurrency;
        if (!lease.empty()) options.lease = parse_duration(lease, "--lease");
        if (!poll.empty()) options.poll_interval = parse_duration(poll, "--poll");
        options.grace_period = parse_duration(grace, "--grace");
        try {
            options.validate();
        } catch (const InvalidArgument& e) {
            throw UsageError(std::string(e.what()).substr(std::string("jobqueue: ").size()));
        }
        return options;
    }
};

void log_outcome(const Job& job, const Outcome& outcome) {
    const char* word = outcome.kind() == Outcome::Kind::done    ? "done"
                       : outcome.kind() == Outcome::Kind::retry ? "retry"
                                                                : "failed";
    std::cerr << "jobqueue work: job " << job.id << " (" << job.name << ", attempt " << job.attempts << ") " << word
              << (outcome.message().empty() ? "" : ": " + utf8::prefix(outcome.message(), 200)) << "\n";
}

}  // namespace

void add_work_command(CLI::App& app, Context& context) {
    auto* work = app.add_subcommand("work", "Run a shell command for every job of some queues");
    auto o = std::make_shared<WorkCommand>();
    const WorkerOptions defaults;
    work->add_option("--queues", o->queues, "Queues in precedence order, comma-separated (default: the server's)");
    work->add_option("--exec", o->command, "Shell command run per job: payload on stdin, job in JOBQUEUE_JOB_* variables")
        ->required();
    work->add_option("--concurrency", o->concurrency, "Jobs run at once (default 1)")
        ->check(CLI::Range(1, WorkerOptions::max_threads));
    work->add_option("--lease", o->lease,
                     "Lease of a claim, renewed while the command runs (default " + duration_text(defaults.lease) + ")");
    work->add_option("--poll", o->poll,
                     "Longest wait between claims when idle (default " + duration_text(defaults.poll_interval) + ")");
    work->add_option("--grace", o->grace,
                     "On SIGINT/SIGTERM, how long running commands may finish (default " + o->grace + ")");
    work->add_flag("--quiet", o->quiet, "Do not log each job on stderr");
    add_json_flag(work, context);
    work->footer(
        "Exit status of the command: 0 completes the job, 75 (EX_TEMPFAIL) retries it with backoff,\n"
        "anything else fails it with the command's stderr as the error. A command killed by a signal\n"
        "is retried. Environment: JOBQUEUE_JOB_ID, JOBQUEUE_JOB_NAME, JOBQUEUE_JOB_QUEUE,\n"
        "JOBQUEUE_JOB_ATTEMPT, JOBQUEUE_JOB_MAX_ATTEMPTS.\n\n"
        "Example:\n  jobqueue work --queues email,default --exec './send-mail.sh' --concurrency 4" "\n");
    work->callback([&context, o] {
        auto options = o->worker_options(context);
        // Fail fast on a bad connection rather than retrying forever.
        (void)context.connect();

        Worker worker(options);
        worker.on_any([o](const Job& job, JobContext&) {
            auto outcome = run_job(o->command, job);
            if (!o->quiet) log_outcome(job, outcome);
            return outcome;
        });
        if (!o->quiet)
            std::cerr << "jobqueue work: waiting for jobs on " << (o->queues.empty() ? "the default queue" : o->queues)
                      << " (Ctrl-C to stop)\n";
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
