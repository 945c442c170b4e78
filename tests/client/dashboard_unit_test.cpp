// dashboard_unit_test.cpp: the parts of `jobqueue dashboard` that need no
// server: credentials and their check, the cross-site checks, the guard
// every request passes, --listen, the Prometheus text, the rates, and the
// HTTP statuses of errors.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "auth.hpp"
#include "cross_site.hpp"
#include "http_errors.hpp"
#include "listen_address.hpp"
#include "metrics.hpp"
#include "prometheus.hpp"
#include "rates.hpp"
#include "request_guard.hpp"
#include "request_head.hpp"
#include "secrets.hpp"

using namespace jobqueue::dashboard;
using namespace std::chrono_literals;
using jobqueue::QueueCounters;
using jobqueue::QueueOverview;
using jobqueue::TimePoint;

namespace {

TimePoint at_seconds(double s) {
    return TimePoint(std::chrono::duration_cast<jobqueue::Clock::duration>(std::chrono::duration<double>(s)));
}

QueueCounters counters(const std::string& queue, std::int64_t pushed, std::int64_t completed) {
    QueueCounters c;
    c.queue = queue;
    c.pushed = pushed;
    c.completed = completed;
    return c;
}

}  // namespace

// ---------------------------------------------------------------- secrets

TEST(Secrets, RandomHexHasTheLengthAndDiffers) {
    auto a = random_hex(32), b = random_hex(32);
    EXPECT_EQ(a.size(), 64u);
    EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
    EXPECT_NE(a, b);
}

TEST(Secrets, ConstantTimeEqual) {
    EXPECT_TRUE(constant_time_equal("", ""));
    EXPECT_TRUE(constant_time_equal("s3cret", "s3cret"));
    EXPECT_FALSE(constant_time_equal("s3cret", "s3creT"));
    EXPECT_FALSE(constant_time_equal("s3cret", "s3cre"));   // a prefix is not equal
    EXPECT_FALSE(constant_time_equal("s3cre", "s3cret"));
    EXPECT_FALSE(constant_time_equal("", "x"));
    EXPECT_FALSE(constant_time_equal(std::string("a\0b", 3), std::string("a\0c", 3)));
}

// ---------------------------------------------------------------- credentials

TEST(Credentials, BasicAndBearer) {
    auto basic = parse_credentials("basic ops:correct horse\n");
    EXPECT_EQ(basic.scheme, Credentials::Scheme::basic);
    EXPECT_EQ(basic.secret, "ops:correct horse");
    auto bearer = parse_credentials("  Bearer abc-DEF_123.~+/=  \r\n");
    EXPECT_EQ(bearer.scheme, Credentials::Scheme::bearer);
    EXPECT_EQ(bearer.secret, "abc-DEF_123.~+/=");
    EXPECT_EQ(parse_credentials("BASIC a:b").scheme, Credentials::Scheme::basic);
}

TEST(Credentials, RefusedWithoutTellingTheSecret) {
    for (const std::string bad : {"", "\n", "s3cret", "basic", "basic s3cret", "basic :s3cret", "basic ops:",
                                  "bearer s3cret token", "bearer s3cret\"", "digest s3cret", "bearer s3cret\nsecond"}) {
        try {
            parse_credentials(bad);
            ADD_FAILURE() << "accepted: " << bad;
        } catch (const std::invalid_argument& e) {
            EXPECT_EQ(std::string(e.what()).find("s3cret"), std::string::npos) << e.what();
        }
    }
}

TEST(Credentials, Base64Decode) {
    // RFC 4648 section 10
    EXPECT_EQ(base64_decode(""), "");
    EXPECT_EQ(base64_decode("Zg=="), "f");
    EXPECT_EQ(base64_decode("Zm8="), "fo");
    EXPECT_EQ(base64_decode("Zm9v"), "foo");
    EXPECT_EQ(base64_decode("Zm9vYg=="), "foob");
    EXPECT_EQ(base64_decode("Zm9vYmE="), "fooba");
    EXPECT_EQ(base64_decode("Zm9vYmFy"), "foobar");
    EXPECT_FALSE(base64_decode("Zm9"));     // not a multiple of 4
    EXPECT_FALSE(base64_decode("Zm=v"));    // padding inside
    EXPECT_FALSE(base64_decode("Zg==Zg==")); // padding before the end
    EXPECT_FALSE(base64_decode("Zm9*"));
}

