// bench/steady.cpp: a steady load — work arriving at a fixed rate while
// workers take it — from whatever state the table is in (run.sh starts it
// on a fresh, empty, never-analysed table).
//
//   jq_steady --push-script bench/scripts/push.sql
//             [--consumer sql --drain-script bench/scripts/drain_one.sql | --consumer runtime]
//             [--table queue_jobs] [--producers 4] [--rate 1500] [--workers 4]
//             [--secs 60] [--window 10] [--idle-ms 5] [--series FILE]
//
// Connection from the PG* environment.  Threads, each with its own connection:
//   - producers: --rate jobs per second in all, each producer an equal share
//     paced on a fixed schedule (job i at start + i * period, staggered
//     between producers), one job per transaction: the push script's
//     statement.  A producer that falls behind pushes as fast as it can
//     until it is back on schedule, so "pushed" against "offered" tells
//     whether the producers could keep the rate;
//   - consumers, either
//       sql:     --workers loops of the drain script's two statements, the
//                same as the pgbench drain (a claim of one job in its own
//                transaction, then its completion in another); a claim that
//                finds nothing sleeps --idle-ms (a worker that polls, rather
//                than one spinning on the 2 CPUs the producers need), or
//       runtime: the client library's Worker (jobqueue::Worker, --workers
//                handler threads, defaults otherwise) with a no-op handler;
//   - a monitor, once a second: the table's analyse and vacuum counts
//     (pg_stat_user_tables, summed over its partitions: needs the bench's
//     sql/setup.sql), and for the runtime its completed counter.
// Every claim that returns a job is timed (the claim statement's round trip)
// and kept with the second it started in.
//
// Output: one line of key=value pairs on stdout (the run's summary; latency
// in ms, "first"/"last" = the first/last --window seconds), and with --series
// a CSV of per-second figures.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench_common.hpp"
#include "jobqueue/jobqueue.hpp"
#include "pg_conn.hpp"
#include "pgbench_script.hpp"

namespace {

using bench::percentile;
using bench::Steady;

struct Options {
    std::string push_script;
    std::string drain_script;
    std::string consumer = "sql";
    std::string table = "queue_jobs";
    std::string queue = "default";  // the runtime consumer's queue
    int producers = 4;
    double rate = 1500;
    int workers = 4;
    int secs = 60;
    int window = 10;
    int idle_ms = 5;
    std::string series;
};

[[noreturn]] void usage() {
    std::cerr << "usage: jq_steady --push-script FILE [--consumer sql --drain-script FILE | --consumer runtime]\n"
                 "                 [--table T] [--queue Q] [--producers N] [--rate PER_SEC] [--workers N]\n"
                 "                 [--secs S] [--window S] [--idle-ms MS] [--series FILE]\n";
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
        if (a == "--push-script") o.push_script = next();
        else if (a == "--drain-script") o.drain_script = next();
        else if (a == "--consumer") o.consumer = next();
        else if (a == "--table") o.table = next();
        else if (a == "--queue") o.queue = next();
        else if (a == "--producers") o.producers = std::stoi(next());
        else if (a == "--rate") o.rate = std::stod(next());
        else if (a == "--workers") o.workers = std::stoi(next());
        else if (a == "--secs") o.secs = std::stoi(next());
        else if (a == "--window") o.window = std::stoi(next());
        else if (a == "--idle-ms") o.idle_ms = std::stoi(next());
        else if (a == "--series") o.series = next();
        else usage();
    }
    if (o.push_script.empty() || (o.consumer != "sql" && o.consumer != "runtime")) usage();
    if (o.consumer == "sql" && o.drain_script.empty()) usage();
    if (o.producers < 1 || o.rate <= 0 || o.workers < 1 || o.secs < 1 || o.window < 1 || o.idle_ms < 0) usage();
    if (o.window > o.secs) o.window = o.secs;
    return o;
}

// Per-second counters of the whole run (second k = [start + k s, start + k+1 s)).
class PerSecond {
public:
    explicit PerSecond(int secs) : counts_(static_cast<std::size_t>(secs)) {
        for (auto& c : counts_) c = 0;
    }
    void add(int second, std::int64_t n = 1) { counts_[clamp(second)] += n; }
    std::int64_t at(int second) const { return counts_[static_cast<std::size_t>(second)]; }
    std::int64_t total() const {
        std::int64_t t = 0;
        for (const auto& c : counts_) t += c;
        return t;
    }

private:
    std::size_t clamp(int second) const {
        if (second < 0) return 0;
        return std::min(static_cast<std::size_t>(second), counts_.size() - 1);
    }
    std::vector<std::atomic<std::int64_t>> counts_;
};

struct ClaimSample {
    int second;
    double ms;
};

// The first error of any thread (reported on stderr), and how many there were.
class Errors {
public:
    void record(const std::string& where, const std::exception& e) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (count_++ == 0) std::cerr << "jq_steady: " << where << ": " << e.what() << "\n";
    }
    int count() const {
        std::lock_guard<std::mutex> lock(mutex_);
        return count_;
    }

