// unit_test.cpp: the parts of the client that need no server: the JSON
// forms of the value types, the SQLSTATE -> exception mapping, the worker's
// option checks and the client's own argument and connection checks.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <type_traits>
#include <typeinfo>

#include "jobqueue/jobqueue.hpp"

using namespace std::chrono_literals;
using jobqueue::TimePoint;

namespace {

// An instant given as microseconds since the Unix epoch.
TimePoint at_micros(std::int64_t micros) {
    return TimePoint(std::chrono::duration_cast<jobqueue::Clock::duration>(std::chrono::microseconds(micros)));
}

constexpr std::int64_t kSecond = 1000000;

}  // namespace

// ---------------------------------------------------------------- format_time

// format_time writes ISO 8601 UTC with exactly six fractional digits.
TEST(FormatTime, Epoch) { EXPECT_EQ(jobqueue::format_time(at_micros(0)), "1970-01-01T00:00:00.000000Z"); }

TEST(FormatTime, KnownInstantWithMicroseconds) {
    // 1234567890 s is 2009-02-13 23:31:30 UTC.
    EXPECT_EQ(jobqueue::format_time(at_micros(1234567890 * kSecond + 123456)), "2009-02-13T23:31:30.123456Z");
    EXPECT_EQ(jobqueue::format_time(at_micros(1234567890 * kSecond + 1)), "2009-02-13T23:31:30.000001Z");
    EXPECT_EQ(jobqueue::format_time(at_micros(1234567890 * kSecond + 999999)), "2009-02-13T23:31:30.999999Z");
}

TEST(FormatTime, LeapDayAndEndOfYear) {
    // 951825600 s is 2000-02-29 12:00:00 UTC; 1704067199 s is 2023-12-31 23:59:59 UTC.
    EXPECT_EQ(jobqueue::format_time(at_micros(951825600 * kSecond)), "2000-02-29T12:00:00.000000Z");
    EXPECT_EQ(jobqueue::format_time(at_micros(1704067199 * kSecond + 500000)), "2023-12-31T23:59:59.500000Z");
}

TEST(FormatTime, BeforeNineteenSeventy) {
    EXPECT_EQ(jobqueue::format_time(at_micros(-1)), "1969-12-31T23:59:59.999999Z");
    EXPECT_EQ(jobqueue::format_time(at_micros(-kSecond)), "1969-12-31T23:59:59.000000Z");
    EXPECT_EQ(jobqueue::format_time(at_micros(-1500000)), "1969-12-31T23:59:58.500000Z");
    // -2208988800 s is 1900-01-01 00:00:00 UTC.
    EXPECT_EQ(jobqueue::format_time(at_micros(-2208988800LL * kSecond)), "1900-01-01T00:00:00.000000Z");
    EXPECT_EQ(jobqueue::format_time(at_micros(-2208988800LL * kSecond + 250)), "1900-01-01T00:00:00.000250Z");
}

TEST(FormatTime, SubMicrosecondPartIsDropped) {
    // system_clock may be finer than microseconds; the text keeps whole microseconds.
    auto t = at_micros(1234567890 * kSecond + 123456);
    auto finer = t + std::chrono::duration_cast<jobqueue::Clock::duration>(std::chrono::nanoseconds(999));
    if (finer != t) {
        EXPECT_EQ(jobqueue::format_time(finer), "2009-02-13T23:31:30.123456Z");
    }
}

// ---------------------------------------------------------------- to_json

TEST(ToJson, Job) {
    jobqueue::Job job;
    job.id = 42;
    job.queue = "emails";
    job.name = "send";
    job.payload = {{"to", "a@example.com"}, {"n", 3}};
    job.attempts = 2;
    job.max_attempts = 5;
    job.priority = -7;
    job.token = 9000000000LL;
    job.reserved_until = at_micros(1234567890 * kSecond + 123456);
    job.created_at = at_micros(-1);
    job.last_error = "boom";

    nlohmann::json j = job;
    nlohmann::json expected = {{"id", 42},
                               {"queue", "emails"},
                               {"name", "send"},
                               {"payload", {{"to", "a@example.com"}, {"n", 3}}},
                               {"attempts", 2},
                               {"max_attempts", 5},
                               {"priority", -7},
                               {"token", 9000000000LL},
                               {"reserved_until", "2009-02-13T23:31:30.123456Z"},
                               {"created_at", "1969-12-31T23:59:59.999999Z"},
                               {"last_error", "boom"},
                               {"deadline", nullptr}};
    EXPECT_EQ(j, expected) << j.dump();
    EXPECT_TRUE(j.at("deadline").is_null());
    EXPECT_TRUE(j.at("token").is_number_integer());

    job.deadline = at_micros(0);
    j = job;
    EXPECT_EQ(j.at("deadline"), "1970-01-01T00:00:00.000000Z");
}