TEST(Credentials, AuthorizationHeader) {
    auto basic = parse_credentials("basic ops:pw");
    // base64("ops:pw") = b3BzOnB3
    EXPECT_TRUE(authorized(basic, "Basic b3BzOnB3"));
    EXPECT_TRUE(authorized(basic, "basic   b3BzOnB3 "));
    EXPECT_FALSE(authorized(basic, "Basic b3BzOnB4"));  // ops:px
    EXPECT_FALSE(authorized(basic, "Bearer ops:pw"));
    EXPECT_FALSE(authorized(basic, "Basic"));
    EXPECT_FALSE(authorized(basic, ""));
    EXPECT_FALSE(authorized(basic, "Basic not*base64"));

    auto bearer = parse_credentials("bearer t0ken");
    EXPECT_TRUE(authorized(bearer, "Bearer t0ken"));
    EXPECT_FALSE(authorized(bearer, "Bearer t0ke"));
    EXPECT_FALSE(authorized(bearer, "Bearer t0ken2"));
    EXPECT_FALSE(authorized(bearer, "Basic dDBrZW4="));  // the token, base64'd as basic
    EXPECT_NE(challenge(basic).find("Basic"), std::string::npos);
    EXPECT_NE(challenge(bearer).find("Bearer"), std::string::npos);
}

// ---------------------------------------------------------------- cross-site checks

TEST(CrossSite, SameOrigin) {
    const std::string host = "127.0.0.1:7070";
    EXPECT_TRUE(same_origin(host, "http://127.0.0.1:7070", ""));
    EXPECT_TRUE(same_origin(host, "https://127.0.0.1:7070", ""));  // behind a TLS proxy
    EXPECT_TRUE(same_origin("Dash.Example:80", "http://dash.example:80", ""));
    EXPECT_FALSE(same_origin(host, "http://127.0.0.1:7071", ""));
    EXPECT_FALSE(same_origin(host, "http://evil.example", ""));
    EXPECT_FALSE(same_origin(host, "null", ""));
    EXPECT_FALSE(same_origin(host, "ftp://127.0.0.1:7070", ""));
    EXPECT_FALSE(same_origin(host, "", ""));
    EXPECT_FALSE(same_origin("", "http://127.0.0.1:7070", ""));
    // the Origin decides when there is one, even with a matching Referer
    EXPECT_FALSE(same_origin(host, "http://evil.example", "http://127.0.0.1:7070/"));
    // no Origin: the Referer's origin
    EXPECT_TRUE(same_origin(host, "", "http://127.0.0.1:7070/#/failed"));
    EXPECT_TRUE(same_origin(host, "", "http://127.0.0.1:7070?x"));
    EXPECT_FALSE(same_origin(host, "", "http://127.0.0.1:7070.evil.example/"));
    EXPECT_FALSE(same_origin(host, "", "http://127.0.0.1:7070@evil.example/"));
    EXPECT_FALSE(same_origin(host, "", "http://evil.example/?http://127.0.0.1:7070/"));
}

TEST(CrossSite, LoopbackHostHeader) {
    for (const char* good : {"localhost", "localhost:7070", "LOCALHOST:7070", "127.0.0.1", "127.0.0.1:7070",
                             "127.1.2.3:80", "[::1]", "[::1]:7070"})
        EXPECT_TRUE(loopback_host_header(good)) << good;
    for (const char* bad : {"", "evil.example", "evil.example:7070", "127.0.0.1.evil.example", "localhost.evil.example",
                            "localhost:70x", "localhost:", "[::1", "[::1]x", "[::2]:7070", "10.0.0.1:7070", "0.0.0.0:7070"})
        EXPECT_FALSE(loopback_host_header(bad)) << bad;
}

