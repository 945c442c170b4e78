// worker_fixture.hpp: what the live tests of jobqueue::Worker share
// (worker_*_test.cpp, one program: jobqueue_worker_tests): the WorkerTest
// fixture, polls, SQL helpers, a record of the jobs a handler saw.
//
// Every test works on queues of its own (unique_queue) and removes its jobs
// and failed rows at the end. Waits are bounded polls for a condition,
// never assertions on how long something took.
#pragma once

#include <gtest/gtest.h>

#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <future>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "jobqueue/jobqueue.hpp"
#include "commit_cutter.hpp"
#include "test_support.hpp"

using namespace std::chrono_literals;
using jobqueue::Client;
using jobqueue::Job;
using jobqueue::JobContext;
using jobqueue::NewJob;
using jobqueue::Outcome;
using jobqueue::PushOptions;
using jobqueue::QueueStats;
using jobqueue::Worker;
using jobqueue::WorkerCounters;
using jobqueue::WorkerOptions;
using jobqueue::testing::lit;
using jobqueue::testing::restart_server;
using jobqueue::testing::sql_value;
using jobqueue::testing::unique_queue;

// Polls pred every step until it holds or timeout passes; true if it held.
inline bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout,
                       std::chrono::milliseconds step = 20ms) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        if (pred()) return true;
        if (std::chrono::steady_clock::now() >= deadline) return pred();
        std::this_thread::sleep_for(step);
    }
}

// The first row of a query on a fresh superuser connection, every column as
// text ("" for NULL); empty when there is no row.
inline std::vector<std::string> sql_row(const std::string& sql) {
    std::unique_ptr<PGconn, decltype(&PQfinish)> conn(PQconnectdb(""), &PQfinish);
    if (PQstatus(conn.get()) != CONNECTION_OK)
        throw std::runtime_error(std::string("cannot connect: ") + PQerrorMessage(conn.get()));
    std::unique_ptr<PGresult, decltype(&PQclear)> r(PQexec(conn.get(), sql.c_str()), &PQclear);
    if (PQresultStatus(r.get()) != PGRES_TUPLES_OK)
        throw std::runtime_error(sql + ": " + PQresultErrorMessage(r.get()));
    std::vector<std::string> row;
    if (PQntuples(r.get()) == 0) return row;
    for (int c = 0; c < PQnfields(r.get()); ++c) row.emplace_back(PQgetvalue(r.get(), 0, c));
    return row;
}

inline std::int64_t sql_int(const std::string& sql) { return std::stoll(sql_value(sql)); }

// Thread-safe record of the job ids a handler saw, with a count per id.
class Seen {
public:
    void add(std::int64_t id) {
        std::lock_guard<std::mutex> lock(m_);
        ++count_[id];
        ++total_;
    }
    int of(std::int64_t id) const {
        std::lock_guard<std::mutex> lock(m_);
        auto it = count_.find(id);
        return it == count_.end() ? 0 : it->second;
    }
    std::size_t distinct() const {
        std::lock_guard<std::mutex> lock(m_);
        return count_.size();
    }
    std::int64_t total() const {
        std::lock_guard<std::mutex> lock(m_);
        return total_;
    }
    std::map<std::int64_t, int> snapshot() const {
        std::lock_guard<std::mutex> lock(m_);
        return count_;
    }

private:
    mutable std::mutex m_;
    std::map<std::int64_t, int> count_;
    std::int64_t total_ = 0;
};

inline std::string describe(const WorkerCounters& c) {
    return "claimed=" + std::to_string(c.claimed) + " completed=" + std::to_string(c.completed) +
           " retried=" + std::to_string(c.retried) + " failed=" + std::to_string(c.failed) +
           " lost=" + std::to_string(c.lost) + " reconnects=" + std::to_string(c.reconnects);
}

class WorkerTest : public ::testing::Test {
protected:
    void SetUp() override { client_ = std::make_unique<Client>(); }

    // Removes every job and failed row of the queues this test made, on a
    // fresh connection (the test's own may have been cut by a restart).
    void TearDown() override {
        for (const auto& q : queues_) {
            try {
                Client c;
                (void)c.clear(q);
                sql_value("DELETE FROM queue_failed_jobs WHERE queue = " + lit(q));
                sql_value("DELETE FROM queue_settings WHERE queue = " + lit(q));
            } catch (const std::exception& e) {
                ADD_FAILURE() << "cleanup of queue " << q << " failed: " << e.what();
            }
        }
    }

    std::string make_queue(const std::string& prefix) {
        queues_.push_back(unique_queue("wt_" + prefix));
        return queues_.back();
    }

    // Options every test starts from: its own queue, quick polling and
    // reconnection so that nothing waits long.
    static WorkerOptions options(const std::string& queue, int threads = 2) {
        WorkerOptions o;
        o.queues = {queue};
        o.threads = threads;
        o.poll_interval = 200ms;
        o.max_reconnect_delay = 500ms;
        o.name = "worker_test:" + queue;
        return o;
    }

    static PushOptions on_queue(const std::string& queue, int max_attempts = 3) {
        PushOptions p;
        p.queue = queue;
        p.max_attempts = max_attempts;
        return p;
    }

    // The queue's row of queue_stats(), zeros when the queue has no jobs.
    static QueueStats stats_of(Client& c, const std::string& queue) {
        for (const auto& s : c.stats())
            if (s.queue == queue) return s;
        QueueStats none;
        none.queue = queue;
        return none;
    }

    static std::int64_t jobs_in(const std::string& queue) {
        return sql_int("SELECT count(*) FROM queue_jobs WHERE queue = " + lit(queue));
    }
    static std::int64_t failed_rows_of(const std::string& queue) {
        return sql_int("SELECT count(*) FROM queue_failed_jobs WHERE queue = " + lit(queue));
    }
    static bool is_failed(std::int64_t id) {
        return sql_int("SELECT count(*) FROM queue_failed_jobs WHERE id = " + std::to_string(id)) == 1;
    }

    // The failed row of a job, through the client.
    std::optional<jobqueue::FailedJob> failed_row(std::int64_t id) { return client_->failed_job(id); }

    std::unique_ptr<Client> client_;
    std::vector<std::string> queues_;
};