TEST(ToJson, QueueStats) {
    jobqueue::QueueStats s{"q1", 1, 2, 3, 6};
    nlohmann::json j = s;
    nlohmann::json expected = {{"queue", "q1"}, {"pending", 1}, {"delayed", 2}, {"reserved", 3}, {"total", 6}};
    EXPECT_EQ(j, expected) << j.dump();
}

TEST(ToJson, QueueInfo) {
    jobqueue::QueueInfo info;
    info.stats = {"q2", 4, 0, 1, 5};
    info.paused = true;
    info.default_lease = 90s;
    info.notify = false;
    nlohmann::json j = info;
    nlohmann::json expected = {{"queue", "q2"}, {"pending", 4},   {"delayed", 0},
                               {"reserved", 1}, {"total", 5},     {"paused", true},
                               {"default_lease_ms", 90000},       {"notify", false}};
    EXPECT_EQ(j, expected) << j.dump();

    info.default_lease.reset();
    info.paused = false;
    info.notify = true;
    j = info;
    EXPECT_TRUE(j.at("default_lease_ms").is_null());
    EXPECT_EQ(j.at("paused"), false);
    EXPECT_EQ(j.at("notify"), true);
}

TEST(ToJson, FailedJob) {
    jobqueue::FailedJob f;
    f.id = 7;
    f.queue = "q";
    f.name = "n";
    f.payload = nlohmann::json::array({1, 2});
    f.priority = 3;
    f.attempts = 3;
    f.max_attempts = 3;
    f.error = "line 1\nline 2";
    f.failed_at = at_micros(951825600 * kSecond + 42);
    f.created_at = at_micros(-2208988800LL * kSecond);
    nlohmann::json j = f;
    nlohmann::json expected = {{"id", 7},
                               {"queue", "q"},
                               {"name", "n"},
                               {"payload", nlohmann::json::array({1, 2})},
                               {"priority", 3},
                               {"attempts", 3},
                               {"max_attempts", 3},
                               {"error", "line 1\nline 2"},
                               {"failed_at", "2000-02-29T12:00:00.000042Z"},
                               {"created_at", "1900-01-01T00:00:00.000000Z"}};
    EXPECT_EQ(j, expected) << j.dump();
}

TEST(ToJson, QueueOverview) {
    jobqueue::QueueOverview o;
    o.queue = "q";
    o.paused = true;
    o.pending = 10000;
    o.delayed = 2;
    o.reserved = 3;
    o.failed = 4;
    o.counts_capped = true;
    o.pending_estimate = 1234567;
    o.estimates = true;
    nlohmann::json j = o;
    nlohmann::json expected = {{"queue", "q"},
                               {"paused", true},
                               {"pending", 10000},
                               {"delayed", 2},
                               {"reserved", 3},
                               {"failed", 4},
                               {"counts_capped", true},
                               {"oldest_pending_at", nullptr},
                               {"pending_estimate", 1234567},
                               {"delayed_estimate", nullptr},
                               {"reserved_estimate", nullptr},
                               {"failed_estimate", nullptr},
                               {"estimates", true}};
    EXPECT_EQ(j, expected) << j.dump();
    o.oldest_pending_at = at_micros(951825600 * kSecond);
    EXPECT_EQ(nlohmann::json(o).at("oldest_pending_at"), "2000-02-29T12:00:00.000000Z");
}

