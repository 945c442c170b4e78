// client_fixture.hpp: what the live tests of jobqueue::Client share
// (client_*_test.cpp, one program: jobqueue_client_tests), against a live
// server with the extension (the standard PG* environment; a superuser in
// database postgres).
//
// Every test uses queues of its own (unique_queue) and the fixture deletes
// their jobs, failed rows and settings at the end. Times are compared with
// the server's clock, read before and after a call, never with the client's
// clock or with elapsed time. Tests that look at the whole failed table run
// in a transaction that locks it first, so other sessions cannot disturb the
// counts; they roll back.
#pragma once

#include <cstdlib>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <typeinfo>
#include <vector>

#include "test_support.hpp"

using namespace std::chrono_literals;
using jobqueue::Client;
using jobqueue::TimePoint;
using jobqueue::testing::lit;
using jobqueue::testing::sql_value;
using jobqueue::testing::unique_queue;


inline std::int64_t to_micros(TimePoint t) {
    return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

inline TimePoint from_micros(std::int64_t us) {
    return TimePoint(std::chrono::duration_cast<jobqueue::Clock::duration>(std::chrono::microseconds(us)));
}

// t lies in [lo, hi] (to the microsecond); failures print ISO times.
inline ::testing::AssertionResult between(TimePoint t, TimePoint lo, TimePoint hi) {
    if (to_micros(t) >= to_micros(lo) && to_micros(t) <= to_micros(hi)) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << jobqueue::format_time(t) << " is not within ["
                                         << jobqueue::format_time(lo) << ", " << jobqueue::format_time(hi) << "]";
}

struct PgConnCloser {
    void operator()(PGconn* c) const noexcept { PQfinish(c); }
};
using ConnPtr = std::unique_ptr<PGconn, PgConnCloser>;

inline ConnPtr connect_env() {
    ConnPtr c(PQconnectdb(""));
    if (PQstatus(c.get()) != CONNECTION_OK) throw std::runtime_error(PQerrorMessage(c.get()));
    return c;
}

// Calls op and returns the exception it threw (nullptr when none).
template <typename Op>
std::exception_ptr thrown_by(Op&& op) {
    try {
        op();
    } catch (...) {
        return std::current_exception();
    }
    return nullptr;
}

// The jobqueue::Error that op throws; fails the test when it throws
// something else or nothing. The result is the exception's dynamic type
// name, its SQLSTATE, and whether it is an E.
template <typename E, typename Op>
::testing::AssertionResult throws_with_state(Op&& op, const std::string& sqlstate) {
    try {
        op();
    } catch (const E& e) {
        if (!sqlstate.empty() && e.sqlstate() != sqlstate)
            return ::testing::AssertionFailure() << typeid(e).name() << " with sqlstate '" << e.sqlstate()
                                                 << "', expected '" << sqlstate << "': " << e.what();
        return ::testing::AssertionSuccess();
    } catch (const jobqueue::Error& e) {
        return ::testing::AssertionFailure() << "threw " << typeid(e).name() << " (sqlstate '" << e.sqlstate()
                                             << "'): " << e.what() << "; expected " << typeid(E).name();
    } catch (const std::exception& e) {
        return ::testing::AssertionFailure() << "threw a non-jobqueue exception: " << e.what();
    }
    return ::testing::AssertionFailure() << "threw nothing; expected " << typeid(E).name();
}

class ClientTest : public ::testing::Test {
public:
    ClientTest() : admin_(connect_env()) {}

    // The wake-up tests check NOTIFY per transaction, in commit order: every
    // connection of this program sends its own NOTIFY at commit, not a
    // coalesced one (coalescing is tested by tests/notify).
    static void SetUpTestSuite() {
        const char* options = std::getenv("PGOPTIONS");
        std::string value = options != nullptr ? std::string(options) + " " : std::string();
        value += "-c jobqueue.notify_coalesce=0";
        ::setenv("PGOPTIONS", value.c_str(), 1);
    }

    void TearDown() override {
        for (const auto& q : queues_) {
            sql("DELETE FROM queue_jobs WHERE queue = " + lit(q));
            sql("DELETE FROM queue_failed_jobs WHERE queue = " + lit(q));
            sql("DELETE FROM queue_settings WHERE queue = " + lit(q));
        }
    }

    // A queue of this test's own (cleaned up at the end).
    std::string queue(const std::string& prefix = "cq") {
        queues_.push_back(unique_queue(prefix));
        return queues_.back();
    }

    jobqueue::PushOptions on(const std::string& q) {
        jobqueue::PushOptions o;
        o.queue = q;
        return o;
    }

    // SQL on the fixture's own superuser connection.
    std::string sql(const std::string& s) { return sql_value(admin_.get(), s); }
    std::int64_t sql_int(const std::string& s) { return std::stoll(sql(s)); }
    bool sql_bool(const std::string& s) { return sql(s) == "t"; }

    // The server's clock, to the microsecond.
    TimePoint server_now() {
        return from_micros(sql_int("SELECT (extract(epoch from clock_timestamp()) * 1000000)::int8"));
    }
    // A time column of a job in queue_jobs.
    TimePoint job_time(std::int64_t id, const std::string& column) {
        return from_micros(sql_int("SELECT (extract(epoch from " + column + ") * 1000000)::int8 FROM queue_jobs WHERE id = " +
                                   std::to_string(id)));
    }
    std::string job_col(std::int64_t id, const std::string& column) {
        return sql("SELECT " + column + " FROM queue_jobs WHERE id = " + std::to_string(id));
    }
    bool job_null(std::int64_t id, const std::string& column) {
        return sql_bool("SELECT " + column + " IS NULL FROM queue_jobs WHERE id = " + std::to_string(id));
    }
    std::int64_t jobs_in(const std::string& q) {
        return sql_int("SELECT count(*) FROM queue_jobs WHERE queue = " + lit(q));
    }
    bool job_exists(std::int64_t id) {
        return sql_bool("SELECT EXISTS (SELECT 1 FROM queue_jobs WHERE id = " + std::to_string(id) + ")");
    }
    bool failed_exists(std::int64_t id) {
        return sql_bool("SELECT EXISTS (SELECT 1 FROM queue_failed_jobs WHERE id = " + std::to_string(id) + ")");
    }

    std::optional<jobqueue::FailedJob> failed_row(Client& c, std::int64_t id) { return c.failed_job(id); }

    // Waits for the first wake-up naming one of `mine` (others' are skipped).
    static std::optional<std::string> next_wakeup(Client& listener, const std::set<std::string>& mine,
                                                  std::chrono::milliseconds timeout = 10s) {
        auto end = std::chrono::steady_clock::now() + timeout;
        for (;;) {
            auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
            if (left.count() <= 0) return std::nullopt;
            auto got = listener.wait(left);
            if (!got) return std::nullopt;
            if (mine.count(*got)) return got;
        }
    }

    // Starts listening and drops whatever arrived before.
    static void listen_and_drain(Client& listener) {
        while (listener.wait(1ms)) {
        }
    }

    ConnPtr admin_;
    Client client;
    std::vector<std::string> queues_;
};
