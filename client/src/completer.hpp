// completer.hpp (internal): records the outcomes of finished jobs in batches.
//
// Handler threads hand each finished job's outcome to the completer and go
// on with the next job; the completer's thread records them with the batch
// calls (queue_delete_many, queue_release_many, queue_fail_many) once
// batch_size outcomes are waiting or the oldest has waited flush_interval.
// Every call is fenced per job by its token, so a job whose claim was lost
// is simply missing from the ids the server returns, and is counted lost.
//
// Each call runs in a transaction of its own whose id is noted before its
// COMMIT: when the answer to the COMMIT is lost, the completer asks the
// server (on a new connection) whether that transaction committed, and so
// counts every outcome exactly once, even then. Its lost connections and
// its successes are told to the worker's ConnectionLog, like every thread's.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "connection_log.hpp"
#include "jobqueue/client.hpp"
#include "jobqueue/worker.hpp"

namespace jobqueue {

class Completer {
public:
    struct Settings {
        ClientOptions connection;
        int batch_size = 100;  // outcomes per call, at most the server's 10,000
        std::chrono::milliseconds flush_interval{2};
        std::chrono::milliseconds max_reconnect_delay{std::chrono::seconds(5)};
    };
    // What a flush recorded; lost: the claim was lost, the server refused the
    // call, or the completer gave up at its stop deadline.
    struct Tally {
        std::int64_t completed = 0;
        std::int64_t retried = 0;
        std::int64_t failed = 0;
        std::int64_t lost = 0;
        std::int64_t reconnects = 0;
    };
    using Count = std::function<void(const Tally&)>;
    using Report = std::function<void(const char* what, const Error&)>;

    Completer(Settings settings, ConnectionLog& connections, Count count, Report report);
    ~Completer();
    Completer(const Completer&) = delete;
    Completer& operator=(const Completer&) = delete;

    void start();
    // Buffer a finished job's outcome; never waits for the server.
    void add(std::int64_t id, std::int64_t token, const Outcome& outcome);
    // Record every buffered outcome, then end the thread. A lost connection
    // is retried until deadline (at least one try each); outcomes still not
    // recorded then are counted lost (their jobs come back after their lease).
    void stop(std::chrono::steady_clock::time_point deadline);

private:
    struct Finished {
        Claim claim;
        Outcome outcome;
    };
    // The finished jobs one call records: one kind, delay and error.
    struct Group {
        Outcome::Kind kind;
        std::optional<std::chrono::milliseconds> delay;
        std::string error;
        std::vector<Claim> claims;
    };

    void loop();
    void flush(std::vector<Finished>& batch);
    // The ids the server acted on; none when it refused the call or the
    // completer gave up.
    std::optional<std::vector<std::int64_t>> record(const Group& group, Tally& tally);
    std::vector<std::int64_t> send(Client& client, const Group& group);
    // The thread's connection, opened or re-opened when broken; tag is set
    // to the generation it was opened in (before opening: a failure to
    // connect carries the current one).
    Client& connection(ConnectionLog::Generation& tag);
    // Sleeps before the next try; false once the stop deadline has passed.
    bool pause(std::chrono::milliseconds span);

    const Settings settings_;
    ConnectionLog& connections_;
    const Count count_;
    const Report report_;
    std::optional<Client> client_;  // the completer thread's own
    ConnectionLog::Generation opened_ = 0;  // client_'s generation

    std::mutex mutex_;
    std::condition_variable changed_;
    std::vector<Finished> buffer_;
    std::chrono::steady_clock::time_point oldest_;  // when buffer_'s first outcome came
    bool stopping_ = false;
    std::chrono::steady_clock::time_point give_up_at_ = std::chrono::steady_clock::time_point::max();
    std::thread thread_;
};

}  // namespace jobqueue