TEST(ToJson, JobSummaryAndDetail) {
    jobqueue::JobDetail d;
    d.summary.id = 5;
    d.summary.name = "n";
    d.summary.state = "reserved";
    d.summary.priority = -1;
    d.summary.attempts = 1;
    d.summary.max_attempts = 3;
    d.summary.available_at = at_micros(0);
    d.summary.reserved_by = "w1";
    d.summary.reserved_until = at_micros(kSecond);
    d.summary.created_at = at_micros(0);
    d.queue = "q";
    d.payload = {{"a", "<b>"}};
    d.last_error = "";
    nlohmann::json j = d;
    nlohmann::json expected = {{"id", 5},
                               {"name", "n"},
                               {"state", "reserved"},
                               {"priority", -1},
                               {"attempts", 1},
                               {"max_attempts", 3},
                               {"available_at", "1970-01-01T00:00:00.000000Z"},
                               {"reserved_by", "w1"},
                               {"reserved_until", "1970-01-01T00:00:01.000000Z"},
                               {"unique_key", nullptr},
                               {"deadline", nullptr},
                               {"created_at", "1970-01-01T00:00:00.000000Z"},
                               {"queue", "q"},
                               {"payload", {{"a", "<b>"}}},
                               {"last_error", ""},
                               {"failed_at", nullptr}};
    EXPECT_EQ(j, expected) << j.dump();
    nlohmann::json summary = d.summary;
    EXPECT_FALSE(summary.contains("payload"));
    EXPECT_EQ(summary.size(), 12u);
    d.summary.available_at.reset();  // a failed job is due never
    EXPECT_TRUE(nlohmann::json(d).at("available_at").is_null());
}

TEST(ToJson, LeaseAndCounters) {
    jobqueue::Lease l{"w", "q", 9, "n", 2, at_micros(kSecond)};
    nlohmann::json lease = l;
    nlohmann::json expected_lease = {{"worker", "w"}, {"queue", "q"},     {"id", 9},
                                     {"name", "n"},   {"attempts", 2},    {"reserved_until", "1970-01-01T00:00:01.000000Z"}};
    EXPECT_EQ(lease, expected_lease) << lease.dump();
    jobqueue::QueueCounters c{"q", 1, 2, 3, 4, 5, 6, 7};
    nlohmann::json counters = c;
    nlohmann::json expected_counters = {{"queue", "q"},  {"pushed", 1},  {"claimed", 2}, {"completed", 3},
                                        {"released", 4}, {"retried", 5}, {"failed", 6},  {"expired", 7}};
    EXPECT_EQ(counters, expected_counters) << counters.dump();
}

// ---------------------------------------------------------------- push_many_element

TEST(PushManyElement, DefaultsWriteOnlyNameAndPayload) {
    jobqueue::NewJob job{"resize", {{"w", 10}}, {}};
    nlohmann::json expected = {{"name", "resize"}, {"payload", {{"w", 10}}}};
    EXPECT_EQ(jobqueue::push_many_element(job), expected);

    jobqueue::NewJob bare;
    bare.name = "x";
    EXPECT_EQ(jobqueue::push_many_element(bare), (nlohmann::json{{"name", "x"}, {"payload", nlohmann::json::object()}}));
}

// A value the caller set is sent even when it equals the server's default:
// the client does not know the server's defaults.
TEST(PushManyElement, SetOptionsAreWrittenWhateverTheirValue) {
    jobqueue::NewJob job;
    job.name = "x";
    job.options.queue = "default";
    job.options.delay = 0ms;
    job.options.priority = 0;
    job.options.max_attempts = 3;
    nlohmann::json j = jobqueue::push_many_element(job);
    EXPECT_EQ(j, (nlohmann::json{{"name", "x"}, {"payload", nlohmann::json::object()}, {"queue", "default"},
                                 {"delay", "0 milliseconds"}, {"priority", 0}, {"max_attempts", 3}}))
        << j.dump();
}

TEST(PushManyElement, EveryOption) {
    jobqueue::NewJob job;
    job.name = "x";
    job.payload = {{"k", "v"}};
    job.options.queue = "other";
    job.options.delay = 1500ms;
    job.options.priority = -2;
    job.options.unique_key = "key-1";
    job.options.max_attempts = 10;
    job.options.deadline = at_micros(1234567890 * kSecond + 5);
    nlohmann::json expected = {{"name", "x"},
                               {"payload", {{"k", "v"}}},
                               {"queue", "other"},
                               {"delay", "1500 milliseconds"},
                               {"priority", -2},
                               {"unique_key", "key-1"},
                               {"max_attempts", 10},
                               {"deadline", "2009-02-13T23:31:30.000005Z"}};
    EXPECT_EQ(jobqueue::push_many_element(job), expected) << jobqueue::push_many_element(job).dump();
}