// --allow-host: loopback hosts always, the names given (any case, any port,
// IPv6 addresses with or without brackets), nothing else.
TEST(CrossSite, AllowedHostHeader) {
    std::vector<std::string> allowed = {"jobs.example", "10.9.8.7", "[fd00::5]", "Upper.Example"};
    for (const char* good : {"jobs.example", "JOBS.example:7070", "10.9.8.7:80", "[fd00::5]:7070", "upper.example",
                             "localhost:7070", "127.0.0.1", "[::1]"})
        EXPECT_TRUE(allowed_host_header(good, allowed)) << good;
    for (const char* bad : {"", "evil.example", "jobs.example.evil", "x.jobs.example", "jobs.example:", "jobs.example:7x",
                            "10.9.8.77", "[fd00::6]", "[fd00::5", "fd00::5"})
        EXPECT_FALSE(allowed_host_header(bad, allowed)) << bad;
    EXPECT_FALSE(allowed_host_header("jobs.example", {}));
    EXPECT_TRUE(allowed_host_header("localhost", {}));
}

// ---------------------------------------------------------------- request heads

namespace {
HeadState judge(const std::string& bytes, HeadLimits limits = HeadLimits{}) {
    return judge_head(bytes.data(), bytes.size(), limits);
}
}  // namespace

TEST(RequestHead, CompleteIncompleteTooLarge) {
    EXPECT_EQ(judge(""), HeadState::incomplete);
    EXPECT_EQ(judge("GET / HTTP/1.1\r\n"), HeadState::incomplete);
    EXPECT_EQ(judge("GET / HTTP/1.1\r\nHost: a\r\n"), HeadState::incomplete);
    EXPECT_EQ(judge("GET / HTTP/1.1\r\nHost: a\r\n\r"), HeadState::incomplete);
    EXPECT_EQ(judge("GET / HTTP/1.1\r\nHost: a\r\n\r\n"), HeadState::complete);
    EXPECT_EQ(judge("GET / HTTP/1.1\r\n\r\n"), HeadState::complete);
    // a body, or the next request, after the head
    EXPECT_EQ(judge("POST / HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}GET"), HeadState::complete);
    // a bare "\n" line does not end a head for httplib, nor here
    EXPECT_EQ(judge("GET / HTTP/1.1\r\nHost: a\r\n\n"), HeadState::incomplete);
    std::string head = "GET / HTTP/1.1\r\n";
    for (int i = 0; i < 100; ++i) head += "X-" + std::to_string(i) + ": x\r\n";
    EXPECT_EQ(judge(head + "\r\n"), HeadState::complete);  // 100 header lines: the most
    EXPECT_EQ(judge(head + "X-100: x\r\n"), HeadState::too_large);
    std::string big = "GET / HTTP/1.1\r\n";
    while (big.size() < 64 * 1024) big += "X-Long: " + std::string(7000, 'y') + "\r\n";
    EXPECT_EQ(judge(big), HeadState::too_large);
    EXPECT_EQ(judge(std::string(64 * 1024, 'a')), HeadState::too_large);  // no line end at all
    EXPECT_EQ(judge(std::string(64 * 1024 - 1, 'a')), HeadState::incomplete);
}

// ---------------------------------------------------------------- --listen

TEST(ListenAddress, Parse) {
    auto a = parse_listen_address("127.0.0.1:7070");
    EXPECT_EQ(a.host, "127.0.0.1");
    EXPECT_EQ(a.port, 7070);
    auto b = parse_listen_address("[::1]:8080");
    EXPECT_EQ(b.host, "::1");
    EXPECT_EQ(b.port, 8080);
    EXPECT_EQ(parse_listen_address("0.0.0.0:1").port, 1);
    EXPECT_EQ(parse_listen_address("localhost:65535").host, "localhost");
    for (const char* bad : {"", "7070", "127.0.0.1", "127.0.0.1:", ":7070", "127.0.0.1:0", "127.0.0.1:65536",
                            "127.0.0.1:70x", "::1:7070", "[::1]7070", "[::1]:", "127.0.0.1:123456"})
        EXPECT_THROW(parse_listen_address(bad), std::invalid_argument) << bad;
}

