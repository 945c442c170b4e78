// internal_test.cpp: the library's internal helpers, with no server: the
// reconnection backoff, the worker's outage log and the UTF-8 counts.
#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "backoff.hpp"
#include "connection_log.hpp"
#include "utf8.hpp"

using namespace std::chrono_literals;

// Every pause lies in the upper half of its step; the steps double up to
// the largest and stay there.
TEST(Backoff, PausesStayWithinTheirDoublingStep) {
    jobqueue::Backoff backoff(100ms, 1000ms);
    const std::chrono::milliseconds steps[] = {100ms, 200ms, 400ms, 800ms, 1000ms, 1000ms, 1000ms};
    for (auto step : steps) {
        auto pause = backoff.next();
        EXPECT_GE(pause, step / 2) << "step " << step.count();
        EXPECT_LE(pause, step) << "step " << step.count();
    }
}

// The jitter is real: many backoffs from the same start do not all pause
// alike (the chance that 50 draws from 51 values all agree is nil).
TEST(Backoff, PausesAreJittered) {
    std::set<std::chrono::milliseconds::rep> first_pauses;
    for (int i = 0; i < 50; ++i) first_pauses.insert(jobqueue::Backoff(100ms, 1000ms).next().count());
    EXPECT_GT(first_pauses.size(), 1u);
    for (auto p : first_pauses) {
        EXPECT_GE(p, 50);
        EXPECT_LE(p, 100);
    }
}

TEST(Backoff, OddSettingsStayPositiveAndBounded) {
    jobqueue::Backoff tiny(0ms, 0ms);
    for (int i = 0; i < 5; ++i) EXPECT_LE(tiny.next(), 1ms);
    jobqueue::Backoff capped(500ms, 200ms);  // a first step over the largest is cut to it
    for (int i = 0; i < 5; ++i) {
        auto pause = capped.next();
        EXPECT_GE(pause, 100ms);
        EXPECT_LE(pause, 200ms);
    }
}

// Characters, as the server counts them, not bytes.
TEST(Utf8, LengthCountsCharacters) {
    EXPECT_EQ(jobqueue::utf8::length(""), 0u);
    EXPECT_EQ(jobqueue::utf8::length("abc"), 3u);
    EXPECT_EQ(jobqueue::utf8::length("h\xC3\xA9llo"), 5u);        // é: 2 bytes
    EXPECT_EQ(jobqueue::utf8::length("\xE2\x82\xAC\xF0\x9F\x98\x80"), 2u);  // €, 😀
}

TEST(Utf8, PrefixNeverCutsACharacter) {
    const std::string text = "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80z";  // a é € 😀 z
    EXPECT_EQ(jobqueue::utf8::prefix(text, 0), "");
    EXPECT_EQ(jobqueue::utf8::prefix(text, 1), "a");
    EXPECT_EQ(jobqueue::utf8::prefix(text, 2), "a\xC3\xA9");
    EXPECT_EQ(jobqueue::utf8::prefix(text, 4), "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
    EXPECT_EQ(jobqueue::utf8::prefix(text, 5), text);
    EXPECT_EQ(jobqueue::utf8::prefix(text, 99), text);
    EXPECT_EQ(jobqueue::utf8::prefix(std::string(300, 'x'), 200), std::string(200, 'x'));
}

TEST(Utf8, ValidReplacesEveryBadByte) {
    EXPECT_EQ(jobqueue::utf8::valid("ok \xC3\xA9"), "ok \xC3\xA9");
    EXPECT_EQ(jobqueue::utf8::valid("a\xFF" "b"), "a?b");
    EXPECT_EQ(jobqueue::utf8::valid("\xC3"), "?");                       // cut sequence
    EXPECT_EQ(jobqueue::utf8::valid("\xE0\x80\x80"), "???");             // overlong
    EXPECT_EQ(jobqueue::utf8::valid("\xED\xA0\x80"), "???");             // surrogate
    EXPECT_EQ(jobqueue::utf8::valid("\xF4\x90\x80\x80"), "????");        // over U+10FFFF
    EXPECT_EQ(jobqueue::utf8::valid(std::string("a\0b", 3)), "a?b");     // NUL
}

// ---- ConnectionLog: one line when an outage begins, one when it ends

namespace {

struct Lines {
    std::vector<std::string> lines;
    jobqueue::ConnectionLog log{[this](const std::string& line) { lines.push_back(line); }};

    [[nodiscard]] int starting(const std::string& prefix) const {
        int n = 0;
        for (const auto& line : lines) n += line.rfind(prefix, 0) == 0;
        return n;
    }
};

// Runs f on a thread of its own (the log tells threads apart), and waits.
template <typename F>
void on_thread(F&& f) {
    std::thread t(std::forward<F>(f));
    t.join();
}

}  // namespace

// Three threads lose the same server, each retries many times: one line
// when it went, one when the last of them is back, with the first error.
TEST(ConnectionLog, OneOutageOfManyThreadsIsTwoLines) {
    Lines out;
    const auto tag = out.log.generation();
    std::vector<std::thread> threads;
    for (int t = 0; t < 3; ++t)
        threads.emplace_back([&out, tag] {
            for (int retry = 0; retry < 20; ++retry) out.log.lost("server closed the connection", tag);
        });
    for (auto& t : threads) t.join();
    ASSERT_EQ(out.lines.size(), 1u);
    EXPECT_EQ(out.lines[0], "jobqueue worker: connection lost (server closed the connection); reconnecting");
    // two of the three are back: the outage goes on
    std::vector<std::thread> back;
    for (int t = 0; t < 2; ++t) back.emplace_back([&out] { out.log.working(); });
    for (auto& t : back) t.join();
    EXPECT_EQ(out.lines.size(), 1u);
    // successes of threads that never failed change nothing either
    on_thread([&out] { out.log.working(); });
    EXPECT_EQ(out.lines.size(), 1u);
}

TEST(ConnectionLog, TheLastThreadBackEndsTheOutage) {
    Lines out;
    const auto tag = out.log.generation();
    out.log.lost("gone", tag);  // this thread
    on_thread([&out, tag] {
        out.log.lost("gone too", tag);
        out.log.working();
    });
    EXPECT_EQ(out.starting("jobqueue worker: reconnected after "), 0);
    out.log.working();
    ASSERT_EQ(out.lines.size(), 2u);
    EXPECT_EQ(out.starting("jobqueue worker: connection lost (gone); reconnecting"), 1);
    EXPECT_EQ(out.lines[1].rfind("jobqueue worker: reconnected after ", 0), 0u) << out.lines[1];
    EXPECT_EQ(out.lines[1].substr(out.lines[1].size() - 2), " s");
}

// A thread that was idle through an outage finds its old connection broken
// only afterwards: the same outage, not a new line; if its new connection
// fails too, the server is gone again: a new outage.
TEST(ConnectionLog, AConnectionFromBeforeAnEndedOutageIsNotANewOutage) {
    Lines out;
    const auto before = out.log.generation();
    out.log.lost("restart", before);
    out.log.working();
    ASSERT_EQ(out.lines.size(), 2u);
    on_thread([&out, before] { out.log.lost("broken pipe", before); });
    EXPECT_EQ(out.lines.size(), 2u);
    const auto now = out.log.generation();
    EXPECT_GT(now, before);
    on_thread([&out, now] { out.log.lost("no server", now); });
    ASSERT_EQ(out.lines.size(), 3u);
    EXPECT_EQ(out.lines[2], "jobqueue worker: connection lost (no server); reconnecting");
}