TEST(PushManyElement, EachOptionAlone) {
    auto only = [](const jobqueue::PushOptions& o) {
        nlohmann::json j = jobqueue::push_many_element(jobqueue::NewJob{"n", nlohmann::json::object(), o});
        j.erase("name");
        j.erase("payload");
        return j;
    };
    jobqueue::PushOptions o;
    o.queue = "q";
    EXPECT_EQ(only(o), (nlohmann::json{{"queue", "q"}}));
    o = {};
    o.delay = 2h;
    EXPECT_EQ(only(o), (nlohmann::json{{"delay", "7200000 milliseconds"}}));
    o = {};
    o.delay = 1ms;
    EXPECT_EQ(only(o), (nlohmann::json{{"delay", "1 milliseconds"}}));
    o = {};
    o.priority = 5;
    EXPECT_EQ(only(o), (nlohmann::json{{"priority", 5}}));
    o = {};
    o.unique_key = "";  // set, even if empty: the server judges it
    EXPECT_EQ(only(o), (nlohmann::json{{"unique_key", ""}}));
    o = {};
    o.max_attempts = 1;
    EXPECT_EQ(only(o), (nlohmann::json{{"max_attempts", 1}}));
    o = {};
    o.deadline = at_micros(-1);
    EXPECT_EQ(only(o), (nlohmann::json{{"deadline", "1969-12-31T23:59:59.999999Z"}}));
    o = {};
    o.concurrency_key = "tenant:7";
    EXPECT_EQ(only(o), (nlohmann::json{{"concurrency_key", "tenant:7"}}));
    o = {};
    o.on_duplicate = jobqueue::OnDuplicate::debounce;
    EXPECT_EQ(only(o), (nlohmann::json{{"on_duplicate", "debounce"}}));
    o = {};
    o.after = {3, 1, 2};
    EXPECT_EQ(only(o), (nlohmann::json{{"after", {3, 1, 2}}}));
    o = {};
    o.after_failed = jobqueue::AfterFailed::run;
    EXPECT_EQ(only(o), (nlohmann::json{{"after_failed", "run"}}));
}

// The flow-control options (1.5) are left out when unset, so a batch
// without them suits an older extension too; an empty "after" is unset.
TEST(PushManyElement, FlowControlOptionsOnlyWhenSet) {
    jobqueue::PushOptions o;
    EXPECT_FALSE(o.uses_flow_control());
    o.after = {};
    EXPECT_FALSE(o.uses_flow_control());
    nlohmann::json j = jobqueue::push_many_element(jobqueue::NewJob{"n", nlohmann::json::object(), o});
    EXPECT_EQ(j, (nlohmann::json{{"name", "n"}, {"payload", nlohmann::json::object()}})) << j.dump();
    o.after_failed = jobqueue::AfterFailed::fail;
    EXPECT_TRUE(o.uses_flow_control());
}

// ---------------------------------------------------------------- flow-control modes

TEST(FlowModes, WordsRoundTrip) {
    for (auto mode : {jobqueue::OnDuplicate::keep, jobqueue::OnDuplicate::replace, jobqueue::OnDuplicate::debounce})
        EXPECT_EQ(jobqueue::parse_on_duplicate(jobqueue::to_string(mode)), mode);
    for (auto mode : {jobqueue::AfterFailed::fail, jobqueue::AfterFailed::run})
        EXPECT_EQ(jobqueue::parse_after_failed(jobqueue::to_string(mode)), mode);
    EXPECT_STREQ(jobqueue::to_string(jobqueue::OnDuplicate::replace), "replace");
    EXPECT_STREQ(jobqueue::to_string(jobqueue::AfterFailed::run), "run");
}

TEST(FlowModes, OtherWordsAreNone) {
    EXPECT_FALSE(jobqueue::parse_on_duplicate("Keep"));
    EXPECT_FALSE(jobqueue::parse_on_duplicate(""));
    EXPECT_FALSE(jobqueue::parse_after_failed("skip"));
}

// The JSON forms of the flow-control rows, as `jobqueue limit list --json`
// and `jobqueue rate list --json` print them.
TEST(FlowJson, Rows) {
    EXPECT_EQ(nlohmann::json(jobqueue::ConcurrencyLimit{"q", "tenant:", 2}),
              (nlohmann::json{{"queue", "q"}, {"key_prefix", "tenant:"}, {"max_running", 2}}));
    EXPECT_EQ(nlohmann::json(jobqueue::ConcurrencyKey{"q", "tenant:1", 2, 1, 5}),
              (nlohmann::json{{"queue", "q"}, {"concurrency_key", "tenant:1"}, {"max_running", 2}, {"running", 1},
                              {"waiting", 5}}));
    jobqueue::RateLimit rate{"q", 10, 1500ms, std::nullopt};
    EXPECT_EQ(nlohmann::json(rate),
              (nlohmann::json{{"queue", "q"}, {"max_claims", 10}, {"per_ms", 1500}, {"next_slot", nullptr}}));
    rate.next_slot = at_micros(1234567890 * kSecond + 5);
    EXPECT_EQ(nlohmann::json(rate)["next_slot"], "2009-02-13T23:31:30.000005Z");
    EXPECT_EQ(nlohmann::json(jobqueue::BlockedJobs{"q", 3, 4}),
              (nlohmann::json{{"queue", "q"}, {"waiting_for_key", 3}, {"waiting_for_parents", 4}}));
}