TEST(ListenAddress, Loopback) {
    for (const char* host : {"127.0.0.1", "127.255.0.9", "::1", "localhost"}) EXPECT_TRUE(is_loopback(host)) << host;
    for (const char* host : {"0.0.0.0", "::", "10.1.2.3", "192.168.0.1", "128.0.0.1", "example.org", ""})
        EXPECT_FALSE(is_loopback(host)) << host;
}

// ---------------------------------------------------------------- the request guard

namespace {

GuardSettings settings() {
    GuardSettings s;
    s.page_token = "feedface";
    return s;
}

// A well-formed action from the page.
RequestFacts action() {
    RequestFacts r;
    r.method = "POST";
    r.path = "/api/actions/pause";
    r.host = "127.0.0.1:7070";
    r.origin = "http://127.0.0.1:7070";
    r.token = "feedface";
    r.content_type = "application/json";
    return r;
}

int status_of(const RequestFacts& r, const GuardSettings& s) {
    auto rejection = check_request(r, s);
    return rejection ? rejection->status : 0;
}

}  // namespace

TEST(RequestGuard, ThePagesOwnActionPasses) {
    EXPECT_EQ(status_of(action(), settings()), 0);
    auto r = action();
    r.content_type = "application/json; charset=utf-8";
    EXPECT_EQ(status_of(r, settings()), 0);
    r.origin = "";
    r.referer = "http://127.0.0.1:7070/#/failed";
    EXPECT_EQ(status_of(r, settings()), 0);
}

TEST(RequestGuard, ActionsArePostOnly) {
    for (const char* method : {"GET", "HEAD", "PUT", "DELETE", "PATCH", "OPTIONS"}) {
        auto r = action();
        r.method = method;
        EXPECT_EQ(status_of(r, settings()), 405) << method;
    }
}

TEST(RequestGuard, CrossSiteActionsAreRefused) {
    auto r = action();
    r.origin = "http://evil.example";
    EXPECT_EQ(status_of(r, settings()), 403);
    r = action();
    r.origin = "";
    EXPECT_EQ(status_of(r, settings()), 403);  // neither Origin nor Referer
    r = action();
    r.token = "";
    EXPECT_EQ(status_of(r, settings()), 403);
    r.token = "feedfac";
    EXPECT_EQ(status_of(r, settings()), 403);
    r = action();
    r.content_type = "text/plain";  // what a form of another site can send
    EXPECT_EQ(status_of(r, settings()), 415);
    auto s = settings();
    s.page_token = "";  // no token configured never means "any token"
    r = action();
    r.token = "";
    EXPECT_EQ(status_of(r, s), 403);
}

TEST(RequestGuard, ReadOnlyRefusesEveryAction) {
    auto s = settings();
    s.read_only = true;
    EXPECT_EQ(status_of(action(), s), 403);
    RequestFacts read;
    read.method = "GET";
    read.path = "/api/overview";
    read.host = "127.0.0.1:7070";
    EXPECT_EQ(status_of(read, s), 0);
}

TEST(RequestGuard, CredentialsComeFirst) {
    auto s = settings();
    s.credentials = parse_credentials("bearer t0ken");
    RequestFacts read;
    read.method = "GET";
    read.path = "/metrics";
    read.host = "127.0.0.1:7070";
    EXPECT_EQ(status_of(read, s), 401);
    read.authorization = "Bearer t0ken";
    EXPECT_EQ(status_of(read, s), 0);
    auto r = action();  // a perfect action without credentials
    EXPECT_EQ(status_of(r, s), 401);
    r.authorization = "Bearer t0ken";
    EXPECT_EQ(status_of(r, s), 0);
}

TEST(RequestGuard, LoopbackDashboardAnswersLoopbackHostsOnly) {
    RequestFacts read;
    read.method = "GET";
    read.path = "/";
    read.host = "rebound.evil.example:7070";
    EXPECT_EQ(status_of(read, settings()), 403);
    auto s = settings();
    s.loopback_only = false;  // bound to 0.0.0.0: any Host
    EXPECT_EQ(status_of(read, s), 0);
}

