// bench/statements.cpp: what the pooler-safe way of sending statements costs.
//
//   jq_statements [--calls 300] [--rounds 31] [--queue bench_statements]
//
// Connection from the PG* environment. Two Clients on the same server, one
// per way of sending the client's statements:
//   named    PoolerMode::session: each statement prepared once per
//            connection, then executed by name (the default on a direct
//            connection);
//   unnamed  PoolerMode::transaction: each call sends its SQL with its
//            parameters (PQexecParams), parsed and planned on every call
//            (what a transaction-pooling pooler needs).
// Each round runs, for each way in turn (the order alternates between
// rounds, so that drift of a loaded machine hits both alike), --calls times
// each operation, one client, one call at a time, autocommit:
//   push      Client::push of a small job;
//   claim     Client::reserve_one then Client::complete of that job (the
//             jobs the push phase just made);
//   pending   Client::pending, a read.
// The figure of a round is the mean time of one operation in microseconds.
//
// Output: one line per operation and way, key=value: median, min and max of
// the rounds' figures; then the ratio unnamed/named of the medians, and the
// median, min and max of the per-round ratios (each round's two figures were
// measured back to back, so their ratio is the steadier figure on a busy
// machine).
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <iomanip>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "jobqueue/jobqueue.hpp"

namespace {

using Steady = std::chrono::steady_clock;

struct Options {
    int calls = 300;
    int rounds = 31;
    std::string queue = "bench_statements";
};

[[noreturn]] void usage() {
    std::cerr << "usage: jq_statements [--calls N] [--rounds N] [--queue Q]\n";
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
        if (a == "--calls") o.calls = std::stoi(next());
        else if (a == "--rounds") o.rounds = std::stoi(next());
        else if (a == "--queue") o.queue = next();
        else usage();
    }
    if (o.calls < 1 || o.rounds < 1) usage();
    return o;
}

// Mean microseconds of one op over calls runs.
double time_per_call(int calls, const std::function<void(int)>& op) {
    auto start = Steady::now();
    for (int i = 0; i < calls; ++i) op(i);
    return std::chrono::duration<double, std::micro>(Steady::now() - start).count() / calls;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    std::size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// One round of every operation on one client: figure per operation.
std::map<std::string, double> round_of(jobqueue::Client& client, const Options& o) {
    std::map<std::string, double> out;
    jobqueue::PushOptions push{o.queue};
    out["push"] = time_per_call(o.calls, [&](int i) { (void)client.push("bench", {{"n", i}}, push); });
    out["claim"] = time_per_call(o.calls, [&](int) {
        auto job = client.reserve_one({o.queue});
        if (!job || !client.complete(*job)) throw std::runtime_error("claim: no job to claim and complete");
    });
    out["pending"] = time_per_call(o.calls, [&](int) { (void)client.pending(o.queue); });
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    Options o = parse(argc, argv);
    try {
        jobqueue::Client named(jobqueue::ClientOptions{"", "", jobqueue::PoolerMode::session});
        jobqueue::Client unnamed(jobqueue::ClientOptions{"", "", jobqueue::PoolerMode::transaction});
        (void)named.clear(o.queue);
        // warm-up: connections' caches, the statements prepared, WAL segments
        Options warm = o;
        warm.calls = std::max(50, o.calls / 10);
        round_of(named, warm);
        round_of(unnamed, warm);

        std::map<std::string, std::vector<double>> figures;  // "<way>.<op>" -> per round
        std::map<std::string, std::vector<double>> ratios;   // op -> per round unnamed/named
        for (int r = 0; r < o.rounds; ++r) {
            std::map<std::string, double> a, b;
            if (r % 2 == 0) {
                a = round_of(named, o);
                b = round_of(unnamed, o);
            } else {
                b = round_of(unnamed, o);
                a = round_of(named, o);
            }
            for (const auto& [op, us] : a) {
                figures["named." + op].push_back(us);
                figures["unnamed." + op].push_back(b[op]);
                ratios[op].push_back(b[op] / us);
            }
            std::cerr << "round " << r + 1 << "/" << o.rounds << " done\n";
        }
        std::cout << std::fixed << std::setprecision(1);
        for (const char* op : {"push", "claim", "pending"}) {
            for (const char* way : {"named", "unnamed"}) {
                const auto& v = figures[std::string(way) + "." + op];
                std::cout << "op=" << op << " way=" << way << " calls=" << o.calls << " rounds=" << o.rounds
                          << " median_us=" << median(v) << " min_us=" << *std::min_element(v.begin(), v.end())
                          << " max_us=" << *std::max_element(v.begin(), v.end()) << "\n";
            }
            const auto& rv = ratios[op];
            std::cout << std::setprecision(3) << "op=" << op << " ratio_unnamed_over_named="
                      << median(figures[std::string("unnamed.") + op]) / median(figures[std::string("named.") + op])
                      << " round_ratio_median=" << median(rv)
                      << " round_ratio_min=" << *std::min_element(rv.begin(), rv.end())
                      << " round_ratio_max=" << *std::max_element(rv.begin(), rv.end()) << "\n"
                      << std::setprecision(1);
        }
        (void)named.clear(o.queue);
    } catch (const std::exception& e) {
        std::cerr << "jq_statements: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