private:
    mutable std::mutex mutex_;
    int count_ = 0;
};

class SteadyLoad {
public:
    explicit SteadyLoad(Options o)
        : opt_(std::move(o)), pushed_(opt_.secs), completed_(opt_.secs), empty_claims_(opt_.secs),
          analyzes_(static_cast<std::size_t>(opt_.secs), 0), vacuums_(static_cast<std::size_t>(opt_.secs), 0) {
        const auto push = bench::read_pgbench_script(opt_.push_script);
        if (push.size() != 1) throw std::runtime_error(opt_.push_script + ": expected one statement");
        push_sql_ = push[0];
        if (opt_.consumer == "sql") {
            const auto drain = bench::read_pgbench_script(opt_.drain_script);
            if (drain.size() != 2) throw std::runtime_error(opt_.drain_script + ": expected a claim and a completion");
            claim_sql_ = drain[0];
            complete_sql_ = drain[1];
        }
    }

    void run() {
        // Connect everything before the clock starts.
        std::vector<std::unique_ptr<bench::PgConn>> producer_conns, worker_conns;
        for (int i = 0; i < opt_.producers; ++i) {
            producer_conns.push_back(std::make_unique<bench::PgConn>());
            producer_conns.back()->prepare("push", push_sql_, 0);
        }
        std::unique_ptr<jobqueue::Worker> runtime;
        if (opt_.consumer == "sql") {
            for (int i = 0; i < opt_.workers; ++i) {
                worker_conns.push_back(std::make_unique<bench::PgConn>());
                worker_conns.back()->prepare("claim", claim_sql_, 0);
                worker_conns.back()->prepare("complete", complete_sql_, 2);
            }
        } else {
            jobqueue::WorkerOptions wo;
            wo.queues = {opt_.queue};
            wo.threads = opt_.workers;
            wo.name = "bench-steady";
            runtime = std::make_unique<jobqueue::Worker>(wo);
            runtime->on_any([](const jobqueue::Job&, jobqueue::JobContext&) { return jobqueue::Outcome::done(); });
        }
        bench::PgConn monitor_conn;
        // summed over the table's partitions (bench_leaves: sql/setup.sql),
        // which autovacuum visits one by one
        monitor_conn.prepare("table_stats",
                             "SELECT coalesce(sum(analyze_count + autoanalyze_count), 0), "
                             "coalesce(sum(vacuum_count + autovacuum_count), 0) "
                             "FROM pg_catalog.pg_stat_user_tables WHERE relid IN (SELECT bench_leaves('" +
                                 opt_.table + "'))",
                             0);

        start_ = Steady::now();
        end_ = start_ + std::chrono::seconds(opt_.secs);
        std::vector<std::thread> threads;
        for (int i = 0; i < opt_.producers; ++i)
            threads.emplace_back([this, i, c = producer_conns[static_cast<std::size_t>(i)].get()] { produce(i, *c); });
        std::vector<std::vector<ClaimSample>> samples(worker_conns.size());
        for (std::size_t i = 0; i < worker_conns.size(); ++i)
            threads.emplace_back([this, &samples, i, c = worker_conns[i].get()] { consume(*c, samples[i]); });
        if (runtime) runtime->start();
        monitor(monitor_conn, runtime.get());
        for (auto& t : threads) t.join();
        if (runtime) {
            runtime_completed_total_ = runtime->counters().completed;
            runtime->stop();  // releases what it claimed and did not start
        }
        backlog_end_ = std::stoll(monitor_conn.query("SELECT count(*) FROM " + opt_.table));
        for (auto& s : samples) claims_.insert(claims_.end(), s.begin(), s.end());
    }

    void report(std::ostream& out) const {
        const auto pushed = pushed_.total();
        const auto completed = opt_.consumer == "sql" ? completed_.total() : runtime_completed_total_;
        std::int64_t backlog = 0, max_backlog = 0;
        for (int s = 0; s < opt_.secs; ++s) {
            backlog += pushed_.at(s) - completed_.at(s);
            max_backlog = std::max(max_backlog, backlog);
        }
        int first_analyze = -1;
        for (int s = 0; s < opt_.secs && first_analyze < 0; ++s)
            if (analyzes_[static_cast<std::size_t>(s)] > 0) first_analyze = s;
        const auto first = latencies(0, opt_.window);
        const auto last = latencies(opt_.secs - opt_.window, opt_.secs);
        out << std::fixed << std::setprecision(3) << "consumer=" << opt_.consumer << " secs=" << opt_.secs
            << " producers=" << opt_.producers << " workers=" << opt_.workers << " offered_rate=" << opt_.rate
            << " pushed=" << pushed << " push_rate=" << static_cast<double>(pushed) / opt_.secs
            << " push_ratio=" << static_cast<double>(pushed) / (opt_.rate * opt_.secs) << " completed=" << completed
            << " complete_rate=" << static_cast<double>(completed) / opt_.secs << " backlog_end=" << backlog_end_
            << " max_backlog=" << max_backlog << " claims=" << claims_.size()
            << " empty_claims=" << empty_claims_.total() << " first_claims=" << first.size()
            << " first_p50_ms=" << percentile(first, 50) << " first_p99_ms=" << percentile(first, 99)
            << " last_claims=" << last.size() << " last_p50_ms=" << percentile(last, 50)
            << " last_p99_ms=" << percentile(last, 99) << " analyzes=" << analyzes_.back()
            << " vacuums=" << vacuums_.back() << " first_analyze_sec=" << first_analyze
            << " errors=" << errors_.count() << "\n";
    }