// ---------------------------------------------------------------- throw_error

namespace {

// Calls throw_error and returns what it threw (as the base class).
template <typename Expected>
void expect_mapping(const std::string& sqlstate) {
    SCOPED_TRACE("sqlstate " + sqlstate);
    try {
        jobqueue::throw_error("message for " + sqlstate, sqlstate);
        ADD_FAILURE() << "throw_error returned";
    } catch (const jobqueue::Error& e) {
        EXPECT_EQ(typeid(e), typeid(Expected)) << "threw " << typeid(e).name();
        EXPECT_EQ(e.sqlstate(), sqlstate);
        EXPECT_EQ(std::string(e.what()), "message for " + sqlstate);
    } catch (...) {
        ADD_FAILURE() << "threw something that is not a jobqueue::Error";
    }
}

}  // namespace

TEST(ThrowError, Retryable) {
    expect_mapping<jobqueue::RetryableError>("40001");
    expect_mapping<jobqueue::RetryableError>("40P01");
}

TEST(ThrowError, PermissionDenied) { expect_mapping<jobqueue::PermissionDenied>("42501"); }

TEST(ThrowError, InvalidArgument) {
    expect_mapping<jobqueue::InvalidArgument>("22023");
    expect_mapping<jobqueue::InvalidArgument>("22004");
    expect_mapping<jobqueue::InvalidArgument>("22007");
    expect_mapping<jobqueue::InvalidArgument>("54000");
}

TEST(ThrowError, Connection) {
    expect_mapping<jobqueue::ConnectionError>("08006");
    expect_mapping<jobqueue::ConnectionError>("08001");
    expect_mapping<jobqueue::ConnectionError>("57P01");
}

TEST(ThrowError, OthersArePlainErrors) {
    expect_mapping<jobqueue::Error>("42883");  // undefined function
    expect_mapping<jobqueue::Error>("42P01");  // undefined table
    expect_mapping<jobqueue::Error>("55000");  // wrong state
    expect_mapping<jobqueue::Error>("42704");  // unknown object
    expect_mapping<jobqueue::Error>("XX000");
    expect_mapping<jobqueue::Error>("40002");  // class 40 but not retryable
    expect_mapping<jobqueue::Error>("");
}

TEST(ThrowError, InDoubtIsAConnectionError) {
    static_assert(std::is_base_of_v<jobqueue::ConnectionError, jobqueue::InDoubtError>);
    static_assert(std::is_base_of_v<jobqueue::Error, jobqueue::ConnectionError>);
    static_assert(std::is_base_of_v<jobqueue::Error, jobqueue::InvalidArgument>);
    static_assert(std::is_base_of_v<jobqueue::Error, jobqueue::PermissionDenied>);
    static_assert(std::is_base_of_v<jobqueue::Error, jobqueue::RetryableError>);
    static_assert(std::is_base_of_v<std::runtime_error, jobqueue::Error>);
    try {
        throw jobqueue::InDoubtError("lost during commit", "08007");
    } catch (const jobqueue::ConnectionError& e) {
        EXPECT_EQ(e.sqlstate(), "08007");
        EXPECT_STREQ(e.what(), "lost during commit");
    }
    jobqueue::Error plain("client-side");
    EXPECT_EQ(plain.sqlstate(), "");
}

// ---------------------------------------------------------------- WorkerOptions

namespace {

void expect_rejected(const jobqueue::WorkerOptions& o, const char* what) {
    SCOPED_TRACE(what);
    try {
        o.validate();
        ADD_FAILURE() << "validate() accepted " << what;
    } catch (const jobqueue::InvalidArgument& e) {
        EXPECT_EQ(e.sqlstate(), "");
        EXPECT_NE(std::string(e.what()), "");
    }
}

}  // namespace

TEST(WorkerOptions, DefaultsAreValid) {
    jobqueue::WorkerOptions o;
    EXPECT_NO_THROW(o.validate());
}

