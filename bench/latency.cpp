// bench/latency.cpp: time from a push's commit to the start of its handler.
//
//   jq_latency --mode notify|poll|shmem [--jobs 1000] [--rate 500]
//              [--poll-ms 100] [--queue bench_latency]
//
// Connection from the PG* environment.  One process, two parts:
//   - a Worker (the client library's runtime) with one handler thread on
//     the queue; its handler records, per job, the moment it starts;
//   - a producer thread pushing --jobs jobs at a steady --rate per second
//     with Client::push (autocommit: push returns after the commit), which
//     records the moment each push returned, i.e. just after its commit.
// Both clocks are the same steady_clock, so latency = handler start - commit
// return.  That slightly under-states the true commit-to-start time (the
// commit happens a little before push() returns, by about half a round trip);
// "from_send" (handler start - moment push() was called) is the upper bound.
//
// Modes:
//   notify  the worker LISTENs and waits for the NOTIFY wake-up (the queue's
//           notify setting on); polling every second only as a fallback.
//   poll    no LISTEN, the queue's notify setting off; the worker claims,
//           and when nothing is due sleeps --poll-ms before claiming again.
//   shmem   the worker waits inside queue_reserve(..., wait) and is woken
//           through shared memory when the push commits (library preloaded),
//           with NOTIFY off for the queue.
//
// Output: one line of key=value pairs (milliseconds), read by bench/run.sh.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_common.hpp"
#include "jobqueue/jobqueue.hpp"

namespace {

using bench::now_ns;
using bench::percentile;
using bench::Steady;

struct Options {
    std::string mode = "notify";
    int jobs = 1000;
    double rate = 500;
    int poll_ms = 100;
    std::string queue = "bench_latency";
};

[[noreturn]] void usage() {
    std::cerr << "usage: jq_latency --mode notify|poll|shmem [--jobs N] [--rate PER_SEC] [--poll-ms MS] [--queue Q]\n";
    std::exit(2);
}

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) usage();
            return argv[++i];
        };
        if (a == "--mode") o.mode = next();
        else if (a == "--jobs") o.jobs = std::stoi(next());
        else if (a == "--rate") o.rate = std::stod(next());
        else if (a == "--poll-ms") o.poll_ms = std::stoi(next());
        else if (a == "--queue") o.queue = next();
        else usage();
    }
    if (o.mode != "notify" && o.mode != "poll" && o.mode != "shmem") usage();
    if (o.jobs < 1 || o.rate <= 0 || o.poll_ms < 1) usage();
    return o;
}

}  // namespace

int main(int argc, char** argv) {
    const Options opt = parse(argc, argv);
    // notify: LISTEN / NOTIFY; poll: polling only; shmem: the worker waits
    // inside queue_reserve, woken through shared memory (library preloaded),
    // with NOTIFY off for the queue.
    const bool notify = opt.mode == "notify";
    const bool shmem = opt.mode == "shmem";
    const auto n = static_cast<std::size_t>(opt.jobs);

    try {
        jobqueue::Client admin;
        (void)admin.clear(opt.queue);
        admin.set_notify(opt.queue, notify);

        std::vector<std::atomic<std::int64_t>> sent(n), committed(n), started(n);
        for (std::size_t i = 0; i < n; ++i) sent[i] = committed[i] = started[i] = 0;
        std::atomic<std::size_t> handled{0};

        jobqueue::WorkerOptions wo;
        wo.queues = {opt.queue};
        wo.threads = 1;
        wo.wait_in_server = shmem;
        wo.use_notify = notify;
        // notify: the fallback poll stays at the runtime's default (1 s), so
        // the figure is the wake-up path, not polling.
        wo.poll_interval =
            notify || shmem ? std::chrono::milliseconds(1000) : std::chrono::milliseconds(opt.poll_ms);
        wo.lease = std::chrono::seconds(60);
        wo.name = "bench-latency";
        jobqueue::Worker worker(wo);
        worker.on_any([&](const jobqueue::Job& job, jobqueue::JobContext&) {
            const std::int64_t t = now_ns();
            const auto i = job.payload.at("i").get<std::size_t>();
            if (i < n && started[i] == 0) started[i] = t;
            ++handled;
            return jobqueue::Outcome::done();
        });
        worker.start();
        // Let the dispatcher connect, find the queue empty and LISTEN.
        std::this_thread::sleep_for(std::chrono::milliseconds(500));

        std::thread producer([&] {
            jobqueue::Client client;
            jobqueue::PushOptions po;
            po.queue = opt.queue;
            const auto period = std::chrono::nanoseconds(static_cast<std::int64_t>(1e9 / opt.rate));
            const auto t0 = Steady::now();
            for (std::size_t i = 0; i < n; ++i) {
                std::this_thread::sleep_until(t0 + period * static_cast<std::int64_t>(i));
                sent[i] = now_ns();
                (void)client.push("latency", nlohmann::json{{"i", i}}, po);
                committed[i] = now_ns();
            }
        });
        producer.join();

        const auto give_up = Steady::now() + std::chrono::seconds(15);
        while (handled < n && Steady::now() < give_up) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        worker.stop();

        std::vector<double> lat, from_send;
        int negative = 0;
        for (std::size_t i = 0; i < n; ++i) {
            if (started[i] == 0) continue;
            const double l = static_cast<double>(started[i] - committed[i]) / 1e6;
            if (l < 0) ++negative;
            lat.push_back(l);
            from_send.push_back(static_cast<double>(started[i] - sent[i]) / 1e6);
        }
        std::sort(lat.begin(), lat.end());
        std::sort(from_send.begin(), from_send.end());
        std::ostringstream out;
        out << std::fixed << std::setprecision(3) << "mode=" << opt.mode << " jobs=" << n << " handled=" << lat.size()
            << " rate=" << opt.rate << " p50_ms=" << percentile(lat, 50) << " p99_ms=" << percentile(lat, 99)
            << " max_ms=" << (lat.empty() ? 0 : lat.back()) << " min_ms=" << (lat.empty() ? 0 : lat.front())
            << " p50_from_send_ms=" << percentile(from_send, 50) << " p99_from_send_ms=" << percentile(from_send, 99)
            << " started_before_push_returned=" << negative;
        std::cout << out.str() << "\n";
        (void)admin.clear(opt.queue);
        return lat.size() == n ? 0 : 1;
    } catch (const std::exception& e) {
        std::cerr << "jq_latency: " << e.what() << "\n";
        return 1;
    }
}
