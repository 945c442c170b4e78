// Example worker: "sends" e-mails by appending them to a log file, until
// SIGINT or SIGTERM.
//
//   jobqueue_example_worker LOGFILE [THREADS]   (connection from PG*)
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <mutex>

#include "jobqueue/jobqueue.hpp"

int main(int argc, char** argv) {
    if (argc < 2) {
        std::cerr << "usage: jobqueue_example_worker LOGFILE [THREADS]\n";
        return 1;
    }
    std::ofstream log(argv[1], std::ios::app);
    std::mutex log_mutex;

    jobqueue::WorkerOptions options;
    options.queues = {"email"};
    options.threads = argc > 2 ? std::atoi(argv[2]) : 2;
    options.lease = std::chrono::seconds(30);

    try {
        jobqueue::Worker worker(options);
        worker.on("send_email", [&](const jobqueue::Job& job, jobqueue::JobContext&) {
            if (!job.payload.contains("to")) return jobqueue::Outcome::fail("payload has no \"to\"");
            std::lock_guard<std::mutex> lock(log_mutex);
            log << "to=" << job.payload["to"].get<std::string>() << " template="
                << job.payload.value("template", "none") << " job=" << job.id << " attempt=" << job.attempts << "\n";
            log.flush();
            return jobqueue::Outcome::done();
        });
        std::cerr << "worker: running, Ctrl-C to stop\n";
        worker.run_until_signal();
        auto c = worker.counters();
        std::cerr << "worker: stopped; completed " << c.completed << ", retried " << c.retried << ", failed "
                  << c.failed << "\n";
    } catch (const jobqueue::Error& e) {
        std::cerr << "worker: " << e.what() << " (SQLSTATE " << e.sqlstate() << ")\n";
        return 2;
    }
    return 0;
}