// --allow-host (bound to 0.0.0.0 with --insecure-no-auth): the names given
// and loopback ones, before anything else is looked at.
TEST(RequestGuard, AllowedHostsOnly) {
    auto s = settings();
    s.loopback_only = false;
    s.allowed_hosts = {"jobs.example"};
    RequestFacts read;
    read.method = "GET";
    read.path = "/api/overview";
    read.host = "rebound.evil.example:7070";
    EXPECT_EQ(status_of(read, s), 403);
    read.host = "jobs.example:7070";
    EXPECT_EQ(status_of(read, s), 0);
    read.host = "localhost:7070";
    EXPECT_EQ(status_of(read, s), 0);
    auto a = action();
    a.host = "evil.example";
    a.origin = "http://evil.example";
    EXPECT_EQ(status_of(a, s), 403);
}

// ---------------------------------------------------------------- Prometheus text

TEST(Prometheus, Escaping) {
    EXPECT_EQ(escape_label_value("plain"), "plain");
    EXPECT_EQ(escape_label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    EXPECT_EQ(escape_help("a \"quoted\" \\ help\nline"), "a \"quoted\" \\\\ help\\nline");
    EXPECT_EQ(format_value(1.5), "1.5");
    EXPECT_EQ(format_value(0.1), "0.1");
    EXPECT_EQ(format_value(-2), "-2");
    EXPECT_EQ(format_value(1.0 / 0.0), "+Inf");
    EXPECT_EQ(format_value(-1.0 / 0.0), "-Inf");
    EXPECT_EQ(format_value(0.0 / 0.0), "NaN");
}

TEST(Prometheus, FamiliesAndSamples) {
    PrometheusText text;
    text.family("x_total", "counter", "Things.");
    text.sample("x_total", {{"queue", "q\"1"}, {"state", "a"}}, std::int64_t{3});
    text.sample("x_total", {}, 0.25);
    EXPECT_EQ(text.text(),
              "# HELP x_total Things.\n"
              "# TYPE x_total counter\n"
              "x_total{queue=\"q\\\"1\",state=\"a\"} 3\n"
              "x_total 0.25\n");
}

TEST(Metrics, DatabaseDownIsUpZeroAlone) {
    MetricsSnapshot down;
    EXPECT_EQ(render_metrics(down, at_seconds(0)),
              "# HELP jobqueue_up Whether the dashboard reached the database (1) or not (0).\n"
              "# TYPE jobqueue_up gauge\njobqueue_up 0\n");
}

TEST(Metrics, GaugesAndCounters) {
    MetricsSnapshot s;
    s.up = true;
    QueueOverview q;
    q.queue = "we\"ird\\\nname";
    q.pending = 7;
    q.delayed = 1;
    q.reserved = 2;
    q.failed = 3;
    q.paused = true;
    q.oldest_pending_at = at_seconds(100);
    s.queues = {q};
    s.failed_total = 9;
    std::string without = render_metrics(s, at_seconds(130.5));
    EXPECT_NE(without.find("jobqueue_up 1\n"), std::string::npos);
    EXPECT_NE(without.find("jobqueue_jobs{queue=\"we\\\"ird\\\\\\nname\",state=\"pending\"} 7\n"), std::string::npos)
        << without;
    EXPECT_NE(without.find("state=\"failed\"} 3\n"), std::string::npos);
    EXPECT_NE(without.find("jobqueue_queue_paused{queue=\"we\\\"ird\\\\\\nname\"} 1\n"), std::string::npos);
    EXPECT_NE(without.find("jobqueue_oldest_pending_age_seconds{queue=\"we\\\"ird\\\\\\nname\"} 30.5\n"),
              std::string::npos);
    EXPECT_NE(without.find("jobqueue_failed_jobs 9\n"), std::string::npos);
    EXPECT_EQ(without.find("_total"), std::string::npos);  // no counters: no counter families

    QueueCounters c = counters("q", 10, 8);
    c.claimed = 9;
    c.failed = 1;
    s.counters = std::vector<QueueCounters>{c};
    std::string with = render_metrics(s, at_seconds(130.5));
    EXPECT_NE(with.find("# TYPE jobqueue_jobs_pushed_total counter\njobqueue_jobs_pushed_total{queue=\"q\"} 10\n"),
              std::string::npos);
    EXPECT_NE(with.find("jobqueue_jobs_completed_total{queue=\"q\"} 8\n"), std::string::npos);
    EXPECT_NE(with.find("jobqueue_jobs_claimed_total{queue=\"q\"} 9\n"), std::string::npos);
    EXPECT_NE(with.find("jobqueue_jobs_failed_total{queue=\"q\"} 1\n"), std::string::npos);
}

// ---------------------------------------------------------------- rates

TEST(Rates, BetweenReadings) {
    RateHistory h(10);
    h.add(at_seconds(0), {counters("a", 100, 50), counters("b", 10, 10)});
    EXPECT_TRUE(h.rates().empty());
    h.add(at_seconds(2), {counters("a", 120, 56), counters("b", 14, 10)});
    auto r = h.rates();
    ASSERT_EQ(r.size(), 1u);
    EXPECT_DOUBLE_EQ(r[0].pushed_per_second, 12.0);   // (20 + 4) / 2
    EXPECT_DOUBLE_EQ(r[0].completed_per_second, 3.0); // 6 / 2
}

TEST(Rates, ResetAndNewQueues) {
    RateHistory h(10);
    h.add(at_seconds(0), {counters("a", 100, 100)});
    // a was reset (server restart) and counted 4 since; c is new with 6
    h.add(at_seconds(1), {counters("a", 4, 2), counters("c", 6, 0)});
    auto r = h.rates();
    ASSERT_EQ(r.size(), 1u);
    EXPECT_DOUBLE_EQ(r[0].pushed_per_second, 10.0);
    EXPECT_DOUBLE_EQ(r[0].completed_per_second, 2.0);
}

TEST(Rates, GapAndCapacity) {
    RateHistory h(3);
    h.add(at_seconds(0), {counters("a", 0, 0)});
    h.gap();  // the database was away: 1,000 jobs over the gap are not spread on one interval
    h.add(at_seconds(10), {counters("a", 1000, 1000)});
    EXPECT_TRUE(h.rates().empty());
    h.add(at_seconds(11), {counters("a", 1002, 1001)});
    h.add(at_seconds(12), {counters("a", 1004, 1002)});  // the first reading falls out
    auto r = h.rates();
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].at, at_seconds(11));
    EXPECT_DOUBLE_EQ(r[1].pushed_per_second, 2.0);
}

// ---------------------------------------------------------------- error answers

TEST(ErrorAnswers, StatusesAndText) {
    auto lost = error_answer("jobqueue: cannot connect: connection to server failed\n\tIs the server running?", "08001",
                             true);
    EXPECT_EQ(lost.status, 503);
    EXPECT_EQ(lost.body["error"], "database unreachable: cannot connect: connection to server failed Is the server running?");
    EXPECT_EQ(lost.body["database_unreachable"], true);
    EXPECT_EQ(error_answer("jobqueue: permission denied for function queue_pause", "42501", false).status, 403);
    EXPECT_EQ(error_answer("x", "22023", false).status, 400);
    EXPECT_EQ(error_answer("x", "54000", false).status, 400);
    EXPECT_EQ(error_answer("x", "55000", false).status, 409);
    EXPECT_EQ(error_answer("canceling statement due to statement timeout", "57014", false).status, 504);
    EXPECT_EQ(error_answer("x", "XX000", false).status, 500);
    auto refused = error_answer("jobqueue: permission denied for function queue_pause", "42501", false);
    EXPECT_EQ(refused.body["error"], "permission denied for function queue_pause");
    EXPECT_EQ(refused.body["sqlstate"], "42501");
}