TEST(WorkerOptions, BoundariesAreAccepted) {
    jobqueue::WorkerOptions o;
    o.threads = 1;
    EXPECT_NO_THROW(o.validate());
    o.threads = 256;
    EXPECT_NO_THROW(o.validate());
    o = {};
    o.lease = 1000ms;
    EXPECT_NO_THROW(o.validate());
    o.lease = 24h;
    EXPECT_NO_THROW(o.validate());
    o = {};
    o.queues = {std::string(64, 'q'), "b"};
    EXPECT_NO_THROW(o.validate());
    o = {};
    o.poll_interval = 1ms;
    o.grace_period = 0ms;
    EXPECT_NO_THROW(o.validate());
    o = {};
    o.max_batch = 0;
    EXPECT_NO_THROW(o.validate());
    o.max_batch = 10000;
    EXPECT_NO_THROW(o.validate());
}

TEST(WorkerOptions, RejectsEachBadField) {
    jobqueue::WorkerOptions o;
    o.threads = 0;
    expect_rejected(o, "threads 0");
    o = {};
    o.threads = 257;
    expect_rejected(o, "threads 257");
    o = {};
    o.poll_interval = 0ms;
    expect_rejected(o, "poll_interval 0");
    o = {};
    o.poll_interval = -5ms;
    expect_rejected(o, "negative poll_interval");
    o = {};
    o.grace_period = -1ms;
    expect_rejected(o, "negative grace_period");
    o = {};
    o.max_batch = -1;
    expect_rejected(o, "max_batch -1");
    o = {};
    o.max_reconnect_delay = 0ms;
    expect_rejected(o, "max_reconnect_delay 0");
}

// What the server judges is left to it (see the live worker tests): the
// client does not repeat its limits, nor count a name's length in bytes.
TEST(WorkerOptions, LeavesTheServersChecksToTheServer) {
    jobqueue::WorkerOptions o;
    o.lease = 999ms;
    EXPECT_NO_THROW(o.validate());
    o = {};
    o.queues = {std::string(65, 'q'), ""};
    EXPECT_NO_THROW(o.validate());
    o = {};
    o.queues.clear();  // the server's default queue
    EXPECT_NO_THROW(o.validate());
    o = {};
    o.max_batch = 10001;
    EXPECT_NO_THROW(o.validate());
}

TEST(Worker, ConstructorRejectsBadOptions) {
    jobqueue::WorkerOptions o;
    o.threads = 0;
    EXPECT_THROW(jobqueue::Worker{o}, jobqueue::InvalidArgument);
    o = {};
    o.threads = jobqueue::WorkerOptions::max_threads + 1;
    EXPECT_THROW(jobqueue::Worker{o}, jobqueue::InvalidArgument);
    o = {};
    o.poll_interval = 0ms;
    EXPECT_THROW(jobqueue::Worker{o}, jobqueue::InvalidArgument);
}

TEST(Worker, ConstructorNeedsNoServer) {
    // Valid options: constructing and destroying an unstarted worker does
    // not connect (the conninfo below could not be reached).
    jobqueue::WorkerOptions o;
    o.connection.conninfo = "host=/nonexistent port=1";
    EXPECT_NO_THROW({ jobqueue::Worker w(o); });
}

// ---------------------------------------------------------------- Client checks

TEST(Client, BorrowNullThrowsInvalidArgument) {
    EXPECT_THROW((void)jobqueue::Client::borrow(nullptr), jobqueue::InvalidArgument);
    EXPECT_THROW((void)jobqueue::Client::borrow(nullptr, "public"), jobqueue::InvalidArgument);
}

TEST(Client, UnreachableServerThrowsConnectionError) {
    try {
        jobqueue::Client client("host=/nonexistent port=1 connect_timeout=2");
        ADD_FAILURE() << "connected to an unreachable server";
    } catch (const jobqueue::ConnectionError& e) {
        EXPECT_EQ(typeid(e), typeid(jobqueue::ConnectionError));
        EXPECT_FALSE(e.sqlstate().empty());
        EXPECT_EQ(e.sqlstate().substr(0, 2), "08");
        EXPECT_NE(std::string(e.what()), "");
    }
    jobqueue::ClientOptions options;
    options.conninfo = "host=/nonexistent port=1";
    EXPECT_THROW(jobqueue::Client{options}, jobqueue::ConnectionError);
}

TEST(Client, BadConninfoThrowsConnectionError) {
    try {
        jobqueue::Client client("this is not a conninfo");
        ADD_FAILURE() << "accepted a malformed conninfo";
    } catch (const jobqueue::ConnectionError& e) {
        EXPECT_FALSE(e.sqlstate().empty());
    }
}