    void write_series(const std::string& path) const {
        std::ofstream out(path);
        out << "second,pushed,completed,empty_claims,backlog,claim_p50_ms,claim_p99_ms,analyzes,vacuums\n";
        std::int64_t backlog = 0;
        out << std::fixed << std::setprecision(3);
        for (int s = 0; s < opt_.secs; ++s) {
            backlog += pushed_.at(s) - completed_.at(s);
            const auto lat = latencies(s, s + 1);
            out << s << "," << pushed_.at(s) << "," << completed_.at(s) << "," << empty_claims_.at(s) << ","
                << backlog << "," << percentile(lat, 50) << "," << percentile(lat, 99) << ","
                << analyzes_[static_cast<std::size_t>(s)] << "," << vacuums_[static_cast<std::size_t>(s)] << "\n";
        }
    }

    int errors() const { return errors_.count(); }

private:
    int second_of(Steady::time_point t) const {
        return static_cast<int>(std::chrono::duration_cast<std::chrono::seconds>(t - start_).count());
    }

    void produce(int index, bench::PgConn& conn) {
        const double each = opt_.rate / opt_.producers;
        const double period_ns = 1e9 / each;
        // staggered: producer i starts i/producers of a period later
        const double offset_ns = period_ns * index / opt_.producers;
        try {
            for (std::int64_t i = 0;; ++i) {
                const auto due = start_ + std::chrono::nanoseconds(std::llround(offset_ns + period_ns * i));
                if (due >= end_) break;
                std::this_thread::sleep_until(due);
                conn.run("push");
                pushed_.add(second_of(Steady::now()));
            }
        } catch (const std::exception& e) {
            errors_.record("producer", e);
        }
    }

    void consume(bench::PgConn& conn, std::vector<ClaimSample>& samples) {
        try {
            while (Steady::now() < end_) {
                const auto t0 = Steady::now();
                const auto claimed = conn.row("claim");  // id, token (0, 0 when nothing was due)
                const auto t1 = Steady::now();
                if (claimed.size() != 2) throw std::runtime_error("the claim returned no id, token row");
                if (claimed[0] == "0") {
                    empty_claims_.add(second_of(t0));
                    std::this_thread::sleep_for(std::chrono::milliseconds(opt_.idle_ms));
                    continue;
                }
                samples.push_back({second_of(t0), std::chrono::duration<double, std::milli>(t1 - t0).count()});
                conn.run("complete", claimed);
                completed_.add(second_of(Steady::now()));
            }
        } catch (const std::exception& e) {
            errors_.record("worker", e);
        }
    }

    // Once a second until the end: the table's analyse/vacuum counts, and
    // the runtime's completions of that second.
    void monitor(bench::PgConn& conn, jobqueue::Worker* runtime) {
        std::int64_t runtime_before = 0;
        for (int s = 0; s < opt_.secs; ++s) {
            std::this_thread::sleep_until(start_ + std::chrono::seconds(s + 1));
            try {
                const auto stats = conn.row("table_stats");
                if (stats.size() == 2) {
                    analyzes_[static_cast<std::size_t>(s)] = std::stoll(stats[0]);
                    vacuums_[static_cast<std::size_t>(s)] = std::stoll(stats[1]);
                }
            } catch (const std::exception& e) {
                errors_.record("monitor", e);
            }
            if (runtime) {
                const auto done = runtime->counters().completed;
                completed_.add(s, done - runtime_before);
                runtime_before = done;
            }
        }
    }

    // Sorted latencies of the claims that started in seconds [from, to).
    std::vector<double> latencies(int from, int to) const {
        std::vector<double> v;
        for (const auto& c : claims_)
            if (c.second >= from && c.second < to) v.push_back(c.ms);
        std::sort(v.begin(), v.end());
        return v;
    }

    Options opt_;
    std::string push_sql_, claim_sql_, complete_sql_;
    Steady::time_point start_, end_;
    PerSecond pushed_, completed_, empty_claims_;
    std::vector<std::int64_t> analyzes_, vacuums_;
    std::vector<ClaimSample> claims_;
    std::int64_t runtime_completed_total_ = 0;
    std::int64_t backlog_end_ = 0;
    Errors errors_;
};

}  // namespace

int main(int argc, char** argv) {
    const Options opt = parse(argc, argv);
    try {
        SteadyLoad load(opt);
        load.run();
        load.report(std::cout);
        if (!opt.series.empty()) load.write_series(opt.series);
        return load.errors() == 0 ? 0 : 1;
    } catch (const std::exception& e) {
        std::cerr << "jq_steady: " << e.what() << "\n";
        return 1;
    }
}
