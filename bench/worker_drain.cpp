// bench/worker_drain.cpp: the client library's worker runtime draining a
// backlog of no-op jobs.
//
//   jq_worker_drain --jobs N [--threads 8] [--queue default] [--timeout-secs 300]
//
// Connection from the PG* environment.  run.sh fills the queue with N jobs
// first; this starts a jobqueue::Worker (--threads handler threads, the
// runtime's defaults otherwise) whose handler does nothing, and measures the
// time from start() until it has completed N jobs (its own counters, polled
// every 5 ms).  Throughput = N / that time.
//
// Output: one line of key=value pairs; exit status 1 when the N jobs were not
// all completed within --timeout-secs.
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <string>
#include <thread>

#include "bench_common.hpp"
#include "jobqueue/jobqueue.hpp"

namespace {

struct Options {
    std::int64_t jobs = 0;
    int threads = 8;
    std::string queue = "default";
    int timeout_secs = 300;
};

[[noreturn]] void usage() {
    std::cerr << "usage: jq_worker_drain --jobs N [--threads N] [--queue Q] [--timeout-secs S]\n";
    std::exit(2);
}

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) usage();
            return argv[++i];
        };
        if (a == "--jobs") o.jobs = std::stoll(next());
        else if (a == "--threads") o.threads = std::stoi(next());
        else if (a == "--queue") o.queue = next();
        else if (a == "--timeout-secs") o.timeout_secs = std::stoi(next());
        else usage();
    }
    if (o.jobs < 1 || o.threads < 1 || o.timeout_secs < 1) usage();
    return o;
}

}  // namespace

int main(int argc, char** argv) {
    const Options opt = parse(argc, argv);
    try {
        jobqueue::WorkerOptions wo;
        wo.queues = {opt.queue};
        wo.threads = opt.threads;
        wo.name = "bench-drain";
        jobqueue::Worker worker(wo);
        worker.on_any([](const jobqueue::Job&, jobqueue::JobContext&) { return jobqueue::Outcome::done(); });

        const auto t0 = bench::Steady::now();
        const auto give_up = t0 + std::chrono::seconds(opt.timeout_secs);
        worker.start();
        std::int64_t done = 0;
        while ((done = worker.counters().completed) < opt.jobs && bench::Steady::now() < give_up)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        const double secs = std::chrono::duration<double>(bench::Steady::now() - t0).count();
        worker.stop();
        const auto c = worker.counters();
        std::cout << std::fixed << std::setprecision(3) << "threads=" << opt.threads << " jobs=" << opt.jobs
                  << " completed=" << done << " secs=" << secs << " rate=" << static_cast<double>(done) / secs
                  << " claimed=" << c.claimed << " failed=" << c.failed << " lost=" << c.lost
                  << " reconnects=" << c.reconnects << "\n";
        return done >= opt.jobs ? 0 : 1;
    } catch (const std::exception& e) {
        std::cerr << "jq_worker_drain: " << e.what() << "\n";
        return 1;
    }
}
